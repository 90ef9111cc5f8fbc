// Package budget says what buffered records, mapped rows and tracker entries cost in memory, and
// holds the byte budget (writer.max_buffered_bytes) that stops polling while it is spent: Charge
// and Release per partition, Over for the poll loop, and SetStuck, which pauses a stuck partition
// so its fetched records do not hold the budget every other partition shares. Full says whether the
// buffer counts as full, with two thresholds so the answer does not flap; the collector's growth target
// follows it (internal/memlimit).
//
// Concurrency: a Budget is plain state and not safe for concurrent use; the pipeline guards it with
// its mutex. The cost functions are pure.
package budget
