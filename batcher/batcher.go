// Package batcher groups rows into single-partition batches under row, byte and linger limits.
//
// A Batcher is a pure state machine: rows go in with Add, full batches come back at once, and
// the owner's loop asks NextDue when to call Due for batches whose linger has passed. It reads no
// clock and starts no goroutines, so every rule is testable with made-up times. It is owned by
// one goroutine.
package batcher

import (
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"math/bits"
	"sync"
	"time"
	"unsafe"
)

// Source is where a row came from: its Kafka coordinates (Row.Source), for errors and logs.
type Source struct {
	Topic     string
	Partition int32
	Offset    int64
}

// Target is one Cassandra table a topic writes to. The mapper builds one per (topic, table) and
// every row for that table points at the same *Target, so the pointer is part of a batch's identity.
// A latest-value entry that deletes on a tombstone has a second Target for its table, whose
// statement is the DELETE: its rows are deletes, batched, written and acknowledged like any other.
type Target struct {
	// Topic is the Kafka topic whose records the rows are made of: a row's Kafka partition and offset
	// are its own (Row), its topic is its Target's. Required of a Target whose rows go through the
	// pipeline: its write stage finds the assignment that acknowledges a row by topic and partition.
	Topic    string
	Keyspace string
	Table    string
	// Insert is the INSERT statement, with a bind marker for every column, then for the TTL and
	// the write timestamp when the statement has them. It stays constant so the driver prepares it
	// once, and names the table with its keyspace (ks.table): the session has no keyspace of its own.
	// For a delete target it is the DELETE statement (see Delete).
	Insert string
	// Delete: the statement is a DELETE ... USING TIMESTAMP ? WHERE <Columns> = ?, which binds the
	// write timestamp first (CQL puts USING before WHERE), then the values of Columns (the entity's
	// id columns). ColumnsAt says where a row's column values start.
	Delete  bool
	Columns []string
	// Consistency is the write consistency name (e.g. "LOCAL_QUORUM", as in topics.<name>.consistency);
	// empty means the session default (cassandra.consistency).
	Consistency string
	// Entry is the config entry (topics.<name>) whose rows these are.
	Entry string
	// Bookkeeping: the rows are the sink's own (an entry's pending rollup markers), parts of their
	// records like the entry's rows but not rows of its table: they are not counted as written rows
	// nor seen by the partition-size and event-time metrics.
	Bookkeeping bool
	// Shape is what Cassandra counts of the rows (see DataSize); its zero value says nothing, and
	// DataSize then counts the rows at an upper bound.
	Shape RowShape
}

// ColumnsAt is the index, among a row's packed values, of the value of Columns[0]: 1 for a delete
// target, whose statement binds its write timestamp first, 0 for an INSERT.
func (t *Target) ColumnsAt() int {
	if t.Delete {
		return 1
	}
	return 0
}

// Row is one INSERT (or, for a delete target, one DELETE) bound to its values.
//
// A row is copied by value several times on its way (mapper, batcher, batch, write stage), for every
// row the sink writes, and the batches hold thousands of them: it is kept small (72 bytes) and with
// few pointers for the collector to scan. What every row of a Target shares (the Kafka topic) is the
// Target's, and the times are integers, not time.Time (which carries a location pointer).
type Row struct {
	Target *Target
	// Key identifies the Cassandra partition inside Target. The mapper fills it with the partition's
	// routing-key bytes (the bytes the driver hashes to a token): for a single-column key the serialized
	// value; for a composite key, per component a 2-byte big-endian length, the bytes, then 0x00.
	// The batcher treats it as opaque and only compares it.
	Key string
	// Packed holds the row's values, bound in Target.Columns order, then the TTL (if the insert has one),
	// then the write timestamp, already serialized in the packed row format (package packed): one
	// allocation with no pointers, which the collector never scans. packed.Binder turns it into bind
	// arguments when the batch is written. The batcher never reads it.
	Packed []byte
	// Offset and Partition are the row's record's Kafka offset and partition (its topic is
	// Target.Topic); the pipeline acknowledges offsets by them.
	Offset int64
	// EventMicros is the record's event time in microseconds since the Unix epoch (see EventTime).
	// The batcher ignores it; the pipeline reports event-time lag and the largest open time buckets
	// from it.
	EventMicros int64
	Partition   int32
	// Size is the encoded size of the values in bytes, each with its 4-byte length, plus a fixed
	// overhead per row; it drives the MaxBytes limit and memory accounting.
	Size int32
}

