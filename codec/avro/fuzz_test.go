package avro

import (
	"errors"
	"testing"
	"unicode/utf8"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/packed"
)

// FuzzDecodeAllTypes decodes arbitrary bodies against allTypes with a field of every pairing: the plan
// never panics, fails only with a *codec.Error, and every value it sets is what its type promises (text
// valid UTF-8, wire bytes that read back as the column's type).
func FuzzDecodeAllTypes(f *testing.F) {
	fields := []codec.Field{
		fieldOf("s", "a", "text"), fieldOf("i", "b", "tinyint"), fieldOf("f", "c", "float"), fieldOf("b", "d", "boolean"),
		fieldOf("color", "e", "ascii"), fieldOf("dec", "f", "decimal"), fieldOf("decfx", "g", "decimal"), fieldOf("tsus", "h", "timestamp"),
		fieldOf("day", "i", "date"), fieldOf("tod", "j", "bigint"), fieldOf("uid", "k", "timeuuid"), fieldOf("opt", "l", "text"),
		fieldOf("tags", "m", "set<text>"), fieldOf("attrs", "n", "map<text, tinyint>"), fieldOf("nested.x", "o", "varint"),
		fieldOf("nested.deep.y", "p", "inet"), fieldOf("raw", "q", "blob"), fieldOf("ip", "r", "inet"),
	}
	p := compile(f, allTypes, fields)
	f.Add(encode(f, allTypes, allNative()))
	n := allNative()
	n["nested"], n["opt"] = nil, nil
	f.Add(encode(f, allTypes, n))
	f.Fuzz(func(t *testing.T, body []byte) {
		out := make([]codec.Value, len(fields))
		if _, err := p.Decode(body, out, nil); err != nil {
			var ce *codec.Error
			if !errors.As(err, &ce) || (ce.Reason != codec.ReasonDecode && ce.Reason != codec.ReasonMap) {
				t.Fatalf("%T %v, want a *codec.Error", err, err)
			}
			return
		}
		for i, fd := range fields {
			v := &out[i]
			switch {
			case v.State != codec.Set:
			case fd.Type.Kind == packed.KText || fd.Type.Kind == packed.KASCII:
				if !utf8.Valid(v.B) {
					t.Fatalf("%s: text %q is not UTF-8", fd.Column, v.B)
				}
			case codec.Wire(fd.Type):
				packed.GoValue(&packed.Value{Type: fd.Type, Wire: v.B})
			}
		}
	})
}
