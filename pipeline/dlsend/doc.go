// Package dlsend produces a partition's dead letters: one Sender goroutine per assigned Kafka
// partition takes the records its worker (bad input) and the write stage (rows Cassandra refused, or
// whose slice table is missing) hand it, reads refused rows' records back from Kafka, fits each dead
// letter to what the dead-letter topic accepts (Limits) and produces it, retried with backoff for as
// long as the partition is ours. What the dead letters are (headers, truncation, reasons, the
// re-read) is package deadletter's; this package is the goroutine that sends them and tells the
// partition (Partition) what became of each.
//
// Concurrency: Add is called from the worker's and the write stage's goroutines; everything else runs
// on the Sender's own goroutine (Run), which the pipeline's rebalance callbacks own: it returns when
// the partition is given up, and Done is closed then. The sender's lock and the Limits' are leaves;
// the Partition's methods take the partition's lock, never while a sender's is held.
package dlsend