// EventTime is the row's event time, in UTC, to the microsecond.
func (r Row) EventTime() time.Time { return time.UnixMicro(r.EventMicros).UTC() }

// Source is the row's Kafka coordinates.
func (r Row) Source() Source {
	return Source{Topic: r.Target.Topic, Partition: r.Partition, Offset: r.Offset}
}

// EventMicros is t as Row.EventMicros: microseconds since the Unix epoch, saturated at the ends of
// the int64 range (about 292,000 years either side of 1970). Microseconds keep every time a bucket
// or a split generation starts at (whole seconds) and more than Cassandra's timestamps (milliseconds).
func EventMicros(t time.Time) int64 {
	const maxSec = math.MaxInt64 / 1_000_000
	switch s := t.Unix(); {
	case s >= maxSec:
		return math.MaxInt64
	case s <= -maxSec:
		return math.MinInt64
	}
	return t.UnixMicro()
}

// Batch is a set of rows of one Cassandra partition, in the order they were added, or, made by Join,
// of several partitions of one table, each partition's rows contiguous and in their order.
type Batch struct {
	Target *Target
	// Key is the partition's key (Row.Key); empty when the batch joins several partitions.
	Key   string
	Rows  []Row
	Bytes int // sum of Rows[i].Size
	// Partitions is the number of partitions the batch holds: 1, or more for a batch made by Join.
	Partitions int
	// First is when the batch's first row was added (for a joined batch, the earliest of its parts').
	First time.Time

	buf *rowBuf // the pooled backing array of Rows; see Release
}

// Config holds the flush limits of a Batcher.
type Config struct {
	// MaxRows flushes a batch when it holds this many rows. Zero means DefaultMaxRows.
	MaxRows int
	// MaxBytes flushes a batch before a row would push it past this many bytes, and when it reaches
	// it. A single row larger than MaxBytes goes out alone. Zero means DefaultMaxBytes.
	MaxBytes int
	// Linger is the longest a batch waits for more rows after its first row arrived. Zero makes
	// every batch due at the next Due call.
	Linger time.Duration
}

// Defaults used for zero Config fields; they match writer.batch_max_rows and writer.batch_max_bytes.
const (
	DefaultMaxRows  = 400
	DefaultMaxBytes = 64 << 10
)

// Validate reports negative limits.
func (c Config) Validate() error {
	var errs []error
	if c.MaxRows < 0 {
		errs = append(errs, fmt.Errorf("batcher: MaxRows %d is negative; want 0 (default %d) or more", c.MaxRows, DefaultMaxRows))
	}
	if c.MaxBytes < 0 {
		errs = append(errs, fmt.Errorf("batcher: MaxBytes %d is negative; want 0 (default %d) or more", c.MaxBytes, DefaultMaxBytes))
	}
	if c.Linger < 0 {
		errs = append(errs, fmt.Errorf("batcher: Linger %v is negative; want 0 or more", c.Linger))
	}
	return errors.Join(errs...)
}

func (c Config) withDefaults() Config {
	if c.MaxRows == 0 {
		c.MaxRows = DefaultMaxRows
	}
	if c.MaxBytes == 0 {
		c.MaxBytes = DefaultMaxBytes
	}
	return c
}

// keyInline is how long a partition key the node keeps a copy of (see node.kbuf).
const keyInline = 48

// node is an open batch with its bookkeeping. The Batch is embedded so that a batch and its node are
// one allocation; the caller gets &node.Batch.
type node struct {
	Batch
	hash uint64 // of the batch's Target and Key (keyHash)
	open bool   // false once taken: its queue entry is stale
	// chain and chainPrev link the open batches whose hash is the same, the one in the map first:
	// knowing its neighbours, a batch leaves the map without looking its hash up again.
	chain, chainPrev *node
	// prev and next link the node into its size class: the list of open batches with the same number of
	// rows (see Pick), in the order they reached that size.
	prev, next *node
	class      int
	hinted     int // the row capacity it started with from Batcher.filled, 0 if none
	// kbuf holds the partition key when it fits, and Batch.Key then points here: finding a row's batch
	// compares keys, and the first row's own key, long out of the CPU caches by the time the next row
	// arrives, would cost a memory access per row on top of the node's.
	kbuf [keyInline]byte
	// first holds a batch's first row, unless it started from a hint: at a steady rate most batches are
	// a cold partition's, which leave with that one row, and held here it takes no array from the pools
	// (a Get, and a Put on Release, of a pool shared with the writer goroutines). A second row moves the
	// rows to a pooled array, as growing does.
	first [1]Row
}

