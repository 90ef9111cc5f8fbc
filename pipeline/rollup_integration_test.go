package pipeline

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/pipeline/rollup"
)

// withRollups gives the stack's entry a 10-minute rollup of its raw rows and an hourly one made of it,
// both due at once (grace 0: the events are of 2024).
func withRollups(c *config.Config) {
	t := c.Topics["readings"]
	t.Rollups = []config.Rollup{
		{Name: "tenmin", Width: "10m", Table: "readings_10m", Bucket: config.Bucket{Width: "1d"}, Grace: config.Duration(0),
			Aggregates: []config.Aggregate{
				{Column: "n", Fn: config.AggCount}, {Column: "v_sum", Fn: config.AggSum, Of: "value"},
				{Column: "v_max", Fn: config.AggMax, Of: "value"}, {Column: "v_last", Fn: config.AggLast, Of: "value"},
			}},
		{Name: "hourly", Width: "1h", From: "tenmin", Table: "readings_1h", Bucket: config.Bucket{Width: "month"}, Grace: config.Duration(0),
			Aggregates: []config.Aggregate{
				{Column: "n", Fn: config.AggCount}, {Column: "v_sum", Fn: config.AggSum, Of: "value"},
				{Column: "v_max", Fn: config.AggMax, Of: "value"}, {Column: "v_last", Fn: config.AggLast, Of: "value"},
			}},
	}
	c.Topics["readings"] = t
}

// rollupRow is one rollup row as the test compares it.
type rollupRow struct {
	rows, n          int64
	sum, maxV, lastV float64
}

// rawRollups is the test's own computation of both rollups from the raw rows Cassandra holds.
func (s *stack) rawRollups() (tenmin, hourly map[string]rollupRow) {
	s.t.Helper()
	type raw struct {
		ts time.Time
		v  float64
	}
	iter := s.session.Driver().Query("SELECT device_id, ts, value FROM " + s.ks + ".readings").PageSize(5000).IterContext(context.Background())
	byWindow := map[string][]raw{}
	var device string
	var r raw
	for iter.Scan(&device, &r.ts, &r.v) {
		w := r.ts.UTC().Truncate(10 * time.Minute)
		k := device + "|" + w.Format(time.RFC3339)
		byWindow[k] = append(byWindow[k], raw{r.ts.UTC(), r.v})
	}
	if err := iter.Close(); err != nil {
		s.t.Fatal(err)
	}
	tenmin, hourly = map[string]rollupRow{}, map[string]rollupRow{}
	for _, k := range slices.Sorted(maps.Keys(byWindow)) {
		rs := byWindow[k]
		slices.SortFunc(rs, func(a, b raw) int { return a.ts.Compare(b.ts) })
		row := rollupRow{rows: int64(len(rs)), n: int64(len(rs)), maxV: rs[0].v, lastV: rs[len(rs)-1].v}
		for _, x := range rs {
			row.sum += x.v
			row.maxV = max(row.maxV, x.v)
		}
		tenmin[k] = row
		dev, at, _ := strings.Cut(k, "|")
		start, _ := time.Parse(time.RFC3339, at)
		hk := dev + "|" + start.Truncate(time.Hour).Format(time.RFC3339)
		h, seen := hourly[hk]
		if !seen {
			h.maxV = row.maxV
		}
		h.rows, h.n, h.sum, h.maxV, h.lastV = h.rows+row.rows, h.n+row.n, h.sum+row.sum, max(h.maxV, row.maxV), row.lastV
		hourly[hk] = h
	}
	return tenmin, hourly
}

// rollupRows reads every row of a rollup table.
func (s *stack) rollupRows(table string) map[string]rollupRow {
	s.t.Helper()
	iter := s.session.Driver().Query("SELECT device_id, window_start, sink_rows, n, v_sum, v_max, v_last FROM " + s.ks + "." + table).
		PageSize(5000).IterContext(context.Background())
	out := map[string]rollupRow{}
	var device string
	var start time.Time
	var r rollupRow
	for iter.Scan(&device, &start, &r.rows, &r.n, &r.sum, &r.maxV, &r.lastV) {
		out[device+"|"+start.UTC().Format(time.RFC3339)] = r
	}
	if err := iter.Close(); err != nil {
		s.t.Fatal(err)
	}
	return out
}

