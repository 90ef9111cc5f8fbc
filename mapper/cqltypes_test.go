package mapper

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/packed"
)

// cqlTypeInfo is gocql's TypeInfo of a CQL type as the server describes it, to marshal the Go value a
// test expects with the driver's own code.
func cqlTypeInfo(t *testing.T, name string) (info gocql.TypeInfo) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("gocql type %s: %v", name, r)
		}
	}()
	return gocql.NewNativeType(4, gocql.TypeCustom, name)
}

// addressColumn is a UDT column: frozen<address> of three fields.
var addressColumn = config.Column{Name: "v", Type: "address", Field: "v", Fields: []config.UDTField{
	{Name: "street", Type: "text"}, {Name: "zip", Type: "int"}, {Name: "tags", Type: "list<text>"},
}}

const addressInfo = "org.apache.cassandra.db.marshal.UserType(ks,61646472657373," +
	"737472656574:org.apache.cassandra.db.marshal.UTF8Type," +
	"7a6970:org.apache.cassandra.db.marshal.Int32Type," +
	"74616773:org.apache.cassandra.db.marshal.ListType(org.apache.cassandra.db.marshal.UTF8Type))"

// Each newer CQL type, from what a JSON record carries, binds the bytes gocql marshals for the Go
// value the column stands for: the driver's own encoding of time, duration, tuple, UDT, vector and
// maps with keys that are not text.
func TestNewerCQLTypesFromJSON(t *testing.T) {
	uuid := mustUUID("0b6a1f6e-3f0c-4a53-9b8f-1f2a3b4c5d6e")
	cases := []struct {
		name string
		col  config.Column
		info string // gocql's type string; "" for the column's type
		json string
		want any // the Go value gocql marshals to the same bytes
	}{
		{"time text", config.Column{Type: "time"}, "", `"15:04:05.123456789"`, 15*time.Hour + 4*time.Minute + 5*time.Second + 123456789},
		{"time whole seconds", config.Column{Type: "time"}, "", `"00:00:01"`, time.Second},
		{"time nanoseconds", config.Column{Type: "time"}, "", `86399999999999`, 24*time.Hour - 1},
		{"duration ISO 8601", config.Column{Type: "duration"}, "", `"P1Y2M3DT4H5M6.5S"`,
			gocql.Duration{Months: 14, Days: 3, Nanoseconds: int64(4*time.Hour + 5*time.Minute + 6500*time.Millisecond)}},
		{"duration ISO weeks", config.Column{Type: "duration"}, "", `"P2W"`, gocql.Duration{Days: 14}},
		{"duration CQL units", config.Column{Type: "duration"}, "", `"1y2mo3w4d5h6m7s8ms9us10ns"`,
			gocql.Duration{Months: 14, Days: 25, Nanoseconds: int64(5*time.Hour + 6*time.Minute + 7*time.Second + 8*time.Millisecond + 9*time.Microsecond + 10)}},
		{"duration Go", config.Column{Type: "duration"}, "", `"1.5h"`, gocql.Duration{Nanoseconds: int64(90 * time.Minute)}},
		{"duration negative", config.Column{Type: "duration"}, "", `"-P1D"`, gocql.Duration{Days: -1}},
		{"duration large", config.Column{Type: "duration"}, "", `"100000h"`, gocql.Duration{Nanoseconds: int64(100000 * time.Hour)}},
		{"tuple", config.Column{Type: "tuple<int, text, timestamp>"}, "", `[7, "x", "2024-01-15T14:37:22Z"]`,
			[]any{7, "x", time.Date(2024, 1, 15, 14, 37, 22, 0, time.UTC)}},
		{"tuple with null", config.Column{Type: "frozen<tuple<int, text>>"}, "tuple<int, text>", `[null, "x"]`, []any{nil, "x"}},
		{"tuple of a list", config.Column{Type: "tuple<text, list<int>>"}, "tuple<text, list<int>>", `["a", [1, 2]]`, []any{"a", []int{1, 2}}},
		{"vector float", config.Column{Type: "vector<float, 3>"}, "vector<float, 3>", `[0.5, -1, 3.25]`, []float32{0.5, -1, 3.25}},
		{"vector double", config.Column{Type: "vector<double, 2>"}, "vector<double, 2>", `[0.1, "2"]`, []float64{0.1, 2}},
		{"map int keys", config.Column{Type: "map<int, text>"}, "", `{"10": "ten", "-2": "minus two", "3": "three"}`,
			map[int]string{10: "ten", -2: "minus two", 3: "three"}},
		{"map bigint keys", config.Column{Type: "map<bigint, double>"}, "", `{"9223372036854775807": 1.5}`, map[int64]float64{9223372036854775807: 1.5}},
		{"map uuid keys", config.Column{Type: "map<uuid, int>"}, "", `{"0B6A1F6E-3F0C-4A53-9B8F-1F2A3B4C5D6E": 1}`, map[gocql.UUID]int{uuid: 1}},
		{"map timestamp keys", config.Column{Type: "map<timestamp, int>"}, "", `{"2024-01-15T15:37:22+01:00": 1}`,
			map[time.Time]int{time.Date(2024, 1, 15, 14, 37, 22, 0, time.UTC): 1}},
		{"UDT", addressColumn, addressInfo, `{"street": "Main St", "zip": 12345, "tags": ["a", "b"], "other": 1}`,
			map[string]any{"street": "Main St", "zip": 12345, "tags": []string{"a", "b"}}},
		{"UDT missing and null fields", addressColumn, addressInfo, `{"street": null, "zip": 1}`,
			map[string]any{"street": nil, "zip": 1, "tags": nil}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			col := tc.col
			col.Name, col.Field = "v", "v"
			m := newMapper(t, func(tp *config.Topic) { tp.Columns = append(tp.Columns, col) })
			row, err := m.Map(rec(`{"device_id":"d","ts":"2024-01-15T14:37:22Z","temperature":1,"v":` + tc.json + `}`))
			if err != nil {
				t.Fatal(err)
			}
			name := tc.info
			if name == "" {
				name = col.Type
			}
			info := cqlTypeInfo(t, name)
			want, err := gocql.Marshal(info, tc.want)
			if err != nil {
				t.Fatalf("gocql.Marshal(%#v): %v", tc.want, err)
			}
			var got []byte
			if tt, ok := info.(gocql.TupleTypeInfo); ok {
				// A tuple binds its elements one by one: put them back together as the tuple's bytes.
				for i, v := range Values(row)[6 : 6+len(tt.Elems)] {
					if v == nil {
						got = append(got, 0xff, 0xff, 0xff, 0xff)
						continue
					}
					b, err := v.(*packed.Value).MarshalCQL(tt.Elems[i])
					if err != nil {
						t.Fatalf("element %d: MarshalCQL: %v", i, err)
					}
					got = binary.BigEndian.AppendUint32(got, uint32(len(b)))
					got = append(got, b...)
				}
			} else {
				bound, ok := Values(row)[6].(*packed.Value)
				if !ok {
					t.Fatalf("bound %#v, want a *packed.Value", Values(row)[6])
				}
				if got, err = bound.MarshalCQL(info); err != nil {
					t.Fatalf("MarshalCQL: %v", err)
				}
			}
			if !bytes.Equal(got, want) && !equalMap(t, info, got, want) {
				t.Errorf("bound %x, gocql marshals %#v to %x", got, tc.want, want)
			}
		})
	}
}

