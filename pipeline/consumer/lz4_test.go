package consumer

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kgo"
)

// lz4Frame compresses data as one lz4 frame with opts.
func lz4Frame(t *testing.T, data []byte, opts ...lz4.Option) []byte {
	t.Helper()
	var b bytes.Buffer
	w := lz4.NewWriter(&b)
	if err := w.Apply(opts...); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// testPayloads: empty, small JSON-like records, several blocks' worth, and incompressible bytes (stored
// as raw blocks).
func testPayloads() map[string][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	var records bytes.Buffer
	for i := range 120 {
		fmt.Fprintf(&records, `{"device":"dev-%05d","ts":%d,"temp":%.2f,"site":"s%d"}`, rng.IntN(10000), 1_800_000_000_000+i, rng.Float64()*40, i%7)
	}
	var big bytes.Buffer
	for big.Len() < 700<<10 {
		fmt.Fprintf(&big, `{"device":"dev-%05d","v":%d}`, rng.IntN(10000), rng.Int64())
	}
	random := make([]byte, 300<<10)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	return map[string][]byte{"empty": {}, "records": records.Bytes(), "big": big.Bytes(), "random": random}
}

// TestLz4FramesDecodeAsFranzGoDecodesThem: every lz4 frame the writer makes (each block size, with and
// without block and content checksums and the content size) decodes to the bytes compressed, as franz-go's
// own decompressor decodes them; so does what franz-go's producer compresses.
func TestLz4FramesDecodeAsFranzGoDecodesThem(t *testing.T) {
	d := newDecompressor(&fetchPools{})
	for name, data := range testPayloads() {
		for _, size := range []lz4.BlockSize{lz4.Block64Kb, lz4.Block256Kb, lz4.Block1Mb, lz4.Block4Mb} {
			for _, sums := range []bool{false, true} {
				opts := []lz4.Option{lz4.BlockSizeOption(size), lz4.BlockChecksumOption(sums), lz4.ChecksumOption(sums)}
				if sums {
					opts = append(opts, lz4.SizeOption(uint64(len(data))))
				}
				frame := lz4Frame(t, data, opts...)
				out, ok := d.lz4Frames(nil, frame)
				if !ok || !bytes.Equal(out, data) {
					t.Errorf("%s, %v blocks, checksums %v: ok %v, %d bytes decoded, want %d equal", name, size, sums, ok, len(out), len(data))
				}
				got, err := d.Decompress(frame, kgo.CodecLz4)
				if err != nil || !bytes.Equal(got, data) {
					t.Errorf("%s, %v blocks, checksums %v: Decompress: %v, %d bytes", name, size, sums, err, len(got))
				}
			}
		}
		c, err := kgo.DefaultCompressor(kgo.Lz4Compression())
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		frame, codec := c.Compress(&buf, data)
		if codec != kgo.CodecLz4 {
			continue // franz-go leaves what does not shrink uncompressed
		}
		got, err := d.Decompress(frame, kgo.CodecLz4)
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("%s compressed by franz-go: %v, %d bytes, want %d equal", name, err, len(got), len(data))
		}
	}
}

// TestLz4FramesItDoesNotReadGoToFranzGo: a truncated or corrupt frame, or one with a dictionary, is not
// decoded here: franz-go's decompressor refuses it as before (an error, no panic), and other codecs are
// franz-go's.
func TestLz4FramesItDoesNotReadGoToFranzGo(t *testing.T) {
	d := newDecompressor(&fetchPools{})
	data := testPayloads()["records"]
	frame := lz4Frame(t, data, lz4.BlockSizeOption(lz4.Block64Kb))
	cases := map[string][]byte{
		"truncated":      frame[:len(frame)-9],
		"no end mark":    frame[:len(frame)-4],
		"bad magic":      append([]byte{0, 0, 0, 0}, frame[4:]...),
		"corrupt block":  append(append(append([]byte{}, frame[:11]...), bytes.Repeat([]byte{0xff}, 40)...), frame[51:]...),
		"dictionary bit": append(append([]byte{}, frame[:4]...), append([]byte{frame[4] | 1}, frame[5:]...)...),
	}
	for name, src := range cases {
		if _, ok := d.lz4Frames(nil, src); ok {
			t.Errorf("%s: decoded here", name)
		}
		if out, err := d.Decompress(src, kgo.CodecLz4); err == nil && bytes.Equal(out, data) && name != "no end mark" {
			t.Errorf("%s: decoded to the original bytes", name)
		}
	}
	var buf bytes.Buffer
	gz, err := kgo.DefaultCompressor(kgo.GzipCompression())
	if err != nil {
		t.Fatal(err)
	}
	src, codec := gz.Compress(&buf, data)
	if got, err := d.Decompress(bytes.Clone(src), codec); err != nil || !bytes.Equal(got, data) {
		t.Errorf("gzip through franz-go: %v, %d bytes", err, len(got))
	}
}

// TestLz4BatchesHoldNoBlockBuffers: decompressing many small batches of 4 MiB-block frames (what franz-go's
// producer writes) leaves no block-sized buffers in the live heap. Through franz-go's decompressor they
// left two 4 MiB buffers per batch being read in lz4's pools (about 12 MB live at a steady 15,000 events/s).
func TestLz4BatchesHoldNoBlockBuffers(t *testing.T) {
	pools := &fetchPools{}
	d := newDecompressor(pools)
	data := testPayloads()["records"]
	frame := lz4Frame(t, data, lz4.BlockSizeOption(lz4.Block4Mb))
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before := ms.TotalAlloc
	const batches = 10
	for range batches {
		out, err := d.Decompress(frame, kgo.CodecLz4)
		if err != nil || !bytes.Equal(out, data) {
			t.Fatalf("Decompress: %v", err)
		}
		if cap(out) >= 1<<20 {
			t.Fatalf("a %d-byte batch decoded into a buffer of %d bytes", len(data), cap(out))
		}
		clear(out[:cap(out)])
		pools.PutDecompressBytes(out) // as franz-go does once the batch's records are recycled
	}
	runtime.ReadMemStats(&ms)
	if per := (ms.TotalAlloc - before) / batches; per > 64<<10 {
		t.Errorf("%d bytes allocated per %d-byte batch, want at most 64 KiB (no 4 MiB blocks)", per, len(data))
	}
}
