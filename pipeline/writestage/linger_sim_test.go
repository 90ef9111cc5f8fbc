package writestage

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/config"
)

// TestLingerAgainstRowsPerRequestAtSteadyRates measures, on the simulated stage and node, what a longer
// writer.linger buys at the rates deployments live at: rows arrive as fetches that wait deliver them (a
// message per Kafka partition every 30 ms), 10,000 Zipf-skewed keys. A longer linger fills the hot
// partitions' batches, but most requests are joined ones of cold partitions of a row or two, and those are
// capped by writer.group_max_partitions (10) and writer.group_max_bytes (4 KiB as the server counts it), under
// the server's warning thresholds: at 15,000 rows/s a linger forty times longer does not double the rows per
// request, while every row waits it. The figures are in docs/PERFORMANCE.md ("Steady rates: what is left"); the test holds the
// shape they show: rows per request grow with the linger but stay under twice the default's, and joined
// requests never pass the caps.
func TestLingerAgainstRowsPerRequestAtSteadyRates(t *testing.T) {
	for _, rate := range []float64{5000, 15000} {
		var first float64
		last := 0.0
		for _, linger := range []time.Duration{5 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond} {
			t.Run(fmt.Sprintf("%.0f/s linger %v", rate, linger), func(t *testing.T) {
				var r simResult
				synctest.Test(t, func(t *testing.T) {
					r = simulate(simConfig{
						Batcher:     batcher.Config{MaxRows: config.DefaultBatchMaxRows, MaxBytes: int(config.DefaultBatchMaxBytes), Linger: linger},
						MaxInFlight: config.DefaultMaxInFlight,
						Keys:        10_000, Skew: 1.1, Rows: int(rate * 10), Rate: rate, Tick: 30 * time.Millisecond,
						Budget:     int(config.DefaultMaxBufferedBytes) / 380,
						Partitions: 6, RowSize: 122,
						Cores: 1, PerRequest: 250 * time.Microsecond, PerRow: 8 * time.Microsecond,
					})
				})
				all := func(simRow) bool { return true }
				wait := func(x simRow) time.Duration { return x.wait }
				a, n := r.rowsPerRequest(func(simRequest) bool { return true })
				jp, jn := r.partsPerRequest(func(q simRequest) bool { return q.partitions > 1 })
				sp, sn := r.rowsPerRequest(func(q simRequest) bool { return q.partitions == 1 })
				p99 := r.quantile(.99, all, wait)
				t.Logf("%.1f rows per request (%d); joined: %.1f partitions (%d); single-partition: %.1f rows (%d); wait p50 %v, p99 %v",
					a, n, jp, jn, sp, sn, r.quantile(.5, all, wait).Round(time.Millisecond), p99.Round(time.Millisecond))
				for _, q := range r.requests {
					if q.partitions > 10 {
						t.Fatalf("a joined request of %d partitions, over the cap of 10", q.partitions)
					}
				}
				if p99 > linger+10*time.Millisecond {
					t.Errorf("p99 of a row's wait %v, want at most the linger and 10 ms", p99)
				}
				if a+0.05 < last {
					t.Errorf("%.1f rows per request, fewer than the shorter linger's %.1f", a, last)
				}
				if first == 0 {
					first = a
				} else if a >= 2*first {
					t.Errorf("%.1f rows per request, twice the default linger's %.1f or more: the figures in docs/PERFORMANCE.md no longer hold", a, first)
				}
				last = a
			})
		}
	}
}
