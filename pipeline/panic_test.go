package pipeline

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/mapper"
	"github.com/bucketsink/sink/pipeline/deadletter"
)

// panicMapper is fakeMapper, except that it panics on a value starting with "boom".
type panicMapper struct{ fakeMapper }

func (m panicMapper) MapContext(_ context.Context, r mapper.Record) (batcher.Row, error) {
	if bytes.HasPrefix(r.Value, []byte("boom")) {
		var nilMap map[string]int
		//lint:ignore SA5000 the point: a real runtime panic, assignment to entry in nil map
		nilMap["crafted"]++
	}
	return m.fakeMapper.MapContext(context.Background(), r)
}

func newPanicMapper() panicMapper {
	return panicMapper{fakeMapper{target: &batcher.Target{Topic: testTopic, Keyspace: "ks", Table: "events", Columns: []string{"v"}, Entry: "events"}}}
}

// TestMappingPanicIsDeadLetteredAndThePartitionGoesOn: a record whose mapping panics is contained to
// that record: dead-lettered with reason panic and its coordinates, and the rows after it are written.
func TestMappingPanicIsDeadLetteredAndThePartitionGoesOn(t *testing.T) {
	f := newFixture(t, 30, 0)
	at := f.produceTo(2, `{"n":1}`, "boom", `{"n":2}`, `{"n":3}`) + 1
	w := newMemWriter()
	m := f.startMapping(f.config(nil), w, newPanicMapper())
	f.waitFor(20*time.Second, "committed offsets to reach the end", f.allCommitted)
	r := f.dlqByOffset(1)[[2]int64{2, at}]
	if r == nil || string(r.Value) != "boom" || header(r, deadletter.HeaderReason) != deadletter.ReasonPanic ||
		!strings.Contains(header(r, deadletter.HeaderError), fmt.Sprintf("topic %s partition 2 offset %d: mapping the record panicked", testTopic, at)) {
		t.Errorf("dead letter of the panicking record: %v", r)
	}
	f.checkGoodWritten(w)
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(m.pl.metrics.RecordsDeadLettered.WithLabelValues(testTopic, deadletter.ReasonPanic)); got != 1 {
		t.Errorf("sink_records_dead_lettered_total{reason=panic} %v, want 1", got)
	}
}

// TestMappingPanicWithoutDeadLetterTopicStopsOnlyItsPartition: with no dead-letter topic, a panicking
// record stops its partition like any bad record (committed offset at it, counted stuck); the daemon and the
// other partitions go on.
func TestMappingPanicWithoutDeadLetterTopicStopsOnlyItsPartition(t *testing.T) {
	f := newFixture(t, 30, 0)
	at := f.produceTo(2, "boom", `{"n":2}`)
	m := f.startMapping(f.config(func(c *config.Config) {
		tp := c.Topics["events"]
		tp.DeadLetterTopic = ""
		c.Topics["events"] = tp
	}), newMemWriter(), newPanicMapper())
	f.waitFor(20*time.Second, "partitions 0 and 1 at the end, 2 at the panicking record", func() bool {
		c := f.committed()
		return c[0] == 30 && c[1] == 30 && c[2] == at
	})
	if got := testutil.ToFloat64(m.pl.metrics.StuckPartitions.WithLabelValues(testTopic)); got != 1 {
		t.Errorf("sink_stuck_partitions %v, want 1 (partition 2)", got)
	}
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
}
