// Package cassandra is the sink's storage layer: everything that talks to Cassandra.
//
//   - session.go: Connect turns config.Cassandra into a driver session (token- and DC-aware routing, no
//     driver retries, no client-side timestamps, TLS and password auth) and names a refused login or TLS
//     setup.
//   - writer.go: Writer writes one batcher.Batch (one partition's rows, or several partitions' joined by
//     Group) as one UNLOGGED batch, with bounded in-flight requests, its own capped and jittered retries,
//     and isolation of rows Cassandra refuses.
//   - grouping.go: Group joins batches due together whose partitions have the same replicas (Replicas,
//     asked of the session's token-aware policy) into requests within writer.group_max_partitions and
//     writer.group_max_bytes, so each request's coordinator is a replica of every partition in it.
//   - errors.go: how a driver error is classified (transient, missing table, rejected rows, fatal), and the
//     errors the writer returns (*WriteError, RowFailure).
//   - schema.go: the DDL `sink schema` prints and applies, rendered from each topic's schema.Table, and the
//     check of existing tables against it (`sink schema --apply`, and `sink run` before it consumes);
//     SliceMaker creates a missing slice's table on demand.
//   - routing.go: the Murmur3 token of a routing key, as Cassandra computes it.
//   - routing_table.go: the sink_splits table of hot-entity splits (Splits).
//   - defaults.go: what zero fields of a configuration built in Go mean (config's defaults; the daemon
//     always passes every value set).
//
// The package takes a table's shape from package schema and never builds a mapper; rows are bound
// through the mapper's Binder only in writer.go. Session, Writer, SliceMaker and Splits are safe for
// concurrent use.
package cassandra
