package reader

import (
	"context"
	"testing"
	"time"

	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/mapper"
	"github.com/bucketsink/sink/reader/readertest"
	"github.com/bucketsink/sink/routing"
	"github.com/bucketsink/sink/schema"
)

func splitTable(t *testing.T) (schema.Table, *mapper.Mapper) {
	t.Helper()
	tc := readertest.Topic(config.Bucket{Width: "1h"}, "desc", "site", "device_id")
	tc.Table, tc.Topic = "t", "in"
	tc.Split = config.Split{Enabled: true}
	return compileTopic(t, tc)
}

// TestEntityKeyIsTheMappersEntity: the reader finds an entity's routing records by the same bytes
// the writer keys them with (the id columns of the partition's routing key).
func TestEntityKeyIsTheMappersEntity(t *testing.T) {
	tab, m := splitTable(t)
	ex, err := m.Explain(mapper.Record{Topic: "in", Timestamp: time.Unix(1717203723, 0), Value: []byte(`{"site":"s1","device_id":"dev-7","ts":"2024-06-01T01:02:03Z","seq":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	got, err := EntityKey(tab, []any{"s1", "dev-7"})
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(ex.Entity) {
		t.Errorf("reader entity key %q; the mapper's %q", got, ex.Entity)
	}
}

// TestPlanOfASplitBucketListsEveryGenerationsPartitions: in a bucket where the entity split into 4
// (event buckets 1..4) and then 16 (5..20), the plan lists event buckets 0..20 over the whole
// bucket; in the other buckets it lists the one partition; the lookup runs once per bucket.
func TestPlanOfASplitBucketListsEveryGenerationsPartitions(t *testing.T) {
	tab, _ := splitTable(t)
	from := time.Date(2024, 6, 1, 0, 30, 0, 0, time.UTC)
	to := from.Add(2 * time.Hour) // buckets 00:00, 01:00, 02:00
	split := time.Date(2024, 6, 1, 1, 0, 0, 0, time.UTC)
	calls := 0
	routes := func(_ context.Context, table string, start time.Time, entity []byte) ([]routing.Generation, error) {
		calls++
		if table != "t" || string(entity) != "\x00\x02s1\x00\x00\x02d1\x00" {
			t.Errorf("lookup of table %q entity %q", table, entity)
		}
		if start.Equal(split) {
			return []routing.Generation{{N: 1, From: split.Add(10 * time.Minute), First: 1, Buckets: 4}, {N: 2, From: split.Add(20 * time.Minute), First: 5, Buckets: 16}}, nil
		}
		return nil, nil
	}
	plan, err := MakePlan(context.Background(), tab, []any{"s1", "d1"}, from, to, 100, routes)
	if err != nil {
		t.Fatal(err)
	}
	if calls != 3 || len(plan.Buckets) != 3 {
		t.Fatalf("%d lookups for %d buckets; want one per bucket (3)", calls, len(plan.Buckets))
	}
	for _, b := range plan.Buckets {
		want := 1
		if b.Lo.Equal(split) {
			want = 21
		}
		if len(b.Partitions) != want {
			t.Errorf("bucket %s: %d partitions; want %d", b.Lo, len(b.Partitions), want)
		}
		for i, p := range b.Partitions {
			if p.EventBucket != i {
				t.Errorf("bucket %s partition %d has event bucket %d", b.Lo, i, p.EventBucket)
			}
		}
	}
	if _, err := MakePlan(context.Background(), tab, []any{"s1", "d1"}, from, to, 10, routes); err == nil {
		t.Error("23 partitions planned under a cap of 10; want a range error")
	}
}

// TestPlanWithSplitTurnedOffStillFollowsTheRoutingRecords: a topic whose split was turned off (or a
// reader given a copy of the config without the split block) still has rows in the event buckets its
// splits recorded. As long as the table has an event bucket column, the plan consults the routing
// records and lists those partitions; before, it listed the configured event buckets only.
func TestPlanWithSplitTurnedOffStillFollowsTheRoutingRecords(t *testing.T) {
	tc := readertest.Topic(config.Bucket{Width: "1h", EventBuckets: 4}, "desc", "device_id")
	tc.Table, tc.Topic = "t", "in"
	tab, _ := compileTopic(t, tc)
	start := time.Date(2024, 6, 1, 1, 0, 0, 0, time.UTC)
	routes := func(context.Context, string, time.Time, []byte) ([]routing.Generation, error) {
		return []routing.Generation{{N: 1, From: start.Add(10 * time.Minute), First: 4, Buckets: 8}}, nil
	}
	plan, err := MakePlan(context.Background(), tab, []any{"d1"}, start, start.Add(time.Hour), 100, routes)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Buckets) != 1 || len(plan.Buckets[0].Partitions) != 12 {
		t.Fatalf("plan %+v; want one bucket of 12 partitions (event buckets 0..3 and the split's 4..11)", plan.Buckets)
	}
}

// TestClosedBucketRoutingRecordsAreReadAgain: a Reader that lives long does not keep a closed
// bucket's routing records forever (a late row or a catching-up consumer can still split it): they
// are read again after a minute; an open bucket's after a second.
func TestClosedBucketRoutingRecordsAreReadAgain(t *testing.T) {
	at := time.Date(2024, 1, 15, 12, 0, 0, 0, time.UTC)
	closed, open := cachedBucket{at: at}, cachedBucket{at: at, open: true}
	for _, c := range []struct {
		name  string
		b     cachedBucket
		after time.Duration
		fresh bool
	}{
		{"closed, 59s", closed, 59 * time.Second, true},
		{"closed, 1m", closed, time.Minute, false},
		{"closed, 1h", closed, time.Hour, false},
		{"open, 999ms", open, 999 * time.Millisecond, true},
		{"open, 1s", open, time.Second, false},
	} {
		if got := c.b.fresh(at.Add(c.after)); got != c.fresh {
			t.Errorf("%s: fresh = %v, want %v", c.name, got, c.fresh)
		}
	}
}
