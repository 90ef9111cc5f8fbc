package pipeline

import (
	"unsafe"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bucketsink/sink/batcher"
)

// What the budget charges: the heap a buffered record and its row keep alive, not just their payload.
// Counting key and value bytes alone let the process hold two to three times writer.max_buffered_bytes
// (docs/PERFORMANCE.md, "Memory"). A record is charged from the moment it is queued until its worker has
// mapped it (recordCost); from then on only its row and its tracker entry are (rowCost, entryCost), since
// nothing keeps the record once it is mapped (a row Cassandra refuses is dead-lettered from the record
// read back from Kafka, reread.go). A record that fails mapping stays referenced by the dead-letter
// sender until it is produced, so its record cost moves to its tracker entry. The estimates follow how
// franz-go (v1.22) and the write stage hold data:
//
//   - A fetched record is one kgo.Record in its batch's record slab, a pointer to it in the fetch's list,
//     and its own encoding inside the decompressed batch, where its key, value and header bytes live:
//     those bytes plus about a dozen bytes of varint framing (length, attributes, timestamp and offset
//     deltas, key and value lengths). Headers add a kgo.RecordHeader each. The slabs and the decompressed
//     batch stay alive as long as any of their records is, so the worker returns the cost of a chunk of
//     records (one partition's share of a poll) when it has mapped the whole chunk, and charging each
//     record its share is exact only on average.
//   - A mapped row is a batcher.Row, copied into the hand-off slice and then into its batch's row slice,
//     which grows by append (charged twice, for the copy and the slice's spare capacity); its values are
//     interfaces (16 bytes each) boxing typed slots and strings in the mapper's row block, whose bytes
//     Row.Size estimates (encoded size), plus the routing key.
//   - A tracker entry is one pendingRecord in its partition's slice, held until the watermark passes it,
//     which can be long after its record is done: one slow batch keeps the entries of every record
//     registered after it. The slice grows by append and drops its retired prefix lazily (charged twice).
//
// Checked against the live heap of `sink run` (/debug/pprof/heap?gc=1, sampled every 2 to 3 s) under a
// 1,000,000-record backlog of ~150-byte lz4-compressed JSON records, 6 partitions, shipped defaults: with
// this accounting the live heap was 10 to 73 MB while 0 to 30 MB were charged. What is not charged is
// bounded elsewhere: lz4 decompression buffers (12 MB, fixed), gocql's frames of in-flight writes (up to
// 11 MB), the client's fetches (docs/PIPELINE.md), the tracker slices' spare capacity (up to 9 MB). When
// the tracker kept every record until its row was written, 77 to 157 MB were live at 17 to 34 MB
// charged, 84 MB of it record slabs and decompressed batches.
const (
	recordFraming  = 12
	recordOverhead = int64(unsafe.Sizeof(kgo.Record{})) + int64(unsafe.Sizeof((*kgo.Record)(nil))) + recordFraming
	headerOverhead = int64(unsafe.Sizeof(kgo.RecordHeader{}))
	rowOverhead    = 2 * int64(unsafe.Sizeof(batcher.Row{}))
	valueOverhead  = int64(unsafe.Sizeof(any(nil)))
	// entryCost is what the tracker holds per registered record until the watermark passes it.
	entryCost = 2 * int64(unsafe.Sizeof(pendingRecord{}))
)

// recordCost is what a fetched record pins in memory from the moment it is queued until it is mapped.
func recordCost(r *kgo.Record) int64 {
	n := recordOverhead + int64(len(r.Key)+len(r.Value))
	for _, h := range r.Headers {
		n += headerOverhead + int64(len(h.Key)+len(h.Value))
	}
	return n
}

// rowCost is what a mapped row holds until it is written.
func rowCost(row *batcher.Row) int64 {
	return rowOverhead + int64(row.Size) + int64(len(row.Key)) + valueOverhead*int64(len(row.Values))
}

// topicPartition names one Kafka partition.
type topicPartition struct {
	topic     string
	partition int32
}

// pauseReason says why fetching of a partition is paused; a partition resumes only when it has none.
type pauseReason uint8

const (
	pausedOverBudget pauseReason = 1 << iota // the process holds more buffered bytes than writer.max_buffered_bytes
	pausedStuck                              // a record of the partition cannot be written or dead-lettered
)

// budget is the pure backpressure state: how many bytes of records and rows each partition holds in
// memory, and which partitions are paused for what reason. Charging bytes past the high-water mark pauses
// the charged partition (a partition holding nothing is never paused for the budget: it is not the cause);
// releasing bytes down to the low-water mark resumes every partition paused for the budget. The gap
// between the marks stops pause/resume flapping on every record.
//
// It is not safe for concurrent use and makes no calls: methods return the partitions whose fetch state
// must change, and the caller applies that to the Kafka client under the same lock.
type budget struct {
	high, low int64
	total     int64
	held      map[topicPartition]int64
	paused    map[topicPartition]pauseReason
}

func newBudget(high int64) *budget {
	return &budget{
		high:   high,
		low:    high / 2,
		held:   make(map[topicPartition]int64),
		paused: make(map[topicPartition]pauseReason),
	}
}

// charge adds n bytes held for tp and reports whether tp must now be paused.
func (b *budget) charge(tp topicPartition, n int64) (pause bool) {
	b.total += n
	b.held[tp] += n
	if b.total > b.high && b.held[tp] > 0 {
		return b.addReason(tp, pausedOverBudget)
	}
	return false
}

// release returns n bytes held for tp and lists the partitions to resume, if the total fell to the
// low-water mark.
func (b *budget) release(tp topicPartition, n int64) (resume []topicPartition) {
	b.total -= n
	if h := b.held[tp] - n; h > 0 {
		b.held[tp] = h
	} else {
		delete(b.held, tp)
	}
	if b.total > b.low {
		return nil
	}
	for p, r := range b.paused {
		if r&pausedOverBudget == 0 {
			continue
		}
		if b.removeReason(p, pausedOverBudget) {
			resume = append(resume, p)
		}
	}
	return resume
}

// setStuck pauses or unpauses tp because one of its records cannot make progress. It reports whether the
// fetch state of tp changes.
func (b *budget) setStuck(tp topicPartition, stuck bool) (pause, resume bool) {
	if stuck {
		return b.addReason(tp, pausedStuck), false
	}
	return false, b.removeReason(tp, pausedStuck)
}

// forget drops every byte and pause of tp, when the partition is revoked or lost. It reports whether tp
// was paused (the caller clears the client's pause so a later reassignment starts fetching) and lists
// other partitions that may resume because the total fell.
func (b *budget) forget(tp topicPartition) (wasPaused bool, resume []topicPartition) {
	_, wasPaused = b.paused[tp]
	delete(b.paused, tp)
	return wasPaused, b.release(tp, b.held[tp])
}

func (b *budget) addReason(tp topicPartition, r pauseReason) (changed bool) {
	old := b.paused[tp]
	b.paused[tp] = old | r
	return old == 0
}

func (b *budget) removeReason(tp topicPartition, r pauseReason) (changed bool) {
	old, ok := b.paused[tp]
	if !ok || old&r == 0 {
		return false
	}
	if n := old &^ r; n != 0 {
		b.paused[tp] = n
		return false
	}
	delete(b.paused, tp)
	return true
}

// pausedCount is the number of partitions whose fetching is paused.
func (b *budget) pausedCount() int { return len(b.paused) }
