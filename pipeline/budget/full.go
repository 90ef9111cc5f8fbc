package budget

// Full reports whether held bytes of a budget of high count as a full buffer, given whether they did
// (wasFull): from a quarter of the budget up they do, at an eighth or less they do not, and between the
// two the answer stays. A budget of 0 or less counts as full (nothing to measure a fill against).
//
// The collector's growth target follows the answer (memlimit.Target: a high target while the buffer is
// full, one that holds the heap small while it is nearly empty). Two thresholds, not one, so that a fill
// that wanders around a single threshold does not move the target at every charge.
func Full(held, high int64, wasFull bool) bool {
	switch {
	case high <= 0 || held >= high/4:
		return true
	case held <= high/8:
		return false
	}
	return wasFull
}
