package packed

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/big"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"gopkg.in/inf.v0"

	"github.com/bucketsink/sink/config"
)

// info is gocql's TypeInfo of a CQL type name, as a prepared statement reports it (protocol 4).
func info(name string) gocql.TypeInfo {
	t, err := ParseType(name)
	if err != nil {
		panic(err)
	}
	if t.Kind.Collection() {
		return gocql.NewNativeType(4, gocql.TypeCustom, strings.ReplaceAll(t.String(), " ", ""))
	}
	return gocql.NewNativeType(4, CQLType(t.Kind), "")
}

var day = time.Date(2024, 1, 15, 0, 0, 0, 0, time.UTC)

// everyType is a value of every column type the sink writes, as the mapper converts it.
var everyType = []struct {
	typ string
	v   any
}{
	{"text", "dev-0042"}, {"text", ""}, {"text", "ünïcode"}, {"ascii", "plant-1"},
	{"int", int32(math.MinInt32)}, {"bigint", int64(math.MaxInt64)}, {"smallint", int16(-32768)}, {"tinyint", int8(127)},
	{"float", float32(3.71)}, {"double", -0.0025}, {"double", math.Inf(-1)},
	{"boolean", true}, {"boolean", false},
	{"timestamp", time.Date(2024, 1, 15, 14, 37, 22, 123e6, time.UTC)}, {"timestamp", time.Date(1, 2, 3, 4, 5, 6, 0, time.UTC)},
	{"date", day}, {"date", time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC)},
	{"uuid", gocql.MustRandomUUID()}, {"timeuuid", gocql.TimeUUID()},
	{"blob", []byte("hello")}, {"blob", []byte{}},
	{"inet", net.IP{192, 168, 1, 10}}, {"inet", net.ParseIP("2001:db8::1")},
	{"decimal", inf.NewDec(1234500, 4)}, {"decimal", inf.NewDec(-15, -3)}, {"decimal", inf.NewDec(0, 0)},
	{"varint", big.NewInt(0)}, {"varint", big.NewInt(127)}, {"varint", big.NewInt(128)}, {"varint", big.NewInt(-128)},
	{"varint", big.NewInt(-129)}, {"varint", new(big.Int).Lsh(big.NewInt(-1), 100)},
	{"list<int>", []any{int32(1), int32(-2), int32(3)}}, {"list<text>", []any{}}, {"list<text>", []any{"", "a"}},
	{"set<text>", []any{"a", "b"}}, {"set<timestamp>", []any{day}}, {"list<blob>", []any{[]byte{1, 2}}},
	{"list<decimal>", []any{inf.NewDec(15, 1)}}, {"set<varint>", []any{big.NewInt(-1)}}, {"list<inet>", []any{net.IP{10, 0, 0, 1}}},
	{"list<boolean>", []any{true}}, {"list<uuid>", []any{gocql.MustRandomUUID()}}, {"list<date>", []any{day}},
	{"map<text, double>", map[string]any{"x": 1.5}}, {"map<text, int>", map[string]any{}},
	{"map<text, text>", map[string]any{"k": ""}}, {"map<text, bigint>", map[string]any{"": int64(-1)}},
}

