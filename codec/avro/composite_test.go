package avro

import (
	"errors"
	"testing"

	"github.com/linkedin/goavro/v2"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/packed"
)

// composites is a record with a UDT's record, a tuple's array and a vector's array.
const composites = `{"type": "record", "name": "C", "fields": [
	{"name": "home", "type": {"type": "record", "name": "A", "fields": [
		{"name": "zip", "type": "int"}, {"name": "street", "type": ["null", "string"]},
		{"name": "when", "type": {"type": "int", "logicalType": "time-millis"}}]}},
	{"name": "pair", "type": {"type": "array", "items": ["null", "long", "string"]}},
	{"name": "emb", "type": {"type": "array", "items": "double"}}]}`

// Every prefix of a body of UDT, tuple and vector values is a decode error (never a panic, never a
// value), and the whole body decodes.
func TestTruncatedCompositesAreDecodeErrors(t *testing.T) {
	udt, err := packed.ParseUDT("address", []string{"street", "zip", "when"}, []string{"text", "int", "time"})
	if err != nil {
		t.Fatal(err)
	}
	fields := []codec.Field{{Path: []string{"home"}, Column: "home", Type: udt},
		fieldOf("pair", "pair", "tuple<bigint, text>"), fieldOf("emb", "emb", "vector<float, 3>")}
	p := compile(t, composites, fields)
	c, err := goavro.NewCodec(composites)
	if err != nil {
		t.Fatal(err)
	}
	body, err := c.BinaryFromNative(nil, map[string]any{
		"home": map[string]any{"zip": int32(3), "street": goavro.Union("string", "Main"), "when": int32(1500)},
		"pair": []any{goavro.Union("long", int64(7)), goavro.Union("string", "x")},
		"emb":  []any{0.5, 1.0, -2.0}})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]codec.Value, len(fields))
	if _, err := p.Decode(body, out, nil); err != nil {
		t.Fatalf("the whole body: %v", err)
	}
	// street, zip, when: each framed, in the UDT's order.
	want := "\x00\x00\x00\x04Main" + "\x00\x00\x00\x04\x00\x00\x00\x03" + "\x00\x00\x00\x08\x00\x00\x00\x00\x59\x68\x2f\x00"
	if string(out[0].B) != want {
		t.Errorf("UDT bytes %x, want %x", out[0].B, want)
	}
	for n := range len(body) {
		_, err := p.Decode(body[:n], out, nil)
		var ce *codec.Error
		if !errors.As(err, &ce) || ce.Reason != codec.ReasonDecode {
			t.Errorf("%d of %d bytes: %v, want reason decode", n, len(body), err)
		}
	}
}
