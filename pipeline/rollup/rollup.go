// Package rollup is the pipeline's rollup room: the pending markers each raw row adds to its record
// (Entry.Markers, parts of the record like its rows, so an offset is committed only once they are
// durable), and the worker of one owned Kafka partition that computes the windows its markers say are
// due and deletes each marker at the timestamp it read (docs/DESIGN.md, "Rollups").
//
// An Entry is immutable and shared by the workers of every partition. A Worker is one goroutine, run by
// Run and waited for by its owner (the partition); it shares nothing with other workers.
package rollup

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"time"
	"unsafe"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/cassandra"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/internal/backoff"
	"github.com/bucketsink/sink/packed"
	"github.com/bucketsink/sink/pipeline/metrics"
	"github.com/bucketsink/sink/routing"
	"github.com/bucketsink/sink/schema"
)

// Marker is one pending window.
type Marker = cassandra.Marker

// Store is the pending table and the recomputation (recompute.Store, over cassandra.Pending; tests
// use doubles).
type Store interface {
	// Due lists up to limit markers of (entry, partition) due at or before upTo, oldest first.
	Due(ctx context.Context, entry string, partition int32, upTo time.Time, limit int) ([]Marker, error)
	// Done deletes marker m at the timestamp it was written with.
	Done(ctx context.Context, entry string, partition int32, m Marker) error
	// Mark writes marker m at its Timestamp.
	Mark(ctx context.Context, entry string, partition int32, m Marker) error
	// Recompute computes and writes the row of rollup name for the entity and the window holding at,
	// and says how many partitions it read.
	Recompute(ctx context.Context, entry, name string, entity []byte, at time.Time) (partitions int, err error)
}

// Entry is the rollups of one entry.
type Entry struct {
	Name     string
	keyspace string
	ids      int             // id columns: the entity's components in the routing key
	raw      []schema.Rollup // the rollups made of raw rows: one marker each per raw row
	name     []byte          // Name, and rawNames the names of raw, as a marker's text values
	rawNames [][]byte
	coarser  map[string][]schema.Rollup
	target   *batcher.Target
}

// Entries describes the rollups of every entry of cfg that has some, by entry name.
func Entries(cfg *config.Config) (map[string]*Entry, error) {
	out := map[string]*Entry{}
	has := false
	for _, t := range cfg.Topics {
		has = has || len(t.Rollups) > 0
	}
	if !has {
		return out, nil // nothing to describe: a config without rollups costs no second validation
	}
	tables, all, err := schema.DescribeWithRollups(cfg)
	if err != nil {
		return nil, err
	}
	for name, rs := range all {
		t := tables[name]
		tc := cfg.Topics[name]
		e := &Entry{Name: name, name: []byte(name), keyspace: t.Keyspace, ids: len(t.IDColumns()), coarser: map[string][]schema.Rollup{},
			target: &batcher.Target{Topic: tc.Topic, Keyspace: t.Keyspace, Table: cassandra.PendingTable,
				Insert: cassandra.PendingInsert(t.Keyspace), Columns: cassandra.PendingColumns, Consistency: tc.Consistency, Entry: name, Bookkeeping: true,
				// (entry, kafka_partition), then due, rollup, entity and window_start, and record_offset,
				// at the marker's own write timestamp: what Cassandra counts of the rows (batcher.DataSize).
				Shape: batcher.RowShape{KeyColumns: 2, Clustering: 4, Regular: 1, Timestamp: true}}}
		for _, r := range rs {
			if r.From == "" {
				e.raw = append(e.raw, r)
				e.rawNames = append(e.rawNames, []byte(r.Name))
			} else {
				e.coarser[r.From] = append(e.coarser[r.From], r)
			}
		}
		out[name] = e
	}
	return out, nil
}

// Parts is how many markers each raw row of the entry adds to its record.
func (e *Entry) Parts() int { return len(e.raw) }

