// Package metrics defines every Prometheus metric the daemon exports (Metrics, MetricNames) and the
// ones computed at scrape time: the event-time lag and the largest open Cassandra partitions per topic
// (largest.go, also served as /debug/partitions).
//
// Concurrency: the metric vectors are safe for concurrent use, as Prometheus's are. The scrape-time
// state is guarded by its own mutex, so ObserveWritten (the write stage's writer goroutines), Largest
// (HTTP handlers) and a scrape may run at once.
package metrics
