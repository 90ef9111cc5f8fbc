package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/mapper"
)

// unreachableRegistryMapper is fakeMapper whose first failures calls fail as the mapper does while the
// schema registry does not answer.
type unreachableRegistryMapper struct {
	fakeMapper
	failures *atomic.Int64
}

func (m unreachableRegistryMapper) MapContext(ctx context.Context, r mapper.Record) (batcher.Row, error) {
	if m.failures.Add(-1) >= 0 {
		return batcher.Row{}, fmt.Errorf("topic %s partition %d offset %d: %w", r.Topic, r.Partition, r.Offset,
			&codec.UnavailableError{Err: errors.New("connection refused")})
	}
	return m.fakeMapper.MapContext(ctx, r)
}

// TestRecordWaitsForAnUnreachableRegistryAndIsWritten guards against a registry outage costing data: a
// record whose writer schema cannot be fetched is neither dead-lettered nor skipped nor halts its
// partition; it waits, each failed attempt counted, and is written once the registry answers.
func TestRecordWaitsForAnUnreachableRegistryAndIsWritten(t *testing.T) {
	f := newFixture(t, 0, 0)
	const n = 10
	var recs []*kgo.Record
	for p := range int32(testParts) {
		for i := range n {
			recs = append(recs, &kgo.Record{Topic: testTopic, Partition: p, Key: fmt.Appendf(nil, "k-%d-%d", p, i),
				Value: fmt.Appendf(nil, `{"n":%d}`, i)})
		}
		f.end[p] = n
	}
	if err := f.admCl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var failures atomic.Int64
	failures.Store(5)
	w := newMemWriter()
	m := f.startMapping(f.config(nil), w, unreachableRegistryMapper{
		fakeMapper: fakeMapper{target: &batcher.Target{Topic: testTopic, Keyspace: "ks", Table: "events", Columns: []string{"v"}, Entry: "events"}},
		failures:   &failures,
	})
	f.waitFor(30*time.Second, "every partition committed to its end after the registry answered", f.allCommitted)
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	met := m.pl.metrics
	if got := testutil.ToFloat64(met.RegistryRetries.WithLabelValues(testTopic)); got != 5 {
		t.Errorf("sink_schema_registry_retries_total = %v, want 5 (one per failed fetch)", got)
	}
	if got := testutil.CollectAndCount(met.RecordsDeadLettered); got != 0 {
		t.Errorf("%d dead-lettered series, want none: an unreachable registry is not bad input", got)
	}
	if got, want := w.count(), n*testParts; got != want {
		t.Errorf("%d rows written, want every record's %d", got, want)
	}
}
