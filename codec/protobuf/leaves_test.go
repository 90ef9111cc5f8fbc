package protobuf

import (
	"strings"
	"testing"

	"github.com/bucketsink/sink/codec"
)

// The message drafted is the first that holds the wanted fields, nested ones included; a recursive message is
// listed once, as a leaf no column takes.
func TestLeavesPickTheMessageHoldingTheFields(t *testing.T) {
	s := &codec.Schema{Type: "PROTOBUF", Text: `syntax = "proto3";
package p;
message Ping { int64 at = 1; }
message Outer {
  message Tree { string id = 1; int64 at = 2; Tree child = 3; }
}
`}
	name, ls, err := Leaves(s, "id", "at")
	if err != nil {
		t.Fatal(err)
	}
	if name != "p.Outer.Tree" || len(ls) != 3 || ls[2].Name() != "child" || !strings.Contains(ls[2].Reason, "recursive") {
		t.Errorf("message %s, leaves %+v", name, ls)
	}
	if name, _, _ := Leaves(s, "nope"); name != "p.Ping" {
		t.Errorf("no message holds the field: %s, want the first", name)
	}
	if err := CheckMessage(s, "p.Outer.Tree", []codec.Field{{Path: []string{"id"}, Column: "id", Type: ls[0].Type}}); err != nil {
		t.Errorf("CheckMessage: %v", err)
	}
}

// A map with integer keys is drafted as a map of the key type that holds them, which compiles against
// the schema; a map with bool keys feeds no column.
func TestLeavesOfMapsWithIntegerKeys(t *testing.T) {
	s := &codec.Schema{Type: "PROTOBUF", Text: `syntax = "proto3";
package p;
message M { map<int32, string> a = 1; map<uint64, double> b = 2; map<bool, string> c = 3; }
`}
	_, ls, err := Leaves(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 3 || ls[0].Type.String() != "map<int, text>" || ls[1].Type.String() != "map<varint, double>" ||
		ls[2].Fits() || !strings.Contains(ls[2].Reason, "bool keys") {
		t.Fatalf("leaves %+v", ls)
	}
	fields := []codec.Field{{Path: []string{"a"}, Column: "a", Type: ls[0].Type}, {Path: []string{"b"}, Column: "b", Type: ls[1].Type}}
	if err := CheckMessage(s, "p.M", fields); err != nil {
		t.Errorf("CheckMessage: %v", err)
	}
}
