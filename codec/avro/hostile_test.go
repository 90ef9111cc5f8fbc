package avro

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/packed"
)

// zeroWidth is a record whose arrays and maps hold items that take no bytes: null, a fixed of size 0,
// a record without fields, and nestings of them. v is a long after them all.
const zeroWidth = `{"type": "record", "name": "H", "namespace": "z", "fields": [
	{"name": "nulls", "type": {"type": "array", "items": "null"}},
	{"name": "fixed0", "type": {"type": "array", "items": {"type": "fixed", "name": "Z", "size": 0}}},
	{"name": "empty", "type": {"type": "array", "items": {"type": "record", "name": "E", "fields": []}}},
	{"name": "nested", "type": {"type": "array", "items": {"type": "record", "name": "N", "fields": [
		{"name": "z", "type": "Z"}, {"name": "n", "type": "null"}, {"name": "e", "type": "E"}]}}},
	{"name": "deep", "type": {"type": "array", "items": {"type": "array", "items": "null"}}},
	{"name": "bymap", "type": {"type": "map", "values": {"type": "array", "items": "null"}}},
	{"name": "zmap", "type": {"type": "map", "values": "Z"}},
	{"name": "longs", "type": {"type": "array", "items": "long"}},
	{"name": "v", "type": "long"}
]}`

// zeroWidthFields is the order of zeroWidth's array and map fields in a body.
var zeroWidthFields = []string{"nulls", "fixed0", "empty", "nested", "deep", "bymap", "zmap", "longs"}

// zeroWidthBody is a body of zeroWidth whose field shape holds arr (an array's or map's bytes), every
// other array and map empty, and v 1.
func zeroWidthBody(shape string, arr []byte) []byte {
	var b []byte
	for _, f := range zeroWidthFields {
		if f == shape {
			b = append(b, arr...)
		} else {
			b = append(b, 0)
		}
	}
	return append(b, 2)
}

// zz appends x as a zig-zag varint.
func zz(b []byte, x int64) []byte { return binary.AppendVarint(b, x) }

// manyBlocks is an array (or map) of zero-width items of about n bytes, block after block, each
// claiming as many items as there are bytes after its header: what a per-block check against the
// bytes left lets through, n²/4 items in all. With sized, each block has a negative count and a
// size of 0, as a writer that sizes its blocks writes zero-width items.
func manyBlocks(n int, sized bool) []byte {
	var headers [][]byte
	after := 1 // the terminator
	for after < n {
		var h []byte
		if sized {
			h = zz(zz(nil, -int64(after)), 0)
		} else {
			h = zz(nil, int64(after))
		}
		headers = append(headers, h)
		after += len(h)
	}
	b := make([]byte, 0, after)
	for i := len(headers) - 1; i >= 0; i-- {
		b = append(b, headers[i]...)
	}
	return append(b, 0)
}

// manyInner is an array (or, with keys, a map) of about n bytes in one block whose items are arrays of
// null of n items each: n²/4 items in all.
func manyInner(n int, keys bool) []byte {
	item := zz(nil, int64(n))
	item = append(item, 0)
	if keys {
		item = append([]byte{0}, item...) // the key ""
	}
	k := n / len(item)
	b := zz(nil, int64(k))
	for range k {
		b = append(b, item...)
	}
	return append(b, 0)
}

// hostile are the shapes a body of about n bytes can take to claim n²/4 zero-width items or more.
func hostile(n int) []struct {
	name, shape string
	arr         []byte
} {
	return []struct {
		name, shape string
		arr         []byte
	}{
		{"array of null", "nulls", manyBlocks(n, false)},
		{"array of null, sized blocks", "nulls", manyBlocks(n, true)},
		{"array of fixed(0)", "fixed0", manyBlocks(n, false)},
		{"array of a record without fields", "empty", manyBlocks(n, true)},
		{"array of a record of zero-width fields", "nested", manyBlocks(n, false)},
		{"array of arrays of null", "deep", manyInner(n, false)},
		{"map of arrays of null", "bymap", manyInner(n, true)},
	}
}

