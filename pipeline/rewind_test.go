package pipeline

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/cassandra"
	"github.com/bucketsink/sink/pipeline/offsets"
)

// TestRewoundPartitionRestartsTrackingAndResumesByItself guards a partition whose consumer position goes
// back below records it already took (a truncated log, a reset to the start offset, a group offset reset
// under a live member): it used to halt until a restart. Now the worker waits until the records in
// flight are done, starts tracking again at the rewound offset and goes on, so records produced after
// the rewind are written and committed by themselves; while a row from before the rewind is unwritten,
// nothing at or past it is committed and nothing from the rewound position is taken.
//
// kfake answers a fetch OFFSET_OUT_OF_RANGE, as a broker does whose log was truncated below the
// consumer's position, and franz-go resets the partition to its start.
func TestRewoundPartitionRestartsTrackingAndResumesByItself(t *testing.T) {
	f := newFixture(t, 100, 0)
	logs := &lockedBuffer{}
	f.logs = logs
	w := newMemWriter()
	held := batcher.Source{Topic: testTopic, Partition: 0, Offset: 90}
	w.hold = func(s batcher.Source) bool { return s == held }
	m := f.start(f.config(nil), w)
	f.waitFor(20*time.Second, "every row but the held one written", func() bool { return w.count() == 3*100-1 })

	// The broker answers one fetch of partition 0 OFFSET_OUT_OF_RANGE: the client resets the partition to
	// kafka.start_offset (its start), below every record the partition took.
	f.cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Fetch}, Topic: testTopic, Partitions: []int32{0},
		Err: kerr.OffsetOutOfRange})
	var more []*kgo.Record
	for i := 100; i < 150; i++ {
		more = append(more, &kgo.Record{Topic: testTopic, Partition: 0, Key: []byte("k-0-" + strconv.Itoa(i)),
			Value: []byte(fmt.Sprintf(`{"n":%d}`, i))})
	}
	if err := f.admCl.ProduceSync(context.Background(), more...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	f.end[0] = 150
	f.waitFor(20*time.Second, "the rewind noticed", func() bool {
		return len(logs.lines("partition went back to an offset already taken")) == 1
	})
	replayed := batcher.Source{Topic: testTopic, Partition: 0, Offset: 10}
	for range 20 {
		if c := f.committed()[0]; c > 90 {
			t.Fatalf("partition 0 committed %d past the unwritten offset 90", c)
		}
		if n := w.writes(replayed); n != 1 {
			t.Fatalf("offset 10 written %d times before the rows in flight were done", n)
		}
		time.Sleep(25 * time.Millisecond)
	}

	close(w.release)
	f.waitFor(20*time.Second, "every partition committed to its end", f.allCommitted)
	for o := range int64(150) {
		if !w.has(batcher.Source{Topic: testTopic, Partition: 0, Offset: o}) {
			t.Errorf("partition 0 offset %d never written", o)
		}
	}
	if n := w.writes(replayed); n != 2 {
		t.Errorf("offset 10 written %d times, want 2 (once, then once replayed after the rewind)", n)
	}
	if got := testutil.ToFloat64(m.pl.metrics.StuckPartitions.WithLabelValues(testTopic)); got != 0 {
		t.Errorf("sink_stuck_partitions = %v after the rewind, want 0", got)
	}
}

// writes is how many times the row of src was written.
func (w *memWriter) writes(src batcher.Source) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rows[src]
}

