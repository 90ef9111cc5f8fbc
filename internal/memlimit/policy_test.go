package memlimit

import "testing"

// TestGCTargetForPutsTheHeapGoalAtSteadyHeap: full, or before any collection, the full target; nearly
// empty, the target whose goal is SteadyHeap for the live heap, within the floor and the full target.
func TestGCTargetForPutsTheHeapGoalAtSteadyHeap(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		full bool
		live uint64
		want int
	}{
		{true, 20 * mib, GCPercent},
		{true, 200 * mib, GCPercent},
		{false, 0, GCPercent},
		{false, 4 * mib, GCPercent},        // 72/4 - 1 = 17 times: capped
		{false, 18 * mib, 300},             // 72 = 18 × 4
		{false, 24 * mib, 200},             // 72 = 24 × 3
		{false, 36 * mib, GCPercentFloor},  // 72 = 36 × 2
		{false, 60 * mib, GCPercentFloor},  // above half the steady heap: the floor
		{false, 500 * mib, GCPercentFloor}, // never below it
	} {
		if got := GCTargetFor(c.full, c.live); got != c.want {
			t.Errorf("GCTargetFor(full %v, live %d MiB) = %d, want %d", c.full, c.live/mib, got, c.want)
		}
	}
	// Between the bounds the goal, live × (1 + p/100), is SteadyHeap to a percent of the live heap.
	for live := uint64(15 * mib); live <= 35*mib; live += mib / 3 {
		p := GCTargetFor(false, live)
		goal := live * uint64(100+p) / 100
		if goal > SteadyHeap || SteadyHeap-goal > live/100 {
			t.Errorf("live %d: target %d%%, goal %d, want at most and within 1%% of live under %d", live, p, goal, SteadyHeap)
		}
	}
}