// TestEncodingMatchesGocqlForEveryType: the bytes the packed format binds for a value of every
// column type, collections included (protocol 4 framing), are gocql.Marshal's bytes for that value,
// and GoValue reads back what gocql.Unmarshal reads.
func TestEncodingMatchesGocqlForEveryType(t *testing.T) {
	for _, tc := range everyType {
		ti := info(tc.typ)
		typ, _ := ParseType(tc.typ)
		p, _, err := Pack([]Type{typ}, []any{tc.v}, nil)
		if err != nil {
			t.Fatalf("%s %#v: %v", tc.typ, tc.v, err)
		}
		var bd Binder
		got, err := gocql.Marshal(ti, bd.Args(p)[0])
		if err != nil {
			t.Fatalf("%s %#v: binding: %v", tc.typ, tc.v, err)
		}
		want, err := gocql.Marshal(ti, tc.v)
		if err != nil {
			t.Fatalf("%s %#v: gocql.Marshal: %v", tc.typ, tc.v, err)
		}
		if !bytes.Equal(got, want) || got == nil {
			t.Errorf("%s %#v: binds %x, gocql.Marshal gives %x", tc.typ, tc.v, got, want)
		}
		if typ.Kind.Collection() {
			continue // gocql unmarshals a collection into a typed slice or map; GoValue gives []any and map[string]any
		}
		dst := reflect.New(reflect.TypeOf(tc.v))
		if err := gocql.Unmarshal(ti, got, dst.Interface()); err != nil {
			t.Fatalf("%s %#v: gocql.Unmarshal: %v", tc.typ, tc.v, err)
		}
		if dec, gv := dst.Elem().Interface(), GoValue(Values(p)[0]); !reflect.DeepEqual(dec, gv) && fmt.Sprint(dec) != fmt.Sprint(gv) {
			// (decimals, varints and blobs print the same when equal in value, scale and bytes: their
			// words may differ, and gocql reads an empty blob as nil)
			t.Errorf("%s %#v: GoValue %#v, gocql decodes %#v", tc.typ, tc.v, gv, dec)
		}
	}
}

// TestMapEncodingIsTheSameWhateverTheOrder: a map's entries are written in key order, so that the
// same map packs to the same bytes every time (gocql follows Go's random map order); gocql reads
// the same map back.
func TestMapEncodingIsTheSameWhateverTheOrder(t *testing.T) {
	m := map[string]any{"b": 2.0, "a": 1.0, "c": 3.0, "d": 4.0, "e": 5.0}
	first, err := AppendValue(nil, MustTypes("map<text, double>")[0], m)
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		if again, _ := AppendValue(nil, MustTypes("map<text, double>")[0], m); !bytes.Equal(again, first) {
			t.Fatalf("map packs to %x, then %x", first, again)
		}
	}
	var back map[string]float64
	if err := gocql.Unmarshal(info("map<text, double>"), first, &back); err != nil || len(back) != 5 || back["c"] != 3 {
		t.Fatalf("gocql reads %v, %v", back, err)
	}
	if gv := GoValue(&Value{Type: MustTypes("map<text, double>")[0], Wire: first}); !reflect.DeepEqual(gv, m) {
		t.Errorf("GoValue %#v, want %#v", gv, m)
	}
}

// TestBindingRefusesAnotherCollectionType: a collection packed for one type refuses a bind marker
// of another collection type, another element type or a scalar, with a *BindTypeError naming both.
func TestBindingRefusesAnotherCollectionType(t *testing.T) {
	v := &Value{Type: MustTypes("list<int>")[0], Wire: []byte{0, 0, 0, 0}}
	for _, other := range []string{"set<int>", "list<bigint>", "map<text, int>", "int", "blob"} {
		b, err := gocql.Marshal(info(other), v)
		var bte *BindTypeError
		if !errors.As(err, &bte) || b != nil || bte.Encoded != "list<int>" {
			t.Errorf("list<int> bound to %s: %x, %v; want a *BindTypeError", other, b, err)
		}
	}
	if _, err := gocql.Marshal(info("list<int>"), v); err != nil {
		t.Errorf("list<int> bound to list<int>: %v", err)
	}
	m := &Value{Type: MustTypes("map<text, int>")[0], Wire: []byte{0, 0, 0, 0}}
	if _, err := gocql.Marshal(gocql.NewNativeType(4, gocql.TypeCustom, "map<int,int>"), m); err == nil {
		t.Error("map<text, int> bound to map<int, int>")
	}
	if _, err := gocql.Marshal(gocql.NewNativeType(4, gocql.TypeCustom, "map<varchar,int>"), m); err != nil {
		t.Errorf("map<text, int> bound to map<varchar, int>: %v", err)
	}
	if _, err := m.MarshalCQL(nil); err == nil {
		t.Error("MarshalCQL without type information succeeded")
	}
}

