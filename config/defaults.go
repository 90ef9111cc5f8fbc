package config

import (
	"fmt"
	"strings"
	"time"
)

// Default values. The reasoning behind each is next to it; types.go documents them per key.
const (
	// DefaultGroup and DefaultClientID name the consumer group and client when none is given.
	DefaultGroup    = "sink"
	DefaultClientID = "sink"
	// DefaultFetchMaxBytes bounds one fetch response. 512 KiB of lz4-compressed JSON is some
	// 16,000 small records per round trip, a few round trips a second at full speed; buffered, the
	// records and their rows take up to FetchExpansion times that (16 MiB), so the three fetches the
	// client may hold with the default budget (MaxConcurrentFetches) take 48 MiB, no more than
	// writer.max_buffered_bytes, which they can overshoot before the budget sees them. 16 MiB fetches expanded to 25 times the whole default budget.
	DefaultFetchMaxBytes = Bytes(512 << 10)
	// DefaultFetchMaxPartitionBytes: 128 KiB per partition lets one fetch carry at least four
	// partitions at full size, so one busy partition cannot starve the rest.
	DefaultFetchMaxPartitionBytes = Bytes(128 << 10)
	// DefaultFetchMinBytes and DefaultFetchMaxWait: a fetch returns once the broker holds 16 KiB for
	// it or 50ms have passed. A fetch that returned at its first byte woke the client, the partition
	// workers and the write stage for every produce request of a steady stream (hundreds a second at
	// 5,000 events/s); 16 KiB of lz4-compressed JSON is a few hundred records, tens of milliseconds of
	// a stream of a few thousand events/s. The price is freshness: a record waits in the broker up to
	// 50ms more (less as the rate rises), and an idle consumer asks 20 times a second instead of once.
	DefaultFetchMinBytes = Bytes(16 << 10)
	DefaultFetchMaxWait  = Duration(50 * time.Millisecond)
	// DefaultSessionTimeout is the Kafka client default of recent brokers (45s): long enough to
	// ride out a GC pause or a slow Cassandra write, short enough to fail over within a minute.
	DefaultSessionTimeout = Duration(45 * time.Second)
	// DefaultRebalanceTimeout must exceed DefaultShutdownTimeout (30s) so that a revoked
	// partition can flush its buffered batches before the coordinator moves on.
	DefaultRebalanceTimeout = Duration(60 * time.Second)
	// DefaultStartOffset: a new group reads the topic from its beginning; skipping history
	// silently is the surprise an operator cannot undo.
	DefaultStartOffset = "earliest"
	// DefaultIsolationLevel: a transaction its producer aborted never happened, so its records
	// must not become rows.
	DefaultIsolationLevel = IsolationReadCommitted

	// DefaultConsistency: LOCAL_QUORUM survives one replica down per DC with RF 3 and never waits
	// on a remote DC.
	DefaultConsistency = "LOCAL_QUORUM"
	// DefaultTimeout is per request. The server gives up on a write after 2s
	// (write_request_timeout); 12s on the client leaves room for the coordinator's own retries
	// and for queueing, so a client timeout means the request is really lost.
	DefaultTimeout = Duration(12 * time.Second)
	// DefaultConnectTimeout covers TCP, TLS and the CQL handshake to one host.
	DefaultConnectTimeout = Duration(10 * time.Second)
	// DefaultNumConns: two connections per host give 2 × 32768 stream ids, far above
	// writer.max_in_flight, and keep one connection usable while the other is slow.
	DefaultNumConns = 2

	// DefaultBatchMaxRows and DefaultBatchMaxBytes cap one single-partition UNLOGGED batch. Cassandra
	// checks batch_size_warn_threshold and batch_size_fail_threshold only for a batch of several
	// partitions (BatchStatement.verifyBatchSize returns at once for one mutation, CASSANDRA-10876),
	// so these choose the request size: 400-row batches were the best setting of `sink bench`'s ceiling
	// in half of its full runs on one Cassandra 5.0.8 node (docs/PERFORMANCE.md), and 64 KiB holds 400 rows of the
	// benchmark's 122 bytes. They matter for busy partitions only: a batch holds no more than the rows
	// its partition has in the buffer (writer.max_buffered_bytes), which they leave unchanged.
	DefaultBatchMaxRows  = 400
	DefaultBatchMaxBytes = Bytes(64 << 10)
	// DefaultGroupMaxPartitions is Cassandra's unlogged_batch_across_partitions_warn_threshold (10): a
	// request of more partitions than that logs a warning on the server for every batch.
	DefaultGroupMaxPartitions = 10
	// DefaultGroupMaxBytes keeps a request of several partitions under batch_size_warn_threshold
	// (5 KiB), counted as the server counts it (batcher.DataSize: the data size of its partition
	// updates, exact for the rows of the sink's own tables), with a fifth of the threshold to spare:
	// 1 KiB holds the 12 bytes more a row counts when its table expires it by a default_time_to_live
	// the statement does not bind, for every row of 48 bytes or more (the smallest request-filling
	// row of a bucketed table counts more: its liveness, deletion and clustering time alone are 29).
	DefaultGroupMaxBytes = Bytes(4 << 10)
	// DefaultLinger: 1ms. A fetch waits in the broker for kafka.fetch_min_bytes (16 KiB) or
	// kafka.fetch_max_wait, so the rows of one partition arrive together, a fetch's worth at a time:
	// a longer linger gathered no more rows per request at 5,000 or 15,000 events/s (13.8 and 15.5
	// with 0s, 1ms and 5ms) and only delayed every row. The millisecond leaves the hand-offs of
	// one fetch from several partition workers a moment to join one request; 0s measured the same. The earlier 5ms was chosen for fetches that
	// return at their first byte (fetch_min_bytes 1B); 1ms was not measured with those.
	DefaultLinger = Duration(1 * time.Millisecond)
	// DefaultMaxInFlight: 64 concurrent batches of ≤64 KiB is ≤4 MiB on the wire, enough to keep a
	// small cluster busy without queueing on the coordinators.
	DefaultMaxInFlight = 64
	// DefaultMaxBufferedBytes: 48 MiB of rows (and of records until they are mapped), charged at
	// what they really pin (about 380 bytes for a 150-byte JSON record's packed row), is some
	// 130,000 rows in memory. Batches can only be as large as the rows of a partition the sink
	// holds: on the benchmark's backlog of 10,000 skewed keys, 48 MiB gives 35 to 39 rows per
	// batch at 208 to 221 MiB peak RSS with the memory limit below (docs/PERFORMANCE.md).
	DefaultMaxBufferedBytes = Bytes(48 << 20)
	// DefaultMemoryLimit is the least Go soft memory limit of `sink run`. Live memory with the
	// defaults is at most the budget (48 MiB) plus the fetch memory (three 512 KiB fetches,
	// expanded: 48 MiB) plus the driver, client and runtime (about 20 MiB). The default limit is
	// MemoryLimitFloor of the buffers when that is larger (208 MiB with the shipped sizes): it
	// leaves the collector headroom and caps the garbage it lets float, so the process stays under
	// a 256 MiB container limit.
	DefaultMemoryLimit = Bytes(192 << 20)
	// MinMemoryLimit: below 64 MiB the driver, the client and the runtime alone leave the
	// collector no room, and it would run continuously.
	MinMemoryLimit = Bytes(64 << 20)
	// DefaultRetryInitial and DefaultRetryMax: start near a request's own latency, cap at 10s so
	// a recovered cluster is noticed quickly.
	DefaultRetryInitial = Duration(100 * time.Millisecond)
	DefaultRetryMax     = Duration(10 * time.Second)
	// DefaultCommitInterval: 5s bounds re-delivery after a crash to a few seconds of records
	// while keeping commit traffic negligible.
	DefaultCommitInterval = Duration(5 * time.Second)
	// DefaultShutdownTimeout: enough for max_in_flight batches to finish at the request timeout
	// twice over (12s each) with room to commit. Kubernetes' default grace period is 30s too; set
	// terminationGracePeriodSeconds above this.
	DefaultShutdownTimeout = Duration(30 * time.Second)
	// DefaultTopPartitions: the ten largest open partitions per topic show an outlier entity
	// without a metric series per partition key.
	DefaultTopPartitions = 10

	// DefaultMetricsAddress: 9464 is the port OpenTelemetry's Prometheus exporter uses, which
	// scrape configs commonly expect.
	DefaultMetricsAddress = ":9464"
	DefaultLogLevel       = "info"
	DefaultLogFormat      = "json"

	DefaultCodec           = CodecJSON
	DefaultRegistryTimeout = Duration(10 * time.Second)
	DefaultTimeSource      = TimeSourceField
	DefaultTimeFormat      = TimeFormatRFC3339
	DefaultBucketColumn    = "bucket"
	DefaultBucketKey       = "text"
	DefaultEventBucketCol  = "event_bucket"
	// DefaultGCGrace: one day suits TTL-only tables with daily repair; bucketed data is never
	// deleted row by row, so tombstones come from expired TTLs, which need no repair to be
	// correct. Raise it to exceed the repair interval when rows are deleted explicitly.
	DefaultGCGrace = Duration(Day)
	// DefaultWriteTimestamp is that of a bucketed entry; a latest-value entry's is
	// WriteTimestampEventTime, or WriteTimestampOffset with an envelope.
	DefaultWriteTimestamp = WriteTimestampKafka
	// DefaultTTLFrom is Cassandra's own meaning of a TTL, so a configured ttl means what it says in
	// CQL; event_time is the choice for replays and rolling keys (docs/CONFIG.md).
	DefaultTTLFrom = TTLFromWrite
	// DefaultMissingSlice: a late or early event is valid data, not bad input; its slice's table is
	// the one `sink schema --apply` would create, so creating it writes the row where a reader looks.
	DefaultMissingSlice = MissingSliceCreate
	// DefaultPartitionBudget is the guidance of the time-series literature: stay under 100 MB
	// per partition (decimal megabytes, as nodetool reports them).
	DefaultPartitionBudget = Bytes(100_000_000)
	DefaultClusteringOrder = "desc"
)