// equalMap compares two map encodings by what they hold: gocql writes entries in Go's map order, the
// sink in the order of their bytes.
func equalMap(t *testing.T, info gocql.TypeInfo, a, b []byte) bool {
	t.Helper()
	if info.Type() != gocql.TypeMap {
		return false
	}
	var x, y any
	if err := gocql.Unmarshal(info, a, &x); err != nil {
		t.Fatalf("unmarshal %x: %v", a, err)
	}
	if err := gocql.Unmarshal(info, b, &y); err != nil {
		t.Fatalf("unmarshal %x: %v", b, err)
	}
	return equalValue(x, y)
}

// A value that does not fit a newer type is bad input whose message names the column, the field, the
// part of the value and why, with the value only in the quoted form.
func TestNewerCQLTypesBadInput(t *testing.T) {
	extra := []config.Column{
		{Name: "tm", Type: "time", Field: "tm"},
		{Name: "du", Type: "duration", Field: "du"},
		{Name: "tu", Type: "tuple<int, text>", Field: "tu"},
		{Name: "vec", Type: "vector<float, 3>", Field: "vec"},
		{Name: "mi", Type: "map<int, text>", Field: "mi"},
		{Name: "home", Type: "address", Field: "home", Fields: addressColumn.Fields},
	}
	m := newMapper(t, func(tp *config.Topic) { tp.Columns = append(tp.Columns, extra...) })
	const good = `"device_id":"d","ts":"2024-01-15T14:37:22Z","temperature":1`
	const prefix = "topic sensor-readings partition 3 offset 1207: "
	cases := []struct{ value, plain, quoted string }{
		{`"tm":"25:00:00"`, `column tm: field "tm" is not a time of day`, `column tm: field "tm" is "25:00:00", not a time of day`},
		{`"tm":86400000000000`, `column tm: field "tm" is not a time of day`, `86400000000000, not a time of day`},
		{`"tm":1.5`, `column tm: field "tm" is not a time of day`, `1.5, not a time of day`},
		{`"du":"PT"`, `column du: field "du" is not a duration`, `"PT", not a duration`},
		{`"du":"1x"`, `column du: field "du" is not a duration`, `"1x", not a duration`},
		{`"du":5`, `column du: field "du" is not a duration`, `5, not a duration`},
		{`"tu":[1]`, `column tu: field "tu" has 1 elements; CQL tuple<int, text> takes exactly 2`, ``},
		{`"tu":[1.5,"x"]`, `column tu: field "tu" element 0 is not a whole number for CQL int`, `1.5, not a whole number`},
		{`"tu":{"a":1}`, `column tu: field "tu" is not a JSON array for CQL tuple<int, text>`, ``},
		{`"vec":[1,2]`, `column vec: field "vec" has 2 elements; CQL vector<float, 3> takes exactly 3`, ``},
		{`"vec":[1,2,3,4]`, `column vec: field "vec" has 4 elements; CQL vector<float, 3> takes exactly 3`, ``},
		{`"vec":[1,null,3]`, `column vec: field "vec" element 1 is null, and a CQL vector cannot hold nulls`, ``},
		{`"vec":[1,"x",3]`, `column vec: field "vec" element 1 is not a number for CQL float`, `"x", not a number`},
		{`"mi":{"x":"a"}`, `column mi: field "mi" entry 0's key is not a whole number in range for a CQL int map key`, `key "x"`},
		{`"mi":{"2147483648":"a"}`, `column mi: field "mi" entry 0's key is not a whole number in range for a CQL int map key`, ``},
		{`"home":"Main St"`, `column home: field "home" is not a JSON object for CQL UDT address`, ``},
		{`"home":{"zip":"x"}`, `column home: field "home" field zip is not a number for CQL int`, `"x", not a number`},
		{`"home":{"tags":[1,null]}`, `column home: field "home" field tags element 1 is null, and CQL collections cannot hold nulls`, ``},
	}
	for _, tc := range cases {
		_, err := m.Map(rec(`{` + good + `,` + tc.value + `}`))
		var re *RecordError
		if !errors.As(err, &re) || re.Reason != "map" {
			t.Errorf("%s: error %v, want a *RecordError of reason map", tc.value, err)
			continue
		}
		if got := err.Error(); !bytes.HasPrefix([]byte(got), []byte(prefix+tc.plain)) {
			t.Errorf("%s:\n got %s\nwant %s...", tc.value, got, prefix+tc.plain)
		}
		if tc.quoted != "" && !bytes.Contains([]byte(Quoted(err)), []byte(tc.quoted)) {
			t.Errorf("%s: quoted %s, want it to hold %s", tc.value, Quoted(err), tc.quoted)
		}
	}
}

