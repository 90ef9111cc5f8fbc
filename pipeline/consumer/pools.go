package consumer

import (
	"math/bits"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bucketsink/sink/batcher"
)

// Reused memory on the path from a fetch to the write stage.
//
// Without pools, franz-go allocates for every fetched record batch a slice of Record structs (about
// 170 bytes a record, full of pointers) and a fresh buffer for the decompressed bytes, and the worker
// allocated a slice of rows for every hand-off to the write stage (about 110 bytes a row). Under a
// backlog that was 370 of the 820 bytes allocated per event, and the collector's cycles followed the
// allocation rate. The consumer now takes both franz-go slices from fetchPools (kgo.WithPools), the
// worker gives each record back with Record.Recycle once it is mapped, and the write stage gives each
// hand-off slice back once its rows are in the batcher.
//
// Recycling a record makes franz-go reuse its struct and its decompressed bytes once every record of
// its batch is recycled, so nothing may keep a pointer into a record after it: the mapper copies what
// a row needs (see partition.handle), and a record bound for the dead-letter topic is cloned first.

// fetchPools implements kgo.PoolRecords and kgo.PoolDecompressBytes with one sync.Pool per
// power-of-two capacity, and kgo.HookFetchBatchRead to learn how much the topics' batches expand.
type fetchPools struct {
	recs  [poolClasses]sync.Pool // of *[]kgo.Record
	bytes [poolClasses]sync.Pool // of *[]byte
	// ratio is decompressed bytes per compressed byte, in sixteenths: the largest seen lately (it
	// decays slowly toward smaller ratios). Zero until a compressed batch was read.
	ratio atomic.Uint32
}

// poolClasses covers capacities up to 2^(poolClasses-1): 1 GiB of decompressed bytes, far above any
// fetch size. Larger requests are allocated and not kept.
const poolClasses = 31

// decompressGuess is the decompressed size asked of the pool, per compressed byte, until a batch was
// read. A buffer that turns out too small is grown by franz-go and the grown one comes back, into its
// larger class, which Get also looks in.
const decompressGuess = 4

// OnFetchBatchRead implements kgo.HookFetchBatchRead: it learns the expansion of compressed batches,
// so that a decompression buffer is asked for at the size it will need and seldom grows.
func (p *fetchPools) OnFetchBatchRead(_ kgo.BrokerMetadata, _ string, _ int32, m kgo.FetchBatchMetrics) {
	if m.CompressedBytes <= 0 || m.UncompressedBytes <= m.CompressedBytes {
		return
	}
	r := uint32(min(16*m.UncompressedBytes/m.CompressedBytes+1, 16*256))
	// Racing updates lose one sample at worst.
	if old := p.ratio.Load(); r > old {
		p.ratio.Store(r)
	} else {
		p.ratio.Store(old - (old-r)/32)
	}
}

// guess is the decompressed size to ask for a batch of n compressed bytes: the learned expansion
// with a quarter more, or decompressGuess before any batch was read.
func (p *fetchPools) guess(n int) int {
	if r := p.ratio.Load(); r > 0 {
		return n * int(r) * 5 / 64
	}
	return decompressGuess * n
}

// poolClass is the smallest class whose capacity, 1<<class, holds n.
func poolClass(n int) int {
	if n <= 1 {
		return 0
	}
	return bits.Len(uint(n - 1))
}

// GetRecords implements kgo.PoolRecords.
func (p *fetchPools) GetRecords(n int) []kgo.Record {
	c := poolClass(n)
	if c >= poolClasses {
		return make([]kgo.Record, 0, n)
	}
	if v, ok := p.recs[c].Get().(*[]kgo.Record); ok {
		return (*v)[:0]
	}
	return make([]kgo.Record, 0, 1<<c)
}

// PutRecords implements kgo.PoolRecords. franz-go has zeroed every record (Recycle does, and so does
// a batch of which no record was kept).
func (p *fetchPools) PutRecords(s []kgo.Record) {
	c := bits.Len(uint(cap(s))) - 1 // the largest class s can serve
	if c < 0 || c >= poolClasses {
		return
	}
	p.recs[c].Put(&s)
}

// GetDecompressBytes implements kgo.PoolDecompressBytes.
func (p *fetchPools) GetDecompressBytes(compressed []byte, _ kgo.CompressionCodecType) []byte {
	want := p.guess(len(compressed))
	c := poolClass(want)
	for k := c; k < min(c+3, poolClasses); k++ {
		if v, ok := p.bytes[k].Get().(*[]byte); ok {
			return (*v)[:0]
		}
	}
	if c >= poolClasses {
		return make([]byte, 0, want)
	}
	return make([]byte, 0, 1<<c)
}

// PutDecompressBytes implements kgo.PoolDecompressBytes; franz-go has zeroed the bytes.
func (p *fetchPools) PutDecompressBytes(b []byte) {
	c := bits.Len(uint(cap(b))) - 1
	if c < 0 || c >= poolClasses {
		return
	}
	p.bytes[c].Put(&b)
}

// CloneRecord copies what the pipeline reads of a record (coordinates, timestamp, key, value and
// headers) into memory of its own, so that the original can be recycled while the copy waits for the
// dead-letter producer.
func CloneRecord(r *kgo.Record) *kgo.Record {
	c := &kgo.Record{
		Key: slices.Clone(r.Key), Value: slices.Clone(r.Value),
		Timestamp: r.Timestamp, Topic: r.Topic, Partition: r.Partition, Attrs: r.Attrs,
		ProducerEpoch: r.ProducerEpoch, ProducerID: r.ProducerID, LeaderEpoch: r.LeaderEpoch, Offset: r.Offset,
	}
	if len(r.Headers) > 0 {
		c.Headers = make([]kgo.RecordHeader, len(r.Headers))
		for i, h := range r.Headers {
			c.Headers[i] = kgo.RecordHeader{Key: strings.Clone(h.Key), Value: slices.Clone(h.Value)}
		}
	}
	return c
}

// HandOffRows is how many rows a worker hands to the write stage in one message: one channel operation per
// row would cost more than mapping the row.
const HandOffRows = 256

// handOffPool holds the row slices workers hand to the write stage (HandOffRows capacity each).
var handOffPool = sync.Pool{New: func() any {
	s := make([]batcher.Row, 0, HandOffRows)
	return &s
}}

// GetHandOff returns an empty hand-off slice of HandOffRows capacity.
func GetHandOff() []batcher.Row { return (*handOffPool.Get().(*[]batcher.Row))[:0] }

// PutHandOff gives back a hand-off slice whose rows are in the batcher; the rows are cleared so the
// pooled slice keeps nothing alive.
func PutHandOff(rows []batcher.Row) {
	if cap(rows) != HandOffRows {
		return
	}
	clear(rows[:cap(rows)])
	rows = rows[:0]
	handOffPool.Put(&rows)
}
