package mapper

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/config"
)

// avroNewerSchema has a value for each newer CQL type: a record for a UDT (its fields in another
// order, one the UDT has not, one a union), arrays for a tuple and a vector, a time-millis and a
// duration's text.
const avroNewerSchema = `{"type": "record", "name": "R", "fields": [
	{"name": "device_id", "type": "string"},
	{"name": "ts", "type": "string"},
	{"name": "temperature", "type": "double"},
	{"name": "site", "type": {"type": "record", "name": "S", "fields": [{"name": "id", "type": "string"}]}},
	{"name": "home", "type": ["null", {"type": "record", "name": "A", "fields": [
		{"name": "zip", "type": "int"},
		{"name": "extra", "type": {"type": "array", "items": "long"}},
		{"name": "street", "type": ["null", "string"]},
		{"name": "tags", "type": {"type": "array", "items": "string"}}]}]},
	{"name": "pair", "type": {"type": "array", "items": ["null", "int"]}},
	{"name": "emb", "type": {"type": "array", "items": "float"}},
	{"name": "at", "type": {"type": "int", "logicalType": "time-millis"}},
	{"name": "atext", "type": "string"},
	{"name": "dur", "type": "string"}]}`

func withNewerColumns(tp *config.Topic) {
	home := addressColumn
	home.Name, home.Field = "home", "home"
	tp.Columns = append(tp.Columns[:2:2], tp.Columns[3], home,
		config.Column{Name: "pair", Type: "tuple<int, int>", Field: "pair"},
		config.Column{Name: "emb", Type: "vector<float, 2>", Field: "emb"},
		config.Column{Name: "at", Type: "time", Field: "at"},
		config.Column{Name: "atext", Type: "time", Field: "atext"},
		config.Column{Name: "dur", Type: "duration", Field: "dur"})
}

func avroNewerNative() map[string]any {
	return map[string]any{"device_id": "d", "ts": "2024-01-15T14:37:22Z", "temperature": 1.0, "site": map[string]any{"id": "s"},
		"home": map[string]any{"A": map[string]any{"zip": int32(3), "extra": []any{int64(9)}, "street": map[string]any{"string": "Main"},
			"tags": []any{"a", "b"}}},
		"pair": []any{map[string]any{"int": int32(7)}, nil}, "emb": []any{float32(0.5), float32(1)},
		"at": 1500 * time.Millisecond, "atext": "15:04:05.123456789", "dur": "P1DT2H"}
}

// An Avro record feeds a UDT column, an array a tuple and a vector, a time-millis and a string a time,
// a string a duration: the same packed row, so the same bound bytes (which the JSON tests compare with
// gocql's), as the JSON record of the same event.
func TestAvroFeedsTheNewerCQLTypes(t *testing.T) {
	reg := &staticRegistry{schemas: map[int]*codec.Schema{4: {ID: 4, Type: "AVRO", Text: avroNewerSchema}}}
	jm, am := newMapper(t, withNewerColumns), newAvroMapper(t, reg, withNewerColumns)
	const base = `"device_id":"d","ts":"2024-01-15T14:37:22Z","temperature":1,"site":{"id":"s"}`
	for _, c := range []struct {
		name   string
		json   string
		mutate func(map[string]any)
	}{
		{"all set", `{` + base + `,"home":{"street":"Main","zip":3,"tags":["a","b"]},"pair":[7,null],"emb":[0.5,1],` +
			`"at":"00:00:01.5","atext":"15:04:05.123456789","dur":"P1DT2H"}`, nil},
		{"null UDT field, null UDT", `{` + base + `,"pair":[null,null],"emb":[0.5,1],` +
			`"at":"00:00:00","atext":"00:00:00","dur":"-1mo"}`, func(n map[string]any) {
			n["home"], n["pair"], n["at"], n["atext"], n["dur"] = nil, []any{nil, nil}, time.Duration(0), "00:00:00", "-1mo"
		}},
		{"null street", `{` + base + `,"home":{"zip":3,"tags":[]},"pair":[7,8],"emb":[0.5,1],` +
			`"at":"00:00:01.5","atext":"15:04:05.123456789","dur":"P1DT2H"}`, func(n map[string]any) {
			h := n["home"].(map[string]any)["A"].(map[string]any)
			h["street"], h["tags"] = nil, []any{}
			n["pair"] = []any{map[string]any{"int": int32(7)}, map[string]any{"int": int32(8)}}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			want, err := jm.Map(rec(c.json))
			if err != nil {
				t.Fatal(err)
			}
			native := avroNewerNative()
			if c.mutate != nil {
				c.mutate(native)
			}
			r := rec("")
			r.Value = avroValue(t, avroNewerSchema, 4, native)
			got, err := am.Map(r)
			if err != nil {
				t.Fatal(err)
			}
			if string(got.Packed) != string(want.Packed) {
				t.Errorf("avro row %x\n json row %x", got.Packed, want.Packed)
			}
		})
	}
}

