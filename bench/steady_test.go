package bench

import (
	"context"
	"math"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func parseMetrics(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}

// TestStageLatenciesAreTheChangeBetweenTwoScrapes: the steady phase reports each stage's percentiles from
// what its histogram gained during the phase, interpolated inside buckets as histogram_quantile does,
// and the mean rows per request from the sum and count gained.
func TestStageLatenciesAreTheChangeBetweenTwoScrapes(t *testing.T) {
	before := parseMetrics(t, `# TYPE sink_stage_seconds histogram
sink_stage_seconds_bucket{stage="batched",le="0.001"} 10
sink_stage_seconds_bucket{stage="batched",le="0.01"} 10
sink_stage_seconds_bucket{stage="batched",le="0.1"} 10
sink_stage_seconds_bucket{stage="batched",le="+Inf"} 10
sink_stage_seconds_sum{stage="batched"} 0.005
sink_stage_seconds_count{stage="batched"} 10
# TYPE sink_batch_rows histogram
sink_batch_rows_bucket{le="+Inf"} 100
sink_batch_rows_sum 200
sink_batch_rows_count 100
`)
	after := parseMetrics(t, `# TYPE sink_stage_seconds histogram
sink_stage_seconds_bucket{stage="batched",le="0.001"} 10
sink_stage_seconds_bucket{stage="batched",le="0.01"} 108
sink_stage_seconds_bucket{stage="batched",le="0.1"} 110
sink_stage_seconds_bucket{stage="batched",le="+Inf"} 110
sink_stage_seconds_sum{stage="batched"} 0.5
sink_stage_seconds_count{stage="batched"} 110
# TYPE sink_batch_rows histogram
sink_batch_rows_bucket{le="+Inf"} 150
sink_batch_rows_sum 800
sink_batch_rows_count 150
`)
	st := stageLatencies(before, after)
	if len(st) != 1 || st[0].Stage != "batched" || st[0].Count != 100 {
		t.Fatalf("stages %+v, want batched with 100 observations", st)
	}
	// 100 new observations: 98 in (1 ms, 10 ms], 2 in (10 ms, 100 ms]. p50 is rank 50 of 98 in the first.
	if want := 1 + 9*50.0/98; math.Abs(st[0].P50Millis-want) > 1e-9 {
		t.Errorf("p50 %.4f ms, want %.4f", st[0].P50Millis, want)
	}
	if want := 10 + 90*(99.0-98)/2; math.Abs(st[0].P99Millis-want) > 1e-9 {
		t.Errorf("p99 %.4f ms, want %.4f", st[0].P99Millis, want)
	}
	if got := meanOf(before, after, "sink_batch_rows"); got != 12 {
		t.Errorf("rows per request %v, want (800-200)/(150-100) = 12", got)
	}
	if got := meanOf(before, after, "sink_batch_partitions"); got != 0 {
		t.Errorf("a histogram the binary does not export gives %v, want 0", got)
	}
}

// TestFreshnessSweepDoesNotAddItsOwnReadsToWhatItMeasures guards the freshness poller: it read pending
// probes one after another, so with ten probes pending and reads of 100 ms the last was seen a second
// after its row was readable, and the measured freshness grew with the number of probes in flight.
func TestFreshnessSweepDoesNotAddItsOwnReadsToWhatItMeasures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const read = 100 * time.Millisecond
		f := &freshness{
			read:   func(context.Context, probe) (bool, error) { time.Sleep(read); return true, nil },
			every:  5 * time.Millisecond,
			giveUp: time.Minute,
		}
		probes := make(chan probe, 10)
		for range 10 {
			probes <- probe{device: "d", produced: time.Now()}
		}
		close(probes)
		f.run(t.Context(), probes)
		if len(f.delays) != 10 || f.missing != 0 {
			t.Fatalf("delays %v, missing %d; want 10 probes seen", f.delays, f.missing)
		}
		for _, d := range f.delays {
			if d > read+f.every {
				t.Errorf("a probe was seen %v after its production; its read took %v and the poll period is %v", d, read, f.every)
			}
		}
	})
}

