package offsets

import (
	"fmt"
	"math"
	"math/bits"
	"sync"
)

// Tracker is the offset bookkeeping of one Kafka partition. Records are registered in offset order as the
// worker takes them; they complete in any order (batches to different Cassandra partitions and dead-letter
// produces acknowledge independently). The committable offset is one past the highest registered offset
// below which every registered record is done.
//
// A record may have several parts (a row in each table its Kafka topic feeds, and its dead letter): it
// is done when every part is, each part reported by one call of Done.
//
// Offsets are tracked, not assumed contiguous: compaction and transaction markers leave gaps, so the tracker
// only ever reasons about offsets it was given. It is not safe for concurrent use; the partition's mutex
// guards it.
//
// Memory: an entry lives until it is retired (below the watermark), not until it is done, so one slow
// record keeps the entries of every record registered after it. Under a backlog up to 550,000 records
// over 6 partitions were consumed and not yet committed while cold keys' batches waited. So an entry is
// small: the offsets of the window are covered by chunks of trackerChunkLen consecutive offsets (chunk n
// covers offsets n·trackerChunkLen on), each holding two bits per offset (registered, done) and the two
// bytes of what the record holds against the budget (larger charges, rare, go to a map). That is 2.25
// bytes per offset, a tenth of a struct per record, charged to the byte budget (entryBytes each) until retired. Offsets never
// registered (gaps) are skipped by the watermark; a chunk holding no registered offset is never allocated,
// so a gap of millions (compaction) costs nothing. Chunks come from a pool shared by all partitions and go
// back as the watermark passes them. A record of one part costs nothing more; the parts still to come of a
// record of several are counted in a side array of one byte per offset, allocated only for a chunk that
// holds such a record (and pooled likewise).
type Tracker struct {
	chunks     []*trackerChunk // the window's chunks, ascending
	ids        []int64         // ids[k] is the number of chunks[k]: it covers offsets from ids[k]·trackerChunkLen
	head       int64           // lowest offset not yet passed by the watermark; the scan resumes here
	next       int64           // next offset to commit; -1 until a record has been retired
	epoch      int32           // leader epoch of the last retired record
	last       int64           // last registered offset; -1 before the first
	lastEpoch  int32           // leader epoch of the last registered record
	epochs     []epochMark     // where the leader epoch of registered records changed, ascending
	big        map[int64]int64 // charges of trackerBig bytes or more, by offset
	undone     int             // registered records not yet done
	live       int             // registered records not yet retired
	entryBytes int64           // budget charge of one entry, returned when it is retired
}

// epochMark says that registered records from offset on carry a leader epoch (until the next mark).
type epochMark struct {
	from  int64
	epoch int32
}

// trackerChunkLen offsets make a chunk; a multiple of 64.
const trackerChunkLen = 4096

const trackerWords = trackerChunkLen / 64

type trackerChunk struct {
	reg   [trackerWords]uint64    // registered offsets
	done  [trackerWords]uint64    // registered and done
	bytes [trackerChunkLen]uint16 // what each holds against the budget; trackerBig: see tracker.big
	// more counts, per offset, the parts of its record still to be done beyond one; nil until the chunk
	// holds a record of several parts.
	more *[trackerChunkLen]uint8
}

// MaxParts is the most parts one record may have.
const MaxParts = math.MaxUint8 + 1

// trackerBig marks a charge kept in tracker.big.
const trackerBig = math.MaxUint16

// EntryBytes is what one offset of the window costs: its share of a chunk, rounded up.
const EntryBytes = 3

// trackerChunks holds zeroed chunks no tracker uses, trackerMore zeroed side arrays.
var (
	trackerChunks = sync.Pool{New: func() any { return new(trackerChunk) }}
	trackerMore   = sync.Pool{New: func() any { return new([trackerChunkLen]uint8) }}
)

// NewTracker returns an empty tracker whose entries each hold entryBytes of the budget until retired.
func NewTracker(entryBytes int64) *Tracker {
	return &Tracker{next: -1, last: -1, entryBytes: entryBytes}
}