// DefaultUnknownSchemaRetry (schema_registry.unknown_schema_retry): the followers of a registry cluster learn
// a new schema from its leader within a second or so; 5 s covers that with room, and bounds how long a
// record naming an id that never existed (a record of another registry, random bytes after the magic
// byte) holds up its partition before it is dead-lettered.
const DefaultUnknownSchemaRetry = Duration(5 * time.Second)

// Defaults of the storage layer that are not plain constants. The cassandra package applies none
// of its own: it takes these for the zero fields of a config built in Go (tests, tools).

// DefaultReplication is cassandra.replication when none is given: SimpleStrategy with one replica,
// only right for a laptop; `sink schema` prints it so the operator sees what will be created, and
// production configs name their DCs. Each call returns a new map.
func DefaultReplication() map[string]string {
	return map[string]string{"class": "SimpleStrategy", "replication_factor": "1"}
}

// Values of the enumerated keys.
const (
	IsolationReadCommitted   = "read_committed"
	IsolationReadUncommitted = "read_uncommitted"

	TimeSourceField = "field"
	TimeSourceKafka = "kafka"

	TimeFormatRFC3339 = "rfc3339"
	TimeFormatUnixS   = "unix_s"
	TimeFormatUnixMS  = "unix_ms"
	TimeFormatUnixUS  = "unix_us"
	TimeFormatUnixNS  = "unix_ns"

	WriteTimestampKafka     = "kafka"
	WriteTimestampEventTime = "event_time"
	WriteTimestampServer    = "server"
	WriteTimestampOffset    = "offset"

	TTLFromWrite     = "write"
	TTLFromEventTime = "event_time"

	MissingSliceCreate     = "create"
	MissingSliceDeadLetter = "dead_letter"

	SourceEventTime      = "event_time"
	SourceKafkaKey       = "kafka_key"
	SourceKafkaTimestamp = "kafka_timestamp"
	SourceKafkaTopic     = "kafka_topic"
	SourceKafkaPartition = "kafka_partition"
	SourceKafkaOffset    = "kafka_offset"
	SourceTimeUUID       = "timeuuid"
	SourceRaw            = "raw"
)

