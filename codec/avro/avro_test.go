package avro

import (
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/linkedin/goavro/v2"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/packed"
)

// allTypes has a field of every Avro type a column can take, and some that are skipped.
const allTypes = `{"type": "record", "name": "All", "namespace": "t", "fields": [
	{"name": "skip_map", "type": {"type": "map", "values": {"type": "array", "items": "long"}}},
	{"name": "s", "type": "string"},
	{"name": "i", "type": "int"},
	{"name": "l", "type": "long"},
	{"name": "f", "type": "float"},
	{"name": "d", "type": "double"},
	{"name": "b", "type": "boolean"},
	{"name": "raw", "type": "bytes"},
	{"name": "fx", "type": {"type": "fixed", "name": "F4", "size": 4}},
	{"name": "color", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN"]}},
	{"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
	{"name": "decfx", "type": {"type": "fixed", "name": "D8", "size": 8, "logicalType": "decimal", "precision": 18, "scale": 4}},
	{"name": "tsms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
	{"name": "tsus", "type": {"type": "long", "logicalType": "timestamp-micros"}},
	{"name": "day", "type": {"type": "int", "logicalType": "date"}},
	{"name": "tod", "type": {"type": "int", "logicalType": "time-millis"}},
	{"name": "uid", "type": {"type": "string", "logicalType": "uuid"}},
	{"name": "opt", "type": ["null", "string"]},
	{"name": "optset", "type": ["null", "long"]},
	{"name": "tags", "type": {"type": "array", "items": "string"}},
	{"name": "attrs", "type": {"type": "map", "values": "int"}},
	{"name": "nested", "type": ["null", {"type": "record", "name": "N", "fields": [
		{"name": "x", "type": "long"}, {"name": "deep", "type": {"type": "record", "name": "D", "fields": [{"name": "y", "type": "string"}]}}]}]},
	{"name": "ip", "type": "string"}
]}`

func allNative() map[string]any {
	return map[string]any{
		"skip_map": map[string]any{"a": []any{int64(1), int64(2)}, "b": []any{}},
		"s":        "héllo", "i": int32(-7), "l": int64(1) << 40, "f": float32(1.5), "d": 2.25, "b": true,
		"raw": []byte{0, 1, 2}, "fx": []byte{9, 8, 7, 6}, "color": "GREEN",
		"dec":    big.NewRat(-12345, 100),
		"decfx":  big.NewRat(5, 10000),
		"tsms":   time.Date(2024, 1, 15, 14, 37, 22, 123e6, time.UTC),
		"tsus":   time.Date(2024, 1, 15, 14, 37, 22, 123456e3, time.UTC),
		"day":    time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC),
		"tod":    3*time.Hour + 5*time.Millisecond,
		"uid":    "0b6a1f6e-3f0c-4a53-9b8f-1f2a3b4c5d6e",
		"opt":    nil,
		"optset": goavro.Union("long", int64(42)),
		"tags":   []any{"x", "y"},
		"attrs":  map[string]any{"z": int32(1), "a": int32(2)},
		"nested": goavro.Union("t.N", map[string]any{"x": int64(5), "deep": map[string]any{"y": "deep!"}}),
		"ip":     "10.0.0.1",
	}
}

