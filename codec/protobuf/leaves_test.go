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
