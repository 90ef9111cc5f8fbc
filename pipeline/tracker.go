package pipeline

import (
	"fmt"
	"sort"
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
// budget (entryBytes each) until retired, and the slice gives back capacity it no longer needs.
type tracker struct {
	pending    []pendingRecord // registered and not yet below the watermark, ascending by offset
	head       int             // pending[:head] have been retired; compacted lazily
	next       int64           // next offset to commit; -1 until a record has been retired
	epoch      int32           // leader epoch of the last retired record
	last       int64           // last registered offset; -1 before the first
	undone     int             // registered records not yet done
	entryBytes int64           // budget charge of one entry, returned when it is retired
	peak       int             // most entries (retired ones included) since the last drain or shrink
}

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

// register adds a record. Offsets must strictly increase: a worker takes records in offset order, and a
// repeated or lower offset would mean two records share a place in the watermark.
func (t *tracker) register(offset int64, epoch int32, bytes int64) error {
	if offset <= t.last {
		return fmt.Errorf("offset %d registered after offset %d: records must arrive in increasing offset order", offset, t.last)
	}
	t.last = offset
	t.pending = append(t.pending, pendingRecord{offset: offset, epoch: epoch, bytes: bytes})
	t.peak = max(t.peak, len(t.pending))
	t.undone++
	return nil
}

// find returns the index in pending of a live entry for offset, or -1.
func (t *tracker) find(offset int64) int {
	live := t.pending[t.head:]
	if len(live) == 0 {
		return -1
	}
	// Offsets are usually contiguous (gaps come from compaction and transaction markers), so the entry
	// is almost always at its distance from the first; search only when it is not.
	if d := offset - live[0].offset; d >= 0 && d < int64(len(live)) && live[d].offset == offset {
		return t.head + int(d)
	}
	i := sort.Search(len(live), func(i int) bool { return live[i].offset >= offset })
	if i == len(live) || live[i].offset != offset {
		return -1
	}
	return t.head + i
}

// done marks a registered record complete, reports whether the committable offset moved, and returns the
// bytes to give back to the budget: what the record held, plus entryBytes for every entry the watermark
// passed. It returns known=false for an offset that is not pending (never registered, or already done),
// so a duplicate acknowledgement cannot be counted twice.
func (t *tracker) done(offset int64) (bytes int64, advanced, known bool) {
	i := t.find(offset)
	if i < 0 || t.pending[i].done {
		return 0, false, false
	}
	e := &t.pending[i]
	e.done = true
	bytes, e.bytes = e.bytes, 0
	t.undone--
	if i != t.head {
		return bytes, false, true
	}
	retired := t.head
	for t.head < len(t.pending) && t.pending[t.head].done {
		r := t.pending[t.head]
		t.next, t.epoch = r.offset+1, r.epoch
		t.head++
	}
	bytes += int64(t.head-retired) * t.entryBytes
	t.compact()
	return bytes, true, true
}

// trackerKeep is the capacity, in entries, a tracker keeps whatever its use (96 KiB): below it, giving
// memory back is not worth the reallocation.
const trackerKeep = 4096

// compact drops the retired prefix once it dominates the slice (amortising the copy), and gives back
// capacity that the entries since the partition last drained (or since the last shrink) used less than a
// quarter of: after a spike (a slow batch holding the watermark back) the slice returns to what the
// partition needs once it drains, while a steady flow keeps its array and allocates nothing.
func (t *tracker) compact() {
	live := len(t.pending) - t.head
	if live > 0 && (t.head <= 1024 || t.head <= len(t.pending)/2) {
		return
	}
	if c := cap(t.pending); c > trackerKeep && 4*t.peak < c {
		p := make([]pendingRecord, live, max(trackerKeep, 2*t.peak))
		copy(p, t.pending[t.head:])
		t.pending, t.peak = p, live
	} else {
		// No clear: entries hold no pointers.
		t.pending = t.pending[:copy(t.pending, t.pending[t.head:])]
	}
	t.head = 0
	if live == 0 {
		t.peak = 0
	}
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
	for _, r := range t.pending[t.head:] {
		if !r.done {
			return r.offset, true
		}
	}
	return 0, false
}

// isPending reports whether offset is registered and not yet done.
func (t *tracker) isPending(offset int64) bool {
	i := t.find(offset)
	return i >= 0 && !t.pending[i].done
}