func encode(t testing.TB, schema string, native any) []byte {
	t.Helper()
	c, err := goavro.NewCodec(schema)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.BinaryFromNative(nil, native)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func fieldOf(path, column, typ string) codec.Field {
	tp, err := packed.ParseType(typ)
	if err != nil {
		panic(err)
	}
	return codec.Field{Path: strings.Split(path, "."), Column: column, Type: tp}
}

func compile(t testing.TB, schema string, fields []codec.Field) codec.Plan {
	t.Helper()
	p, err := Codec{}.Compile(&codec.Schema{ID: 3, Type: "AVRO", Text: schema}, fields)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestEveryPairingDecodesExactly(t *testing.T) {
	fields := []codec.Field{
		fieldOf("s", "c_text", "text"), fieldOf("i", "c_int", "int"), fieldOf("i", "c_tiny", "tinyint"), fieldOf("l", "c_big", "bigint"),
		fieldOf("f", "c_float", "float"), fieldOf("d", "c_double", "double"), fieldOf("l", "c_ldouble", "double"),
		fieldOf("b", "c_bool", "boolean"), fieldOf("raw", "c_blob", "blob"), fieldOf("fx", "c_fblob", "blob"),
		fieldOf("color", "c_enum", "text"), fieldOf("dec", "c_dec", "decimal"), fieldOf("decfx", "c_decfx", "decimal"),
		fieldOf("tsms", "c_tsms", "timestamp"), fieldOf("tsus", "c_tsus", "timestamp"), fieldOf("day", "c_day", "date"),
		fieldOf("tod", "c_tod", "bigint"), fieldOf("uid", "c_uid", "uuid"), fieldOf("opt", "c_opt", "text"),
		fieldOf("optset", "c_optset", "bigint"), fieldOf("tags", "c_tags", "list<text>"), fieldOf("tags", "c_tagset", "set<text>"),
		fieldOf("attrs", "c_attrs", "map<text, int>"), fieldOf("nested.x", "c_x", "varint"), fieldOf("nested.deep.y", "c_y", "ascii"),
		fieldOf("ip", "c_ip", "inet"), fieldOf("l", "c_ldec", "decimal"), fieldOf("dec", "c_dectext", "decimal"),
	}
	p := compile(t, allTypes, fields)
	body := encode(t, allTypes, allNative())
	out := make([]codec.Value, len(fields))
	if _, err := p.Decode(body, out, nil); err != nil {
		t.Fatal(err)
	}
	got := map[string]any{}
	for i, f := range fields {
		v := &out[i]
		switch {
		case v.State != codec.Set:
			got[f.Column] = v.State
		case codec.Wire(f.Type):
			got[f.Column] = packed.GoValue(&packed.Value{Type: f.Type, Wire: v.B})
		}
	}
	check := func(col string, want, have any) {
		t.Helper()
		if have != want {
			t.Errorf("%s: %v (%T), want %v", col, have, have, want)
		}
	}
	check("c_text", "héllo", string(out[0].B))
	check("c_int", int64(-7), out[1].N)
	check("c_tiny", int64(-7), out[2].N)
	check("c_big", int64(1)<<40, out[3].N)
	check("c_float", 1.5, out[4].F)
	check("c_double", 2.25, out[5].F)
	check("c_ldouble", float64(1<<40), out[6].F)
	check("c_bool", "true", fmtAny(got["c_bool"]))
	check("c_blob", "[0 1 2]", fmtAny(got["c_blob"]))
	check("c_fblob", "[9 8 7 6]", fmtAny(got["c_fblob"]))
	check("c_enum", "GREEN", string(out[10].B))
	check("c_dec", "-123.45", fmtAny(got["c_dec"]))
	check("c_decfx", "0.0005", fmtAny(got["c_decfx"]))
	check("c_tsms", "2024-01-15T14:37:22.123Z", out[13].T.Format(time.RFC3339Nano))
	check("c_tsus", "2024-01-15T14:37:22.123456Z", out[14].T.Format(time.RFC3339Nano))
	check("c_day", "2024-02-29", out[15].T.Format(time.DateOnly))
	check("c_tod", int64(3*time.Hour+5*time.Millisecond), out[16].N)
	check("c_uid", "0b6a1f6e-3f0c-4a53-9b8f-1f2a3b4c5d6e", fmtUUID(out[17].U))
	check("c_opt", codec.Null, out[18].State)
	check("c_optset", int64(42), out[19].N)
	check("c_tags", "[x y]", fmtAny(got["c_tags"]))
	check("c_tagset", "[x y]", fmtAny(got["c_tagset"]))
	check("c_attrs", "map[a:2 z:1]", fmtAny(got["c_attrs"]))
	check("c_x", "5", fmtAny(got["c_x"]))
	check("c_y", "deep!", string(out[24].B))
	check("c_ip", "10.0.0.1", fmtAny(got["c_ip"]))
	check("c_ldec", "1099511627776", fmtAny(got["c_ldec"]))
}

func TestNullUnionOnAPathMakesEveryFieldBelowItNull(t *testing.T) {
	fields := []codec.Field{fieldOf("nested.x", "x", "bigint"), fieldOf("nested.deep.y", "y", "text"), fieldOf("s", "s", "text")}
	p := compile(t, allTypes, fields)
	n := allNative()
	n["nested"] = nil
	out := make([]codec.Value, len(fields))
	if _, err := p.Decode(encode(t, allTypes, n), out, nil); err != nil {
		t.Fatal(err)
	}
	if out[0].State != codec.Null || out[1].State != codec.Null || out[2].State != codec.Set {
		t.Errorf("states %v %v %v, want null null set", out[0].State, out[1].State, out[2].State)
	}
}

func TestSchemaErrorsNameSchemaIDFieldAndColumn(t *testing.T) {
	for _, tc := range []struct {
		f    codec.Field
		want string
	}{
		{fieldOf("missing", "m", "text"), `schema id 3, field "missing" (column m): the writer schema has no field "missing" in record t.All`},
		{fieldOf("s", "n", "bigint"), `schema id 3, field "s" (column n): is string, which cannot feed CQL bigint`},
		{fieldOf("s.x", "n", "text"), `schema id 3, field "s.x" (column n): "s" is string, which has no field "x"`},
		{fieldOf("nested", "n", "text"), `schema id 3, field "nested" (column n): is record t.N, which cannot feed CQL text; name one of its fields`},
		{fieldOf("dec", "n", "varint"), `schema id 3, field "dec" (column n): is bytes (decimal), which cannot feed CQL varint (a decimal with a scale feeds decimal)`},
		{fieldOf("tags", "n", "list<int>"), `schema id 3, field "tags" (column n): has elements of string, which cannot feed CQL int`},
		{codec.Field{Path: []string{"l"}, Type: packed.Scalar(packed.KTimestamp), Time: codec.TimeFormat{Form: codec.TimeRFC3339, Name: "rfc3339"}}, `schema id 3, event time field "l": is long, which cannot feed the event time (format rfc3339 reads a string`},
	} {
		_, err := Codec{}.Compile(&codec.Schema{ID: 3, Type: "AVRO", Text: allTypes}, []codec.Field{tc.f})
		var se *codec.SchemaError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a schema error containing %q", tc.f.Name(), err, tc.want)
		}
	}
}

func TestBodyErrorsSayWhatIsWrong(t *testing.T) {
	fields := []codec.Field{fieldOf("s", "s", "text"), fieldOf("i", "c", "tinyint")}
	p := compile(t, allTypes, fields)
	body := encode(t, allTypes, allNative())
	out := make([]codec.Value, len(fields))
	for _, tc := range []struct {
		name, reason, want string
		body               []byte
	}{
		{"cut short", codec.ReasonDecode, "shorter than its writer schema", body[:len(body)-3]},
		{"trailing bytes", codec.ReasonDecode, "3 bytes left after the record", append(body[:len(body):len(body)], 1, 2, 3)},
		{"empty", codec.ReasonDecode, "shorter than its writer schema", nil},
	} {
		_, err := p.Decode(tc.body, out, nil)
		var ce *codec.Error
		if !errors.As(err, &ce) || ce.Reason != tc.reason || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want reason %s saying %q", tc.name, err, tc.reason, tc.want)
		}
	}
	n := allNative()
	n["i"] = int32(300)
	_, err := p.Decode(encode(t, allTypes, n), out, nil)
	var ce *codec.Error
	if !errors.As(err, &ce) || ce.Reason != codec.ReasonMap || ce.Column != "c" || !strings.Contains(codec.Quoted(err), "300 is out of range for CQL tinyint") ||
		strings.Contains(err.Error(), "300") {
		t.Errorf("out of range: %v, want reason map for column c", err)
	}
}