// A tuple's or vector's array of another length, a null vector element, a duration or time that does
// not parse: bad input, reason map, naming the column and the field.
func TestAvroNewerCQLTypesBadInput(t *testing.T) {
	reg := &staticRegistry{schemas: map[int]*codec.Schema{4: {ID: 4, Type: "AVRO", Text: avroNewerSchema}}}
	am := newAvroMapper(t, reg, withNewerColumns)
	for _, c := range []struct {
		name   string
		mutate func(map[string]any)
		want   string
	}{
		{"short vector", func(n map[string]any) { n["emb"] = []any{float32(1)} },
			`column emb: field "emb": the array has 1 items; CQL vector<float, 2> takes exactly 2`},
		{"long tuple", func(n map[string]any) { n["pair"] = []any{nil, nil, nil} },
			`column pair: field "pair": the array has 3 items; CQL tuple<int, int> takes exactly 2`},
		{"duration", func(n map[string]any) { n["dur"] = "soon" }, `column dur: field "dur": the value is not a duration`},
		{"time", func(n map[string]any) { n["atext"] = "25:00:00" }, `column atext: field "atext": the value is not a time of day`},
	} {
		t.Run(c.name, func(t *testing.T) {
			native := avroNewerNative()
			c.mutate(native)
			r := rec("")
			r.Value = avroValue(t, avroNewerSchema, 4, native)
			_, err := am.Map(r)
			var re *RecordError
			if !errors.As(err, &re) || re.Reason != ReasonMap || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want reason map with %q", err, c.want)
			}
		})
	}

	// A vector of a union with null: a null element is bad input.
	const nullable = `{"type": "record", "name": "R", "fields": [
		{"name": "device_id", "type": "string"}, {"name": "ts", "type": "string"}, {"name": "temperature", "type": "double"},
		{"name": "emb", "type": {"type": "array", "items": ["null", "float"]}}]}`
	reg.schemas[5] = &codec.Schema{ID: 5, Type: "AVRO", Text: nullable}
	vm := newAvroMapper(t, reg, func(tp *config.Topic) {
		tp.Columns = append(tp.Columns[:2:2], tp.Columns[3], config.Column{Name: "emb", Type: "vector<float, 2>", Field: "emb"})
	})
	r := rec("")
	r.Value = avroValue(t, nullable, 5, map[string]any{"device_id": "d", "ts": "2024-01-15T14:37:22Z", "temperature": 1.0,
		"emb": []any{map[string]any{"float": float32(1)}, nil}})
	_, err := vm.Map(r)
	var re *RecordError
	if !errors.As(err, &re) || re.Reason != ReasonMap || !strings.Contains(err.Error(), `column emb: field "emb[1]": an element is null, and a CQL vector cannot hold nulls`) {
		t.Errorf("a null vector element: %v", err)
	}
}

