package budget

import "testing"

// TestFullHasTwoThresholds: full from a quarter of the budget up, nearly empty at an eighth or less,
// and between the two whichever it was.
func TestFullHasTwoThresholds(t *testing.T) {
	const high = 800
	for _, c := range []struct {
		held    int64
		wasFull bool
		want    bool
	}{
		{0, false, false},
		{0, true, false},
		{100, true, false}, // an eighth
		{101, false, false},
		{101, true, true},
		{199, false, false},
		{199, true, true},
		{200, false, true}, // a quarter
		{800, false, true},
		{5000, false, true},
	} {
		if got := Full(c.held, high, c.wasFull); got != c.want {
			t.Errorf("Full(%d of %d, was %v) = %v, want %v", c.held, high, c.wasFull, got, c.want)
		}
	}
	if !Full(0, 0, false) {
		t.Error("a budget of 0 does not count as full")
	}
}

// TestFullDoesNotFlap: a fill that wanders around either threshold, but not across both, changes the
// answer once, not at every charge.
func TestFullDoesNotFlap(t *testing.T) {
	const high = 800
	full, changes := false, 0
	for i := range 100 {
		next := Full(int64(190+20*(i%2)), high, full) // 190, 210, 190, ...
		if next != full {
			changes++
		}
		full = next
	}
	if changes != 1 || !full {
		t.Errorf("fill alternating 190/210 of 800: %d changes, full %v; want 1 change, full", changes, full)
	}
	changes = 0
	for i := range 100 {
		next := Full(int64(110-20*(i%2)), high, full) // 110, 90, 110, ...
		if next != full {
			changes++
		}
		full = next
	}
	if changes != 1 || full {
		t.Errorf("fill alternating 110/90 of 800: %d changes, full %v; want 1 change, not full", changes, full)
	}
}

// TestGCPercentPutsTheSteadyHeapGoalAtSteadyHeap: full, or before any collection, the full target; nearly
// empty, the target whose goal is SteadyHeap for the live heap, within the floor and the full target.
func TestGCPercentPutsTheSteadyHeapGoalAtSteadyHeap(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		full bool
		live uint64
		want int
	}{
		{true, 20 * mib, GCPercentFull},
		{true, 200 * mib, GCPercentFull},
		{false, 0, GCPercentFull},
		{false, 4 * mib, GCPercentFull},    // 72/4 - 1 = 17 times: capped
		{false, 18 * mib, 300},             // 72 = 18 × 4
		{false, 24 * mib, 200},             // 72 = 24 × 3
		{false, 36 * mib, GCPercentFloor},  // 72 = 36 × 2
		{false, 60 * mib, GCPercentFloor},  // above half the steady heap: the floor
		{false, 500 * mib, GCPercentFloor}, // never below it
	} {
		if got := GCPercent(c.full, c.live); got != c.want {
			t.Errorf("GCPercent(full %v, live %d MiB) = %d, want %d", c.full, c.live/mib, got, c.want)
		}
	}
	// Between the bounds the goal, live × (1 + p/100), is SteadyHeap to a percent of the live heap.
	for live := uint64(15 * mib); live <= 35*mib; live += mib / 3 {
		p := GCPercent(false, live)
		goal := live * uint64(100+p) / 100
		if goal > SteadyHeap || SteadyHeap-goal > live/100 {
			t.Errorf("live %d: target %d%%, goal %d, want at most and within 1%% of live under %d", live, p, goal, SteadyHeap)
		}
	}
}
