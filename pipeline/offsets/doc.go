// Package offsets decides which Kafka offsets may be committed, and commits them.
//
// A Tracker per assigned partition records every offset the worker takes, with its parts (a row in
// each table its Kafka topic feeds, and its dead letter), and which of them are done (written to
// Cassandra or dead-lettered); a record is done with its last part. Its Watermark is the next offset
// to commit, never past a record that is not done. commit.go is the one place offsets reach Kafka: Marker.Mark hands a moved
// watermark to the client, which commits the marks every writer.commit_interval (ClientOptions), and
// CommitMarked commits them synchronously when partitions are revoked.
//
// Concurrency: a Tracker and a Marker are not safe for concurrent use; the partition that owns them
// guards both with its mutex, and marks only while it still owns the partition. CommitMarked and the
// hooks may be called from any goroutine.
package offsets