// TestZeroWidthItemsAreBoundedByTheBodysSize guards against a body of a few kilobytes that claims
// millions of items taking no bytes over many blocks (or nested arrays): decoded item by item, it took
// time quadratic in its size, and a kept list<blob> of fixed(0) memory quadratic in it, replayed after
// every crash. Each shape is refused as decode, before its kept collection grows beyond a few bytes
// per byte of body.
func TestZeroWidthItemsAreBoundedByTheBodysSize(t *testing.T) {
	const n = 4096 // its shapes claim 4 million items and more
	fields := []codec.Field{fieldOf("v", "v", "bigint"), fieldOf("fixed0", "blobs", "list<blob>")}
	p := compile(t, zeroWidth, fields)
	out := make([]codec.Value, len(fields))
	for _, h := range hostile(n) {
		t.Run(h.name, func(t *testing.T) {
			body := zeroWidthBody(h.shape, h.arr)
			buf, err := p.Decode(body, out, nil)
			var ce *codec.Error
			if !errors.As(err, &ce) || ce.Reason != codec.ReasonDecode || !strings.Contains(err.Error(), "more than a") {
				t.Errorf("%d-byte body: %v, want reason decode refusing more items than the body may hold", len(body), err)
			}
			if limit := 8 * maxItems(len(body)); int64(cap(buf)) > limit {
				t.Errorf("%d-byte body: the decode grew its buffer to %d bytes, want at most %d", len(body), cap(buf), limit)
			}
		})
	}
}

// TestZeroWidthItemsWithinTheBoundDecode: real zero-width items are read, up to the bound exactly
// (a block of fixed(0) claiming more items than bytes left was once refused as a short body).
func TestZeroWidthItemsWithinTheBoundDecode(t *testing.T) {
	fields := []codec.Field{fieldOf("v", "v", "bigint"), fieldOf("fixed0", "blobs", "list<blob>"), fieldOf("zmap", "m", "map<text, blob>")}
	p := compile(t, zeroWidth, fields)
	out := make([]codec.Value, len(fields))
	ten := zz(zz(nil, 10), 0)
	for _, shape := range zeroWidthFields[:4] {
		body := zeroWidthBody(shape, ten)
		if _, err := p.Decode(body, out, nil); err != nil || out[0].N != 1 {
			t.Errorf("%s: 10 items: %v, v %d; want decoded", shape, err, out[0].N)
		}
	}
	body := zeroWidthBody("fixed0", ten)
	if _, err := p.Decode(body, out, nil); err != nil {
		t.Fatal(err)
	}
	if got := fmtAny(goValue(fields[1], out[1].B)); got != "[[] [] [] [] [] [] [] [] [] []]" {
		t.Errorf("list<blob> of ten fixed(0): %s, want ten empty blobs", got)
	}
	zmap := []byte{4, 2, 'a', 2, 'b', 0} // two entries, "a" and "b", of fixed(0)
	if _, err := p.Decode(zeroWidthBody("zmap", zmap), out, nil); err != nil || fmtAny(goValue(fields[2], out[2].B)) != "map[a:[] b:[]]" {
		t.Errorf("map of fixed(0): %v, %s; want two empty blobs", err, fmtAny(goValue(fields[2], out[2].B)))
	}
	// One block of null claiming exactly the bound of its body, then one more item.
	for _, extra := range []int64{0, 1} {
		var body []byte
		for c := int64(1024); ; c++ { // the smallest count that is its body's bound
			body = zeroWidthBody("nulls", zz(zz(nil, c), 0))
			if c == maxItems(len(body)) {
				body = zeroWidthBody("nulls", zz(zz(nil, c+extra), 0))
				break
			}
		}
		_, err := p.Decode(body, out, nil)
		if (err == nil) != (extra == 0) {
			t.Errorf("%d items over the bound of a %d-byte body: %v", extra, len(body), err)
		}
	}
}

