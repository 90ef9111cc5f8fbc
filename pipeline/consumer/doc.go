// Package consumer configures the sink's Kafka clients: the options all of them share (brokers, TLS,
// SASL, isolation level, logging), the group consumer's own (group, topics, rebalance callbacks, fetch
// sizes), the start-up check that tells a refused configuration from brokers that are merely down, and
// the pools that let franz-go and the workers reuse record slices, decompression buffers and the
// hand-off slices of rows, and the Queue that hands each partition's fetched records from the poll loop
// to its worker.
//
// Concurrency: the option builders and CheckBrokers are pure or use only their arguments. The pools are
// safe for concurrent use (franz-go calls them from its fetch goroutines, the workers and the write
// stage give memory back from theirs). A Queue is pushed to by the poll loop and read by its one
// worker, under its own lock. The rebalance callbacks themselves belong to the pipeline.
package consumer
