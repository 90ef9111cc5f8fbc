// Package writestage turns the workers' rows into Cassandra batches and writes them: one goroutine feeds
// the batcher and hands batches to writer.max_in_flight write slots (stage.go), as the slot policy decides
// which batch takes each slot and when (policy.go: a pure state machine that owns the batcher), batches
// due together joined into shared requests by Config.Group; writer goroutines send them through the
// BatchWriter, and a batch given back unwritten is sent again, the batches of one failing table probing
// it one at a time with capped backoff (retrygate.go). Each row's
// Owner (the pipeline's assignment of its Kafka partition) is told what became of it: written, refused
// (dead-lettered), retried, recovered or abandoned.
//
// Concurrency: workers send on In from their own goroutines (the only place they wait); Flush may be
// called from any goroutine (the revoke callback); Run is called once, and Close once after every sender
// has stopped. The slot policy, with the batcher and the owner map, belongs to Run's goroutine alone;
// the retry gates are guarded by their own mutex. Owner methods are called from the writer and retry goroutines, concurrently with
// each other.
package writestage
