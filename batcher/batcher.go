package batcher

import (
	"errors"
	"fmt"
	"time"
)

// Source is where a row came from: its Kafka coordinates. The pipeline acknowledges offsets by it.
type Source struct {
	Topic     string
	Partition int32
	Offset    int64
}

// Target is one Cassandra table a topic writes to. The mapper builds one per (topic, table) and
// every row for that table points at the same *Target, so the pointer is part of a batch's identity.
type Target struct {
	Keyspace string
	Table    string
	// Insert is the INSERT statement, with a bind marker for every column, then for the TTL and
	// the write timestamp when the statement has them. It stays constant so the driver prepares it
	// once, and names the table with its keyspace (ks.table): the session has no keyspace of its own.
	Insert  string
	Columns []string
	// Consistency is the write consistency name (e.g. "LOCAL_QUORUM", as in topics.<name>.consistency);
	// empty means the session default (cassandra.consistency).
	Consistency string
}

// Row is one INSERT bound to its values.
type Row struct {
	Target *Target
	// Key identifies the Cassandra partition inside Target. The mapper fills it with the partition's
	// routing-key bytes (the bytes the driver hashes to a token): for a single-column key the serialized
	// value; for a composite key, per component a 2-byte big-endian length, the bytes, then 0x00.
	// The batcher treats it as opaque and only compares it.
	Key string
	// Values are bound in Target.Columns order, then the TTL (if the insert has one), then the write timestamp.
	Values []any
	// Size is the estimated encoded size of Values in bytes; it drives the MaxBytes limit and memory accounting.
	Size   int
	Source Source
	// EventTime is the record's event time (UTC). The batcher ignores it; the pipeline reports
	// event-time lag and the largest open time buckets from it.
	EventTime time.Time
}

// Batch is a set of rows of one Cassandra partition, in the order they were added.
type Batch struct {
	Target *Target
	Key    string
	Rows   []Row
	Bytes  int // sum of Rows[i].Size
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
	DefaultMaxRows  = 100
	DefaultMaxBytes = 32 << 10
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

// partKey is the identity of an open batch: one Cassandra partition of one table.
type partKey struct {
	target *Target
	key    string
}

// open is the map entry of a batch still accepting rows. seq tells a live queue entry from a stale one.
type open struct {
	batch *Batch
	seq   uint64
}

// queued is one open batch in creation order. Batches flushed by Add leave their entry behind;
// it is recognised as stale (the map no longer holds that seq) and skipped when it reaches the head.
type queued struct {
	key   partKey
	seq   uint64
	first time.Time
}

// Batcher groups rows by (Target, Key) into batches. It is a pure state machine: it starts no
// goroutines and reads no clock; every time comes in as an argument. It is not safe for concurrent use:
// one goroutine (a partition worker) owns it.
type Batcher struct {
	cfg   Config
	open  map[partKey]open
	queue []queued // ordered by first; live entries are exactly the open batches
	head  int      // queue[:head] is consumed
	seq   uint64
	last  time.Time // latest now seen; see Add
	rows  int
	bytes int
	out   [2]*Batch // Add's result buffer
}

// New returns an empty Batcher. Zero Config fields take their defaults; New panics if cfg.Validate
// fails, since limits come from validated configuration and a negative one is a programming error.
func New(cfg Config) *Batcher {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	return &Batcher{cfg: cfg.withDefaults(), open: make(map[partKey]open)}
}

// Add puts r into its partition's batch and returns the batches that must be written now, oldest
// first; usually none. At most two come back: the partition's previous batch when r would push it
// past MaxBytes, and r's own batch when r fills it (MaxRows, or MaxBytes reached, or r alone is larger
// than MaxBytes). The returned slice is reused by the next call to Add; the batches are the caller's.
//
// A time earlier than one already seen is treated as that later time, so batches stay ordered by
// their first row and a clock step backwards delays a flush by at most the step, never forever.
func (b *Batcher) Add(r Row, now time.Time) []*Batch {
	if now.After(b.last) {
		b.last = now
	}
	n := 0
	k := partKey{r.Target, r.Key}
	e, ok := b.open[k]
	if ok && e.batch.Bytes+r.Size > b.cfg.MaxBytes {
		b.out[n] = b.take(k, e.batch)
		n++
		ok = false
	}
	if !ok {
		b.seq++
		e = open{batch: &Batch{Target: r.Target, Key: r.Key}, seq: b.seq}
	}
	bt := e.batch
	bt.Rows = append(bt.Rows, r)
	bt.Bytes += r.Size
	b.rows++
	b.bytes += r.Size
	switch {
	case len(bt.Rows) >= b.cfg.MaxRows || bt.Bytes >= b.cfg.MaxBytes:
		if ok {
			b.take(k, bt)
		} else {
			// Full at its first row: it never entered the map or the queue.
			b.rows -= len(bt.Rows)
			b.bytes -= bt.Bytes
		}
		b.out[n] = bt
		n++
	case !ok:
		b.open[k] = e
		b.queue = append(b.queue, queued{key: k, seq: e.seq, first: b.last})
	}
	if n == 0 {
		return nil
	}
	return b.out[:n]
}

// take removes an open batch from the map; its queue entry becomes stale.
func (b *Batcher) take(k partKey, bt *Batch) *Batch {
	delete(b.open, k)
	b.rows -= len(bt.Rows)
	b.bytes -= bt.Bytes
	return bt
}

// live reports whether a queue entry still stands for an open batch.
func (b *Batcher) live(q queued) (*Batch, bool) {
	e, ok := b.open[q.key]
	if !ok || e.seq != q.seq {
		return nil, false
	}
	return e.batch, true
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
func (b *Batcher) Due(now time.Time) []*Batch {
	var due []*Batch
	for b.head < len(b.queue) {
		q := b.queue[b.head]
		bt, ok := b.live(q)
		if ok && now.Sub(q.first) < b.cfg.Linger {
			break
		}
		b.pop()
		if ok {
			due = append(due, b.take(q.key, bt))
		}
	}
	return due
}

// NextDue returns when the oldest open batch becomes due, and false when no batch is open.
// It is amortised O(1): it only discards stale entries at the head of the queue.
func (b *Batcher) NextDue() (time.Time, bool) {
	for b.head < len(b.queue) {
		q := b.queue[b.head]
		if _, ok := b.live(q); ok {
			return q.first.Add(b.cfg.Linger), true
		}
		b.pop()
	}
	return time.Time{}, false
}

// Flush removes and returns every open batch, oldest first (on revoke and on shutdown).
func (b *Batcher) Flush() []*Batch {
	var all []*Batch
	if len(b.open) > 0 {
		all = make([]*Batch, 0, len(b.open))
	}
	for b.head < len(b.queue) {
		q := b.queue[b.head]
		if bt, ok := b.live(q); ok {
			all = append(all, b.take(q.key, bt))
		}
		b.pop()
	}
	return all
}

// Len returns the number of open batches.
func (b *Batcher) Len() int { return len(b.open) }

// Rows returns the number of rows held in open batches.
func (b *Batcher) Rows() int { return b.rows }

// Bytes returns the sum of Row.Size over the rows held in open batches.
func (b *Batcher) Bytes() int { return b.bytes }
