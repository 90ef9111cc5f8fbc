package pipeline

import (
	"fmt"
	"sort"
	"sync"
)

// tracker is the offset bookkeeping of one Kafka partition. Records are registered in offset order as the
// worker takes them; they complete in any order (batches to different Cassandra partitions and dead-letter
// produces acknowledge independently). The committable offset is one past the highest registered offset
// below which every registered record is done.
//
// Offsets are tracked, not assumed contiguous: compaction and transaction markers leave gaps, so the tracker
// only ever reasons about offsets it was given. It is not safe for concurrent use; the partition's mutex
// guards it.
//
// Memory: an entry lives until it is retired (below the watermark), not until it is done, so one slow
// record keeps the entries of every record registered after it. Under a backlog that span was measured at
// over 100,000 entries per partition while a cold key's batch waited. So entries are charged to the byte
// budget (entryBytes each) until retired. They live in fixed chunks of trackerChunkLen entries, taken
// from a pool shared by all partitions and given back as the watermark passes them: the span can grow and
// shrink by a hundred thousand entries every few seconds without reallocating and copying a slice each
// time (a growing slice was 80 of the 540 bytes allocated per event under the backlog).
type tracker struct {
	chunks     []*trackerChunk // the live entries, ascending by offset, from chunks[0][first]
	first      int             // index in chunks[0] of the first live entry
	n          int             // live entries: registered and not yet below the watermark
	next       int64           // next offset to commit; -1 until a record has been retired
	epoch      int32           // leader epoch of the last retired record
	last       int64           // last registered offset; -1 before the first
	undone     int             // registered records not yet done
	entryBytes int64           // budget charge of one entry, returned when it is retired
}

// trackerChunkLen entries make a chunk (24 KiB).
const trackerChunkLen = 1024

type trackerChunk [trackerChunkLen]pendingRecord

// trackerChunks holds chunks no tracker uses. Entries hold no pointers, so a chunk goes back as it is;
// register overwrites every field of an entry it uses.
var trackerChunks = sync.Pool{New: func() any { return new(trackerChunk) }}

// pendingRecord is the whole of what the pipeline keeps of a record between mapping and done, besides
// its row: no reference to the record itself, which would pin its franz-go slab, decompressed batch and
// fetch response until the row is written. A row Cassandra refuses is dead-lettered from the record
// read back from Kafka (reread.go).
type pendingRecord struct {
	offset int64
	epoch  int32
	done   bool
	bytes  int64 // what the record holds against the byte budget until it is done, besides its entry
}

// newTracker returns an empty tracker whose entries each hold entryBytes of the budget until retired.
func newTracker(entryBytes int64) *tracker {
	return &tracker{next: -1, last: -1, entryBytes: entryBytes}
}

// at is live entry i (0 is the first not yet retired).
func (t *tracker) at(i int) *pendingRecord {
	j := t.first + i
	return &t.chunks[j/trackerChunkLen][j%trackerChunkLen]
}

// register adds a record. Offsets must strictly increase: a worker takes records in offset order, and a
// repeated or lower offset would mean two records share a place in the watermark.
func (t *tracker) register(offset int64, epoch int32, bytes int64) error {
	if offset <= t.last {
		return fmt.Errorf("offset %d registered after offset %d: records must arrive in increasing offset order", offset, t.last)
	}
	t.last = offset
	if (t.first+t.n)/trackerChunkLen == len(t.chunks) {
		t.chunks = append(t.chunks, trackerChunks.Get().(*trackerChunk))
	}
	*t.at(t.n) = pendingRecord{offset: offset, epoch: epoch, bytes: bytes}
	t.n++
	t.undone++
	return nil
}

// find returns the index among the live entries of the one for offset, or -1.
func (t *tracker) find(offset int64) int {
	if t.n == 0 {
		return -1
	}
	// Offsets are usually contiguous (gaps come from compaction and transaction markers), so the entry
	// is almost always at its distance from the first; search only when it is not.
	if d := offset - t.at(0).offset; d >= 0 && d < int64(t.n) && t.at(int(d)).offset == offset {
		return int(d)
	}
	i := sort.Search(t.n, func(i int) bool { return t.at(i).offset >= offset })
	if i == t.n || t.at(i).offset != offset {
		return -1
	}
	return i
}

// done marks a registered record complete, reports whether the committable offset moved, and returns the
// bytes to give back to the budget: what the record held, plus entryBytes for every entry the watermark
// passed. It returns known=false for an offset that is not pending (never registered, or already done),
// so a duplicate acknowledgement cannot be counted twice.
func (t *tracker) done(offset int64) (bytes int64, advanced, known bool) {
	i := t.find(offset)
	if i < 0 {
		return 0, false, false
	}
	e := t.at(i)
	if e.done {
		return 0, false, false
	}
	e.done = true
	bytes, e.bytes = e.bytes, 0
	t.undone--
	if i != 0 {
		return bytes, false, true
	}
	retired := 0
	for t.n > 0 {
		r := t.at(0)
		if !r.done {
			break
		}
		t.next, t.epoch = r.offset+1, r.epoch
		t.n--
		retired++
		if t.first++; t.first == trackerChunkLen {
			t.first = 0
			trackerChunks.Put(t.chunks[0])
			t.chunks[0] = nil
			t.chunks = t.chunks[1:]
		}
	}
	if t.n == 0 && len(t.chunks) > 0 {
		// Empty: start again at the front of the chunk kept, so a steady in-order flow stays in it.
		t.first = 0
	}
	bytes += int64(retired) * t.entryBytes
	return bytes, true, true
}

// watermark returns the offset to commit and the leader epoch of the record before it; ok is false until
// the first record is done in order.
func (t *tracker) watermark() (offset int64, epoch int32, ok bool) {
	return t.next, t.epoch, t.next >= 0
}

// inFlight is the number of registered records not yet done.
func (t *tracker) inFlight() int { return t.undone }

// firstUndone returns the lowest registered offset not yet done, the one holding the watermark back.
func (t *tracker) firstUndone() (int64, bool) {
	for i := range t.n {
		if r := t.at(i); !r.done {
			return r.offset, true
		}
	}
	return 0, false
}

// isPending reports whether offset is registered and not yet done.
func (t *tracker) isPending(offset int64) bool {
	i := t.find(offset)
	return i >= 0 && !t.at(i).done
}
