// Package schema describes the Cassandra table each configured topic writes: its columns in INSERT
// order with their CQL types, the partition key (id columns, bucket column, event bucket column),
// the clustering columns and their order, the bucket policy, the TTL and write timestamp the
// INSERT binds, and the INSERT text itself.
//
// The description is derived from a validated configuration alone; the package imports config and
// bucketer and nothing else of the project. The mapper binds rows to it, `sink schema` renders
// and checks DDL from it (package cassandra), and the reader plans and decodes its reads with it,
// so the three cannot drift apart, and none of them needs another to learn a table's shape.
//
// A Table is a value that is never changed after Describe returns it, and is safe for concurrent
// use.
package schema