// chunkOf returns the position in chunks of chunk id, or the position of the first chunk after it and
// false when the window has no chunk id.
func (t *Tracker) chunkOf(id int64) (int, bool) {
	if len(t.ids) == 0 {
		return 0, false
	}
	// Offsets are mostly contiguous, so chunk ids are too: try the distance from the first.
	if k := id - t.ids[0]; k >= 0 && k < int64(len(t.ids)) && t.ids[k] == id {
		return int(k), true
	}
	lo, hi := 0, len(t.ids)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if t.ids[m] < id {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < len(t.ids) && t.ids[lo] == id
}

// slot returns the chunk and index of offset, or nil when no chunk of the window covers it.
func (t *Tracker) slot(offset int64) (*trackerChunk, int) {
	k, ok := t.chunkOf(offset / trackerChunkLen)
	if !ok {
		return nil, 0
	}
	return t.chunks[k], int(offset % trackerChunkLen)
}

// Register adds a record of parts parts (1 to MaxParts), each to be reported done by its own call of Done.
// Offsets must strictly increase: a worker takes records in offset order, and a repeated or lower offset
// would mean two records share a place in the watermark.
func (t *Tracker) Register(offset int64, epoch int32, bytes int64, parts int) error {
	if offset <= t.last {
		return fmt.Errorf("offset %d registered after offset %d: records must arrive in increasing offset order", offset, t.last)
	}
	if offset < 0 {
		return fmt.Errorf("offset %d registered: offsets are not negative", offset)
	}
	if parts < 1 || parts > MaxParts {
		return fmt.Errorf("offset %d registered with %d parts: a record has 1 to %d", offset, parts, MaxParts)
	}
	if t.live == 0 {
		// Nothing in the window: it starts at this offset, however far the log skipped.
		t.head = offset
	}
	if id := offset / trackerChunkLen; len(t.ids) == 0 || t.ids[len(t.ids)-1] < id {
		t.chunks = append(t.chunks, trackerChunks.Get().(*trackerChunk))
		t.ids = append(t.ids, id)
	}
	c, i := t.slot(offset)
	c.reg[i/64] |= 1 << (i % 64)
	if parts > 1 {
		if c.more == nil {
			c.more = trackerMore.Get().(*[trackerChunkLen]uint8)
		}
		c.more[i] = uint8(parts - 1)
	}
	if bytes >= trackerBig || bytes < 0 {
		if t.big == nil {
			t.big = make(map[int64]int64)
		}
		t.big[offset] = bytes
		c.bytes[i] = trackerBig
	} else {
		c.bytes[i] = uint16(bytes)
	}
	if len(t.epochs) == 0 || epoch != t.lastEpoch {
		t.epochs = append(t.epochs, epochMark{offset, epoch})
	}
	t.last, t.lastEpoch = offset, epoch
	t.undone++
	t.live++
	return nil
}

// pendingAt returns the chunk and index of offset if it is registered and not done.
func (t *Tracker) pendingAt(offset int64) (*trackerChunk, int, bool) {
	if offset < t.head || offset > t.last {
		return nil, 0, false
	}
	c, i := t.slot(offset)
	if c == nil {
		return nil, 0, false
	}
	m := uint64(1) << (i % 64)
	return c, i, c.reg[i/64]&m != 0 && c.done[i/64]&m == 0
}

// Done marks one part of a registered record done; with its last part the record is done. It reports
// whether the committable offset moved, and returns the bytes to give back to the budget: once the
// record is done, what it held, plus entryBytes for every entry the watermark passed. It returns
// known=false for an offset that is not pending (never registered, or already done), so an
// acknowledgement beyond a record's parts cannot be counted.
func (t *Tracker) Done(offset int64) (bytes int64, advanced, known bool) {
	c, i, ok := t.pendingAt(offset)
	if !ok {
		return 0, false, false
	}
	if c.more != nil && c.more[i] > 0 {
		c.more[i]--
		return 0, false, true
	}
	c.done[i/64] |= 1 << (i % 64)
	bytes = int64(c.bytes[i])
	if c.bytes[i] == trackerBig {
		bytes = t.big[offset]
		delete(t.big, offset)
	}
	c.bytes[i] = 0
	t.undone--
	retired, lastRetired := t.advance()
	if retired == 0 {
		return bytes, false, true
	}
	t.next = lastRetired + 1
	for len(t.epochs) > 1 && t.epochs[1].from <= lastRetired {
		t.epochs = t.epochs[1:]
	}
	t.epoch = t.epochs[0].epoch
	bytes += int64(retired) * t.entryBytes
	return bytes, true, true
}

// advance moves head past every offset that is done or was never registered, up to the last registered
// one, and returns how many registered records it passed and the highest of them. Chunks it leaves behind
// go back to the pool.
func (t *Tracker) advance() (retired int, lastRetired int64) {
	k, ok := t.chunkOf(t.head / trackerChunkLen)
	for t.head <= t.last {
		if !ok {
			// No chunk: nothing registered here. Jump to the next chunk (there is one: last is in it).
			t.head = t.ids[k] * trackerChunkLen
			ok = true
			continue
		}
		c, i := t.chunks[k], int(t.head%trackerChunkLen)
		w := i / 64
		shift := uint(i % 64)
		base := t.head - int64(shift) // the offset of the word's bit 0
		// The offsets of this word from head on, up to the last registered.
		span := uint64(math.MaxUint64) << shift
		if end := t.last - base; end < 63 {
			span &= (uint64(2) << uint(end)) - 1
		}
		blocking := c.reg[w] &^ c.done[w] & span
		passed := span
		if blocking != 0 {
			passed = span & (uint64(1)<<uint(bits.TrailingZeros64(blocking)) - 1)
		}
		if reg := c.reg[w] & passed; reg != 0 {
			retired += bits.OnesCount64(reg)
			lastRetired = base + int64(63-bits.LeadingZeros64(reg))
		}
		t.head += int64(bits.OnesCount64(passed))
		if blocking != 0 {
			break
		}
		if t.head%trackerChunkLen == 0 {
			// Past chunk k: the next chunk, if the window has it, is k+1.
			k++
			ok = k < len(t.ids) && t.ids[k] == t.head/trackerChunkLen
		}
	}
	t.live -= retired
	// Give back the chunks wholly behind head; keep the one head is in.
	if k > 0 {
		t.release(min(k, len(t.chunks)))
	}
	return retired, lastRetired
}

// release gives the first n chunks back to the pool, zeroed.
func (t *Tracker) release(n int) {
	for _, c := range t.chunks[:n] {
		if c.more != nil {
			*c.more = [trackerChunkLen]uint8{}
			trackerMore.Put(c.more)
		}
		*c = trackerChunk{}
		trackerChunks.Put(c)
	}
	clear(t.chunks[:n])
	t.chunks = t.chunks[n:]
	t.ids = t.ids[n:]
}

// Watermark returns the offset to commit and the leader epoch of the record before it; ok is false until
// the first record is done in order.
func (t *Tracker) Watermark() (offset int64, epoch int32, ok bool) {
	return t.next, t.epoch, t.next >= 0
}

// Last returns the last registered offset; ok is false before the first.
func (t *Tracker) Last() (offset int64, ok bool) { return t.last, t.last >= 0 }

// InFlight is the number of registered records not yet done.
func (t *Tracker) InFlight() int { return t.undone }

// FirstUndone returns the lowest registered offset not yet done, the one holding the watermark back.
func (t *Tracker) FirstUndone() (int64, bool) {
	if t.undone == 0 {
		return 0, false
	}
	for o := t.head; o <= t.last; {
		k, ok := t.chunkOf(o / trackerChunkLen)
		if !ok {
			o = t.ids[k] * trackerChunkLen
			continue
		}
		i := int(o % trackerChunkLen)
		w, shift := i/64, uint(i%64)
		c := t.chunks[k]
		if blocking := (c.reg[w] &^ c.done[w]) >> shift; blocking != 0 {
			if f := o + int64(bits.TrailingZeros64(blocking)); f <= t.last {
				return f, true
			}
			return 0, false
		}
		o += int64(64 - shift)
	}
	return 0, false
}

// IsPending reports whether offset is registered and not yet done.
func (t *Tracker) IsPending(offset int64) bool {
	_, _, ok := t.pendingAt(offset)
	return ok
}
