package bench

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/bucketsink/sink/cassandra"
)

// RollupsRun is the sink over one backlog with and without rollups, in alternated pairs
// (Options.Rollups): the same events, the same raw table's policy, each run on fresh tables and a
// fresh consumer group; the run with rollups adds an hourly rollup of the raw rows and a daily one
// made of the hourly rows.
type RollupsRun struct {
	// HourlyWindows and DailyWindows are the backlog's distinct (device, hour) and (device, day)
	// pairs: the windows the run with rollups has to compute at least once.
	HourlyWindows int          `json:"hourly_windows"`
	DailyWindows  int          `json:"daily_windows"`
	Pairs         []RollupPair `json:"pairs"`
	// Ratio is the spread of the pairs' ratios; its median is the figure judged.
	Ratio Spread `json:"ratio"`
}

// RollupPair is one run without rollups and one with, back to back.
type RollupPair struct {
	WithFirst bool    `json:"with_first"` // which of the two ran first (alternated)
	Without   Process `json:"without"`
	With      Process `json:"with"`
	// Ratio is With.PerSec ÷ Without.PerSec: rows/s with rollups over rows/s without.
	Ratio float64 `json:"ratio"`
	// LoadAverage is the machine's one-minute load average at the pair's start and end (/proc/loadavg).
	LoadAverage [2]float64 `json:"load_average"`
}

// RollupCost is what one rollup of a run cost, from the daemon's metrics once every window was
// computed: reads are per window computed, never per record.
type RollupCost struct {
	Rollup string `json:"rollup"`
	// Windows is the backlog's distinct (device, window) pairs of the rollup's width.
	Windows int `json:"windows"`
	// Computed is sink_rollup_windows_computed_total: computations of a window (a window whose
	// marker a later record rewrote after it was computed is computed again).
	Computed int64 `json:"computed"`
	// Reads is sink_rollup_read_partitions_total: the Cassandra partitions read to compute them.
	Reads int64 `json:"partition_reads"`
	// ReadsPerWindow is Reads ÷ Windows, ComputedPerWindow Computed ÷ Windows, and
	// ReadsPerComputation Reads ÷ Computed.
	ReadsPerWindow      float64 `json:"reads_per_window"`
	ComputedPerWindow   float64 `json:"computed_per_window"`
	ReadsPerComputation float64 `json:"reads_per_computation"`
}

// rollupsBacklogStart is where the backlog of a run with rollups starts: a day before backlogStart, so
// every hourly and daily window of it is closed (its end plus grace passed) while the sink consumes
// it, and every window is computed inside the measured run rather than hours later.
func rollupsBacklogStart(n int) time.Time { return backlogStart(n).Add(-24 * time.Hour) }

