//go:build race

package mapper

// raceEnabled: the race detector changes allocation counts, so TestMarshalCQLDoesNotAllocate and
// TestBinderKeepsEarlierArguments do not count them.
const raceEnabled = true
