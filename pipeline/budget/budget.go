package budget

import (
	"unsafe"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/pipeline/offsets"
)

// What the budget charges: the heap a buffered record and its row keep alive, not just their payload.
// Counting key and value bytes alone let the process hold two to three times writer.max_buffered_bytes
// (docs/PERFORMANCE.md, "Memory"). A record is charged from the moment it is queued until its worker has
// mapped it (RecordCost); from then on only its row and its tracker entry are (RowCost, EntryCost), since
// nothing keeps the record once it is mapped (a row Cassandra refuses is dead-lettered from the record
// read back from Kafka, deadletter/reread.go). A record that fails mapping stays referenced by the dead-letter
// sender until it is produced (as a copy: the original is recycled), so its record cost moves to its
// tracker entry. The estimates follow how franz-go (v1.22) and the write stage hold data:
//
//   - A fetched record is one kgo.Record in its batch's record slab, a pointer to it in the fetch's list,
//     and its own encoding inside the decompressed batch, where its key, value and header bytes live:
//     those bytes plus about a dozen bytes of varint framing (length, attributes, timestamp and offset
//     deltas, key and value lengths). Headers add a kgo.RecordHeader each. The slabs and the decompressed
//     batch stay alive as long as any of their records is, so the worker returns the cost of a chunk of
//     records (one partition's share of a poll) when it has mapped the whole chunk, and charging each
//     record its share is exact only on average.
//   - A mapped row is a batcher.Row, copied into the hand-off slice and then into its batch's row slice,
//     which grows by doubling (charged twice, for the copy and the slice's spare capacity; a partition
//     whose last batch left at least half full starts its next one at that size, and if that one stays
//     small its spare capacity is not charged: at most batcher's maxHintedRows rows of capacity in all,
//     about 0.9 MiB, while those batches are open), plus its
//     packed values and routing key, one allocation (package packed; the rows of a record read by several
//     entries are parts of one, which lives until the record is done, as their charge does).
//   - A tracker entry is two bits and two bytes in its partition's chunks (offsets/tracker.go), held until the
//     watermark passes it, which can be long after its record is done: one slow batch keeps the entries
//     of every record registered after it. Chunks are given back as the watermark passes them, so the
//     memory beyond the entries is at most two partly used chunks per partition (18 KiB).
//
// Checked against the live heap of `sink run` (/debug/pprof/heap?gc=1, sampled every 2 to 3 s) under a
// 1,000,000-record backlog of ~150-byte lz4-compressed JSON records, 6 partitions, shipped defaults: with
// this accounting the live heap was 10 to 73 MB while 0 to 30 MB were charged (32 MiB budget, before
// packed rows); with packed rows and the 48 MiB budget, 77 to 101 MB were live at 45 to 47 MiB charged.
// What is not charged is bounded elsewhere: lz4 decompression buffers (12 MB, fixed), gocql's frames of
// in-flight writes (up to 11 MB), the client's fetches (docs/PIPELINE.md), the pools, at most two partly
// used tracker chunks per partition. When the tracker kept every record until its row was written, 77 to
// 157 MB were live at 17 to 34 MB charged, 84 MB of it record slabs and decompressed batches.
const (
	recordFraming  = 12
	RecordOverhead = int64(unsafe.Sizeof(kgo.Record{})) + int64(unsafe.Sizeof((*kgo.Record)(nil))) + recordFraming
	HeaderOverhead = int64(unsafe.Sizeof(kgo.RecordHeader{}))
	RowOverhead    = 2 * int64(unsafe.Sizeof(batcher.Row{}))
	// EntryCost is what the tracker holds per registered record until the watermark passes it.
	EntryCost = offsets.EntryBytes
)

// RecordCost is what a fetched record pins in memory from the moment it is queued until it is mapped.
func RecordCost(r *kgo.Record) int64 {
	n := RecordOverhead + int64(len(r.Key)+len(r.Value))
	for _, h := range r.Headers {
		n += HeaderOverhead + int64(len(h.Key)+len(h.Value))
	}
	return n
}

// RowCost is what a mapped row holds until it is written.
func RowCost(row *batcher.Row) int64 {
	// One allocation: the values' bytes with a tag and a length each, then the key.
	return RowOverhead + int64(cap(row.Packed)+len(row.Key))
}

// Budget is the pure backpressure state: how many bytes of records and rows each partition holds in
// memory, whether the total is at writer.max_buffered_bytes, and which partitions are paused because
// they are stuck.
//
// Over the budget the poll loop stops polling until enough is released (Pipeline.waitForBudget); it does
// not pause partitions in the client. A pause makes franz-go drop what it already fetched for the
// partition and fetch it again after the resume, so pausing at the budget and resuming well below it
// (to keep that rare) left the sink holding about two thirds of its budget on average, and batches were
// correspondingly smaller. Not polling keeps the client's buffered fetches (bounded by the fetch settings
// and counted in writer.memory_limit's floor) and lets the sink hold its whole budget all the time. Stuck
// partitions are still paused in the client: they must stop while the others go on.
//
// It is not safe for concurrent use and makes no calls: methods report what must change, and the caller
// applies that to the Kafka client under the same lock.
type Budget struct {
	high  int64
	total int64
	held  map[offsets.TopicPartition]int64
	stuck map[offsets.TopicPartition]bool
}

func New(high int64) *Budget {
	return &Budget{
		high:  high,
		held:  make(map[offsets.TopicPartition]int64),
		stuck: make(map[offsets.TopicPartition]bool),
	}
}

// Charge adds n bytes held for tp.
func (b *Budget) Charge(tp offsets.TopicPartition, n int64) {
	b.total += n
	b.held[tp] += n
}

// Release returns n bytes held for tp and reports whether that brought the total back under the budget.
func (b *Budget) Release(tp offsets.TopicPartition, n int64) (underAgain bool) {
	was := b.Over()
	b.total -= n
	if h := b.held[tp] - n; h > 0 {
		b.held[tp] = h
	} else {
		delete(b.held, tp)
	}
	return was && !b.Over()
}

// Over reports whether the bytes held reached the budget: polling waits.
func (b *Budget) Over() bool { return b.total >= b.high }

// SetStuck marks or clears tp as stuck (one of its records cannot make progress). It reports whether tp
// must now be paused or resumed in the client.
func (b *Budget) SetStuck(tp offsets.TopicPartition, stuck bool) (pause, resume bool) {
	if stuck == b.stuck[tp] {
		return false, false
	}
	if stuck {
		b.stuck[tp] = true
		return true, false
	}
	delete(b.stuck, tp)
	return false, true
}

// Forget drops every byte and the stuck mark of tp, when the partition is revoked or lost. It reports
// whether tp was paused (the caller clears the client's pause so a later reassignment starts fetching)
// and whether the total fell back under the budget.
func (b *Budget) Forget(tp offsets.TopicPartition) (wasPaused, underAgain bool) {
	wasPaused = b.stuck[tp]
	delete(b.stuck, tp)
	return wasPaused, b.Release(tp, b.held[tp])
}

// StuckCount is the number of partitions paused because they are stuck.
func (b *Budget) StuckCount() int { return len(b.stuck) }

// Total is the bytes held now.
func (b *Budget) Total() int64 { return b.total }
