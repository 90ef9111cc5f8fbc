package pipeline

import (
	"maps"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/pipeline/metrics"
	"github.com/bucketsink/sink/pipeline/metrics/metricstest"
)

// TestTopPartitionsZeroExportsNone: writer.top_partitions: 0 is valid and means no largest-partition
// series at all; New used to apply the default 10 again on top of the config's.
func TestTopPartitionsZeroExportsNone(t *testing.T) {
	cfg := (&fixture{t: t, addrs: []string{"127.0.0.1:1"}, group: "g"}).config(func(c *config.Config) { c.Writer.TopPartitions = 0 })
	reg := prometheus.NewRegistry()
	pl, err := New(Config{Sink: cfg, Mapper: oneEntry{fakeMapper{}}, Writer: &memWriter{}, Metrics: metrics.NewMetrics(reg)})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	pl.metrics.ObserveWritten(testTopic, "events", []metrics.WrittenPartition{{Key: "dev-1", Rows: 5, Bytes: 500, EventTime: now.Add(-time.Minute), Closes: now.Add(time.Hour)}})
	if got := metricstest.Series(t, reg, "sink_largest_partition_rows"); len(got) != 0 {
		t.Errorf("top_partitions 0 exported %d largest-partition series, want none", len(got))
	}
	if got := pl.metrics.Largest()[testTopic]; len(got) != 0 {
		t.Errorf("top_partitions 0 listed %d partitions on /debug/partitions, want none", len(got))
	}
}

// TestNewRefusesConfigWithoutDefaults: the pipeline applies no default of its own (config does, once),
// so a config built in Go without ApplyDefaults is refused by name instead of stalling on a zero buffer.
func TestNewRefusesConfigWithoutDefaults(t *testing.T) {
	cfg := &config.Config{Topics: map[string]config.Topic{"events": {Topic: testTopic, Table: "events"}}}
	_, err := New(Config{Sink: cfg, Mapper: oneEntry{fakeMapper{}}, Writer: &memWriter{}, Metrics: metrics.NewMetrics(prometheus.NewRegistry())})
	if err == nil || !strings.Contains(err.Error(), "kafka.group is unset; load the config with config.Load") {
		t.Errorf("New without defaults: %v", err)
	}
}

// TestDebugPartitionsCanBeTurnedOff guards metrics.debug_partitions: false: /debug/partitions lists entity
// ids on a port without authentication, and an operator who does not want them served gets a 404, while
// the health endpoints on the same port stay.
func TestDebugPartitionsCanBeTurnedOff(t *testing.T) {
	for _, on := range []bool{true, false} {
		cfg := (&fixture{t: t, addrs: []string{"127.0.0.1:1"}, group: "g"}).config(func(c *config.Config) { c.Metrics.DebugPartitions = on })
		pl, err := New(Config{Sink: cfg, Mapper: oneEntry{fakeMapper{}}, Writer: &memWriter{}, Metrics: metrics.NewMetrics(prometheus.NewRegistry())})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(pl.Handler())
		for path, want := range map[string]int{"/debug/partitions": map[bool]int{true: 200, false: 404}[on], "/healthz": 200} {
			resp, err := srv.Client().Get(srv.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("debug_partitions %v: %s answered %d, want %d", on, path, resp.StatusCode, want)
			}
		}
		srv.Close()
	}
}

// TestPartitionBudgetOfATopicOfSeveralEntriesIsTheSmallest: the budget gauge of a Kafka topic read by
// two entries is the smaller budget, not whichever entry was configured last.
func TestPartitionBudgetOfATopicOfSeveralEntriesIsTheSmallest(t *testing.T) {
	cfg := (&fixture{t: t, addrs: []string{"127.0.0.1:1"}, group: "g"}).twoEntriesConfig(testDLQ)
	a, b := cfg.Topics["a"], cfg.Topics["b"]
	a.PartitionBudget, b.PartitionBudget = 50e6, 100e6
	cfg.Topics["a"], cfg.Topics["b"] = a, b
	pl, err := New(Config{Sink: cfg, Mapper: twoEntries{}, Writer: &memWriter{}, Metrics: metrics.NewMetrics(prometheus.NewRegistry())})
	if err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(pl.metrics.PartitionBudget.WithLabelValues(testTopic)); got != 50e6 {
		t.Errorf("sink_partition_budget_bytes %v, want the smaller budget 50e6", got)
	}
}