// TestBadBlockHeadersAreDecodeErrors: counts and block sizes no body can hold are refused as decode,
// in arrays and maps, skipped and kept.
func TestBadBlockHeadersAreDecodeErrors(t *testing.T) {
	fields := []codec.Field{fieldOf("v", "v", "bigint"), fieldOf("fixed0", "blobs", "list<blob>"), fieldOf("zmap", "m", "map<text, blob>")}
	p := compile(t, zeroWidth, fields)
	out := make([]codec.Value, len(fields))
	for _, tc := range []struct {
		name, shape, want string
		arr               []byte
	}{
		{"a negative block size", "longs", "a negative block size -5", zz(zz(zz(zz(nil, -1), -5), 2), 0)},
		{"a block size beyond the body", "longs", "shorter than its writer schema", zz(zz(zz(zz(nil, -1), 100), 2), 0)},
		{"a negative map block size", "bymap", "a negative block size -1", zz(zz(nil, -1), -1)},
		{"a map block size beyond the body", "zmap", "shorter than its writer schema", zz(zz(nil, -2), 1000)},
		{"the largest count", "longs", "more than a", zz(nil, math.MaxInt64)},
		{"the largest negative count", "longs", "more than a", zz(zz(nil, -math.MaxInt64), 0)},
		{"the smallest count", "nulls", "a block count out of range", zz(nil, math.MinInt64)},
		{"a huge count of null", "nulls", "more than a", zz(nil, 1<<40)},
		{"a huge count of fixed(0), kept", "fixed0", "more than a", zz(nil, 1<<40)},
		{"a huge map count", "zmap", "more than a", zz(nil, 1<<40)},
		{"a huge map count, sized", "bymap", "more than a", zz(zz(nil, -(1<<40)), 0)},
		{"a count beyond the bytes of its long items", "longs", "shorter than its writer schema", zz(nil, 1000)},
	} {
		_, err := p.Decode(zeroWidthBody(tc.shape, tc.arr), out, nil)
		var ce *codec.Error
		if !errors.As(err, &ce) || ce.Reason != codec.ReasonDecode || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want reason decode saying %q", tc.name, err, tc.want)
		}
	}
}

// atTheBound are the shapes of hostile at the most items a body of about n bytes may hold: blocks of
// two zero-width items a byte, or arrays of three a byte in one block of them, each decoded whole.
func atTheBound(n int) []struct {
	name, shape string
	arr         []byte
} {
	flat := bytes.Repeat(zz(nil, 2), n)
	flat = append(flat, 0)
	inner := zz(zz(nil, 3), 0)
	deep := zz(nil, int64(n/len(inner)))
	deep = append(append(deep, bytes.Repeat(inner, n/len(inner))...), 0)
	return []struct {
		name, shape string
		arr         []byte
	}{
		{"array of null", "nulls", flat},
		{"array of fixed(0)", "fixed0", flat},
		{"array of a record of zero-width fields", "nested", flat},
		{"array of arrays of null", "deep", deep},
	}
}

// BenchmarkDecodeHostile decodes the hostile shapes at 4, 16 and 64 KB: those refused (their first
// blocks claim the body's bound) and those at the bound, decoded whole, whose ns/op grows as the body
// does (MB/s stays level), where it grew as its square.
func BenchmarkDecodeHostile(b *testing.B) {
	fields := []codec.Field{fieldOf("v", "v", "bigint"), fieldOf("fixed0", "blobs", "list<blob>")}
	p := compile(b, zeroWidth, fields)
	out := make([]codec.Value, len(fields))
	for _, refused := range []bool{true, false} {
		shapes, what := hostile, "refused"
		if !refused {
			shapes, what = atTheBound, "bound"
		}
		for i, h := range shapes(0) {
			for _, kb := range []int{4, 16, 64} {
				body := zeroWidthBody(h.shape, shapes(kb << 10)[i].arr)
				b.Run(fmt.Sprintf("%s/%s/%dK", what, strings.ReplaceAll(h.name, " ", "_"), kb), func(b *testing.B) {
					var buf []byte
					b.ReportAllocs()
					b.SetBytes(int64(len(body)))
					for b.Loop() {
						var err error
						if buf, err = p.Decode(body, out, buf[:0]); (err != nil) != refused {
							b.Fatalf("%d-byte body: %v", len(body), err)
						}
					}
				})
			}
		}
	}
}

// goValue is the Go value of the CQL wire bytes w of field f.
func goValue(f codec.Field, w []byte) any {
	return packed.GoValue(&packed.Value{Type: f.Type, Wire: w})
}
