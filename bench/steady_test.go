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
