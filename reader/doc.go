// Package reader reads back what `sink run` wrote: the rows of one entity between two instants,
// or its latest N, from the same configuration, so the read half of the bucket contract is
// implemented once, next to the write half, and tested against it.
//
// A query names a topic, the entity's id values and a range. From before To reads [From, To)
// oldest first; From after To reads (To, From] newest first (no direction flag). MakePlan turns
// the range into the time buckets it touches, in the order they are returned, each with its table
// (the slice's, for sliced topics), its bucket key (rolling applied) and its partitions (every event
// bucket). Within a partition the range is a slice of the first clustering column, which must hold
// the event time (a timestamp or a timeuuid), so a rolling key's earlier cycle is never read as
// part of the current one.
//
// Partitions are read with bounded parallelism (Config.Parallelism requests in flight) and
// read-ahead in the order they will be returned; the event buckets of one time bucket are merged
// in the table's clustering order (reversed when the read runs against it). A query with a limit
// or a page size reads ahead only as many time buckets as the rows seen so far say it needs, and
// asks for a partition's next page only when the merge needs it, so the latest 100 rows of a busy
// entity cost one or two requests, not one per partition of the range. Each partition of a bucket is
// asked for its share of what the page still needs (Config.FetchSize at most), so a page over K event
// buckets reads about the page from Cassandra, not K pages.
//
// A page ends with an opaque cursor: the query's range and limit, and the position of the last row
// returned (its time bucket, event bucket and clustering values). A fresh Reader in another process
// resumes from it exactly after that row, even while rows are being written: every row present at
// the first call is returned once. A slice table that does not exist is read as empty and reported
// once in Page.Warnings. Deadlines and cancellation come from the context.
//
// A latest-value table (bucket width none) has no range to read: Latest returns the rows of a list of
// entities, one request per entity, and Read, Scan and Plan refuse it (ErrLatest).
//
// A Reader is safe for concurrent use. Every query starts its own goroutines and waits for them
// before it returns.
package reader