// TestNetOfIdleTakesTheBackgroundOutOverTheRunsLength guards the steady phase's net-of-idle figure:
// Cassandra's idle cores times the run's CPU window, per row, come off the raw CPU per row, and a run
// quieter than its idle window reads 0, not a negative cost.
func TestNetOfIdleTakesTheBackgroundOutOverTheRunsLength(t *testing.T) {
	for _, tc := range []struct {
		name      string
		perRow    float64
		rows      int64
		window    time.Duration
		idleCores float64
		want      float64
	}{
		// 300,000 rows in 20 s at 55 µs a row is 16.5 CPU-s; 0.2 idle cores over 20 s is 4 CPU-s of it,
		// 13.3 µs a row.
		{"background out", 55, 300_000, 20 * time.Second, 0.2, 55 - 4e6/300_000},
		{"no background", 55, 300_000, 20 * time.Second, 0, 55},
		{"quieter than idle", 10, 100_000, 20 * time.Second, 0.2, 0},
		{"no rows", 55, 0, 20 * time.Second, 0.2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := netOfIdle(tc.perRow, tc.rows, tc.window, tc.idleCores); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("netOfIdle(%v, %d, %v, %v) = %v, want %v", tc.perRow, tc.rows, tc.window, tc.idleCores, got, tc.want)
			}
		})
	}
}

// TestProbeCostIsTheCoresAboveIdlePerRead guards how a probe read polled alone is priced: the cores
// above idle while only probes were polled, over the window, per read.
func TestProbeCostIsTheCoresAboveIdlePerRead(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	idle := coresOver(procSample{At: t0, CPU: time.Second}, procSample{At: t0.Add(5 * time.Second), CPU: 2 * time.Second})
	if idle != 0.2 {
		t.Fatalf("1 CPU-s over 5 s is %v cores, want 0.2", idle)
	}
	if got := coresOver(procSample{At: t0}, procSample{At: t0}); got != 0 {
		t.Errorf("an empty window gives %v cores, want 0", got)
	}
	// 0.3 cores while polled, 0.2 idle: 0.1 × 5 s = 500,000 µs over 1,000 reads.
	if got := probeReadCost(0.3, idle, 5*time.Second, 1000); math.Abs(got-500) > 1e-9 {
		t.Errorf("probe read %v µs, want 500", got)
	}
	if got := probeReadCost(0.3, 0.2, 5*time.Second, 0); got != 0 {
		t.Errorf("no reads priced at %v, want 0", got)
	}
}

// TestFreshnessCountsEveryReadItSends guards the probes' cost as the steady phase reports it: a read
// that finds nothing is a read Cassandra served too.
func TestFreshnessCountsEveryReadItSends(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		f := &freshness{
			read: func(context.Context, probe) (bool, error) {
				calls++
				return calls >= 3, nil
			},
			every:  5 * time.Millisecond,
			giveUp: time.Minute,
		}
		probes := make(chan probe, 1)
		probes <- probe{device: "d", produced: time.Now()}
		close(probes)
		f.run(t.Context(), probes)
		if s := f.summary(); s.ProbeReads != 3 || s.FreshSamples != 1 {
			t.Errorf("%d reads, %d seen; want the 3 reads it took to see the one probe", s.ProbeReads, s.FreshSamples)
		}
	})
}

// TestNoProbesSendsNoneAndSaysFreshnessIsNotMeasured guards --no-probes, the run that tells what the
// probes cost Cassandra: no event is sampled, and the table does not print a freshness of 0 ms.
func TestNoProbesSendsNoneAndSaysFreshnessIsNotMeasured(t *testing.T) {
	if got := (&Options{}).sampleEvery(15000); got != 750 {
		t.Errorf("sampleEvery at 15,000/s = %d, want 750 (20 probes a second)", got)
	}
	if got := (&Options{NoProbes: true}).sampleEvery(15000); got != 0 {
		t.Errorf("sampleEvery with NoProbes = %d, want 0", got)
	}
	r := &Result{Params: Params{SteadyOnly: true, NoProbes: true}, Latency: Latency{Events: 300_000, Seconds: 20}}
	out := tableHas(t, r, "steady: readable", "no freshness probes (--no-probes)")
	if strings.Contains(out, "p50 0 ms, p99 0 ms") && strings.Contains(out, "sampled events read back") {
		t.Errorf("the table prints a freshness it did not measure:\n%s", out)
	}
}