// Markers appends to dst the markers of raw row row (one per rollup made of raw rows): its entity
// (the id components of its routing key), each window its event time falls in, due at the window's
// end plus grace, written at the record's offset. A marker that stands in st (Standing.Rely, with the
// row's record) is left out: the record relies on it. s is the caller's scratch (one per goroutine):
// a marker appended costs one allocation, the row's own copy of its values and key; one left out
// costs none.
func (e *Entry) Markers(dst []batcher.Row, row *batcher.Row, s *Scratch, st *Standing) ([]batcher.Row, error) {
	w := &s.w
	entity, _, ok := routing.KeyParts(row.Key, e.ids)
	if !ok {
		return dst, fmt.Errorf("rollup markers of %s: the row's routing key has no %d id components", e.Name, e.ids)
	}
	// Only read while the marker is written, then copied into the row by Finish.
	ent := unsafe.Slice(unsafe.StringData(entity), len(entity))
	at := time.UnixMicro(row.EventMicros).UTC()
	var kb [64]byte
	key := appendRoutingKey(kb[:0], e.Name, row.Partition)
	for i, r := range e.raw {
		idx := r.Window.Index(at)
		start, end := r.Window.Start(idx), r.Window.End(idx)
		e.pack(w, row.Partition, end.Add(r.Grace), e.rawNames[i], ent, start, row.Offset, row.Offset)
		if st != nil {
			s.id, _ = w.AppendRow(s.id[:0], nil)
			if st.Rely(s.id[:len(s.id)-markerTail], row.Offset) {
				continue
			}
		}
		size := w.Size()
		values, k := w.Finish(key)
		dst = append(dst, batcher.Row{Target: e.target, Key: k, Packed: values, Offset: row.Offset,
			EventMicros: row.EventMicros, Partition: row.Partition, Size: int32(24 + size)})
	}
	return dst, nil
}

// pack writes a marker's values into w, in cassandra.PendingColumns' order: entry, kafka_partition,
// due, rollup, entity, window_start, record, and the write timestamp.
func (e *Entry) pack(w *packed.Writer, partition int32, due time.Time, rollup, entity []byte, start time.Time, record, timestamp int64) {
	w.Reset()
	w.Text(packed.KText, e.name)
	w.Integer(packed.KInt, int64(partition))
	w.Time(packed.KTimestamp, due)
	w.Text(packed.KText, rollup)
	w.Text(packed.KBlob, entity)
	w.Time(packed.KTimestamp, start)
	w.Integer(packed.KBigint, record)
	w.Integer(packed.KBigint, timestamp)
}

// identity is Identity of the pending row that marker m, read from partition's pending markers, is,
// built in dst with w: the bytes Markers gave the row.
func (e *Entry) identity(w *packed.Writer, dst []byte, partition int32, m *Marker) []byte {
	e.pack(w, partition, m.Due, unsafe.Slice(unsafe.StringData(m.Rollup), len(m.Rollup)), m.Entity, m.Window, m.Record, m.Timestamp)
	dst, _ = w.AppendRow(dst[:0], nil)
	return dst[:len(dst)-markerTail]
}

// Scratch is the writer Markers packs a marker's values with, kept by its caller between records so
// that packing allocates nothing; its zero value is ready. One goroutine uses it at a time.
type Scratch struct {
	w  packed.Writer
	id []byte // a marker's Identity
}

// Identity is the part of marker m's packed values that names its row of the pending table: entry,
// partition, due, rollup, entity and window start, without the record's offset and the write
// timestamp that end it (two bigints, each a tag byte and 8 bytes). Two markers of one identity are
// the same row, and the later record's values replace the earlier's.
func Identity(m *batcher.Row) []byte { return m.Packed[:len(m.Packed)-markerTail] }

// markerTail is the packed size of a marker's record offset and write timestamp.
const markerTail = 2 * (1 + 8)

// appendRoutingKey appends the composite routing key of the pending table's partition (entry,
// kafka_partition).
func appendRoutingKey(b []byte, entry string, partition int32) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(entry)))
	b = append(append(b, entry...), 0)
	b = binary.BigEndian.AppendUint16(b, 4)
	b = binary.BigEndian.AppendUint32(b, uint32(partition))
	return append(b, 0)
}

// ScanInterval is how often a worker reads its due markers; part of the bound on how late a closed
// window's row can be (docs/DESIGN.md).
const ScanInterval = 5 * time.Second

// scanPage is how many markers one read returns.
const scanPage = 500