// sizeList is one size class, oldest arrival at that size first.
type sizeList struct{ head, tail *node }

func (l *sizeList) push(n *node) {
	n.prev, n.next = l.tail, nil
	if l.tail != nil {
		l.tail.next = n
	} else {
		l.head = n
	}
	l.tail = n
}

func (l *sizeList) remove(n *node) {
	if n.prev != nil {
		n.prev.next = n.next
	} else {
		l.head = n.next
	}
	if n.next != nil {
		n.next.prev = n.prev
	} else {
		l.tail = n.prev
	}
	n.prev, n.next = nil, nil
}

// queued is one open batch in creation order. Batches flushed by Add or Pick leave their entry behind;
// it is recognised as stale (its node is no longer open) and skipped when it reaches the head.
type queued struct{ n *node }

// maxClasses bounds the number of size classes; batches with more rows share the last class.
const maxClasses = 1024

// Batcher groups rows by (Target, Key) into batches. It is a pure state machine: it starts no
// goroutines and reads no clock; every time comes in as an argument. It is not safe for concurrent use:
// one goroutine (the pipeline's write stage) owns it. Release alone may be called from any goroutine.
type Batcher struct {
	cfg Config
	// open holds the open batches by keyHash; batches whose hashes collide are chained (node.chain).
	// A map keyed by (Target, Key) would compare every row's key with the batch's first row's key.
	open    map[uint64]*node
	n       int // open batches
	seed    maphash.Seed
	hash    func(*Batcher, *Target, string) uint64 // keyHash; tests force collisions
	queue   []queued                               // ordered by first; live entries are exactly the open batches
	head    int                                    // queue[:head] is consumed
	classes []sizeList
	last    time.Time // latest now seen; see Add
	rows    int
	bytes   int
	out     [2]*Batch // Add's result buffer
	// filled holds, by keyHash, the row capacity of partitions whose last batch left at least half full
	// (take) and that have had no row since: the next batch of such a partition starts at that capacity
	// (newNode), where growing from one row by doubling copied each row about once more and cleared the
	// outgrown arrays. A partition busy enough to half fill a batch is likely to stay busy; one that does
	// not gives the hint up with its next batch, which holds the array until it leaves: spare capacity
	// not charged to the byte budget, so the open batches started from hints hold at most maxHintedRows
	// rows of capacity in all (hinted). A colliding hash only misplaces a capacity. Bounded by maxFilled.
	filled map[uint64]int
	hinted int
}

// maxHintedRows bounds the row capacity open batches hold from start-size hints (about 0.9 MiB of
// rows): enough for the few busy partitions the hint is for, while a burst that half filled thousands
// of partitions once cannot leave thousands of large, nearly empty arrays outside the byte budget.
const maxHintedRows = 8192

// maxFilled bounds Batcher.filled: past it the hints are dropped and gathered afresh, so partitions that
// filled once and were never written again cannot grow it.
const maxFilled = 4096

// New returns an empty Batcher. Zero Config fields take their defaults; New panics if cfg.Validate
// fails, since limits come from validated configuration and a negative one is a programming error.
func New(cfg Config) *Batcher {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	cfg = cfg.withDefaults()
	return &Batcher{cfg: cfg, open: make(map[uint64]*node), seed: maphash.MakeSeed(), hash: keyHash,
		classes: make([]sizeList, min(cfg.MaxRows, maxClasses)+1), filled: make(map[uint64]int)}
}

// keyHash hashes a partition of a table: the key's bytes and the Target's address (one Target per
// table, never moved).
func keyHash(b *Batcher, t *Target, key string) uint64 {
	return maphash.String(b.seed, key) ^ uint64(uintptr(unsafe.Pointer(t)))*0x9e3779b97f4a7c15
}

// find returns the open batch of (t, key), the hash to file a new one under and the open batches
// already filed under that hash (the head of their chain, for file).
func (b *Batcher) find(t *Target, key string) (*node, uint64, *node) {
	h := b.hash(b, t, key)
	head := b.open[h]
	for e := head; e != nil; e = e.chain {
		if e.Target == t && e.Key == key {
			return e, h, head
		}
	}
	return nil, h, head
}

