// Package bucketer computes the time buckets, event buckets and slices that decide which
// Cassandra partition (and which table) an event lands in, and enumerates the partitions a time
// range touches. It is pure arithmetic: no I/O, no clock, no time zone database. A Policy is
// immutable and safe for concurrent use; the per-event methods do not allocate except where
// they return a string.
//
// # Alignment
//
// All arithmetic is in UTC on the instant alone: the location of a time.Time (and the machine's
// time.Local) never changes a result. A time bucket is numbered by its index, the count of
// buckets since the one holding 1970-01-01T00:00:00Z (negative before it, rounded toward the
// past, so 1969-12-31T23:59:59Z is in bucket -1 of every fixed width).
//
//   - Fixed widths are a whole number of seconds that divides a day (1s ... 30m, 1h, 90m, 6h, 12h)
//     or is a whole number of days (1d, 2d, 7d). Bucket i covers [i*w, (i+1)*w) seconds since
//     the epoch, so buckets that divide a day start at midnight UTC, and multi-day buckets count
//     from 1970-01-01 (a 7d bucket runs Thursday to Wednesday; use week for ISO weeks).
//   - week is the ISO 8601 week, Monday 00:00 UTC to the next Monday, named by its ISO week-year
//     (the year of its Thursday) and week number 01-53: 2021-01-03 is in 2020-W53 and 2024-12-30
//     in 2025-W01. Index = floor((days since 1970-01-01 + 3) / 7), week 0 starting on Monday
//     1969-12-29.
//   - month is the UTC calendar month, index (year-1970)*12 + month-1; year is the UTC
//     calendar year, index year-1970.
//
// # Determinism
//
// Every result is a pure function of the instant and the Spec: no clock, no time.Local, no
// time zone database, no map iteration, no randomness. The same event gets the same bucket,
// key, event bucket and table on every machine, on every replay, and in every version of this
// package; the key formats and the hash below never change without a new policy name.
//
// # Keys
//
// The bucket column takes one of five forms (Spec.Key), all derived from the bucket's start:
//
//   - text: the start rendered with a layout. Supported layout elements, a subset of Go's
//     reference time: 2006 (four-digit year; the ISO week-year with width week), 01 (two-digit
//     month; the two-digit ISO week with width week), 02 (day), 15 (hour, 00-23), 04 (minute),
//     05 (second), and the literal separators - _ / : . T W w and space. Anything else is
//     refused, as is a layout missing a field that varies between buckets. Defaults:
//     2006-01-02-15-04-05 (widths not whole minutes), 2006-01-02-15-04 (not whole hours),
//     2006-01-02-15 (not whole days), 2006-01-02 (whole days), 2006-W01 (week), 2006-01
//     (month), 2006 (year).
//   - int: the decimal calendar number of the start, down to the finest field that varies:
//     yyyymmddHHMMSS, yyyymmddHHMM, yyyymmddHH, yyyymmdd for fixed widths, yyyyww (ISO) for
//     week, yyyymm for month, yyyy for year. CQL int when it fits (widths of a day or more),
//     bigint otherwise.
//   - number: the bucket index itself (CQL bigint).
//   - date: the start as a CQL date (widths of a day or more); timestamp: the start as a CQL
//     timestamp. Both are bound as a time.Time in UTC.
//
// With Spec.Rolling = N > 0 (key int or number only) the key is index mod N, always in
// [0, N): the same N partitions are reused in turn, and old rows must expire by TTL before
// their key comes round again.
//
// Keys are part of the on-disk contract for years 0000-9999 (MinTime to MaxTime, see
// Policy.Check). Outside them results stay deterministic but years are no longer four digits.
//
// # Event buckets
//
// With Spec.EventBuckets = N > 1, every (id, time bucket) is split into N partitions, and each
// row goes to one of them by a hash of values that differ between the rows of one entity. The
// entity id is not hashed: it is already in the partition key, so all rows of an entity would
// hash alike and nothing would be split.
//
// The hashed values are the row's clustering column values, in clustering order, or, when the
// topic sets bucket.event_bucket_field, that one column's value (see package mapper). Each value
// is written as its canonical text: text as is; integers in decimal; float and double in the
// shortest form that reads back exactly (Go's strconv 'g' with precision -1, e.g. 21.5, 1e+21);
// boolean true or false; timestamp in UTC as 2006-01-02T15:04:05.000Z (always three fraction
// digits: a CQL timestamp holds milliseconds); date as 2006-01-02; uuid and timeuuid in
// lower-case 8-4-4-4-12 form; blob in lower-case hex; inet as Go's net.IP String; decimal and
// varint in their exact decimal text. The event bucket is FNV-1a 64-bit (offset basis
// 14695981039346656037, prime 1099511628211) over the canonical texts joined by a single 0x00
// byte, taken as an unsigned 64-bit integer, mod N (EventBucket, IDHash). The hash is fixed
// per row, so a replayed record lands in the same event bucket. Readers of a time bucket query
// all N.
//
// # Slices
//
// With Spec.Slice set, each slice of time has its own table, <table>_<suffix>, so an old slice
// is dropped whole. Every bucket lies in exactly one slice (New checks it). Suffixes: yyyymmdd
// for slices of whole days (aligned to the epoch like fixed buckets), yyyymmddHH for slices of
// whole hours, yyyy"w"ww for ISO weeks (2024w03), yyyymm for months, yyyy for years.
//
// # Ranges
//
// Enumerate lists the (slice, bucket, event bucket) partitions a reader must visit for the
// instants between from (included) and to (excluded): oldest first when from is before to,
// newest first when from is after to, every event bucket of each time bucket in turn. It fails
// rather than truncate when the list would exceed the caller's limit (itself capped at
// MaxPartitions).
//
// # Computing the same keys elsewhere
//
// Take the event time as seconds since the Unix epoch (u, drop sub-seconds toward the past),
// floor-divide by the width in seconds to get the index (rounding toward negative infinity:
// Math.floorDiv in Java, // in Python), multiply back to get the start, and format the start in
// UTC. Calendar units use the index formulas above. Any language with a UTC calendar and ISO
// week support (Java's IsoFields, Python's date.isocalendar) gets the same result. Example for
// width 1h, key text, 4 event buckets, id "sensor-42", clustering column ts (a timestamp holding
// the event time), event time 2024-01-15T14:37:12+05:30:
//
//	u     = 1705309632                     (2024-01-15T09:07:12Z)
//	index = floor(1705309632 / 3600) = 473697
//	start = 473697 * 3600 = 1705309200     (2024-01-15T09:00:00Z)
//	text  = "2024-01-15-09", int = 2024011509, number = 473697
//	week  = 2024-W03 (index 2820, int 202403)
//	FNV-1a 64("2024-01-15T09:07:12.000Z") = 9737493038805735161; mod 4 = 1 → event bucket 1
//	with clustering (ts, seq) and seq an int of 7:
//	FNV-1a 64("2024-01-15T09:07:12.000Z" 0x00 "7") = 350632916081792452; mod 4 = 0
//
// TestDocWorkedExample computes these lines through the real mapper, and
// TestDocWorkedExampleIsWhereTheMapperWritesAndTheReaderReads checks that the real reader's plan
// of any range holding the instant lists the 4 event buckets of "2024-01-15-09", the mapper's
// among them.
package bucketer
