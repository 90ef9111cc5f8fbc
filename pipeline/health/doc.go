// Package health answers /healthz (is the poll loop turning?) and /readyz (is this member in its group,
// does Cassandra answer, is it not shutting down?), keeps sink_ready in step, and serves
// /debug/partitions.
//
// Concurrency: State is a set of atomics; every method is safe to call from any goroutine (the poll
// loop, the rebalance callbacks, the writers, HTTP handlers). PingLoop runs in one goroutine of its own
// until its context ends.
package health
