// Package batcher groups rows into single-partition batches under row, byte and linger limits.
//
// A Batcher is a pure state machine: rows go in with Add, full batches come back at once, and
// the owner's loop asks NextDue when to call Due for batches whose linger has passed. It reads no
// clock and starts no goroutines, so every rule is testable with made-up times. It is owned by
// one goroutine.
package batcher
