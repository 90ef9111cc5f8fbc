package pipeline

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/pipeline/budget"
	"github.com/bucketsink/sink/pipeline/consumer"
	"github.com/bucketsink/sink/pipeline/metrics"
	"github.com/bucketsink/sink/pipeline/offsets"
	"github.com/bucketsink/sink/pipeline/writestage"
)

// TestMappedRecordsChargeTheBudgetOnlyWithTheirHandOff: a worker mapping records with rows leaves the
// pipeline's budget (and its lock) alone until it hands the rows on, where the rows and the records'
// tracker entries are charged at once. Charging each record's entry under the lock as it was mapped made
// the workers contend with each other and with the poll loop on every record, and the discarding
// daemon, whose workers are its bottleneck, held fetched batches longer and allocated about a sixth
// more (docs/PERFORMANCE.md). A record without rows (every entry skipped it) is still charged at once.
func TestMappedRecordsChargeTheBudgetOnlyWithTheirHandOff(t *testing.T) {
	pl := newUnstartedPipeline(t, "charge", nil)
	p := newPartition(pl, offsets.TopicPartition{Topic: testTopic, Partition: 0}, pl.topics[testTopic])
	defer p.cancel()
	rows := consumer.GetHandOff()
	const n = 10
	for i := range n {
		r := &kgo.Record{Topic: testTopic, Offset: int64(i), Key: fmt.Appendf(nil, "k%d", i),
			Value: fmt.Appendf(nil, `{"n":%d}`, i), Timestamp: time.Unix(1_800_000_000, 0)}
		var cont, held bool
		rows, cont, held = p.handle(r, rows)
		if !cont || held {
			t.Fatalf("record %d: cont %v, held %v; want true, false", i, cont, held)
		}
		if got := pl.budget.Total(); got != 0 {
			t.Fatalf("after mapping record %d the budget holds %d bytes, want 0 until the hand-off", i, got)
		}
	}
	if len(rows) != n {
		t.Fatalf("%d rows mapped, want %d", len(rows), n)
	}
	want := int64(n) * budget.EntryCost
	for i := range rows {
		want += budget.RowCost(&rows[i])
	}
	// A stage that is not running takes the hand-off into its queue.
	pl.writes = writestage.New(context.Background(), writestage.Config{MaxInFlight: 1, Writer: discardWriter{}, Metrics: pl.metrics})
	if !p.handOff(rows) {
		t.Fatal("the hand-off failed")
	}
	if got := pl.budget.Total(); got != want {
		t.Errorf("after the hand-off the budget holds %d bytes, want %d (%d rows and their %d tracker entries)", got, want, n, n)
	}
}

// newUnstartedPipeline is a pipeline of one hourly-bucketed topic of group, never started: for tests of
// its budget's bookkeeping. bufferFull is its Config.BufferFull (nil: none).
func newUnstartedPipeline(t *testing.T, group string, bufferFull func(bool)) *Pipeline {
	t.Helper()
	cfg := &config.Config{
		Kafka:  config.Kafka{Brokers: []string{"127.0.0.1:1"}, Group: group},
		Topics: map[string]config.Topic{"events": {Topic: testTopic, Table: "events", Bucket: config.Bucket{Width: "1h"}}},
	}
	cfg.ApplyDefaults()
	pl, err := New(Config{Sink: cfg, Mapper: oneEntry{fakeMapper{target: &batcher.Target{Topic: testTopic, Keyspace: "ks", Table: "events", Entry: "events"}}},
		Writer: discardWriter{}, Metrics: metrics.NewMetrics(prometheus.NewRegistry()), BufferFull: bufferFull})
	if err != nil {
		t.Fatal(err)
	}
	return pl
}
