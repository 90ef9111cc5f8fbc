package memlimit

// The collector's growth target (GOGC) follows the pipeline's buffer.
//
// With writer.memory_limit set, `sink run` lets the heap grow to GCPercent over the live heap before a
// collection: over a backlog the buffer is full, the live heap is large, and a high target is what keeps
// the collector's share small (each cycle costs about the live heap, whatever the garbage). At a steady
// rate the buffer holds a second of rows or less and the live heap is small, but the same target let the
// heap sit at five times it: the peak RSS at a steady 15,000 events/s was about 110 MiB for a live heap
// of about 20 MB, and 144 MiB in a run where a stall of the machine took the live heap to 31 MB
// (docs/PERFORMANCE.md, "Memory").
//
// While the buffer is nearly empty (budget.Full) the target is instead the one that puts the heap's goal
// at SteadyHeap over the live heap of the last collection, within GCPercentFloor and GCPercent: the heap
// stays under SteadyHeap whatever the live heap does below half of it, with as few cycles as that
// allows (a fixed lower percentage would either let the heap follow a stall's live heap up or collect
// more often than needed while the live heap is small). Above half of SteadyHeap the floor, the
// runtime's own default, keeps the collector from running all the time.
const (
	// GCPercentFloor is the lowest growth target the buffer sets: the runtime's default.
	GCPercentFloor = 100
	// SteadyHeap is the heap goal aimed at while the buffer is nearly empty. With the rest of the
	// process (the runtime's own structures, the binary: about 16 MiB at a steady 15,000 events/s) it
	// keeps the RSS under 100 MiB.
	SteadyHeap = 72 << 20
)

// GCTargetFor is the growth target for a buffer that is full or not, given the live heap after the last
// collection (0 when none has run yet: GCPercent, the heap is still small).
func GCTargetFor(full bool, live uint64) int {
	if full || live == 0 {
		return GCPercent
	}
	// The heap's goal is live × (1 + percent/100).
	p := int64(SteadyHeap)*100/int64(live) - 100
	return int(min(max(p, GCPercentFloor), GCPercent))
}
