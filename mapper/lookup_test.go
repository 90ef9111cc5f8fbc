package mapper

import (
	"strings"
	"testing"
)

// TestLookupTopMatchesGet guards the one-pass field lookup: every configured field path must
// resolve to the very value fastjson's root.Get(path...) resolves, duplicates and escapes included.
func TestLookupTopMatchesGet(t *testing.T) {
	paths := []string{"device_id", "ts", "site.id", "site.name", "a.0", "missing", "missing.x", "é", "dup"}
	p := &plan{}
	for _, path := range paths {
		p.topField(strings.Split(path, ".")[0])
	}
	docs := []string{
		sensorJSON,
		`{}`,
		`{"dup":1,"dup":2,"site":{"id":"x","id":"y"}}`,
		`{"site":"not an object","a":[5,6]}`,
		`{"\u00e9":"escaped key","site":{"name":null}}`,
		`{"device_id":null,"ts":1,"site":[{"id":1}]}`,
	}
	s := &scratch{}
	for _, doc := range docs {
		root, err := s.parser.Parse(doc)
		if err != nil {
			t.Fatal(err)
		}
		p.lookupTop(root, s)
		for _, path := range paths {
			parts := strings.Split(path, ".")
			if got, want := s.field(p.topField(parts[0]), parts), root.Get(parts...); got != want {
				t.Errorf("%s in %s: %v, root.Get gives %v", path, doc, got, want)
			}
		}
	}
}
