package avro

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/bucketsink/sink/codec"
)

// diamondType is one record type of a diamond reference graph: its full name and schema text.
type diamondType struct{ name, text string }

// diamondLevels are the levels of a reference graph depth levels deep, the bottom one first: each level
// has two records, each holding a field of both records of the level below (and referencing them), so
// with diamondTop above them the graph has 2·depth+1 schemas and 2^depth paths from the top down.
func diamondLevels(depth int) [][2]diamondType {
	var levels [][2]diamondType
	for level := depth; level >= 1; level-- {
		var here [2]diamondType
		for i, side := range []string{"L", "R"} {
			name := fmt.Sprintf("d.%s%d", side, level)
			fields := `{"name": "x", "type": "long"}`
			if len(levels) > 0 {
				below := levels[len(levels)-1]
				fields = fmt.Sprintf(`{"name": "l", "type": %q}, {"name": "r", "type": %q}`, below[0].name, below[1].name)
			}
			here[i] = diamondType{name, fmt.Sprintf(`{"type": "record", "name": %q, "fields": [%s]}`, name, fields)}
		}
		levels = append(levels, here)
	}
	return levels
}

// diamondTop is the writer schema over diamondLevels: v, then a field of each record of the top level.
const diamondTop = `{"type": "record", "name": "d.Top", "fields": [
	{"name": "v", "type": "long"}, {"name": "l", "type": "d.L1"}, {"name": "r", "type": "d.R1"}]}`

// diamond is diamondTop with its references as the registry client gives them: one *codec.Schema per
// referenced schema, shared by the references to it.
func diamond(depth int) *codec.Schema {
	var below []codec.Reference
	for _, level := range diamondLevels(depth) {
		var here []codec.Reference
		for _, ty := range level {
			s := &codec.Schema{Type: "AVRO", Text: ty.text, References: below}
			here = append(here, codec.Reference{Name: ty.name, Subject: ty.name, Version: 1, Schema: s})
		}
		below = here
	}
	return &codec.Schema{ID: 3, Type: "AVRO", References: below, Text: diamondTop}
}

// TestAReferenceGraphIsParsedOncePerSchema guards against parsing a referenced schema once per path
// to it: a diamond graph 25 levels deep (2^25 paths) compiles with each of its 51 schemas parsed once.
func TestAReferenceGraphIsParsedOncePerSchema(t *testing.T) {
	const depth = 25
	s := diamond(depth)
	p := newParser()
	root, err := p.schema(s)
	if err != nil {
		t.Fatal(err)
	}
	if p.parsed != 2*depth+1 {
		t.Errorf("%d texts parsed, want %d: each schema of the graph once", p.parsed, 2*depth+1)
	}
	if l1 := root.fields[1].typ; l1.name != "d.L1" || l1.fields[0].typ != root.fields[2].typ.fields[0].typ {
		t.Errorf("d.L1 and d.R1 do not share d.L2")
	}
	pl, err := Codec{}.Compile(s, []codec.Field{fieldOf("v", "v", "bigint")})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]codec.Value, 1)
	if _, err := pl.Decode([]byte{84}, out, nil); err == nil || !strings.Contains(err.Error(), `inside field "l`) {
		t.Errorf("a body of v alone: %v, want it short inside l", err)
	}
	if out[0].N != 42 {
		t.Errorf("v = %d, want 42", out[0].N)
	}
}

// TestReferencesThatReferBackAreRefused: a reference graph with a cycle is a schema error, found at
// once, not after nesting to the depth bound.
func TestReferencesThatReferBackAreRefused(t *testing.T) {
	a := &codec.Schema{Type: "AVRO", Text: `{"type": "record", "name": "A", "fields": []}`}
	b := &codec.Schema{Type: "AVRO", Text: `{"type": "record", "name": "B", "fields": []}`,
		References: []codec.Reference{{Name: "A", Schema: a}}}
	a.References = []codec.Reference{{Name: "B", Schema: b}}
	top := &codec.Schema{ID: 3, Type: "AVRO", Text: `{"type": "record", "name": "T", "fields": [{"name": "v", "type": "long"}]}`,
		References: []codec.Reference{{Name: "A", Schema: a}}}
	_, err := Codec{}.Compile(top, []codec.Field{fieldOf("v", "v", "bigint")})
	var se *codec.SchemaError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), `reference "A" refers back`) {
		t.Errorf("%v, want a schema error saying A refers back", err)
	}
}
