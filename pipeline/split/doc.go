// Package split is the write side of hot-entity splits (docs/DESIGN.md, "Hot entities split at write
// time"): a Topic is an entry's split policy, a State one partition worker's routing of that entry's
// rows (it loads and refreshes the bucket's routing records into the mapper's routes, makes its Kafka
// partition adopt a generation before a row uses it, tallies what each entity sends and decides a
// split when a partition is projected to outgrow its budget), and the Lease is the group session's
// lease under which the write stage sends a split entry's batches. It reaches the routing table
// through a Store and the pipeline through the Worker interface its partition worker implements.
//
// Concurrency: a State belongs to its worker's goroutine. A Topic is shared by the workers of its
// entry; its one mutable part, when each bucket was last read, is guarded by a leaf lock. The Lease is
// called by the write stage's writer goroutines at once (see Lease).
package split
