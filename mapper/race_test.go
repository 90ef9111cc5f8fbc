//go:build race

package mapper

// raceEnabled: the race detector changes allocation counts, so TestMapAllocs does not hold them.
const raceEnabled = true