// rollups is the run of Options.Rollups: the backlog produced once, then the sink over it without and
// with rollups, Options.Rollups pairs alternated.
func (h *harness) rollups(ctx context.Context) error {
	o := h.o
	r := &h.res
	topic := o.Prefix + "_backlog"
	records, end, err := h.produce(ctx, topic, rollupsBacklogStart(o.Events))
	if err != nil {
		return err
	}
	var total int64
	for _, e := range end {
		total += e
	}
	run := &RollupsRun{}
	run.HourlyWindows, run.DailyWindows = distinctWindows(records)
	records = nil
	r.Rollups = run

	base := setup{Brokers: o.Brokers, Hosts: o.Cassandra, Keyspace: o.Keyspace, Topic: topic, CommitInterval: o.CommitInterval}
	one := func(ctx context.Context, i int, with bool) (*Process, error) {
		name := fmt.Sprintf("sink_%d", i+1)
		st := base
		if with {
			name = fmt.Sprintf("sink_rollups_%d", i+1)
			st.HourlyTable, st.DailyTable = o.Prefix+"_"+name+"_hourly", o.Prefix+"_"+name+"_daily"
		}
		st.Table, st.Group = o.Prefix+"_"+name, o.Prefix+"_"+name
		path, cfg, err := h.freshTable(ctx, &st, name)
		if err != nil {
			return nil, err
		}
		if i == 0 && !with {
			w := cfg.Writer
			r.Params.BatchMaxRows, r.Params.BatchMaxBytes = w.BatchMaxRows, int64(w.BatchMaxBytes)
			r.Params.Linger, r.Params.MaxInFlight = w.Linger.Std().String(), w.MaxInFlight
			r.Params.MaxBuffered, r.Params.MemoryLimit = int64(w.MaxBufferedBytes), int64(w.MemoryLimit)
			r.Params.FetchMaxBytes = int64(cfg.Kafka.FetchMaxBytes)
		}
		if err := h.settle(ctx, name); err != nil {
			return nil, err
		}
		p, err := h.daemon(ctx, name, []string{"run", "--config", path}, st, end, o.ProfileDir, int(max(3, min(120, total/40_000))))
		if err != nil {
			return nil, err
		}
		p.Table = st.Table
		h.drop(ctx, st.Table)
		if with {
			for i := range p.Rollups {
				c := &p.Rollups[i]
				c.Windows = run.HourlyWindows
				if c.Rollup == "daily" {
					c.Windows = run.DailyWindows
				}
				c.ReadsPerWindow = ratio(float64(c.Reads), float64(c.Windows))
				c.ComputedPerWindow = ratio(float64(c.Computed), float64(c.Windows))
				c.ReadsPerComputation = ratio(float64(c.Reads), float64(c.Computed))
			}
			p.Table += "," + st.HourlyTable + "," + st.DailyTable
			h.drop(ctx, st.HourlyTable)
			h.drop(ctx, st.DailyTable)
			// The markers of the next run with rollups are written at the same offsets, which the
			// deletes of this run's markers would shadow: each run starts on a fresh pending table.
			h.drop(ctx, cassandra.PendingTable)
		}
		return p, nil
	}
	for i := range o.Rollups {
		pair := RollupPair{WithFirst: i%2 == 1}
		pair.LoadAverage[0] = loadAverage()
		for _, with := range []bool{pair.WithFirst, !pair.WithFirst} {
			p, err := one(ctx, i, with)
			if err != nil {
				return err
			}
			if with {
				pair.With = *p
			} else {
				pair.Without = *p
			}
		}
		pair.LoadAverage[1] = loadAverage()
		pair.Ratio = ratio(pair.With.PerSec, pair.Without.PerSec)
		h.p.logf("rollups: pair %d, rows/s with ÷ without %.3f (load average %.1f to %.1f)", i+1, pair.Ratio, pair.LoadAverage[0], pair.LoadAverage[1])
		run.Pairs = append(run.Pairs, pair)
	}
	ratios := make([]float64, len(run.Pairs))
	for i, p := range run.Pairs {
		ratios[i] = p.Ratio
	}
	run.Ratio = spreadOf(ratios)
	return nil
}

// distinctWindows counts the (device, hour) and (device, day) pairs of the records' event times
// (the record timestamp the generator sets to the event time, UTC windows).
func distinctWindows(records []record) (hours, days int) {
	type window struct {
		device string
		start  int64
	}
	hs, ds := map[window]struct{}{}, map[window]struct{}{}
	for _, rec := range records {
		t := rec.Timestamp.UTC()
		hs[window{string(rec.Key), t.Truncate(time.Hour).Unix()}] = struct{}{}
		ds[window{string(rec.Key), t.Truncate(24 * time.Hour).Unix()}] = struct{}{}
	}
	return len(hs), len(ds)
}

// rollupDrainQuiet is how long the windows computed must stay the same, with none pending, before a
// run with rollups is taken as done: two scans of the workers (pipeline/rollup.ScanInterval, 5 s),
// as a pass marks the daily windows of the hourly ones it computes and the next pass computes them.
const rollupDrainQuiet = 11 * time.Second

// rollupDrainMax bounds the wait for a run's rollup windows after its last commit.
const rollupDrainMax = 5 * time.Minute

