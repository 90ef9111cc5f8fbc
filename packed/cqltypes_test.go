package packed

import (
	"testing"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

func TestParseTypeNewerTypes(t *testing.T) {
	for in, want := range map[string]string{
		"time": "time", "DURATION": "duration",
		"map<int, text>": "map<int, text>", "map<varchar,uuid>": "map<text, uuid>", "frozen<map<timestamp, int>>": "map<timestamp, int>",
		"tuple<int, text>": "tuple<int, text>", "frozen<tuple<int, list<text>>>": "tuple<int, list<text>>",
		"vector<float, 3>": "vector<float, 3>", "vector<bigint,8192>": "vector<bigint, 8192>",
		"list<duration>": "list<duration>",
	} {
		got, err := ParseType(in)
		if err != nil || got.String() != want {
			t.Errorf("%q: %v, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"map<double, text>", "map<blob, text>", "map<boolean, text>", "set<duration>",
		"tuple<>", "tuple<int, tuple<int>>", "vector<text, 3>", "vector<float, 0>", "vector<float, 8193>",
		"vector<float>", "frozen<int>", "frozen<vector<float, 2>>", "list<tuple<int>>", "address"} {
		if got, err := ParseType(bad); err == nil {
			t.Errorf("%q parses as %v", bad, got)
		}
	}
	u, err := ParseUDT("frozen<Address>", []string{"Street", "zip"}, []string{"text", "list<int>"})
	if err != nil || u.String() != "address" || u.Comp.Fields[0] != "Street" || u.Comp.Types[1].String() != "list<int>" {
		t.Errorf("ParseUDT: %+v, %v", u, err)
	}
	if _, err := ParseUDT("a", []string{"v"}, []string{"vector<float, 2>"}); err == nil {
		t.Error("a UDT field of a vector parses")
	}
}

// A map's key kind travels in the packed row, and the bind check compares it with the marker's.
func TestMapKeyKindIsPackedAndChecked(t *testing.T) {
	mt, err := ParseType("map<int, text>")
	if err != nil {
		t.Fatal(err)
	}
	var w Writer
	w.Reset()
	w.Encoded(mt, []byte{0, 0, 0, 0})
	p, _ := w.Finish(nil)
	v, ok := Values(p)[0].(*Value)
	if !ok || v.Type != mt {
		t.Fatalf("read back %#v, want a value of %v", Values(p)[0], mt)
	}
	if _, err := v.MarshalCQL(gocql.NewNativeType(4, gocql.TypeCustom, "map<int,text>")); err != nil {
		t.Errorf("binding to map<int, text>: %v", err)
	}
	if _, err := v.MarshalCQL(gocql.NewNativeType(4, gocql.TypeCustom, "map<text,text>")); err == nil {
		t.Error("a map<int, text> binds to a map<text, text> marker")
	}
}

// A tuple counts, and binds, one value per element; a null element binds nil.
func TestTupleBindsElementByElement(t *testing.T) {
	tt, err := ParseType("tuple<int, text>")
	if err != nil {
		t.Fatal(err)
	}
	var w Writer
	w.Reset()
	w.Encoded(tt, []byte{0, 0, 0, 4, 0, 0, 0, 7, 0xff, 0xff, 0xff, 0xff})
	w.Integer(KInt, 9)
	w.NullTuple(tt)
	p, _ := w.Finish(nil)
	if n := Count(p); n != 5 {
		t.Fatalf("count %d, want 5", n)
	}
	args := Values(p)
	if len(args) != 5 || args[1] != nil || args[3] != nil || args[4] != nil {
		t.Fatalf("args %#v, want 7, nil, 9, nil, nil", args)
	}
	if b, err := args[0].(*Value).MarshalCQL(gocql.NewNativeType(4, gocql.TypeInt, "")); err != nil || string(b) != "\x00\x00\x00\x07" {
		t.Errorf("element 0 binds %x, %v", b, err)
	}
}
