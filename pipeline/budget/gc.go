package budget

// The collector's growth target (GOGC) follows the buffer's fill.
//
// With writer.memory_limit set, `sink run` lets the heap grow to GCPercentFull over the live heap
// before a collection: over a backlog the buffer is full, the live heap is large, and a high target is
// what keeps the collector's share small (each cycle costs about the live heap, whatever the garbage).
// At a steady rate the buffer holds a few seconds of rows at most and the live heap is small, but the
// same target let the heap sit at five times it: the peak RSS at a steady 15,000 events/s was about
// 110 MiB for a live heap of about 20 MB (docs/PERFORMANCE.md, "Memory"). While the buffer is nearly
// empty the target is GCPercentSteady instead: twice as many cycles, each as cheap as the live heap is
// small, and a heap about two fifths lower.
//
// Two thresholds, not one, so that a buffer whose fill wanders around a single threshold does not move
// the target at every charge: the target rises to GCPercentFull once the buffer is a quarter full and
// falls back only once it is an eighth full or less.
const (
	// GCPercentFull is the growth target while the buffer holds a quarter of its budget or more (and the
	// one `sink run` starts with when it applies writer.memory_limit).
	GCPercentFull = 400
	// GCPercentSteady is the growth target while the buffer holds an eighth of its budget or less.
	GCPercentSteady = 200
)

// GCPercent is the growth target for held bytes of a budget of high, given the target in force (prev;
// 0 when none is set yet). Between an eighth and a quarter of the budget prev stays, or, when none is
// set, GCPercentSteady does.
func GCPercent(held, high int64, prev int) int {
	switch {
	case high <= 0 || held >= high/4:
		return GCPercentFull
	case held <= high/8:
		return GCPercentSteady
	case prev == 0:
		return GCPercentSteady
	}
	return prev
}

// GCTarget remembers the growth target in force so its owner sets the runtime's only when it changes.
// Not safe for concurrent use: the pipeline holds it under the same lock as the Budget.
type GCTarget struct{ percent int }

// Follow returns the growth target for held bytes of high and whether it differs from the one in force
// (the caller then applies it: debug.SetGCPercent).
func (g *GCTarget) Follow(held, high int64) (percent int, changed bool) {
	p := GCPercent(held, high, g.percent)
	if p == g.percent {
		return p, false
	}
	g.percent = p
	return p, true
}
