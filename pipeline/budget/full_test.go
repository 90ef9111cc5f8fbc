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
