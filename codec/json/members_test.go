package json

import (
	"testing"

	"github.com/valyala/fastjson"
)

// TestMembers: the spans of the named top-level members, the first of a key given twice, nested
// members and strings that look like keys not taken, escaped keys read as their text.
func TestMembers(t *testing.T) {
	keys := []string{"op", "after", "payload"}
	for _, tc := range []struct {
		doc  string
		ok   bool
		want []string // each key's value text; "-" when absent
	}{
		{`{"op":"c","after":{"op":"x"},"before":null}`, true, []string{`"c"`, `{"op":"x"}`, "-"}},
		{` { "payload" : [1, {"op": 2}] , "op" : "d", "op": "u" } `, true, []string{`"d"`, "-", `[1, {"op": 2}]`}},
		{`{"o\u0070":"r","x":"\"op\":1"}`, true, []string{`"r"`, "-", "-"}},
		{`{}`, true, []string{"-", "-", "-"}},
		{`[1]`, false, nil},
		{`{"op":"c"} x`, false, nil},
		{`{"op":}`, false, nil},
		{`{"op":"c",}`, false, nil},
		{``, false, nil},
	} {
		spans := make([]Span, len(keys))
		ok := Members([]byte(tc.doc), keys, spans)
		if ok != tc.ok {
			t.Errorf("%s: ok %v, want %v", tc.doc, ok, tc.ok)
			continue
		}
		for i, w := range tc.want {
			got := "-"
			if spans[i].Found() {
				got = tc.doc[spans[i].Off:spans[i].End]
			}
			if got != w {
				t.Errorf("%s: %s = %s, want %s", tc.doc, keys[i], got, w)
			}
		}
	}
}

// FuzzMembers holds Members to fastjson: a document it takes is an object fastjson parses, and each
// member it finds is the first of that key, whose text parses to the value fastjson has for it.
func FuzzMembers(f *testing.F) {
	for _, s := range []string{`{"op":"c","after":{"id":1}}`, `{"schema":{"type":"struct"},"payload":{"op":"d"}}`,
		`{"op":"c","op":"d"}`, `{"a":[1,2,{"b":null}],"op":true}`, `{"\u006fp":1}`, `[]`, `{`} {
		f.Add([]byte(s))
	}
	keys := []string{"op", "after", "payload", "schema"}
	f.Fuzz(func(t *testing.T, b []byte) {
		spans := make([]Span, len(keys))
		if !Members(b, keys, spans) {
			return
		}
		var p fastjson.Parser
		v, err := p.ParseBytes(b)
		if err != nil {
			return // Members checks structure, not every scalar (fastjson reads numbers and strings more strictly)
		}
		o, err := v.Object()
		if err != nil {
			t.Fatalf("%q: Members takes it, fastjson has a %s", b, v.Type())
		}
		for i, k := range keys {
			got := o.Get(k)
			if got == nil != !spans[i].Found() {
				t.Fatalf("%q: key %s found %v, fastjson %v", b, k, spans[i].Found(), got != nil)
			}
			if got == nil {
				continue
			}
			var q fastjson.Parser
			w, err := q.ParseBytes(b[spans[i].Off:spans[i].End])
			if err != nil || w.String() != got.String() {
				t.Fatalf("%q: key %s is %q, fastjson %s", b, k, b[spans[i].Off:spans[i].End], got)
			}
		}
	})
}