// rollupsMatch reports whether both rollup tables hold exactly the test's computation from the raw rows.
func (s *stack) rollupsMatch() bool {
	tenmin, hourly := s.rawRollups()
	return maps.Equal(tenmin, s.rollupRows("readings_10m")) && maps.Equal(hourly, s.rollupRows("readings_1h"))
}

// TestIntegrationRollupsEqualTheRawRowsAndFollowLateEvents: devices spread over three Kafka partitions,
// written by the real pipeline with a 10-minute rollup and an hourly one made of it. Once every offset
// is committed, every rollup row equals the test's own computation from the raw rows Cassandra holds
// and no window lacks its row; then late events of windows already computed change those rows to the
// recomputed values, and are counted as late.
func TestIntegrationRollupsEqualTheRawRowsAndFollowLateEvents(t *testing.T) {
	s := newStackWith(t, 3, nil, withRollups)
	recs := makeRecords(900, 0, 3) // 30 minutes of events, 37 devices
	for i, r := range recs {
		r.partition = int32(i % 3) // each device's records come through every partition
	}
	s.produce(recs)
	m := s.start(nil)
	s.waitFor(2*time.Minute, "committed offsets to reach the end", s.allCommitted)
	s.waitFor(time.Minute, "the rollups to equal the raw rows", s.rollupsMatch)
	if tenmin := s.rollupRows("readings_10m"); len(tenmin) < 37*3 {
		t.Fatalf("%d ten-minute rows; want every device in each of the three windows", len(tenmin))
	}

	// Late events: one more reading of three devices in the first, already computed, ten minutes.
	late := makeRecords(3, 0, 3)
	for i, r := range late {
		r.ts = itBase.Add(time.Duration(i)*time.Second + 500*time.Millisecond)
		r.value = fmt.Appendf(nil, `{"device_id":%q,"ts":%q,"value":%d.25}`, r.device, r.ts.Format(time.RFC3339Nano), 1000+i)
		r.partition = int32(i)
	}
	s.produce(late)
	s.waitFor(2*time.Minute, "committed offsets to reach the end", s.allCommitted)
	start := time.Now()
	s.waitFor(time.Minute, "the rollups to follow the late events", s.rollupsMatch)
	took := time.Since(start)
	t.Logf("late events reflected %v after their commit (scan interval %v)", took.Round(time.Millisecond), rollup.ScanInterval)
	// The stated bound: a scan interval and a computation per level (two levels here), with slack for
	// the test's polling and a loaded machine.
	if bound := 2*rollup.ScanInterval + 5*time.Second; took > bound {
		t.Errorf("late events took %v to reach both rollups, over the bound %v", took, bound)
	}
	if row := s.rollupRows("readings_10m")["dev-000|"+itBase.Format(time.RFC3339)]; row.maxV != 1000.25 {
		t.Errorf("dev-000's first window: %+v, want its max to be the late 1000.25", row)
	}
	if got := testutil.ToFloat64(m.metrics.RecordsWritten.WithLabelValues(s.topic)); got != 903 {
		t.Errorf("sink_records_written_total %v, want 903: the markers are not rows of the table", got)
	}
	if got := testutil.ToFloat64(m.metrics.RollupWindows.WithLabelValues("readings", "tenmin", "late")); got < 3 {
		t.Errorf("sink_rollup_windows_computed_total{when=late} %v, want at least 3", got)
	}
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
}

