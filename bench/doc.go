// Package bench measures the sink end to end against the raw Cassandra ceiling, in one run.
//
// Run drives five phases on a live Kafka and Cassandra: it produces sample sensor events to a fresh
// topic; writes the same rows straight to Cassandra with the best direct-writer settings it can find
// (the ceiling); runs the real daemon as a subprocess over the backlog (the sink); runs the same
// daemon with a writer that only marshals and discards (pipeline only); and measures
// event-to-commit latency at half the sink's measured rate. Throughput is reported as ratios taken
// in the same run, so a noisy or shared machine moves both sides of each ratio together.
//
// Subprocesses are measured from /proc (CPU seconds from utime+stime, peak RSS from VmHWM), so the
// harness's own work (producing, polling offsets) never counts against the sink.
//
// Run is not safe for concurrent use with itself on the same servers only in the sense that two runs
// compete for the same CPUs; every run uses fresh topics, tables and consumer groups.
package bench