// TestLateRowOfARewoundRecordDoesNotCompleteItsReplay guards the tracking restarted by a rewind against
// an acknowledgement that arrives late: a record of two tables whose row in one of them is still being
// written when the partition goes back. Were the tracker replaced at once, that row's acknowledgement
// would count as a part of the replayed record at the same offset: the replay would be done, and marked
// for commit, while its own row in that table is not written. After a truncation (a newer leader
// epoch) the replay is another record, and such a mark commits past a row never written. The worker
// waits instead until the old row is acknowledged, so every acknowledgement of the old record reaches
// the old tracker, and the replay is done only with its own rows.
func TestLateRowOfARewoundRecordDoesNotCompleteItsReplay(t *testing.T) {
	f := newFixture(t, 100, 0)
	logs := &lockedBuffer{}
	f.logs = logs
	row := batcher.Source{Topic: testTopic, Partition: 0, Offset: 90}
	w := &nthWriteWriter{tablesWriter: newTablesWriter(), table: "table_b", row: row,
		gates: []chan struct{}{make(chan struct{}), make(chan struct{})}}
	m := f.startFull(f.twoEntriesConfig(testDLQ), twoEntries{}, w, nil)
	f.waitFor(20*time.Second, "every row but the held one written", func() bool {
		return w.count("table_a") == 3*100 && w.count("table_b") == 3*100-1
	})
	f.waitFor(20*time.Second, "partition 0 committed up to the held row", func() bool { return f.committed()[0] == 90 })
	m.pl.mu.Lock()
	p := m.pl.parts[offsets.TopicPartition{Topic: testTopic, Partition: 0}]
	m.pl.mu.Unlock()
	p.mu.Lock()
	old := p.tr
	p.mu.Unlock()

	// The broker answers one fetch of partition 0 OFFSET_OUT_OF_RANGE: the client resets the partition to
	// its start, below every record it took, while the row of offset 90 in table_b is being written.
	f.cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Fetch}, Topic: testTopic, Partitions: []int32{0},
		Err: kerr.OffsetOutOfRange})
	f.produceTo(0, `{"n":"after the rewind"}`)
	f.waitFor(20*time.Second, "the rewind noticed", func() bool {
		return len(logs.lines("partition went back to an offset already taken")) == 1
	})
	// The old row's acknowledgement is let through only once the worker either waits for it or has
	// replayed offset 90 into a new tracker: were the tracker replaced at once, the acknowledgement then
	// always finds the replay pending, not only when the worker happens to get there first.
	f.waitFor(20*time.Second, "the worker waiting, or offset 90 replayed into a new tracker", func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		last, _ := p.tr.Last()
		return p.settled != nil || p.tr != old && last >= row.Offset
	})

	// The first write of the row ends: the old record is done, and the replay of offset 90 is written in
	// table_a while its row in table_b waits in the second write.
	close(w.gates[0])
	f.waitFor(20*time.Second, "the replay of offset 90 written in table_a and waiting in table_b", func() bool {
		return w.writes("table_a", row) == 2 && w.started.Load() == 2
	})
	for range 20 { // many commit intervals (100ms) to get it wrong
		p.mu.Lock()
		pending := p.tr.IsPending(row.Offset)
		next, _, _ := p.tr.Watermark()
		p.mu.Unlock()
		if !pending || next > row.Offset {
			t.Fatalf("the replay of offset 90 counted done (watermark %d) while its row in table_b is not written", next)
		}
		time.Sleep(25 * time.Millisecond)
	}
	close(w.gates[1])
	f.waitFor(20*time.Second, "every partition committed to its end", f.allCommitted)
	for o := range f.end[0] {
		src := batcher.Source{Topic: testTopic, Partition: 0, Offset: o}
		if !w.has("table_a", src) || !w.has("table_b", src) {
			t.Errorf("partition 0 offset %d not written in both tables", o)
		}
	}
}

// nthWriteWriter is a tablesWriter whose n-th attempt at writing one row of one table waits until
// gates[n-1] is closed (or its context ends); started counts the attempts.
type nthWriteWriter struct {
	*tablesWriter
	table   string
	row     batcher.Source
	gates   []chan struct{}
	started atomic.Int32
}

func (w *nthWriteWriter) Write(ctx context.Context, b *batcher.Batch) ([]cassandra.RowFailure, error) {
	if b.Target.Table == w.table {
		for _, r := range b.Rows {
			if r.Source() != w.row {
				continue
			}
			if n := int(w.started.Add(1)); n <= len(w.gates) {
				select {
				case <-w.gates[n-1]:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			break
		}
	}
	return w.tablesWriter.Write(ctx, b)
}

// writes is how many times the row of src was written to table.
func (w *tablesWriter) writes(table string, src batcher.Source) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rows[table][src]
}