// newNode is an open batch for r's partition, not yet filed.
func (b *Batcher) newNode(r *Row, h uint64) *node {
	e := &node{Batch: Batch{Target: r.Target, Key: r.Key, Partitions: 1, First: b.last}, hash: h}
	if c, ok := b.filled[h]; ok {
		delete(b.filled, h)
		if b.hinted+c <= maxHintedRows {
			e.buf = getRowBuf(c)
			e.Rows = e.buf.rows[:0]
			e.hinted = c
			b.hinted += c
		}
	}
	if e.buf == nil {
		e.Rows = e.first[:0]
	}
	if len(r.Key) > 0 && len(r.Key) <= keyInline {
		copy(e.kbuf[:], r.Key)
		e.Key = unsafe.String(&e.kbuf[0], len(r.Key))
	}
	return e
}

// file adds an open batch to the map, ahead of head, the batches already filed under its hash (find's).
func (b *Batcher) file(e, head *node) {
	e.chain = head
	if head != nil {
		head.chainPrev = e
	}
	b.open[e.hash] = e
	e.open = true
	b.n++
}

// unfile removes an open batch from the map.
func (b *Batcher) unfile(e *node) {
	switch {
	case e.chainPrev != nil: // not the one in the map
		e.chainPrev.chain = e.chain
		if e.chain != nil {
			e.chain.chainPrev = e.chainPrev
		}
	case e.chain != nil:
		e.chain.chainPrev = nil
		b.open[e.hash] = e.chain
	default:
		delete(b.open, e.hash)
	}
	e.chain, e.chainPrev, e.open = nil, nil, false
	b.n--
}

// Add puts a copy of *r into its partition's batch and returns the batches that must be written now,
// oldest first; usually none. At most two come back: the partition's previous batch when r would push
// it past MaxBytes, and r's own batch when r fills it (MaxRows, or MaxBytes reached, or r alone is
// larger than MaxBytes). The returned slice is reused by the next call to Add; the batches are the
// caller's. r is taken by address: passed by value a row was copied twice more on its way into the
// batch, for every row the sink writes.
//
// A time earlier than one already seen is treated as that later time, so batches stay ordered by
// their first row and a clock step backwards delays a flush by at most the step, never forever.
func (b *Batcher) Add(r *Row, now time.Time) []*Batch {
	if now.After(b.last) {
		b.last = now
	}
	n := 0
	e, h, head := b.find(r.Target, r.Key)
	ok := e != nil
	if ok && e.Bytes+int(r.Size) > b.cfg.MaxBytes {
		b.out[n] = b.take(e)
		n++
		ok = false
		head = b.open[h] // e may have been it
	}
	if !ok {
		e = b.newNode(r, h)
	}
	appendRow(&e.Batch, r)
	b.rows++
	b.bytes += int(r.Size)
	switch {
	case len(e.Rows) >= b.cfg.MaxRows || e.Bytes >= b.cfg.MaxBytes:
		if ok {
			b.take(e)
		} else {
			// Full at its first row: it never entered the map, the queue or a size class.
			b.rows -= len(e.Rows)
			b.bytes -= e.Bytes
			b.unhint(e)
		}
		b.out[n] = &e.Batch
		n++
	case !ok:
		b.file(e, head)
		b.queue = append(b.queue, queued{n: e})
		b.classes[1].push(e)
		e.class = 1
	default:
		if c := min(len(e.Rows), len(b.classes)-1); c != e.class {
			b.classes[e.class].remove(e)
			b.classes[c].push(e)
			e.class = c
		}
	}
	if n == 0 {
		return nil
	}
	return b.out[:n]
}

// take removes an open batch from the map and its size class; its queue entry becomes stale.
func (b *Batcher) take(e *node) *Batch {
	if 2*len(e.Rows) >= b.cfg.MaxRows {
		if len(b.filled) >= maxFilled {
			clear(b.filled)
		}
		b.filled[e.hash] = cap(e.Rows)
	}
	b.unhint(e)
	b.unfile(e)
	b.classes[e.class].remove(e)
	b.rows -= len(e.Rows)
	b.bytes -= e.Bytes
	return &e.Batch
}

// unhint gives back the capacity e took from a start-size hint, as it leaves the batcher.
func (b *Batcher) unhint(e *node) {
	b.hinted -= e.hinted
	e.hinted = 0
}