// FetchExpansion is how many bytes of memory one byte of a fetch response can become once its records
// are buffered: decompressed, parsed into kgo.Record structs, tracked and mapped into rows, all of which
// the byte budget charges (docs/PIPELINE.md, "Backpressure and memory"). Measured 25 for ~150-byte JSON
// records, which lz4 batches shrink to 32 bytes each; larger or less compressible records expand less.
const FetchExpansion = 32

// MaxConcurrentFetches is how many fetch responses the Kafka client may hold before the pipeline polls
// them (franz-go's MaxConcurrentFetches): as many as fit, expanded, in writer.max_buffered_bytes, at
// least one and at most four. A fetch that arrives after the budget was crossed is charged all the
// same, so these bound the overshoot.
func MaxConcurrentFetches(maxBuffered, fetchMax Bytes) int {
	if fetchMax <= 0 {
		return 1
	}
	return int(min(max(maxBuffered/(FetchExpansion*fetchMax), 1), 4))
}

// FetchMemory bounds what fetched records can hold beyond writer.max_buffered_bytes: the responses in
// flight or buffered in the client when the budget is crossed, once expanded.
func FetchMemory(maxBuffered, fetchMax Bytes) Bytes {
	return Bytes(MaxConcurrentFetches(maxBuffered, fetchMax)) * fetchMax * FetchExpansion
}

