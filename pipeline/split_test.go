package pipeline

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/bucketer"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/mapper"
	"github.com/bucketsink/sink/pipeline/metrics"
	"github.com/bucketsink/sink/pipeline/split"
	"github.com/bucketsink/sink/routing"
)

var hour0 = time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)

const hotEntity = "\x00\x03hot\x00"

// oneSplitStore is a routing table in which every bucket has one routing record for the entity hot,
// starting a minute before the bucket ends; it counts the loads.
type oneSplitStore struct {
	split.Store
	loads *int
}

func (b oneSplitStore) Bucket(_ context.Context, _, table string, start time.Time) ([]routing.Record, error) {
	*b.loads++
	return []routing.Record{{Table: table, BucketStart: start, Entity: []byte(hotEntity), Generation: 1,
		From: start.Add(59 * time.Minute), FirstEventBucket: 1, EventBuckets: 2}}, nil
}

func (oneSplitStore) Adoptions(context.Context, string, string, time.Time) ([]routing.Adoption, error) {
	return nil, nil
}

// entryCalls is a Mapper that records which entries MapEntry maps again.
type entryCalls struct{ entries []string }

func (m *entryCalls) MapAll(_ context.Context, _ mapper.Record, out []mapper.Mapped) ([]mapper.Mapped, error) {
	return out, nil
}

func (m *entryCalls) MapEntry(_ context.Context, entry string, r mapper.Record) (batcher.Row, error) {
	m.entries = append(m.entries, entry)
	return batcher.Row{Key: hotEntity + "\x00\x0d2024-03-01-00\x00" + "\x00\x04\x00\x00\x00\x00\x00",
		EventMicros: hour0.Add(time.Minute).UnixMicro(), Offset: r.Offset, Size: 99}, nil
}

// TestSplitRoutingIsPerEntry: of the rows two entries of a Kafka topic made of a record, only the row of
// the entry with split on is routed; when its bucket's routing records change it, that entry alone is
// mapped again (MapEntry), and the other entry's row is left as it was.
func TestSplitRoutingIsPerEntry(t *testing.T) {
	policy, err := bucketer.New(bucketer.Spec{Width: "1h"})
	if err != nil {
		t.Fatal(err)
	}
	sink := &config.Config{Topics: map[string]config.Topic{"a": {Topic: "in", PartitionBudget: 100_000_000}}}
	sink.Cassandra.Timeout = config.Duration(time.Hour) // no decision is waited for
	tc := sink.Topics["a"]
	tc.Split.Enabled, tc.Split.MaxEventBuckets, tc.Split.MaxRows = true, 64, 1000
	tc.Split.RefreshInterval = config.Duration(time.Hour)
	sink.Topics["a"] = tc
	loads := 0
	st, err := split.NewTopic(sink, "a", policy, splitFakeMapper{routes: &routing.Routes{}}, oneSplitStore{loads: &loads},
		metrics.NewMetrics(prometheus.NewRegistry()))
	if err != nil {
		t.Fatal(err)
	}
	mp := &entryCalls{}
	p := &partition{workCtx: context.Background(), hwm: 0, pl: &Pipeline{mapper: mp}}
	p.split = map[string]*split.State{"a": split.NewState(st, p, 0, slog.New(slog.DiscardHandler))}
	defer p.split["a"].Release()
	row := batcher.Row{Key: hotEntity + "\x00\x0d2024-03-01-00\x00" + "\x00\x04\x00\x00\x00\x00\x00",
		EventMicros: hour0.Add(time.Minute).UnixMicro(), Offset: 1}
	ms := []mapper.Mapped{{Entry: "a", Row: row}, {Entry: "b", Row: row}}
	if err := p.routeSplits(mapper.Record{Offset: 1}, ms); err != nil {
		t.Fatal(err)
	}
	// The first row of a bucket loads its records and the bucket before's (which entities start it
	// split).
	if !slices.Equal(mp.entries, []string{"a"}) || loads != 2 {
		t.Errorf("entries mapped again %v after %d bucket loads; want [a] after 2", mp.entries, loads)
	}
	if ms[0].Row.Size != 99 || ms[1].Row.Size != 0 {
		t.Errorf("rows after routing: a's size %d, b's %d; want a's mapped again (99), b's as it was (0)", ms[0].Row.Size, ms[1].Row.Size)
	}
}