// TestAWholeFieldReadsAPrimitiveWriterSchema guards Field.Whole: a primitive writer schema (a Kafka
// key's usual form) is the lone whole field's value, converted and range-checked as a record's field
// is, a null union branch is null; a record schema is still read along the path; and without Whole,
// or with two fields, a primitive schema stays refused.
func TestAWholeFieldReadsAPrimitiveWriterSchema(t *testing.T) {
	whole := func(path, column, typ string) codec.Field {
		f := fieldOf(path, column, typ)
		f.Whole = true
		return f
	}
	out := make([]codec.Value, 1)
	decode := func(schema string, f codec.Field, body []byte) error {
		_, err := compile(t, schema, []codec.Field{f}).Decode(body, out, nil)
		return err
	}
	if err := decode(`"string"`, whole("device_id", "device_id", "text"), encode(t, `"string"`, "dev-1")); err != nil || out[0].State != codec.Set || string(out[0].B) != "dev-1" {
		t.Errorf("string key: %v, %+v; want dev-1", err, out[0])
	}
	if err := decode(`"long"`, whole("site.num", "num", "int"), encode(t, `"long"`, int64(42))); err != nil || out[0].N != 42 {
		t.Errorf("long key into int: %v, %+v; want 42", err, out[0])
	}
	uid := `{"type": "string", "logicalType": "uuid"}`
	if err := decode(uid, whole("id", "id", "uuid"), encode(t, uid, "0b6a1f6e-3f0c-4a53-9b8f-1f2a3b4c5d6e")); err != nil || fmtUUID(out[0].U) != "0b6a1f6e-3f0c-4a53-9b8f-1f2a3b4c5d6e" {
		t.Errorf("uuid key: %v, %+v", err, out[0])
	}
	if err := decode(`["null", "string"]`, whole("device_id", "device_id", "text"), encode(t, `["null", "string"]`, nil)); err != nil || out[0].State != codec.Null {
		t.Errorf("null union key: %v, state %v; want null", err, out[0].State)
	}
	err := decode(`"long"`, whole("device_id", "dev", "int"), encode(t, `"long"`, int64(3_000_000_000)))
	var ce *codec.Error
	if !errors.As(err, &ce) || ce.Reason != codec.ReasonMap || err.Error() != `column dev: field "device_id": the value is out of range for CQL int` ||
		codec.Quoted(err) != `column dev: field "device_id": 3000000000 is out of range for CQL int` {
		t.Errorf("long out of range for int: %v, want reason map naming column and field", err)
	}
	if err := decode(allTypes, whole("s", "s", "text"), encode(t, allTypes, allNative())); err != nil || string(out[0].B) != "héllo" {
		t.Errorf("record schema with a whole field: %v, %+v; want the field at its path", err, out[0])
	}
	for _, fields := range [][]codec.Field{
		{fieldOf("device_id", "device_id", "text")},
		{whole("a", "a", "text"), whole("b", "b", "text")},
	} {
		var se *codec.SchemaError
		if _, err := (Codec{}).Compile(&codec.Schema{ID: 3, Type: "AVRO", Text: `"string"`}, fields); !errors.As(err, &se) || !strings.Contains(err.Error(), "not a record") {
			t.Errorf("%d fields, whole %v: %v; want the primitive schema refused", len(fields), fields[0].Whole, err)
		}
	}
	var se *codec.SchemaError
	if _, err := (Codec{}).Compile(&codec.Schema{ID: 3, Type: "AVRO", Text: `"string"`}, []codec.Field{whole("n", "n", "bigint")}); !errors.As(err, &se) || !strings.Contains(err.Error(), `field "n" (column n): is string, which cannot feed CQL bigint`) {
		t.Errorf("a string key for a bigint column: %v; want a schema error naming field and column", err)
	}
}