// Pick removes and returns the open batch that is best to send when a writer is free and no batch is
// full: the one with the largest product of its rows and its age (now minus its first row's arrival),
// or nil when no batch is open.
//
// Why that product: a single-partition batch costs Cassandra and the driver a fixed amount per request
// plus an amount per row, so under load the sink wants few, large requests, while the byte budget bounds
// how many rows may wait. Sending the oldest batch first holds every partition for about the same time,
// so a partition that receives one row a second goes out as one-row batches. Holding a partition for a
// time inversely proportional to the square root of its row rate minimises the requests per row for the
// rows held, and sending the largest rows×age first is that rule without knowing the rates. A simulation
// of the benchmark's key skew (Zipf 1.1 over 10,000 keys, 100 rows per batch at most) gives 10 to 25% more
// rows per batch than oldest-first for the same rows held (TestPickBeatsOldestFirst). A batch
// waiting alone still wins eventually, since its age grows.
//
// Only the longest-waiting batch of each size class is considered, so Pick costs one comparison per
// class (at most min(MaxRows, 1024)), not one per open batch.
func (b *Batcher) Pick(now time.Time) *Batch {
	var best *node
	var score float64
	for c := 1; c < len(b.classes); c++ {
		e := b.classes[c].head
		if e == nil {
			continue
		}
		// +1 ns: rows that arrived at now still rank by their count.
		if s := float64(len(e.Rows)) * float64(max(now.Sub(e.First), 0)+1); best == nil || s > score {
			best, score = e, s
		}
	}
	if best == nil {
		return nil
	}
	return b.take(best)
}

// live reports whether a queue entry still stands for an open batch.
func (b *Batcher) live(q queued) (*node, bool) {
	return q.n, q.n.open
}

// pop drops the head of the queue and compacts the slice once half of it is consumed,
// so the queue costs amortised O(1) per batch and never grows past twice the open batches.
func (b *Batcher) pop() {
	b.queue[b.head] = queued{}
	b.head++
	if b.head == len(b.queue) {
		b.queue = b.queue[:0]
		b.head = 0
	} else if b.head >= 64 && b.head*2 >= len(b.queue) {
		m := copy(b.queue, b.queue[b.head:])
		clear(b.queue[m:])
		b.queue = b.queue[:m]
		b.head = 0
	}
}

// Due removes and returns the batches whose first row is at least Linger older than now, oldest first.
func (b *Batcher) Due(now time.Time) []*Batch { return b.DueN(now, math.MaxInt) }

// DueN is Due returning at most n batches, the oldest; the other due batches stay open and keep filling.
func (b *Batcher) DueN(now time.Time, n int) []*Batch {
	var due []*Batch
	for b.head < len(b.queue) && len(due) < n {
		q := b.queue[b.head]
		e, ok := b.live(q)
		if ok && now.Sub(q.n.First) < b.cfg.Linger {
			break
		}
		b.pop()
		if ok {
			due = append(due, b.take(e))
		}
	}
	return due
}

// Oldest removes and returns the open batch whose first row arrived first, or nil when none is open.
func (b *Batcher) Oldest() *Batch {
	for b.head < len(b.queue) {
		q := b.queue[b.head]
		b.pop()
		if e, ok := b.live(q); ok {
			return b.take(e)
		}
	}
	return nil
}

// NextDue returns when the oldest open batch becomes due, and false when no batch is open.
// It is amortised O(1): it only discards stale entries at the head of the queue.
func (b *Batcher) NextDue() (time.Time, bool) {
	for b.head < len(b.queue) {
		q := b.queue[b.head]
		if _, ok := b.live(q); ok {
			return q.n.First.Add(b.cfg.Linger), true
		}
		b.pop()
	}
	return time.Time{}, false
}

// Flush removes and returns every open batch, oldest first (on revoke and on shutdown).
func (b *Batcher) Flush() []*Batch {
	var all []*Batch
	if b.n > 0 {
		all = make([]*Batch, 0, b.n)
	}
	for b.head < len(b.queue) {
		q := b.queue[b.head]
		if e, ok := b.live(q); ok {
			all = append(all, b.take(e))
		}
		b.pop()
	}
	return all
}

// Len returns the number of open batches.
func (b *Batcher) Len() int { return b.n }

