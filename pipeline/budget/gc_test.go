package budget

import "testing"

// TestGCPercentFollowsTheFill: the steady target while the buffer is nearly empty, the full one from a
// quarter of the budget up (and at or over the budget), and between the two thresholds whichever was in
// force.
func TestGCPercentFollowsTheFill(t *testing.T) {
	const high = 800
	for _, c := range []struct {
		held int64
		prev int
		want int
	}{
		{0, 0, GCPercentSteady},
		{0, GCPercentFull, GCPercentSteady},
		{100, GCPercentFull, GCPercentSteady}, // an eighth
		{101, 0, GCPercentSteady},             // nothing in force yet: the steady one
		{101, GCPercentSteady, GCPercentSteady},
		{101, GCPercentFull, GCPercentFull},
		{199, GCPercentSteady, GCPercentSteady},
		{199, GCPercentFull, GCPercentFull},
		{200, GCPercentSteady, GCPercentFull}, // a quarter
		{200, 0, GCPercentFull},
		{800, GCPercentSteady, GCPercentFull},
		{5000, GCPercentSteady, GCPercentFull},
	} {
		if got := GCPercent(c.held, high, c.prev); got != c.want {
			t.Errorf("GCPercent(%d of %d, in force %d) = %d, want %d", c.held, high, c.prev, got, c.want)
		}
	}
	// No budget to measure a fill against: the target `sink run` starts with.
	if got := GCPercent(0, 0, 0); got != GCPercentFull {
		t.Errorf("GCPercent with a budget of 0 = %d, want %d", got, GCPercentFull)
	}
}

// TestGCTargetDoesNotFlap: a fill that wanders around either threshold, but not across both, changes
// the target once, not at every charge; crossing both ways changes it twice.
func TestGCTargetDoesNotFlap(t *testing.T) {
	const high = 800
	var g GCTarget
	if p, changed := g.Follow(0, high); !changed || p != GCPercentSteady {
		t.Fatalf("first Follow = %d, %v; want %d, true", p, changed, GCPercentSteady)
	}
	changes := 0
	// Around a quarter, starting below it: one rise, then it stays up while the fill stays above an eighth.
	for i := range 100 {
		held := int64(190 + 20*(i%2)) // 190, 210, 190, ...
		if _, changed := g.Follow(held, high); changed {
			changes++
		}
	}
	if p, _ := g.Follow(150, high); changes != 1 || p != GCPercentFull {
		t.Errorf("fill alternating 190/210 of 800: %d changes, target %d; want 1 change, %d", changes, p, GCPercentFull)
	}
	// Around an eighth, starting above it: one fall, then it stays down while the fill stays under a quarter.
	changes = 0
	for i := range 100 {
		held := int64(110 - 20*(i%2)) // 110, 90, 110, ...
		if _, changed := g.Follow(held, high); changed {
			changes++
		}
	}
	if p, _ := g.Follow(150, high); changes != 1 || p != GCPercentSteady {
		t.Errorf("fill alternating 110/90 of 800: %d changes, target %d; want 1 change, %d", changes, p, GCPercentSteady)
	}
	// Full and empty in turn: every crossing of both thresholds changes it.
	changes = 0
	for i := range 10 {
		held := int64(high * (i % 2))
		if _, changed := g.Follow(held, high); changed {
			changes++
		}
	}
	if changes != 9 { // the first, empty, is already in force
		t.Errorf("fill alternating 0/800: %d changes, want 9", changes)
	}
}