// A UDT field the writer's record has in a type that cannot feed it, or a UDT column from a string,
// meets the schema with reason schema.
func TestAvroNewerCQLTypesRefusedBySchema(t *testing.T) {
	const schema = `{"type": "record", "name": "R", "fields": [
		{"name": "device_id", "type": "string"}, {"name": "ts", "type": "string"}, {"name": "temperature", "type": "double"},
		{"name": "home", "type": {"type": "record", "name": "A", "fields": [{"name": "zip", "type": "string"}]}},
		{"name": "s", "type": "string"}]}`
	reg := &staticRegistry{schemas: map[int]*codec.Schema{6: {ID: 6, Type: "AVRO", Text: schema}}}
	for _, c := range []struct {
		name  string
		field string
		want  string
	}{
		{"UDT field of another type", "home", "has field zip of record A: string, which cannot feed CQL int"},
		{"UDT from a string", "s", "is string, which cannot feed CQL address"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := newAvroMapper(t, reg, func(tp *config.Topic) {
				home := addressColumn
				home.Name, home.Field = "home", c.field
				tp.Columns = append(tp.Columns[:2:2], tp.Columns[3], home)
			})
			r := rec("")
			r.Value = avroValue(t, schema, 6, map[string]any{"device_id": "d", "ts": "2024-01-15T14:37:22Z", "temperature": 1.0,
				"home": map[string]any{"zip": "x"}, "s": "x"})
			_, err := m.Map(r)
			var re *RecordError
			if !errors.As(err, &re) || re.Reason != ReasonSchema || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want reason schema with %q", err, c.want)
			}
		})
	}
}

// An array of a union of the elements' types feeds a tuple of mixed types: a record whose item is of
// a branch that cannot feed its element is bad input; a union none of whose branches can feed an
// element is refused with reason schema.
func TestAvroTupleFromAUnionOfItsElementsTypes(t *testing.T) {
	const schema = `{"type": "record", "name": "R", "fields": [
		{"name": "device_id", "type": "string"}, {"name": "ts", "type": "string"}, {"name": "temperature", "type": "double"},
		{"name": "pair", "type": {"type": "array", "items": ["null", "int", "string"]}}]}`
	reg := &staticRegistry{schemas: map[int]*codec.Schema{7: {ID: 7, Type: "AVRO", Text: schema}}}
	withPair := func(typ string) func(*config.Topic) {
		return func(tp *config.Topic) {
			tp.Columns = append(tp.Columns[:2:2], tp.Columns[3], config.Column{Name: "pair", Type: typ, Field: "pair"})
		}
	}
	jm, am := newMapper(t, withPair("tuple<int, text>")), newAvroMapper(t, reg, withPair("tuple<int, text>"))
	value := func(items ...any) []byte {
		return avroValue(t, schema, 7, map[string]any{"device_id": "d", "ts": "2024-01-15T14:37:22Z", "temperature": 1.0, "pair": items})
	}
	want, err := jm.Map(rec(`{"device_id":"d","ts":"2024-01-15T14:37:22Z","temperature":1,"pair":[7,"x"]}`))
	if err != nil {
		t.Fatal(err)
	}
	r := rec("")
	r.Value = value(map[string]any{"int": int32(7)}, map[string]any{"string": "x"})
	got, err := am.Map(r)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Packed) != string(want.Packed) {
		t.Errorf("avro row %x\n json row %x", got.Packed, want.Packed)
	}

	r.Value = value(map[string]any{"string": "x"}, map[string]any{"string": "y"})
	_, err = am.Map(r)
	var re *RecordError
	if !errors.As(err, &re) || re.Reason != ReasonMap || !strings.Contains(err.Error(), `column pair: field "pair[0]": the item is string, which cannot feed CQL int`) {
		t.Errorf("a string for the int element: %v", err)
	}

	_, err = newAvroMapper(t, reg, withPair("tuple<boolean, text>")).Map(r)
	if !errors.As(err, &re) || re.Reason != ReasonSchema || !strings.Contains(err.Error(), "which cannot feed CQL boolean") {
		t.Errorf("no branch feeds boolean: %v, want reason schema", err)
	}
}
