package avro

import (
	"strings"
	"testing"

	"github.com/bucketsink/sink/codec"
)

// A recursive record is listed once, as a leaf no column takes, instead of walked forever.
func TestLeavesStopAtARecursiveRecord(t *testing.T) {
	s := &codec.Schema{Text: `{"type": "record", "name": "Node", "fields": [
		{"name": "v", "type": "long"},
		{"name": "next", "type": ["null", "Node"]}]}`}
	ls, err := Leaves(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 2 || ls[0].Name() != "v" || ls[0].Type.String() != "bigint" || ls[1].Name() != "next" ||
		!strings.Contains(ls[1].Reason, "recursive") {
		t.Errorf("leaves %+v", ls)
	}
	if _, err := Leaves(&codec.Schema{Text: `["null", "string"]`}); err == nil || !strings.Contains(err.Error(), "not a record") {
		t.Errorf("a union schema: %v", err)
	}
}
