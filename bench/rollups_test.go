package bench

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bucketsink/sink/cassandra"
)

// A run with rollups configures the entry with an hourly rollup of the raw rows and a daily one made of
// it, which the daemon's loader accepts, and whose tables and pending table `sink schema` creates.
func TestSetupConfigWithRollups(t *testing.T) {
	s := setup{
		Brokers: []string{"127.0.0.1:9092"}, Hosts: []string{"127.0.0.1:9042"}, Keyspace: "sinkbench",
		Topic: "bench_1_backlog", Table: "bench_1_sink_rollups_1", Group: "bench_1_sink_rollups_1",
		HourlyTable: "bench_1_sink_rollups_1_hourly", DailyTable: "bench_1_sink_rollups_1_daily",
		Metrics: "127.0.0.1:9999", CommitInterval: time.Second,
	}
	_, cfg, err := s.write(t.TempDir(), "sink_rollups_1", nil)
	if err != nil {
		t.Fatal(err)
	}
	rs := cfg.Topics[topicName].Rollups
	if len(rs) != 2 || rs[0].Name != "hourly" || rs[0].Width != "1h" || rs[0].From != "" ||
		rs[1].Name != "daily" || rs[1].Width != "1d" || rs[1].From != "hourly" {
		t.Fatalf("rollups %+v, want hourly of the raw rows and daily from hourly", rs)
	}
	ddl, err := cassandra.Schema(cfg, nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{s.Table, s.HourlyTable, s.DailyTable, cassandra.PendingTable} {
		if !slices.ContainsFunc(ddl, func(stmt string) bool {
			return strings.Contains(stmt, "CREATE TABLE IF NOT EXISTS sinkbench."+table+" ")
		}) {
			t.Errorf("no CREATE TABLE for %s in:\n%s", table, strings.Join(ddl, "\n"))
		}
	}
	without := s
	without.HourlyTable, without.DailyTable = "", ""
	if _, cfg, err := without.write(t.TempDir(), "sink_1", nil); err != nil || len(cfg.Topics[topicName].Rollups) != 0 {
		t.Errorf("without rollup tables: %v, %d rollups; want none", err, len(cfg.Topics[topicName].Rollups))
	}
}

// The windows a run with rollups must compute are the records' distinct (device, UTC hour) and
// (device, UTC day) pairs.
func TestDistinctWindows(t *testing.T) {
	day := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	rec := func(dev string, at time.Duration) record { return record{Key: []byte(dev), Timestamp: day.Add(at)} }
	records := []record{
		rec("a", 10*time.Minute), rec("a", 50*time.Minute), rec("a", 70*time.Minute), // two hours
		rec("b", 10*time.Minute),
		rec("a", 25*time.Hour), // the next day
	}
	if h, d := distinctWindows(records); h != 4 || d != 3 {
		t.Fatalf("%d hourly and %d daily windows, want 4 and 3", h, d)
	}
}

// A run with rollups is judged by the median of its pairs' ratios alone.
func TestJudgeRollupsRun(t *testing.T) {
	for _, c := range []struct {
		ratios []float64
		met    bool
	}{{[]float64{0.7, 0.85, 0.9}, true}, {[]float64{0.7, 0.75, 0.95}, false}} {
		run := &RollupsRun{Ratio: spreadOf(c.ratios)}
		r := &Result{Rollups: run, Params: Params{Rollups: len(c.ratios)}}
		r.judge()
		if len(r.Targets) != 1 || r.Targets[0].Met != c.met || r.Targets[0].Measured != run.Ratio.Median {
			t.Errorf("ratios %v: targets %+v, want one, met %v at the median", c.ratios, r.Targets, c.met)
		}
	}
}
