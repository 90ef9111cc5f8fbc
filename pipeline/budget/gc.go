package budget

// The collector's growth target (GOGC) follows the buffer's fill.
//
// With writer.memory_limit set, `sink run` lets the heap grow to GCPercentFull over the live heap
// before a collection: over a backlog the buffer is full, the live heap is large, and a high target is
// what keeps the collector's share small (each cycle costs about the live heap, whatever the garbage).
// At a steady rate the buffer holds a second of rows or less and the live heap is small, but the same
// target let the heap sit at five times it: the peak RSS at a steady 15,000 events/s was about 110 MiB
// for a live heap of about 20 MB, and 144 MiB in a run where a stall of the machine took the live heap
// to 31 MB (docs/PERFORMANCE.md, "Memory").
//
// While the buffer is nearly empty the target is instead the one that puts the heap's goal at
// SteadyHeap over the live heap of the last collection, within GCPercentFloor and GCPercentFull: the heap
// stays under SteadyHeap whatever the live heap does below half of it, with as few cycles as that
// allows (a fixed lower percentage would either leave the heap to follow a stall's live heap up or
// collect more often than needed while the live heap is small). Above half of SteadyHeap the floor,
// the runtime's own default, keeps the collector from running all the time.
//
// Whether the buffer counts as full has two thresholds, not one, so that a fill that wanders around a
// single threshold does not move the target at every charge: it becomes full at a quarter of the budget
// and nearly empty again at an eighth or less.
const (
	// GCPercentFull is the growth target while the buffer counts as full (and the one `sink run` starts
	// with when it applies writer.memory_limit).
	GCPercentFull = 400
	// GCPercentFloor is the lowest growth target the fill sets: the runtime's default.
	GCPercentFloor = 100
	// SteadyHeap is the heap goal aimed at while the buffer is nearly empty. With the rest of the
	// process (the runtime's own structures, the binary, about 16 MiB at a steady 15,000 events/s) it
	// keeps the RSS under 100 MiB.
	SteadyHeap = 72 << 20
)

// Full reports whether held bytes of a budget of high count as a full buffer, given whether they did
// (wasFull): from a quarter of the budget up they do, at an eighth or less they do not, and between the
// two the answer stays. A budget of 0 or less counts as full (nothing to measure a fill against).
func Full(held, high int64, wasFull bool) bool {
	switch {
	case high <= 0 || held >= high/4:
		return true
	case held <= high/8:
		return false
	}
	return wasFull
}

// GCPercent is the growth target for a buffer that is full or not, given the live heap after the last
// collection (0 when none has run yet: GCPercentFull, the heap is still small).
func GCPercent(full bool, live uint64) int {
	if full || live == 0 {
		return GCPercentFull
	}
	// The heap's goal is live × (1 + percent/100).
	p := int64(SteadyHeap)*100/int64(live) - 100
	return int(min(max(p, GCPercentFloor), GCPercentFull))
}
