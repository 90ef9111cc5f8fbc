// Package routing holds the pure rules of hot-entity splits: where a split sends a row, and what the
// routing records say. It is the one place both halves of the contract read (invariant 9): the
// mapper routes rows through Routes, the cassandra package stores Records and Adoptions, the reader
// plans reads from Generations, and the pipeline decides and adopts splits with them
// (docs/DESIGN.md, "Hot entities split at write time").
//
//   - A Generation is one split decision of an entity's time bucket: from an event time on, the
//     entity's rows go to event buckets of their own (Generation, Applying).
//   - A Record is a routing record as the table sink_splits holds it, an Adoption one row of
//     sink_split_adoptions; AdoptionIndex and Generations turn what a bucket's load returns into
//     the generations Routes follows.
//   - Routes is the snapshot the mapper reads on every row: which generation routes a row, given its
//     event time and, for a writer, its Kafka partition and offset (Routes.Route).
//   - Size, Carry and AdoptFrom are the sizing rules: how many event buckets a generation needs to
//     hold the entity's rows until its bucket ends (no later decision is guaranteed), the
//     generation that starts the next bucket of an entity already split, and the offset from which
//     a Kafka partition follows a generation it found recorded.
//   - EntityPartitions names an entity's partitions of one time bucket in plain values, and KeyParts
//     reads the entity and event bucket back from a row's routing key.
//
// It performs no I/O and imports nothing of the project but bucketer, config and schema. Routes is
// safe for concurrent use (one writer at a time, readers without locks); everything else is plain
// values.
package routing