// MemoryLimitFloor is the smallest default writer.memory_limit for these buffer sizes: the budget plus
// the fetch memory with half as much again as collector headroom, plus 64 MiB for the driver, the
// client and the runtime, rounded up to a MiB. With the shipped sizes (48 MiB + 48 MiB) it is 208 MiB, above
// DefaultMemoryLimit, so it is the shipped limit.
func MemoryLimitFloor(maxBuffered, fetchMax Bytes) Bytes {
	const mib = 1 << 20
	n := (maxBuffered+FetchMemory(maxBuffered, fetchMax))*3/2 + MinMemoryLimit
	return (n + mib - 1) / mib * mib // whole MiB, as an operator would write it
}

// ApplyDefaults fills every zero-valued key with its default, for a Config built in Go (tests,
// tools). Load applies the same defaults, but only to keys absent from the file and the
// environment, so an explicit zero (`linger: 0`, `address: ""`) keeps its meaning there.
func (c *Config) ApplyDefaults() {
	c.applyDefaults(func(_ string, zero bool) bool { return zero })
}

// setDefault stores v in *p when unset(path, *p is zero) says the key was not given.
func setDefault[T comparable](unset func(path string, zero bool) bool, path string, p *T, v T) {
	var zero T
	if unset(path, *p == zero) {
		*p = v
	}
}