// drainRollups waits, after a run with rollups has committed the whole backlog, until its workers
// have computed every due window (none pending, the count computed unchanged for rollupDrainQuiet),
// and records the time that took and each rollup's computations and partition reads in p.
func (h *harness) drainRollups(ctx context.Context, d *daemon, p *Process, committed time.Time) error {
	var (
		last     = -1.0
		changed  = time.Now()
		deadline = time.Now().Add(rollupDrainMax)
	)
	for {
		mfs, err := d.scrape(ctx)
		if err != nil {
			return err
		}
		computed := sumFamily(mfs["sink_rollup_windows_computed_total"], "", "")
		pending := sumFamily(mfs["sink_rollup_windows_pending"], "", "")
		now := time.Now()
		if computed != last {
			last, changed = computed, now
		}
		if computed > 0 && pending == 0 && now.Sub(changed) >= rollupDrainQuiet {
			p.RollupDrainSeconds = max(0, changed.Sub(committed).Seconds())
			for _, name := range []string{"hourly", "daily"} {
				p.Rollups = append(p.Rollups, RollupCost{Rollup: name,
					Computed: int64(sumFamily(mfs["sink_rollup_windows_computed_total"], "rollup", name)),
					Reads:    int64(sumFamily(mfs["sink_rollup_read_partitions_total"], "rollup", name))})
			}
			return nil
		}
		if now.After(deadline) {
			return fmt.Errorf("%s: rollup windows still pending (%.0f) or being computed %v after the last commit; last lines of %s:\n%s",
				d.name, pending, rollupDrainMax, d.logPath, tail(d.logPath, 20))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-d.exited:
			return d.failure()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// sumFamily adds up the counter or gauge samples of mf, those with label=value when label is set; 0
// for a family not (yet) exported.
func sumFamily(mf *dto.MetricFamily, label, value string) float64 {
	if mf == nil {
		return 0
	}
	var sum float64
	for _, m := range mf.GetMetric() {
		if label != "" && !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool { return l.GetName() == label && l.GetValue() == value }) {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		}
	}
	return sum
}

// printRollups writes the lines of a run with rollups: each pair, then what the windows cost.
func (r *Result) printRollups(tw io.Writer) {
	run := r.Rollups
	if run == nil {
		return
	}
	fmt.Fprintf(tw, "produce\t%s events/s\t%.1f s; %d (device, hour) and %d (device, day) windows, all closed\n",
		num(r.Produce.EventsPerSec), r.Produce.Seconds, run.HourlyWindows, run.DailyWindows)
	for i, p := range run.Pairs {
		order := "without first"
		if p.WithFirst {
			order = "with first"
		}
		fmt.Fprintf(tw, "pair %d\t%.3f rows/s with ÷ without\t%s rows/s with rollups, %s without (%s); CPU per record %.3f ×; load average %.1f to %.1f\n",
			i+1, p.Ratio, num(p.With.PerSec), num(p.Without.PerSec), order, ratio(p.With.CPUPerMillion, p.Without.CPUPerMillion),
			p.LoadAverage[0], p.LoadAverage[1])
		var costs []string
		for _, c := range p.With.Rollups {
			costs = append(costs, fmt.Sprintf("%s: %d computations of %d windows (%.2f each), %.2f partition reads per window, %.2f per computation",
				c.Rollup, c.Computed, c.Windows, c.ComputedPerWindow, c.ReadsPerWindow, c.ReadsPerComputation))
		}
		fmt.Fprintf(tw, "\t\t%s; %.2f marker rows written per record; the last window computed %.1f s after the last commit\n",
			strings.Join(costs, "; "), p.With.BatchRowsPerRecord-p.Without.BatchRowsPerRecord, p.With.RollupDrainSeconds)
	}
	fmt.Fprintf(tw, "rollups\t%.3f median\trows/s with one hourly and one daily rollup ÷ without, %.3f to %.3f over %d alternated pairs\n",
		run.Ratio.Median, run.Ratio.Min, run.Ratio.Max, len(run.Pairs))
}