// Worker computes the due windows of one Kafka partition's entries.
type Worker struct {
	Store     Store
	Entries   []*Entry
	Partition int32
	Metrics   *metrics.Metrics
	Log       *slog.Logger
	Now       func() time.Time // default time.Now
	Interval  time.Duration    // default ScanInterval
	Backoff   backoff.Policy
	// Committed is the offset below which the partition's records are committed by this member (or
	// were before its assignment), -1 when not known yet. A marker of a later record waits: it may
	// have been written before its raw row, and a window computed without the row would lose it.
	// Committed, not merely done: a member that lost the partition without knowing it computes only
	// windows of records the next owner will not read again (see Standing).
	Committed func() int64
	// Standing is the partition's markers that records rely on (nil: none do).
	Standing *Standing

	prevPass time.Time
	w        packed.Writer // identity's scratch
	id       []byte
}

// Run scans every Interval until ctx ends. A failing step is logged and counted, and its marker
// stays for the next pass: nothing is dropped.
func (w *Worker) Run(ctx context.Context) {
	now, interval := w.Now, w.Interval
	if now == nil {
		now = time.Now
	}
	if interval <= 0 {
		interval = ScanInterval
	}
	t := time.NewTimer(0)
	defer t.Stop()
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		start := now()
		err := w.pass(ctx, start)
		w.prevPass = start
		wait := interval
		if err != nil && ctx.Err() == nil {
			failures++
			wait = max(wait, w.Backoff.Delay(failures))
			w.Log.Warn("computing rollup windows failed; retried", slog.Any("error", err), slog.Int("partition", int(w.Partition)))
		} else {
			failures = 0
		}
		t.Reset(wait)
	}
}

// pass computes every window due at now, entry by entry.
func (w *Worker) pass(ctx context.Context, now time.Time) error {
	for _, e := range w.Entries {
		part := fmt.Sprint(w.Partition)
		pending, oldest := 0, time.Duration(0)
		for {
			ms, err := w.Store.Due(ctx, e.Name, w.Partition, now, scanPage)
			if err != nil {
				return err
			}
			if pending == 0 && len(ms) > 0 {
				oldest = now.Sub(ms[0].Due)
			}
			pending += len(ms)
			w.Metrics.RollupPending.WithLabelValues(e.Name, part).Set(float64(pending))
			w.Metrics.RollupOldestPending.WithLabelValues(e.Name, part).Set(oldest.Seconds())
			committed, waiting := w.Committed(), 0
			for i := range ms {
				m := ms[i]
				if m.Record >= committed {
					waiting++ // its record is not committed: the next pass takes it
					continue
				}
				if w.Standing != nil {
					w.id = e.identity(&w.w, w.id, w.Partition, &m)
					if !w.Standing.Take(w.id, committed) {
						waiting++ // a later record relies on it and is not committed yet
						continue
					}
				}
				if err := w.step(ctx, e, m, now); err != nil {
					return err
				}
				pending--
			}
			if len(ms) < scanPage || waiting == len(ms) {
				break
			}
		}
		if pending == 0 {
			w.Metrics.RollupOldestPending.WithLabelValues(e.Name, part).Set(0)
		}
		w.Metrics.RollupPending.WithLabelValues(e.Name, part).Set(float64(pending))
	}
	return nil
}

// step computes one marker's window, marks the windows of the rollups made from it, then deletes the
// marker: a crash before the delete leaves the marker, and every step is idempotent.
func (w *Worker) step(ctx context.Context, e *Entry, m Marker, now time.Time) error {
	parts, err := w.Store.Recompute(ctx, e.Name, m.Rollup, m.Entity, m.Window)
	if err != nil {
		w.Metrics.RollupFailed.WithLabelValues(e.Name, m.Rollup).Inc()
		return err
	}
	when := "on_time"
	if !w.prevPass.IsZero() && !m.Due.After(w.prevPass) {
		// Due before the previous pass began, so that pass would have computed it had it been there:
		// a record of an already due window came after it.
		when = "late"
	}
	w.Metrics.RollupWindows.WithLabelValues(e.Name, m.Rollup, when).Inc()
	w.Metrics.RollupReads.WithLabelValues(e.Name, m.Rollup).Add(float64(parts))
	for _, c := range e.coarser[m.Rollup] {
		i := c.Window.Index(m.Window)
		cm := Marker{Due: c.Window.End(i).Add(c.Grace), Rollup: c.Name, Entity: m.Entity, Window: c.Window.Start(i),
			Record: m.Record, Timestamp: max(now.UnixMicro(), m.Timestamp+1)}
		if err := w.Store.Mark(ctx, e.Name, w.Partition, cm); err != nil {
			return err
		}
	}
	return w.Store.Done(ctx, e.Name, w.Partition, m)
}