// applyDefaults sets each default where unset(path, isZero) says the key was not given.
func (c *Config) applyDefaults(unset func(path string, zero bool) bool) {
	str := func(path string, p *string, v string) { setDefault(unset, path, p, v) }
	num := func(path string, p *int, v int) { setDefault(unset, path, p, v) }
	dur := func(path string, p *Duration, v Duration) { setDefault(unset, path, p, v) }
	size := func(path string, p *Bytes, v Bytes) { setDefault(unset, path, p, v) }

	k := &c.Kafka
	str("kafka.group", &k.Group, DefaultGroup)
	str("kafka.client_id", &k.ClientID, DefaultClientID)
	size("kafka.fetch_max_bytes", &k.FetchMaxBytes, DefaultFetchMaxBytes)
	size("kafka.fetch_max_partition_bytes", &k.FetchMaxPartitionBytes, DefaultFetchMaxPartitionBytes)
	// Never more than one fetch may carry: a smaller kafka.fetch_max_bytes lowers it.
	size("kafka.fetch_min_bytes", &k.FetchMinBytes, max(1, min(DefaultFetchMinBytes, k.FetchMaxBytes)))
	dur("kafka.fetch_max_wait", &k.FetchMaxWait, DefaultFetchMaxWait)
	dur("kafka.session_timeout", &k.SessionTimeout, DefaultSessionTimeout)
	dur("kafka.rebalance_timeout", &k.RebalanceTimeout, DefaultRebalanceTimeout)
	str("kafka.start_offset", &k.StartOffset, DefaultStartOffset)
	k.StartOffset = strings.ToLower(k.StartOffset)
	str("kafka.isolation_level", &k.IsolationLevel, DefaultIsolationLevel)
	k.IsolationLevel = strings.ToLower(k.IsolationLevel)
	// SASL mechanism names are upper case in the protocol; accept any case in the file.
	k.SASL.Mechanism = strings.ToUpper(k.SASL.Mechanism)

	cs := &c.Cassandra
	str("cassandra.consistency", &cs.Consistency, DefaultConsistency)
	cs.Consistency = strings.ToUpper(cs.Consistency)
	dur("cassandra.timeout", &cs.Timeout, DefaultTimeout)
	dur("cassandra.connect_timeout", &cs.ConnectTimeout, DefaultConnectTimeout)
	num("cassandra.num_conns", &cs.NumConns, DefaultNumConns)
	if unset("cassandra.replication", len(cs.Replication) == 0) {
		cs.Replication = DefaultReplication()
	}

	w := &c.Writer
	num("writer.batch_max_rows", &w.BatchMaxRows, DefaultBatchMaxRows)
	size("writer.batch_max_bytes", &w.BatchMaxBytes, DefaultBatchMaxBytes)
	num("writer.group_max_partitions", &w.GroupMaxPartitions, DefaultGroupMaxPartitions)
	size("writer.group_max_bytes", &w.GroupMaxBytes, DefaultGroupMaxBytes)
	dur("writer.linger", &w.Linger, DefaultLinger)
	num("writer.max_in_flight", &w.MaxInFlight, DefaultMaxInFlight)
	size("writer.max_buffered_bytes", &w.MaxBufferedBytes, DefaultMaxBufferedBytes)
	// After the buffer and fetch sizes, from which a larger default follows.
	size("writer.memory_limit", &w.MemoryLimit, max(DefaultMemoryLimit, MemoryLimitFloor(w.MaxBufferedBytes, k.FetchMaxBytes)))
	dur("writer.retry_initial", &w.RetryInitial, DefaultRetryInitial)
	dur("writer.retry_max", &w.RetryMax, DefaultRetryMax)
	dur("writer.commit_interval", &w.CommitInterval, DefaultCommitInterval)
	dur("writer.shutdown_timeout", &w.ShutdownTimeout, DefaultShutdownTimeout)
	num("writer.top_partitions", &w.TopPartitions, DefaultTopPartitions)

	dur("schema_registry.timeout", &c.SchemaRegistry.Timeout, DefaultRegistryTimeout)
	dur("schema_registry.unknown_schema_retry", &c.SchemaRegistry.UnknownSchemaRetry, DefaultUnknownSchemaRetry)

	str("metrics.address", &c.Metrics.Address, DefaultMetricsAddress)
	setDefault(unset, "metrics.debug", &c.Metrics.Debug, true)
	setDefault(unset, "metrics.debug_partitions", &c.Metrics.DebugPartitions, true)
	str("log.level", &c.Log.Level, DefaultLogLevel)
	c.Log.Level = strings.ToLower(c.Log.Level)
	str("log.format", &c.Log.Format, DefaultLogFormat)
	c.Log.Format = strings.ToLower(c.Log.Format)

	for name, t := range c.Topics {
		p := "topics." + name + "."
		str(p+"topic", &t.Topic, name)
		str(p+"codec", &t.Codec, DefaultCodec)
		t.Codec = strings.ToLower(t.Codec)
		str(p+"time.source", &t.Time.Source, DefaultTimeSource)
		t.Time.Source = strings.ToLower(t.Time.Source)
		if t.Time.Source == TimeSourceField {
			str(p+"time.format", &t.Time.Format, DefaultTimeFormat)
		}
		if named := NamedTimeFormat(t.Time.Format); named != "" {
			t.Time.Format = named // a layout keeps its case: it is a Go layout
		}
		for i := range t.Columns {
			if named := NamedTimeFormat(t.Columns[i].Format); named != "" {
				t.Columns[i].Format = named
			}
		}
		if tf := t.TTLField; tf != nil {
			tf.As = strings.ToLower(tf.As)
			if named := NamedTimeFormat(tf.Format); named != "" {
				tf.Format = named
			}
		}
		if strings.EqualFold(t.Bucket.Width, BucketNone) {
			t.Bucket.Width = BucketNone
		}
		t.Envelope = strings.ToLower(t.Envelope)
		wts := DefaultWriteTimestamp
		if t.Latest() {
			// No bucket column to default: validate refuses any bucket key but the width here.
			wts = WriteTimestampEventTime
			if t.Enveloped() {
				// The changes of one database transaction share one source time; the offset
				// orders them (docs/CONFIG.md, "Change-data-capture envelopes").
				wts = WriteTimestampOffset
			}
		} else {
			str(p+"bucket.column", &t.Bucket.Column, DefaultBucketColumn)
			str(p+"bucket.key", &t.Bucket.Key, DefaultBucketKey)
			str(p+"bucket.event_bucket_column", &t.Bucket.EventBucketColumn, DefaultEventBucketCol)
		}
		t.Bucket.Key = strings.ToLower(t.Bucket.Key)
		// One event bucket is no split; storing 1 rather than 0 lets every reader use the
		// number directly as the count of sub-partitions per time bucket.
		if t.Bucket.EventBuckets == 0 {
			t.Bucket.EventBuckets = 1
		}
		if t.Bucket.Slice != "" && !t.Latest() {
			str(p+"bucket.missing_slice", &t.Bucket.MissingSlice, DefaultMissingSlice)
			t.Bucket.MissingSlice = strings.ToLower(t.Bucket.MissingSlice)
		}
		str(p+"keyspace", &t.Keyspace, c.Cassandra.Keyspace)
		dur(p+"gc_grace", &t.GCGrace, DefaultGCGrace)
		str(p+"consistency", &t.Consistency, c.Cassandra.Consistency)
		t.Consistency = strings.ToUpper(t.Consistency)
		str(p+"write_timestamp", &t.WriteTimestamp, wts)
		t.WriteTimestamp = strings.ToLower(t.WriteTimestamp)
		onTombstone := DefaultOnTombstone
		if t.Enveloped() {
			onTombstone = OnTombstoneSkip // the tombstone after a delete event says nothing more
		}
		str(p+"on_tombstone", &t.OnTombstone, onTombstone)
		t.OnTombstone = strings.ToLower(t.OnTombstone)
		str(p+"on_delete", &t.OnDelete, DefaultOnDelete)
		t.OnDelete = strings.ToLower(t.OnDelete)
		str(p+"key_codec", &t.KeyCodec, DefaultKeyCodec)
		t.KeyCodec = strings.ToLower(t.KeyCodec)
		str(p+"ttl_from", &t.TTLFrom, DefaultTTLFrom)
		t.TTLFrom = strings.ToLower(t.TTLFrom)
		size(p+"partition_budget", &t.PartitionBudget, DefaultPartitionBudget)
		dur(p+"accept.before", &t.Accept.Before, DefaultAcceptBefore)
		dur(p+"accept.after", &t.Accept.After, DefaultAcceptAfter)
		splitDefaults(p, &t, unset)
		rollupDefaults(p, &t, unset)
		for i := range t.Clustering {
			cl := &t.Clustering[i]
			if cl.Order == "" {
				cl.Order = DefaultClusteringOrder
			}
			cl.Order = strings.ToLower(cl.Order)
		}
		c.Topics[name] = t
	}
}

