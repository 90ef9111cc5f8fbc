package reader

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/mapper"
	"github.com/bucketsink/sink/reader/readertest"
	"github.com/bucketsink/sink/schema"
)

func planTable(t testing.TB, b config.Bucket) schema.Table {
	t.Helper()
	tc := readertest.Topic(b, "desc", "site", "device_id")
	tc.Table = "t"
	tab, _ := compileTopic(t, tc)
	return tab
}

// topicConfig is a validated config holding topic "x".
func topicConfig(t testing.TB, tc config.Topic) *config.Config {
	t.Helper()
	cfg := &config.Config{
		Kafka:     config.Kafka{Brokers: []string{"127.0.0.1:1"}},
		Cassandra: config.Cassandra{Hosts: []string{"127.0.0.1:1"}, Keyspace: "ks"},
		Topics:    map[string]config.Topic{"x": tc},
	}
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// compileTopic validates a config holding topic "x" and returns its table and mapper.
func compileTopic(t testing.TB, tc config.Topic) (schema.Table, *mapper.Mapper) {
	t.Helper()
	m, err := mapper.New(topicConfig(t, tc))
	if err != nil {
		t.Fatal(err)
	}
	tab, _ := m.Table("x")
	return tab, m
}

// TestPlanGivesEachTimeBucketItsTableKeyRangeAndPartitions: a sliced, event-bucketed range newest
// first over a slice boundary; each time bucket carries its own slice table, key, the part of the
// range inside it, and its event-bucket partitions.
func TestPlanGivesEachTimeBucketItsTableKeyRangeAndPartitions(t *testing.T) {
	tab := planTable(t, config.Bucket{Width: "1h", Key: "int", Slice: "1d", EventBuckets: 3})
	from := time.Date(2024, 6, 1, 1, 30, 0, 0, time.UTC)
	to := time.Date(2024, 5, 31, 22, 45, 0, 0, time.UTC)
	plan, err := MakePlan(context.Background(), tab, []any{"s1", "d1"}, from, to, 100, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		table  string
		key    any
		lo, hi string
	}{
		{"t_20240601", int64(2024060101), "2024-06-01T01:00:00Z", "2024-06-01T01:30:00.001Z"},
		{"t_20240601", int64(2024060100), "2024-06-01T00:00:00Z", "2024-06-01T01:00:00Z"},
		{"t_20240531", int64(2024053123), "2024-05-31T23:00:00Z", "2024-06-01T00:00:00Z"},
		{"t_20240531", int64(2024053122), "2024-05-31T22:45:00.001Z", "2024-05-31T23:00:00Z"},
	}
	if !plan.Desc || len(plan.Buckets) != len(want) || plan.Partitions() != 3*len(want) {
		t.Fatalf("plan desc %v with %d buckets and %d partitions, want newest first, %d buckets of 3", plan.Desc, len(plan.Buckets), plan.Partitions(), len(want))
	}
	for i, w := range want {
		b := plan.Buckets[i]
		if b.Table != w.table || b.Key != w.key || b.Lo.Format(time.RFC3339Nano) != w.lo || b.Hi.Format(time.RFC3339Nano) != w.hi {
			t.Errorf("bucket %d: %s key %v [%s, %s), want %s key %v [%s, %s)", i, b.Table, b.Key,
				b.Lo.Format(time.RFC3339Nano), b.Hi.Format(time.RFC3339Nano), w.table, w.key, w.lo, w.hi)
		}
		for e, p := range b.Partitions {
			if p.EventBucket != e || p.Table != b.Table || p.Bucket != b.Bucket || p.Key != b.Key {
				t.Errorf("bucket %d partition %d: %+v", i, e, p)
			}
		}
	}
}

// TestPlanRefusesARangeWiderThanTheCap: a range over the cap is a *RangeError, never a shorter plan.
func TestPlanRefusesARangeWiderThanTheCap(t *testing.T) {
	tab := planTable(t, config.Bucket{Width: "10m", EventBuckets: 8})
	from := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	_, err := MakePlan(context.Background(), tab, []any{"s1", "d1"}, from, from.Add(24*time.Hour), 1000, nil)
	var re *RangeError
	if !errors.As(err, &re) {
		t.Fatalf("error %v, want a *RangeError", err)
	}
	if _, err := MakePlan(context.Background(), tab, []any{"s1", "d1"}, from, from.Add(2*time.Hour), 1000, nil); err != nil {
		t.Fatal(err)
	}
}

// TestNewRefusesTablesNotClusteredByEventTime: a time range is a slice of a partition only when
// the first clustering column holds the event time the buckets were cut by.
func TestNewRefusesTablesNotClusteredByEventTime(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*config.Topic)
		ok     bool
	}{
		{"event_time source", func(*config.Topic) {}, true},
		{"the time field itself", func(t *config.Topic) { t.Columns[2] = config.Column{Name: "ts", Type: "timestamp", Field: "ts"} }, true},
		{"the time field in seconds", func(t *config.Topic) {
			t.Time.Format = "unix_s"
			t.Columns[2] = config.Column{Name: "ts", Type: "timestamp", Field: "ts"}
		}, false},
		{"another column first", func(t *config.Topic) {
			t.Clustering = []config.Clustering{{Column: "seq", Order: "asc"}, {Column: "ts", Order: "desc"}}
		}, false},
	} {
		cfg := &config.Config{
			Kafka:     config.Kafka{Brokers: []string{"127.0.0.1:1"}},
			Cassandra: config.Cassandra{Hosts: []string{"127.0.0.1:1"}, Keyspace: "ks"},
			Topics:    map[string]config.Topic{"x": readertest.Topic(config.Bucket{Width: "1d"}, "desc", "site", "device_id")},
		}
		topic := cfg.Topics["x"]
		topic.Table = "t"
		tc.change(&topic)
		cfg.Topics["x"] = topic
		cfg.ApplyDefaults()
		if err := cfg.Validate(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		_, err := New(Config{Sink: cfg, Topic: "x"})
		if (err == nil) != tc.ok {
			t.Errorf("%s: error %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}