// TestIntegrationRollupsSurviveKillsASecondInstanceAndAReplay: the oracle test of rollups through the
// real binary. A stream of devices spread over three Kafka partitions, one of them hot enough to be
// split, with late events (every 25th record belongs to the first ten minutes), is consumed by `sink run` killed with SIGKILL 20 times at
// random moments, with a second instance joining and leaving on the way. Once everything is committed,
// every rollup row of both resolutions equals the test's own computation from the raw rows, and no
// window lacks its row. Then the group replays from offset 0: the same raw rows, and every rollup row
// stays the raw rows' computation.
func TestIntegrationRollupsSurviveKillsASecondInstanceAndAReplay(t *testing.T) {
	s := newStackWith(t, 3, nil, func(c *config.Config) {
		withRollups(c)
		tc := c.Topics["readings"]
		// dev-hot's hour passes 100 rows early: it is split over more event buckets, and its windows
		// are read from every generation.
		tc.Split = config.Split{Enabled: true, MaxEventBuckets: 8, MaxRows: 100}
		c.Topics["readings"] = tc
	})
	recs := makeRecords(1500, 0, 3)
	for i, r := range recs {
		r.partition = int32(i % 3)
		if i%3 == 1 {
			r.device = "dev-hot"
			r.value = fmt.Appendf(nil, `{"device_id":%q,"ts":%q,"value":%d.5}`, r.device, r.ts.Format(time.RFC3339Nano), i)
		}
		if i%25 == 24 {
			r.ts = itBase.Add(time.Duration(i) * time.Millisecond) // late: into the first, long closed windows
			r.value = fmt.Appendf(nil, `{"device_id":%q,"ts":%q,"value":%d.5}`, r.device, r.ts.Format(time.RFC3339Nano), i)
		}
	}
	s.cfg.Metrics.Address = freeAddr(t)
	cfgPath := s.writeConfig()
	first := s.cfg.Metrics.Address
	s.cfg.Metrics.Address = freeAddr(t)
	secondPath := s.writeConfig()
	s.cfg.Metrics.Address = first
	done := make(chan struct{})
	rng := rand.New(rand.NewPCG(36, uint64(time.Now().UnixNano())))
	const kills = 20
	var second *exec.Cmd
	for i := range kills {
		cmd, _ := runSink(t, cfgPath)
		if i == 0 {
			go func() {
				defer close(done)
				s.produceStream(recs, 10, 100*time.Millisecond)
			}()
		}
		switch i {
		case 5:
			second, _ = runSink(t, secondPath) // joins
		case 9:
			if code, _ := stopSink(t, second); code != 0 { // leaves
				t.Errorf("the second instance exited %d after SIGTERM, want 0", code)
			}
		}
		s.waitFor(time.Minute, "sink run to be ready", s.sinkReady)
		time.Sleep(time.Duration(200+rng.IntN(1500)) * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		s.removeMembers() // the killed member sent no LeaveGroup; the second instance, removed too, joins again

	}
	<-done
	cmd, _ := runSink(t, cfgPath)
	s.waitFor(time.Minute, "sink run to be ready after the kills", s.sinkReady)
	s.waitFor(3*time.Minute, "committed offsets to reach the end after the kills", s.allCommitted)
	s.waitFor(2*time.Minute, "the rollups to equal the raw rows after the kills", s.rollupsMatch)
	tenmin, hourly := s.rawRollups()
	var generations int
	if err := s.session.Driver().Query("SELECT COUNT(*) FROM "+s.ks+".sink_splits").ScanContext(context.Background(), &generations); err != nil {
		t.Fatal(err)
	}
	if generations == 0 {
		t.Error("dev-hot was never split: the test does not read a split entity's windows")
	}
	if len(tenmin) < 37*5 || len(hourly) < 37 {
		t.Fatalf("%d ten-minute and %d hourly windows: the stream covers 37 devices over 50 minutes", len(tenmin), len(hourly))
	}
	if code, _ := stopSink(t, cmd); code != 0 {
		t.Errorf("sink run exited %d after SIGTERM, want 0", code)
	}

	// A full replay from offset 0 writes the same raw rows and leaves every rollup row as it is: equal to
	// the raw rows' computation.
	before := map[string]map[string]rollupRow{"readings_10m": s.rollupRows("readings_10m"), "readings_1h": s.rollupRows("readings_1h")}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := s.adm.DeleteGroup(ctx, s.group); err != nil {
		t.Fatal(err)
	}
	cmd, _ = runSink(t, cfgPath)
	s.waitFor(time.Minute, "sink run to be ready for the replay", s.sinkReady)
	s.waitFor(3*time.Minute, "committed offsets to reach the end of the replay", s.allCommitted)
	if code, _ := stopSink(t, cmd); code != 0 {
		t.Errorf("sink run exited %d after SIGTERM, want 0", code)
	}
	if !s.rollupsMatch() {
		t.Error("after the replay the rollups differ from the raw rows' computation")
	}
	for table, rows := range before {
		if !maps.Equal(rows, s.rollupRows(table)) {
			t.Errorf("the replay changed rows of %s", table)
		}
	}
}
