package metrics

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/bucketsink/sink/pipeline/deadletter"
	"github.com/bucketsink/sink/pipeline/metrics/metricstest"
)

// TestMetricsLintAndNames registers the metrics, gives every vector a series, and checks that promlint
// finds nothing and that MetricNames lists exactly what is exported (the dashboard test relies on it).
func TestMetricsLintAndNames(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	m.SetBuildInfo("test")
	m.RecordsConsumed.WithLabelValues("t").Inc()
	m.RecordsWritten.WithLabelValues("t").Inc()
	m.RecordsDeadLettered.WithLabelValues("t", deadletter.ReasonDecode).Inc()
	m.RecordsSkipped.WithLabelValues("t", "expired").Inc()
	m.RecordsFailed.WithLabelValues("t").Inc()
	m.EntryRowsWritten.WithLabelValues("t", "e").Inc()
	m.EntryDeadLetters.WithLabelValues("t", "e", deadletter.ReasonMap).Inc()
	m.BatchRows.Observe(1)
	m.BatchBytes.Observe(1)
	m.OnBatch(1, 1, time.Millisecond, "ok")
	m.OnRetry("timeout")
	m.InFlight(1)
	m.CommitDuration.Observe(0.01)
	m.StageSeconds.WithLabelValues(StageCommitted).Observe(0.2)
	m.CommitFailures.Inc()
	m.DLTruncated.WithLabelValues("t").Inc()
	m.Splits.WithLabelValues("t").Inc()
	m.OverBudget.WithLabelValues("t").Set(0)
	m.ConsumerLag.WithLabelValues("t", "0").Set(3)
	m.PartitionBudget.WithLabelValues("t").Set(100e6)
	m.StuckPartitions.WithLabelValues("t").Set(1)
	m.WriteStageRetries.WithLabelValues("t", "missing_table").Inc()
	m.RegistryRetries.WithLabelValues("t").Inc()
	m.RollupPending.WithLabelValues("readings", "0").Set(2)
	m.RollupOldestPending.WithLabelValues("readings", "0").Set(3)
	m.RollupWindows.WithLabelValues("readings", "hourly", "late").Inc()
	m.RollupFailed.WithLabelValues("readings", "hourly").Inc()
	m.RollupReads.WithLabelValues("readings", "hourly").Add(4)
	m.Ready.Set(1)
	now := time.Date(2024, 1, 15, 12, 0, 0, 0, time.UTC)
	m.live.configure(3, func() time.Time { return now })
	m.live.written("t", "readings", []WrittenPartition{{Key: "dev-1", Rows: 5, Bytes: 500, EventTime: now.Add(-time.Minute), Closes: now.Add(time.Hour)}})

	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}

	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, mf := range mfs {
		got = append(got, mf.GetName())
	}
	slices.Sort(got)
	if want := MetricNames(); !slices.Equal(got, want) {
		t.Errorf("exported %v\nMetricNames %v", got, want)
	}
	for _, n := range got {
		if !strings.HasPrefix(n, "sink_") {
			t.Errorf("%s lacks the sink_ namespace", n)
		}
	}
	want := `
# HELP sink_event_time_lag_seconds Now minus the newest event time written to Cassandra, per topic; an event time in the future counts as the time it was written.
# TYPE sink_event_time_lag_seconds gauge
sink_event_time_lag_seconds{topic="t"} 60
# HELP sink_largest_partition_bytes Estimated bytes written to the Nth largest Cassandra partition whose time bucket is still open (keys on /debug/partitions).
# TYPE sink_largest_partition_bytes gauge
sink_largest_partition_bytes{rank="1",topic="t"} 500
# HELP sink_largest_partition_rows Rows written to the Nth largest Cassandra partition whose time bucket is still open (keys on /debug/partitions).
# TYPE sink_largest_partition_rows gauge
sink_largest_partition_rows{rank="1",topic="t"} 5
`
	if err := testutil.CollectAndCompare(m.live, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}

// TestFutureEventTimeDoesNotPinLagNegative: one record dated a year ahead used to set the event-time lag
// to about -3.2e7 s until the clock reached it, so a stalled sink never raised the lag alert. A future
// event time counts as the time it was written, and the lag then grows while nothing else is written.
func TestFutureEventTimeDoesNotPinLagNegative(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	now := time.Date(2024, 1, 15, 12, 0, 0, 0, time.UTC)
	m.live.configure(3, func() time.Time { return now })
	m.live.written("t", "readings", []WrittenPartition{{Key: "dev-1", Rows: 1, Bytes: 100, EventTime: now.Add(-30 * time.Second)}})
	m.live.written("t", "readings", []WrittenPartition{{Key: "dev-2", Rows: 1, Bytes: 100, EventTime: now.AddDate(1, 0, 0)}})
	if got := metricstest.Series(t, reg, "sink_event_time_lag_seconds"); len(got) != 1 || got[0] != 0 {
		t.Errorf("lag right after a future-dated record %v, want [0]", got)
	}
	now = now.Add(20 * time.Minute) // nothing written since
	if got := metricstest.Series(t, reg, "sink_event_time_lag_seconds"); len(got) != 1 || got[0] != 1200 {
		t.Errorf("lag 20 minutes later %v, want [1200]: it must grow so the alert can fire", got)
	}
	m.live.written("t", "readings", []WrittenPartition{{Key: "dev-1", Rows: 1, Bytes: 100, EventTime: now.Add(-5 * time.Second)}})
	if got := metricstest.Series(t, reg, "sink_event_time_lag_seconds"); len(got) != 1 || got[0] != 5 {
		t.Errorf("lag after a current record %v, want [5]", got)
	}
}
