//go:build race

package batcher

// raceEnabled: under the race detector sync.Pool drops a quarter of what is put back, on purpose.
const raceEnabled = true