// Rows returns the number of rows held in open batches.
func (b *Batcher) Rows() int { return b.rows }

// Bytes returns the sum of Row.Size over the rows held in open batches.
func (b *Batcher) Bytes() int { return b.bytes }

// Row slices are pooled by capacity (powers of two from minRows): a batch grows its Rows by doubling
// like append would, but the outgrown array goes back to its pool and Release returns the last one, so
// under a steady load batching allocates no row arrays at all (they were a tenth of what the sink
// allocated per event). They start at one row: under skew most open batches are the cold keys' with a
// row or two, and with four slots each those arrays were the largest item of the live heap.
const minRows = 1

type rowBuf struct{ rows []Row }

var rowPools [40]sync.Pool // by bits.Len(capacity)

func getRowBuf(capacity int) *rowBuf {
	if rb, ok := rowPools[bits.Len(uint(capacity))].Get().(*rowBuf); ok {
		return rb
	}
	return &rowBuf{rows: make([]Row, 0, capacity)}
}

func putRowBuf(rb *rowBuf, rows []Row) {
	clear(rows) // drop the references to keys, targets and values
	rb.rows = rows[:0]
	rowPools[bits.Len(uint(cap(rows)))].Put(rb)
}

// appendRow appends r to bt's rows, growing them through the pool. Rows not in a pooled array are the
// node's first row (node.first): cleared once moved, so that it keeps nothing alive.
func appendRow(bt *Batch, r *Row) {
	if len(bt.Rows) == cap(bt.Rows) {
		nb := getRowBuf(max(2*cap(bt.Rows), minRows))
		nb.rows = append(nb.rows[:0], bt.Rows...)
		if bt.buf != nil {
			putRowBuf(bt.buf, bt.Rows)
		} else {
			clear(bt.Rows)
		}
		bt.buf, bt.Rows = nb, nb.rows
	}
	bt.Rows = append(bt.Rows, *r)
	bt.Bytes += int(r.Size)
}

// Join returns one batch holding the rows of bs, partition after partition, and releases bs. The
// batches must be of one Target and of distinct partitions (batches taken out of one Batcher at once
// are); the caller decides which may share a request. One batch comes back as it is.
func Join(bs []*Batch) *Batch {
	if len(bs) == 1 {
		return bs[0]
	}
	n := 0
	for _, b := range bs {
		n += len(b.Rows)
	}
	rb := getRowBuf(1 << bits.Len(uint(n-1))) // a power of two, as appendRow asks: the pool hands out no smaller array
	j := &Batch{Target: bs[0].Target, buf: rb, Rows: rb.rows[:0], First: bs[0].First}
	for _, b := range bs {
		if b.First.Before(j.First) {
			j.First = b.First
		}
		j.Rows = append(j.Rows, b.Rows...)
		j.Bytes += b.Bytes
		j.Partitions += max(b.Partitions, 1)
		Release(b)
	}
	if j.Partitions == 1 {
		j.Key = bs[0].Key
	}
	return j
}

// EachPartition calls fn with each partition of b in turn: a view of b holding that partition's rows.
func (b *Batch) EachPartition(fn func(part *Batch)) {
	if b.Partitions <= 1 {
		fn(b)
		return
	}
	for i := 0; i < len(b.Rows); {
		j := i + PartitionLen(b.Rows[i:])
		part := Batch{Target: b.Target, Key: b.Rows[i].Key, Rows: b.Rows[i:j:j], Partitions: 1}
		for k := i; k < j; k++ {
			part.Bytes += int(b.Rows[k].Size)
		}
		fn(&part)
		i = j
	}
}

// PartitionLen is the number of rows at the start of rows that belong to the partition of rows[0]: the
// length of its run, since Join keeps each partition's rows together. 0 for no rows.
func PartitionLen(rows []Row) int {
	n := min(len(rows), 1)
	for n < len(rows) && rows[n].Key == rows[0].Key {
		n++
	}
	return n
}

// Release returns the batch's row array for reuse by later batches. Call it once, when nothing will read
// bt.Rows again (after the write and everything that looks at the written rows); bt.Rows is nil after.
// Not calling it is safe: the array is then collected as garbage. Safe for concurrent use.
func Release(bt *Batch) {
	if bt == nil || bt.buf == nil {
		return
	}
	putRowBuf(bt.buf, bt.Rows)
	bt.buf, bt.Rows = nil, nil
}
