// Package mapper turns one Kafka record into one Cassandra row for its topic's policy.
//
// New compiles every configured topic once: the column plan with each field path split at its
// dots and the bucket policy, bound to the topic's table as package schema describes it (columns,
// keys, the INSERT statement). Map then decodes the record's
// JSON value, finds the event time, converts every column, and returns a batcher.Row, or a
// *RecordError naming the topic, partition, offset and the exact problem, which the pipeline
// sends to the dead-letter topic. A Mapper is safe for concurrent use.
//
// Every codec goes through the same per-record path: its plan (package codec) decodes the fields
// the topic needs into typed values, which the columns encode into the row. JSON's plan (package
// codec/json) reads most records in one pass over the bytes and the others through a parsed tree; a
// value that does not fit its column comes back as a value of State Bad, which the mapper reports
// when it reaches that column, so every codec's record takes this one path.
//
// Several entries (topics.<name>) may read one Kafka topic: MapAll decodes a record of it once, by
// one plan of the union of the fields its entries need, and each entry maps its own row from the
// shared values, or refuses the record with a *RecordError naming the entry (fanout.go). Map,
// MapContext and Explain serve a topic read by one entry; MapEntry and ExplainEntry one entry of any.
//
// # On-disk contracts
//
// These decide which partition and which row a record lands in; changing any of them moves data,
// so they change only with a new policy name.
//
//   - Event bucket: FNV-1a 64 (bucketer.EventBucket) of the canonical text of each clustering value
//     (or of the bucket.event_bucket_field column), joined with one 0x00 byte between values, modulo
//     bucket.event_buckets; for a row a split generation routes, its first event bucket plus that
//     hash modulo the generation's event bucket count (route.go). Canonical text: text as is; integers in decimal; float and double in
//     the shortest form that reads back exactly (strconv 'g', -1); boolean true/false; timestamp
//     as 2006-01-02T15:04:05.000Z in UTC; date as 2006-01-02; uuid and timeuuid in lower-case
//     8-4-4-4-12 form; blob in lower-case hex; inet as Go's net.IP String; decimal and varint in
//     their exact decimal text.
//   - Column source timeuuid: a version 1 UUID whose 60-bit time is the event time in 100 ns
//     units since 1582-10-15 and whose clock sequence and node are derived from the record's
//     topic, partition and offset (see timeUUID), so replaying a record rewrites the same row and
//     two records of one Kafka partition never share a UUID.
//   - Write timestamp (topics.<name>.write_timestamp): "kafka" is the record timestamp in
//     microseconds (millisecond precision) plus offset mod 1000, so of two records of one
//     partition stamped in the same millisecond the later offset wins unless their offsets
//     straddle a multiple of 1000 (the tiebreak wraps: 2000 loses to 1999); "event_time" is the
//     event time in microseconds; "offset" is the record's offset itself, so along one partition
//     the later record always wins; "server" binds none and lets Cassandra stamp the write, which
//     a replay then re-stamps. A latest-value entry (bucket width none) is always written at
//     unix_ms(event time) × 1000 + offset mod 1000, and its tombstones, under on_tombstone
//     delete, at unix_ms(Kafka timestamp) × 1000 + offset mod 1000 (latest.go).
//
// # Values
//
// JSON values convert to the configured CQL types: numbers must be whole and in range for the
// integer types and keep their exact text for decimal and varint; numeric strings count as
// numbers; text columns take a JSON string as is and any other JSON value as its JSON text;
// timestamp takes RFC 3339 with an offset or epoch milliseconds; date takes 2006-01-02; uuid
// takes the canonical form; blob takes base64. A missing or null field is an error for id,
// clustering and required columns; otherwise the column is bound as gocql.UnsetValue, which
// writes nothing (no tombstone), or as null when cassandra.protocol_version pins protocol 3,
// which has no unset values.
//
// # Memory and encoding
//
// Every row is one allocation with no pointers in it, whatever its topic and column count:
// Row.Packed, the bytes of every bound value in the packed row format (package packed), followed
// by the routing key, which Row.Key points into. Rows stay buffered until their batch is written,
// so every pointer a row held would be marked by each collection; a packed row gives the collector
// nothing to mark. The rows MapAll makes of one record from its shared values (a Kafka topic read by
// several entries) are one allocation between them, each row its own part of it: they are held
// until the record is done anyway (its offset and its budget charge wait for the last of them).
//
// The mapper converts a JSON value and encodes it at once, for the column's configured type, into
// the scratch's packed.Writer, an append buffer reused record after record: text, ascii, the
// integer types, float, double, timestamp, date, uuid and timeuuid from the codec's typed value
// (store), the other types (boolean, blob, inet, decimal, varint and the collections)
// straight from the JSON value to their bytes (appendConverted; a map's entries in key order, the
// first of duplicate keys kept, as for plain fields). No Go value is built for a row's values. Once the row is complete
// (bucket, event bucket, TTL, write timestamp), the buffer and the key are copied into the row's
// allocation. The cassandra writer
// binds the bytes with a packed.Binder, which refuses a bind marker of another type than the one a
// value was encoded for (packed.BindTypeError). packed.Values and packed.GoValue read a row's values
// back for tests, `sink explain` and dead letters.
//
// Row.Key is the partition's routing key, the bytes Cassandra hashes to a token: the serialized
// value for a one-column key; for a composite key, per column a 2-byte big-endian length, the
// bytes and a 0x00.
package mapper
