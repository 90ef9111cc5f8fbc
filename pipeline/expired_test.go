package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/mapper"
)

// expiringMapper is fakeMapper for a topic with ttl_from event_time and on_tombstone skip: a value
// starting with "old" is an event older than the ttl, whose row would be born expired, and a null value
// a tombstone the topic skips.
type expiringMapper struct{ fakeMapper }

func (m expiringMapper) MapContext(ctx context.Context, r mapper.Record) (batcher.Row, error) {
	switch {
	case bytes.HasPrefix(r.Value, []byte("old")):
		return batcher.Row{}, &mapper.RecordError{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
			Reason: mapper.ReasonExpired, Err: errors.New("expired: the row would be born expired (ttl_from event_time)")}
	case r.Value == nil:
		return batcher.Row{}, &mapper.RecordError{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
			Reason: mapper.ReasonTombstone, Err: errors.New("the record value is null (a tombstone), and on_tombstone is skip")}
	}
	return m.fakeMapper.MapContext(ctx, r)
}

// TestRecordBornExpiredIsSkippedAndDoesNotHaltThePartition guards against good data stopping a
// partition for its age: under ttl_from event_time a record older than the ttl (a consumer behind by
// more than the ttl, a group reset on a topic kept longer than the ttl) was treated as bad input,
// halting its partition when the topic has no dead-letter topic, on every restart. It is skipped and
// counted instead, its offset committed like a written record's, with or without a dead-letter topic
// (none is sent to it).
func TestRecordBornExpiredIsSkippedAndDoesNotHaltThePartition(t *testing.T) {
	for _, dlt := range []string{"", testDLQ} {
		t.Run("dead_letter_topic="+dlt, func(t *testing.T) {
			f := newFixture(t, 0, 0)
			const n = 30
			var recs []*kgo.Record
			for p := range int32(testParts) {
				for i := range n {
					v := fmt.Sprintf(`{"n":%d}`, i)
					if i%3 == 0 {
						v = "old " + v // offsets 0, 3, ... 27: ten per partition
					}
					recs = append(recs, &kgo.Record{Topic: testTopic, Partition: p,
						Key: fmt.Appendf(nil, "k-%d-%d", p, i), Value: []byte(v)})
				}
				f.end[p] = n
			}
			if err := f.admCl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
				t.Fatal(err)
			}
			cfg := f.config(func(c *config.Config) {
				tc := c.Topics["events"]
				tc.DeadLetterTopic = dlt
				c.Topics["events"] = tc
			})
			w := newMemWriter()
			m := f.startMapping(cfg, w, expiringMapper{fakeMapper{target: &batcher.Target{Topic: testTopic, Keyspace: "ks", Table: "events", Columns: []string{"v"}, Entry: "events"}}})
			f.waitFor(20*time.Second, "every partition committed to its end past the expired records", f.allCommitted)
			if err := m.stop(); err != nil {
				t.Fatal(err)
			}
			met := m.pl.metrics
			if got := testutil.ToFloat64(met.RecordsSkipped.WithLabelValues(testTopic, mapper.ReasonExpired)); got != 10*testParts {
				t.Errorf("sink_records_skipped_total{reason=expired} = %v, want %d", got, 10*testParts)
			}
			if got := testutil.CollectAndCount(met.RecordsDeadLettered); got != 0 {
				t.Errorf("%d dead-lettered series, want none: a record born expired is not bad input", got)
			}
			if got := testutil.ToFloat64(met.RecordsFailed.WithLabelValues(testTopic)); got != 0 {
				t.Errorf("sink_records_failed_total = %v, want 0", got)
			}
			if got, want := w.count(), 20*testParts; got != want {
				t.Errorf("%d rows written, want %d (the others expired)", got, want)
			}
		})
	}
}

// TestTombstoneSkippedByItsEntryIsCommittedAndCounted guards on_tombstone skip in the pipeline: a
// tombstone refused with reason tombstone is skipped like an expired record (committed, counted in
// sink_records_skipped_total{reason="tombstone"}), never dead-lettered, and without a dead-letter topic
// it does not halt its partition.
func TestTombstoneSkippedByItsEntryIsCommittedAndCounted(t *testing.T) {
	f := newFixture(t, 0, 0)
	const n = 12
	var recs []*kgo.Record
	for p := range int32(testParts) {
		for i := range n {
			r := &kgo.Record{Topic: testTopic, Partition: p, Key: fmt.Appendf(nil, "k-%d-%d", p, i), Value: fmt.Appendf(nil, `{"n":%d}`, i)}
			if i%4 == 0 {
				r.Value = nil // offsets 0, 4, 8: three per partition
			}
			recs = append(recs, r)
		}
		f.end[p] = n
	}
	if err := f.admCl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cfg := f.config(func(c *config.Config) {
		tc := c.Topics["events"]
		tc.DeadLetterTopic = ""
		c.Topics["events"] = tc
	})
	w := newMemWriter()
	m := f.startMapping(cfg, w, expiringMapper{fakeMapper{target: &batcher.Target{Topic: testTopic, Keyspace: "ks", Table: "events", Columns: []string{"v"}}}})
	f.waitFor(20*time.Second, "every partition committed to its end past the tombstones", f.allCommitted)
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(m.pl.metrics.RecordsSkipped.WithLabelValues(testTopic, mapper.ReasonTombstone)); got != 3*testParts {
		t.Errorf("sink_records_skipped_total{reason=tombstone} = %v, want %d", got, 3*testParts)
	}
	if got, want := w.count(), (n-3)*testParts; got != want {
		t.Errorf("%d rows written, want %d", got, want)
	}
}