// Two object keys that parse to one map key keep the first, as two equal text keys do.
func TestMapKeysEqualOnceParsed(t *testing.T) {
	m := newMapper(t, func(tp *config.Topic) {
		tp.Columns = append(tp.Columns, config.Column{Name: "v", Type: "map<int, text>", Field: "v"})
	})
	row, err := m.Map(rec(`{"device_id":"d","ts":"2024-01-15T14:37:22Z","temperature":1,"v":{"01":"first","1":"second"}}`))
	if err != nil {
		t.Fatal(err)
	}
	var got map[int]string
	if err := gocql.Unmarshal(cqlTypeInfo(t, "map<int, text>"), Values(row)[6].(*packed.Value).Wire, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[1] != "first" {
		t.Errorf("got %v, want map[1:first]", got)
	}
}

// A tuple column without a value binds a tuple of nulls: its elements are bound one by one, and a
// tuple literal takes no unset element.
func TestMissingTupleBindsNulls(t *testing.T) {
	m := newMapper(t, func(tp *config.Topic) {
		tp.Columns = append(tp.Columns, config.Column{Name: "v", Type: "tuple<int, text>", Field: "v"},
			config.Column{Name: "after", Type: "int", Field: "after"})
	})
	row, err := m.Map(rec(`{"device_id":"d","ts":"2024-01-15T14:37:22Z","temperature":1,"after":5}`))
	if err != nil {
		t.Fatal(err)
	}
	vals := Values(row)
	if vals[6] != nil || vals[7] != nil {
		t.Errorf("the tuple's elements bind %#v, %#v; want nil, nil", vals[6], vals[7])
	}
	if got := decoded(t, vals[8:9])[0]; got != int32(5) {
		t.Errorf("the column after the tuple binds %#v, want 5", got)
	}
}

// An Avro map, whose keys are strings, feeds a map<int, T> with its keys parsed as a JSON object's
// are: the same row as the JSON record of the same event. A key that does not parse is bad input
// naming the field; a UDT column meets an Avro map with reason schema.
func TestAvroMapKeysParsedAndMapNotAUDT(t *testing.T) {
	const schema = `{"type": "record", "name": "R", "fields": [
		{"name": "device_id", "type": "string"},
		{"name": "ts", "type": "string"},
		{"name": "temperature", "type": "double"},
		{"name": "site", "type": {"type": "record", "name": "S", "fields": [{"name": "id", "type": "string"}]}},
		{"name": "v", "type": {"type": "map", "values": "double"}}]}`
	reg := &staticRegistry{schemas: map[int]*codec.Schema{3: {ID: 3, Type: "AVRO", Text: schema}}}
	withMap := func(tp *config.Topic) {
		tp.Columns = append(tp.Columns[:2:2], tp.Columns[3], config.Column{Name: "v", Type: "map<int, double>", Field: "v"})
	}
	jm, am := newMapper(t, withMap), newAvroMapper(t, reg, withMap)
	want, err := jm.Map(rec(`{"device_id":"d","ts":"2024-01-15T14:37:22Z","temperature":1,"site":{"id":"s"},"v":{"10":1.5,"-3":2}}`))
	if err != nil {
		t.Fatal(err)
	}
	native := map[string]any{"device_id": "d", "ts": "2024-01-15T14:37:22Z", "temperature": 1.0, "site": map[string]any{"id": "s"}, "v": map[string]any{"-3": 2.0, "10": 1.5}}
	r := rec("")
	r.Value = avroValue(t, schema, 3, native)
	got, err := am.Map(r)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Packed) != string(want.Packed) {
		t.Errorf("avro row %x\n json row %x", got.Packed, want.Packed)
	}

	native["v"] = map[string]any{"ten": 1.0}
	r.Value = avroValue(t, schema, 3, native)
	_, err = am.Map(r)
	var re *RecordError
	if !errors.As(err, &re) || re.Reason != ReasonMap || !strings.Contains(err.Error(), `column v: field "v": a map key is not a whole number in range for a CQL int map key`) {
		t.Errorf("a key that is not an int: %v, want reason map naming the column and the key", err)
	}

	udt := newAvroMapper(t, reg, func(tp *config.Topic) {
		tp.Columns = append(tp.Columns[:2:2], tp.Columns[3], config.Column{Name: "v", Type: "address", Field: "v", Fields: addressColumn.Fields})
	})
	_, err = udt.Map(r)
	if !errors.As(err, &re) || re.Reason != ReasonSchema || !strings.Contains(err.Error(), "which cannot feed CQL address") {
		t.Errorf("a UDT column from an Avro map: %v, want reason schema saying so", err)
	}
}