// TestLatestValuePartitionsAreLeftOutOfTheLargestPartitions pins what sink_largest_partition_* and
// /debug/partitions count: the partitions of open time buckets, which grow with every row until their
// bucket closes. A latest-value table's partition is one row per entity, overwritten by every event and
// never closing: a tally of the rows written to it would count overwrites, not what it holds, and rank
// the busiest entity as if it outgrew its budget. A topic read by a bucketed and a latest-value entry
// lists the bucketed entry's partitions only.
func TestLatestValuePartitionsAreLeftOutOfTheLargestPartitions(t *testing.T) {
	cfg := (&fixture{t: t, addrs: []string{"127.0.0.1:1"}, group: "g"}).config(func(c *config.Config) {
		c.Topics["current"] = config.Topic{Topic: testTopic, Table: "current", Bucket: config.Bucket{Width: config.BucketNone}}
		c.ApplyDefaults()
	})
	pl, err := New(Config{Sink: cfg, Mapper: oneEntry{fakeMapper{}}, Writer: &memWriter{}, Metrics: metrics.NewMetrics(prometheus.NewRegistry())})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, tgt := range []*batcher.Target{
		{Topic: testTopic, Keyspace: "ks", Table: "events", Columns: []string{"v"}, Entry: "events"},
		{Topic: testTopic, Keyspace: "ks", Table: "current", Columns: []string{"v"}, Entry: "current"},
	} {
		b := &batcher.Batch{Target: tgt, Key: "dev-1", Bytes: 10, Partitions: 1,
			Rows: []batcher.Row{{Target: tgt, Key: "dev-1", Size: 10, EventMicros: now.UnixMicro()}}}
		pl.observeWritten(b)
	}
	got := pl.metrics.Largest()[testTopic]
	if len(got) != 1 || got[0].Table != "events" {
		t.Errorf("largest open partitions %+v, want only the bucketed table's (events)", got)
	}
}

// TestWrittenBatchReportsItsNewestEventTime guards the event-time lag and the largest open partitions
// with rows that keep their event time as microseconds: a written batch reports the newest event time
// among its rows, wherever that row is in the batch (to the microsecond), and the partition is tallied
// as open until the end of that row's hourly bucket (an older row's bucket has closed already).
func TestWrittenBatchReportsItsNewestEventTime(t *testing.T) {
	now := time.Date(2026, 11, 27, 11, 30, 0, 0, time.UTC)
	cfg := (&fixture{t: t, addrs: []string{"127.0.0.1:1"}, group: "g"}).config(nil)
	reg := prometheus.NewRegistry()
	pl, err := New(Config{Sink: cfg, Mapper: oneEntry{fakeMapper{}}, Writer: &memWriter{}, Metrics: metrics.NewMetrics(reg),
		Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	target := &batcher.Target{Topic: testTopic, Keyspace: "ks", Table: "events", Entry: "events"}
	newest := time.Date(2026, 11, 27, 11, 29, 59, 999_999_000, time.UTC)
	b := &batcher.Batch{Target: target, Key: "dev-1", Partitions: 1, Rows: []batcher.Row{
		{Target: target, Key: "dev-1", EventMicros: newest.Add(-time.Hour).UnixMicro()},
		{Target: target, Key: "dev-1", EventMicros: newest.UnixMicro()},
		{Target: target, Key: "dev-1", EventMicros: newest.Add(-time.Microsecond).UnixMicro()},
	}}
	pl.observeWritten(b)
	if got := metricstest.Series(t, reg, "sink_event_time_lag_seconds"); len(got) != 1 || got[0] != now.Sub(newest).Seconds() {
		t.Errorf("sink_event_time_lag_seconds %v, want [%v]", got, now.Sub(newest).Seconds())
	}
	want := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	if got := pl.metrics.Largest()[testTopic]; len(got) != 1 || !got[0].Closes.Equal(want) || got[0].Rows != 3 {
		t.Errorf("largest open partitions %+v, want dev-1's 3 rows closing at %s", got, want)
	}
}

// TestJoinedRequestIsTalliedPartitionByPartition: the write stage hands a request of several partitions
// joined by Group to observeWritten once, and the largest open partitions count each partition's own
// rows and bytes under its own key, as when each was observed alone.
func TestJoinedRequestIsTalliedPartitionByPartition(t *testing.T) {
	cfg := (&fixture{t: t, addrs: []string{"127.0.0.1:1"}, group: "g"}).config(nil)
	pl, err := New(Config{Sink: cfg, Mapper: oneEntry{fakeMapper{}}, Writer: &memWriter{}, Metrics: metrics.NewMetrics(prometheus.NewRegistry())})
	if err != nil {
		t.Fatal(err)
	}
	tg := &batcher.Target{Topic: testTopic, Keyspace: "ks", Table: "events", Entry: "events"}
	now := time.Now()
	part := func(key string, rows int) *batcher.Batch {
		b := &batcher.Batch{Target: tg, Key: key, Partitions: 1}
		for range rows {
			b.Rows = append(b.Rows, batcher.Row{Target: tg, Key: key, Size: 100, EventMicros: now.UnixMicro()})
			b.Bytes += 100
		}
		return b
	}
	pl.observeWritten(batcher.Join([]*batcher.Batch{part("dev-1", 3), part("dev-2", 1), part("dev-3", 2)}))
	got := map[string][2]int64{}
	for _, p := range pl.metrics.Largest()[testTopic] {
		got[p.Key] = [2]int64{p.Rows, p.Bytes}
	}
	want := map[string][2]int64{"dev-1": {3, 300}, "dev-2": {1, 100}, "dev-3": {2, 200}}
	if !maps.Equal(got, want) {
		t.Errorf("largest open partitions (rows, bytes) by key %v, want %v", got, want)
	}
}
