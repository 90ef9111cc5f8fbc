package mapper

import (
	"strconv"
	"strings"
	"testing"

	"github.com/valyala/fastjson"

	"github.com/bucketsink/sink/config"
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
	var parser fastjson.Parser
	for _, doc := range docs {
		root, err := parser.Parse(doc)
		if err != nil {
			t.Fatal(err)
		}
		top := make([]*fastjson.Value, len(p.topFields))
		p.lookupTop(root, top)
		for _, path := range paths {
			parts := strings.Split(path, ".")
			if got, want := field(top[p.topField(parts[0])], parts), root.Get(parts...); got != want {
				t.Errorf("%s in %s: %v, root.Get gives %v", path, doc, got, want)
			}
		}
	}
}

// TestManyTopFields covers topics reading more top-level fields than mapRecord keeps on its stack.
func TestManyTopFields(t *testing.T) {
	const extra = maxStackFields + 4
	m := newMapper(t, func(tp *config.Topic) {
		for i := range extra {
			tp.Columns = append(tp.Columns, config.Column{Name: "f" + strconv.Itoa(i), Type: "int", Field: "f" + strconv.Itoa(i)})
		}
	})
	doc := `{"device_id":"d","ts":"2024-01-15T14:37:22Z","temperature":1`
	for i := range extra {
		doc += `,"f` + strconv.Itoa(i) + `":` + strconv.Itoa(i*3)
	}
	row, err := m.Map(rec(doc + "}"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range extra {
		if got := row.Values[6+i]; got != int32(i*3) {
			t.Errorf("f%d = %#v, want %d", i, got, i*3)
		}
	}
}