// The pipeline's side of the defaults: it applies none of its own and trusts a Config that went through
// ApplyDefaults (and Validate), so the keys it cannot run without are checked here, beside the defaults
// that set them.

// DefaultsApplied refuses a Config built in Go without ApplyDefaults: a zero in one of these keys would
// stall the pipeline (no buffer, no flush time) rather than fail. It names the first such key.
func (c *Config) DefaultsApplied() error {
	k, w := c.Kafka, c.Writer
	for _, v := range []struct {
		key  string
		zero bool
	}{
		{"kafka.group", k.Group == ""}, {"kafka.client_id", k.ClientID == ""},
		{"kafka.fetch_max_bytes", k.FetchMaxBytes <= 0}, {"kafka.fetch_max_partition_bytes", k.FetchMaxPartitionBytes <= 0},
		{"kafka.session_timeout", k.SessionTimeout <= 0}, {"kafka.rebalance_timeout", k.RebalanceTimeout <= 0},
		{"writer.max_in_flight", w.MaxInFlight <= 0}, {"writer.max_buffered_bytes", w.MaxBufferedBytes <= 0},
		{"writer.retry_initial", w.RetryInitial <= 0}, {"writer.retry_max", w.RetryMax <= 0},
		{"writer.commit_interval", w.CommitInterval <= 0}, {"writer.shutdown_timeout", w.ShutdownTimeout <= 0},
	} {
		if v.zero {
			return fmt.Errorf("%s is unset; load the config with config.Load, or call ApplyDefaults on one built in Go", v.key)
		}
	}
	return nil
}

// The codecs of topics.<name>.codec.
const (
	CodecJSON       = "json"        // plain JSON, no registry
	CodecAvro       = "avro"        // Avro binary in the Confluent wire format
	CodecProtobuf   = "protobuf"    // Protobuf in the Confluent wire format (with message indexes)
	CodecJSONSchema = "json_schema" // JSON in the Confluent wire format
)

// Codecs lists every codec, for validation and messages.
var Codecs = []string{CodecJSON, CodecAvro, CodecProtobuf, CodecJSONSchema}

// NeedsRegistry reports whether topics of codec read writer schemas from schema_registry.
func NeedsRegistry(codec string) bool {
	return codec == CodecAvro || codec == CodecProtobuf || codec == CodecJSONSchema
}
