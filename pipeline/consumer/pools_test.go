package consumer

import (
	"bytes"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestPoolClass(t *testing.T) {
	for _, c := range []struct{ n, class int }{{0, 0}, {1, 0}, {2, 1}, {3, 2}, {4, 2}, {5, 3}, {1024, 10}, {1025, 11}} {
		if got := poolClass(c.n); got != c.class {
			t.Errorf("poolClass(%d) = %d, want %d", c.n, got, c.class)
		}
	}
}

// The pools hand out slices with at least the capacity asked for and take back what franz-go returns,
// including a decompression buffer franz-go grew past the guess, which later requests then find.
func TestFetchPoolsReuse(t *testing.T) {
	var p fetchPools
	recs := p.GetRecords(100)
	if len(recs) != 0 || cap(recs) < 100 {
		t.Fatalf("GetRecords(100): len %d cap %d", len(recs), cap(recs))
	}
	p.PutRecords(recs[:cap(recs)])
	again := p.GetRecords(90)
	if cap(again) < 90 {
		t.Fatalf("GetRecords(90) after a put: cap %d", cap(again))
	}

	compressed := make([]byte, 1000)
	buf := p.GetDecompressBytes(compressed, kgo.CodecLz4)
	if len(buf) != 0 || cap(buf) < decompressGuess*len(compressed) {
		t.Fatalf("GetDecompressBytes: len %d cap %d", len(buf), cap(buf))
	}
	// The codec needed more than the guess. sync.Pool may drop what is put (at a GC, and a quarter of
	// puts at random under the race detector), so a few tries are allowed.
	grown := make([]byte, 0, 3*cap(buf))
	found := false
	for range 20 {
		p.PutDecompressBytes(grown[:cap(grown)])
		if got := p.GetDecompressBytes(compressed, kgo.CodecLz4); cap(got) == cap(grown) {
			found = true
			break
		}
	}
	if !found {
		t.Errorf("a grown buffer of cap %d put back is never handed out for the same compressed size", cap(grown))
	}
}

// A dead letter's record is cloned before the original is recycled: the clone shares no bytes with it.
func TestCloneRecordSharesNothing(t *testing.T) {
	r := &kgo.Record{
		Key: []byte("k"), Value: []byte(`{"a":1}`), Topic: "t", Partition: 2, Offset: 77, LeaderEpoch: 3,
		Timestamp: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC),
		Headers:   []kgo.RecordHeader{{Key: "h", Value: []byte("v")}},
	}
	c := CloneRecord(r)
	for _, b := range [][]byte{r.Key, r.Value, r.Headers[0].Value} {
		for i := range b {
			b[i] = 0
		}
	}
	if string(c.Key) != "k" || string(c.Value) != `{"a":1}` || string(c.Headers[0].Value) != "v" || c.Headers[0].Key != "h" {
		t.Errorf("clone changed with the original: key %q value %q header %q=%q", c.Key, c.Value, c.Headers[0].Key, c.Headers[0].Value)
	}
	if c.Topic != "t" || c.Partition != 2 || c.Offset != 77 || c.LeaderEpoch != 3 || !c.Timestamp.Equal(r.Timestamp) {
		t.Errorf("clone lost coordinates: %+v", c)
	}
	if c.Context != nil {
		t.Error("the clone carries the pooled record's recycling context")
	}
	if bytes.Equal(c.Value, r.Value) {
		t.Error("the clone's value is the original's memory")
	}
}

// The decompression size follows what batches expand to: the first guess before any batch, then the
// largest expansion seen with a quarter more, decaying slowly when batches expand less.
func TestFetchPoolsLearnExpansion(t *testing.T) {
	var p fetchPools
	if got := p.guess(1000); got != decompressGuess*1000 {
		t.Fatalf("guess before any batch = %d, want %d", got, decompressGuess*1000)
	}
	p.OnFetchBatchRead(kgo.BrokerMetadata{}, "t", 0, kgo.FetchBatchMetrics{CompressedBytes: 1000, UncompressedBytes: 8000})
	if got := p.guess(1000); got < 10_000 || got > 10_200 {
		t.Fatalf("guess after an 8x batch = %d, want about 10,000", got)
	}
	for range 10 {
		p.OnFetchBatchRead(kgo.BrokerMetadata{}, "t", 0, kgo.FetchBatchMetrics{CompressedBytes: 1000, UncompressedBytes: 2000})
	}
	if got := p.guess(1000); got >= 10_000 || got < 7_000 {
		t.Fatalf("guess after ten 2x batches = %d, want a little under 10,000", got)
	}
	// Uncompressed batches say nothing about compression.
	before := p.guess(1000)
	p.OnFetchBatchRead(kgo.BrokerMetadata{}, "t", 0, kgo.FetchBatchMetrics{CompressedBytes: 1000, UncompressedBytes: 1000})
	if got := p.guess(1000); got != before {
		t.Fatalf("an uncompressed batch moved the guess from %d to %d", before, got)
	}
}