// `sink explain` shows a tuple column's value as one value, and the columns after it in their places,
// although the tuple binds its elements one by one; a vector's and a UDT's values by their parts.
func TestExplainShowsATupleAsOneValue(t *testing.T) {
	m := newMapper(t, func(tp *config.Topic) {
		tp.Columns = append(tp.Columns, config.Column{Name: "pair", Type: "tuple<int, text>", Field: "pair"},
			config.Column{Name: "after", Type: "int", Field: "after"}, config.Column{Name: "emb", Type: "vector<float, 2>", Field: "emb"},
			config.Column{Name: "home", Type: "address", Field: "home", Fields: addressColumn.Fields})
	})
	ex, err := m.Explain(rec(`{"device_id":"d","ts":"2024-01-15T14:37:22Z","temperature":1,"pair":[7,null],"after":5,` +
		`"emb":[0.5,1],"home":{"zip":3}}`))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]any{}
	for _, v := range ex.Bound {
		got[v.Column] = v.Value
	}
	if p, ok := got["pair"].([]any); !ok || len(p) != 2 || p[0] != int32(7) || p[1] != nil || got["after"] != int32(5) {
		t.Errorf("bound pair %#v, after %#v; want [7 <nil>] and 5", got["pair"], got["after"])
	}
	if e, ok := got["emb"].([]any); !ok || len(e) != 2 || e[0] != float32(0.5) || e[1] != float32(1) {
		t.Errorf("bound emb %#v, want [0.5 1]", got["emb"])
	}
	if h, ok := got["home"].(map[string]any); !ok || h["zip"] != int32(3) || h["street"] != nil {
		t.Errorf("bound home %#v, want zip 3 and a null street", got["home"])
	}
}
