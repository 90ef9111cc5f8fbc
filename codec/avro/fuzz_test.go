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

// recursiveZeroWidth nests a record in arrays of itself, beside a union with zero-width branches and
// a map of arrays of fixed(0).
const recursiveZeroWidth = `{"type": "record", "name": "T", "fields": [
	{"name": "kids", "type": {"type": "array", "items": "T"}},
	{"name": "u", "type": ["null", {"type": "record", "name": "E", "fields": []}, {"type": "fixed", "name": "Z", "size": 0}, "long"]},
	{"name": "m", "type": {"type": "map", "values": {"type": "array", "items": "Z"}}},
	{"name": "s", "type": "string"}
]}`

// FuzzAvroDecodeZeroWidth decodes arbitrary bodies against writer schemas whose arrays and maps hold
// items that take no bytes (zeroWidth, recursiveZeroWidth), skipped and kept: the plan never panics,
// fails only with a *codec.Error, and what it appends to its buffer stays linear in the body's size
// (a body that claims many zero-width items is refused, not decoded item by item).
func FuzzAvroDecodeZeroWidth(f *testing.F) {
	type plan struct {
		p      codec.Plan
		fields []codec.Field
	}
	kept := []codec.Field{fieldOf("v", "v", "bigint"), fieldOf("fixed0", "blobs", "list<blob>"),
		fieldOf("zmap", "m", "map<text, blob>"), fieldOf("longs", "l", "list<bigint>")}
	plans := []plan{
		{compile(f, zeroWidth, kept), kept},
		{compile(f, zeroWidth, kept[:1]), kept[:1]},
		{compile(f, recursiveZeroWidth, []codec.Field{fieldOf("s", "s", "text")}), []codec.Field{fieldOf("s", "s", "text")}},
	}
	ten := zz(zz(nil, 10), 0)
	for _, shape := range zeroWidthFields {
		f.Add(uint8(0), zeroWidthBody(shape, ten))
		f.Add(uint8(1), zeroWidthBody(shape, manyBlocks(64, true)))
	}
	f.Add(uint8(0), zeroWidthBody("zmap", []byte{4, 2, 'a', 2, 'b', 0}))
	f.Add(uint8(0), zeroWidthBody("deep", manyInner(64, false)))
	f.Add(uint8(1), zeroWidthBody("bymap", manyInner(64, true)))
	// T{kids: [T{kids: [], u: E, m: {}, s: ""}], u: Z, m: {"k": [Z, Z]}, s: "x"}
	f.Add(uint8(2), []byte{2, 0, 2, 0, 0, 0, 4, 2, 2, 'k', 4, 0, 0, 2, 'x'})
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		pl := plans[int(which)%len(plans)]
		out := make([]codec.Value, len(pl.fields))
		buf, err := pl.p.Decode(body, out, nil)
		if limit := 64 * maxItems(len(body)); int64(len(buf)) > limit {
			t.Fatalf("a %d-byte body appended %d bytes, beyond %d", len(body), len(buf), limit)
		}
		if err != nil {
			var ce *codec.Error
			if !errors.As(err, &ce) || (ce.Reason != codec.ReasonDecode && ce.Reason != codec.ReasonMap) {
				t.Fatalf("%T %v, want a *codec.Error", err, err)
			}
			return
		}
		for i, fd := range pl.fields {
			if v := &out[i]; v.State == codec.Set && codec.Wire(fd.Type) {
				packed.GoValue(&packed.Value{Type: fd.Type, Wire: v.B})
			}
		}
	})
}
