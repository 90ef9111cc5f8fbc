// Package pipeline runs the Kafka consumer group and moves records to Cassandra at least once. It is
// the top that wires the parts, each in a package of its own:
//
//   - offsets: which offsets are done and what may be committed; commit.go is where offsets reach Kafka.
//   - budget: what buffered records and rows cost, and the byte budget that stops polling.
//   - writestage: the batcher goroutine, the writers, and the retries of batches given back.
//   - deadletter: building, sizing and checking dead letters, and re-reading refused rows' records.
//   - consumer: the Kafka clients' options, the start-up broker check, the fetch and hand-off pools.
//   - metrics: every exported metric, and the largest open partitions.
//   - health: /healthz, /readyz, sink_ready and the Cassandra readiness ping.
//   - split: hot-entity split routing, through the split.Worker a partition implements, and the
//     group session's lease under which a split entry's batches are written.
//   - dlsend: the per-partition dead-letter sender goroutine, which tells its partition
//     (dlsend.Partition) what became of each dead letter.
//
// What stays here: Run and the poll loop (pipeline.go), the rebalance callbacks (group.go) and the
// per-partition worker and its completion (partition.go), which own the partition's lock and lifecycle.
//
// Concurrency: one poll-loop goroutine (Run) queues records and never blocks on a worker; franz-go runs
// the rebalance callbacks between polls. Each assigned partition has one worker goroutine and one
// dead-letter sender goroutine, both owned by the callbacks, which stop and wait for them. The write
// stage has one goroutine owning the batcher and writer goroutines up to writer.max_in_flight. A
// partition's mutex guards its tracker and marks; the Pipeline's mutex guards the owned partitions and
// the budget (lock order: a partition's before the Pipeline's). Handler, Alive, Ready and Stopping are
// safe to call from any goroutine; Run is called once.
package pipeline