// TestPackedRowRoundTrip: Pack, Count, Binder and Values agree on a row of every kind of value,
// unset and null included, and the key follows the values in the same allocation.
func TestPackedRowRoundTrip(t *testing.T) {
	var types []Type
	var vals []any
	for _, tc := range everyType {
		types = append(types, MustTypes(tc.typ)...)
		vals = append(vals, tc.v)
	}
	types = append(types, MustTypes("text", "int")...)
	vals = append(vals, gocql.UnsetValue, nil)
	p, key, err := Pack(types, vals, []byte("\x00\x01k\x00"))
	if err != nil {
		t.Fatal(err)
	}
	if Count(p) != len(vals) || key != "\x00\x01k\x00" || cap(p) != len(p) {
		t.Fatalf("count %d (want %d), key %q, cap %d of %d", Count(p), len(vals), key, cap(p), len(p))
	}
	got := Values(p)
	if got[len(vals)-2] != gocql.UnsetValue || got[len(vals)-1] != nil {
		t.Errorf("unset and null come back as %#v, %#v", got[len(vals)-2], got[len(vals)-1])
	}
	for i, tc := range everyType {
		v, ok := got[i].(*Value)
		if !ok || v.Type != types[i] {
			t.Fatalf("value %d (%s): %#v", i, tc.typ, got[i])
		}
		if want, _ := AppendValue(nil, types[i], tc.v); !bytes.Equal(v.Wire, want) {
			t.Errorf("value %d (%s): %x, want %x", i, tc.typ, v.Wire, want)
		}
	}
}

// TestParseTypeIgnoresWhiteSpaceAsConfigDoes: every spelling config accepts for a column type (it
// drops all white space, tabs and newlines of a YAML block included) is one the row format parses
// to the same type; before, a tab or newline passed config and then stopped the mapper at start.
func TestParseTypeIgnoresWhiteSpaceAsConfigDoes(t *testing.T) {
	for _, s := range []string{"map<text,\nint>", "list<\tint>", " Set < TEXT > ", "map<text,int>"} {
		if _, err := config.ParseCQLType(s); err != nil {
			t.Fatalf("config refuses %q: %v", s, err)
		}
		got, err := ParseType(s)
		if err != nil {
			t.Errorf("ParseType(%q): %v; config accepts it", s, err)
			continue
		}
		want, _ := ParseType(strings.Join(strings.Fields(s), ""))
		if got != want {
			t.Errorf("ParseType(%q) = %v, want %v", s, got, want)
		}
	}
}

// TestWriterValuesOfEveryLengthAcrossItsGrowth writes, with one Writer, text values whose lengths
// straddle the one-byte length (127, 128) and the buffer's growth, a list, and the fixed-width kinds
// between them: each value reads back as written, whether its write grew the buffer or appended in
// place (Writer.set keeps the buffer's pointer only when an append moved it).
func TestWriterValuesOfEveryLengthAcrossItsGrowth(t *testing.T) {
	var w Writer
	for round := range 2 { // the second row reuses the first one's buffer
		w.Reset()
		var want [][]byte
		for _, n := range []int{0, 1, 127, 128, 129, 300, 16383, 16384, 70000} {
			text := bytes.Repeat([]byte{byte('a' + n%26)}, n)
			w.Text(KText, text)
			w.Integer(KBigint, int64(n))
			w.Floating(KDouble, float64(n)/3)
			want = append(want, text, AppendBigint(nil, int64(n)), AppendDouble(nil, float64(n)/3))
		}
		list, err := AppendValue(nil, MustTypes("list<text>")[0], []any{"x", strings.Repeat("y", 200)})
		if err != nil {
			t.Fatal(err)
		}
		w.Encoded(MustTypes("list<text>")[0], list)
		want = append(want, list)
		values, _ := w.Finish(nil)
		got := Values(values)
		if len(got) != len(want) {
			t.Fatalf("round %d: %d values, want %d", round, len(got), len(want))
		}
		for i := range want {
			if v, ok := got[i].(*Value); !ok || !bytes.Equal(v.Wire, want[i]) {
				t.Fatalf("round %d: value %d is %#v, want the %d bytes %.16x…", round, i, got[i], len(want[i]), want[i])
			}
		}
	}
}
