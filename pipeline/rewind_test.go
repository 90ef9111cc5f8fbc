package pipeline

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/bucketsink/sink/batcher"
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
