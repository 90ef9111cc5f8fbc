package config

import "time"

// Config is the whole daemon configuration: one YAML file plus SINK_ environment overrides.
// Field tags name the YAML keys; every key path in an error message uses these names.
type Config struct {
	Kafka     Kafka     `koanf:"kafka"`
	Cassandra Cassandra `koanf:"cassandra"`
	Writer    Writer    `koanf:"writer"`
	Metrics   Metrics   `koanf:"metrics"`
	Log       Log       `koanf:"log"`
	// SchemaRegistry is the one Confluent-compatible schema registry the avro, protobuf and
	// json_schema codecs read writer schemas from.
	SchemaRegistry SchemaRegistry   `koanf:"schema_registry"`
	Topics         map[string]Topic `koanf:"topics"` // key: a short name used in metrics, logs and `--topic`

	// sources says where each key's value came from, for Settings; nil for a Config built in Go.
	sources *sources
}

// Kafka holds the consumer-group settings.
type Kafka struct {
	Brokers  []string `koanf:"brokers"`   // host:port, at least one
	Group    string   `koanf:"group"`     // consumer group id; default "sink"
	ClientID string   `koanf:"client_id"` // default "sink"
	TLS      TLS      `koanf:"tls"`
	SASL     SASL     `koanf:"sasl"`
	// FetchMaxBytes bounds one fetch response; with the fetch concurrency (MaxConcurrentFetches, derived
	// from this and writer.max_buffered_bytes) it bounds the memory the client holds before records
	// reach the pipeline. Default 512 KiB.
	FetchMaxBytes Bytes `koanf:"fetch_max_bytes"`
	// FetchMaxPartitionBytes bounds one partition inside a fetch. Default 128 KiB.
	FetchMaxPartitionBytes Bytes `koanf:"fetch_max_partition_bytes"`
	// FetchMinBytes is how much a fetch waits for in the broker, up to FetchMaxWait, before it
	// returns: at a steady rate, fewer and fuller fetches (fewer wake-ups of the client and of every
	// stage after it) for up to FetchMaxWait of freshness. Defaults DefaultFetchMinBytes and
	// DefaultFetchMaxWait.
	FetchMinBytes Bytes    `koanf:"fetch_min_bytes"`
	FetchMaxWait  Duration `koanf:"fetch_max_wait"`
	// SessionTimeout and RebalanceTimeout are the group timeouts; RebalanceTimeout must exceed
	// writer.shutdown_timeout so a revoke can flush before the coordinator gives up on us.
	SessionTimeout   Duration `koanf:"session_timeout"`   // default 45s
	RebalanceTimeout Duration `koanf:"rebalance_timeout"` // default 60s
	// StartOffset is where a group with no committed offset starts: "earliest" (default) or "latest".
	StartOffset string `koanf:"start_offset"`
	// IsolationLevel is what the consumer reads of transactional producers: "read_committed"
	// (default: records of aborted transactions are never delivered, and open transactions hold
	// the partition back until they end) or "read_uncommitted" (everything in the log).
	IsolationLevel string `koanf:"isolation_level"`
}

// Cassandra holds the session settings.
type Cassandra struct {
	Hosts          []string `koanf:"hosts"`       // host or host:port, at least one
	LocalDC        string   `koanf:"local_dc"`    // enables DC-aware routing; empty = any DC
	Keyspace       string   `koanf:"keyspace"`    // default keyspace for topics that name none
	Consistency    string   `koanf:"consistency"` // default LOCAL_QUORUM
	Timeout        Duration `koanf:"timeout"`     // per request; default 12s (above the server's 2s write timeout)
	ConnectTimeout Duration `koanf:"connect_timeout"`
	NumConns       int      `koanf:"num_conns"` // connections per host; default 2
	// ProtocolVersion 0 lets the driver negotiate.
	ProtocolVersion int  `koanf:"protocol_version"`
	TLS             TLS  `koanf:"tls"`
	Auth            Auth `koanf:"auth"`
	// Replication is used only by `sink schema` when it creates a keyspace, e.g.
	// {class: NetworkTopologyStrategy, dc1: 3}. Default SimpleStrategy with replication_factor 1.
	Replication map[string]string `koanf:"replication"`
}

// TLS is shared by Kafka and Cassandra.
type TLS struct {
	Enabled            bool   `koanf:"enabled"`
	CAFile             string `koanf:"ca_file"`
	CertFile           string `koanf:"cert_file"`
	KeyFile            string `koanf:"key_file"`
	ServerName         string `koanf:"server_name"`
	InsecureSkipVerify bool   `koanf:"insecure_skip_verify"`
}

// SASL configures Kafka authentication. Mechanism is "" (none), PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.
type SASL struct {
	Mechanism    string `koanf:"mechanism"`
	Username     string `koanf:"username"`
	Password     Secret `koanf:"password"`
	PasswordFile string `koanf:"password_file"` // read at load time; wins over password
}

// Auth is Cassandra password authentication.
type Auth struct {
	Username     string `koanf:"username"`
	Password     Secret `koanf:"password"`
	PasswordFile string `koanf:"password_file"`
}

// SchemaRegistry is where writer schemas are fetched by id (Confluent's REST API; Apicurio's
// /apis/ccompat/v7 too).
type SchemaRegistry struct {
	URLs    []string `koanf:"urls"`    // base URLs, tried in turn; required when a topic's codec needs a registry
	Auth    Auth     `koanf:"auth"`    // HTTP basic auth: username with password or password_file
	TLS     TLS      `koanf:"tls"`     // for https URLs
	Timeout Duration `koanf:"timeout"` // per request; default 10s
	// UnknownSchemaRetry is how long after its first 404 an id is asked for again before a record
	// naming it is bad input: a registry's followers can answer 404 for an id their leader has just
	// given a producer. The record's partition waits meanwhile. Default 5s; 0 takes a 404 as final.
	UnknownSchemaRetry Duration `koanf:"unknown_schema_retry"`
}

// Writer holds the batching, concurrency and memory limits of the write path.
type Writer struct {
	// BatchMaxRows and BatchMaxBytes cap the rows of one Cassandra partition in one UNLOGGED batch.
	// Defaults 400 rows and 64 KiB (DefaultBatchMaxRows): a single-partition batch is exempt from the
	// server's batch size thresholds, and 400-row batches were what one node wrote cheapest.
	BatchMaxRows  int   `koanf:"batch_max_rows"`
	BatchMaxBytes Bytes `koanf:"batch_max_bytes"`
	// GroupMaxPartitions is the most partitions one request joins when small batches of one table are
	// due together and share their replicas; 1 sends every partition alone. Default 10, Cassandra's
	// unlogged_batch_across_partitions_warn_threshold: raise both together.
	GroupMaxPartitions int `koanf:"group_max_partitions"`
	// GroupMaxBytes caps a request of several partitions, counted as the server counts it
	// (batcher.DataSize), below the server's batch_size_warn_threshold (5 KiB by default), which, unlike
	// single-partition batches, such a request is subject to. Default 4KiB.
	GroupMaxBytes Bytes `koanf:"group_max_bytes"`
	// Linger is how long a partially filled batch waits for more rows of its partition. Default 1ms.
	Linger Duration `koanf:"linger"`
	// MaxInFlight bounds concurrent batch requests to Cassandra. Default 64.
	MaxInFlight int `koanf:"max_in_flight"`
	// MaxBufferedBytes bounds the memory held by fetched records and their decoded rows (queued,
	// batched or in flight), estimated per record as what it really pins (docs/PIPELINE.md); over
	// it, fetching pauses. Default 48 MiB (DefaultMaxBufferedBytes).
	MaxBufferedBytes Bytes `koanf:"max_buffered_bytes"`
	// MemoryLimit is the Go runtime's soft memory limit for `sink run` (debug.SetMemoryLimit): the
	// collector runs more often as the heap nears it instead of letting garbage double the live
	// heap. 0 leaves the runtime alone; the GOMEMLIMIT environment variable, when set, wins.
	// Default: the larger of DefaultMemoryLimit (192 MiB) and MemoryLimitFloor of the buffers, which
	// is 208 MiB with the shipped sizes; at least 64 MiB and above writer.max_buffered_bytes plus the
	// fetch memory.
	MemoryLimit Bytes `koanf:"memory_limit"`
	// Retry: capped exponential backoff with full jitter, for retryable errors only.
	RetryInitial Duration `koanf:"retry_initial"` // default 100ms
	RetryMax     Duration `koanf:"retry_max"`     // default 10s
	// RetryAttempts caps the writer's attempts per batch; 0 = retry until shutdown. A batch that
	// exhausts them is not skipped: its partition is marked stuck and the write stage sends it again
	// with the same backoff until it is written. Default 0.
	RetryAttempts int `koanf:"retry_attempts"`
	// CommitInterval is how often marked offsets are committed. Default 5s.
	CommitInterval Duration `koanf:"commit_interval"`
	// ShutdownTimeout bounds the flush on SIGTERM and on revoke. Default 30s.
	ShutdownTimeout Duration `koanf:"shutdown_timeout"`
	// TopPartitions is how many of the largest open partitions are exported per topic. Default 10.
	TopPartitions int `koanf:"top_partitions"`
}

// Metrics is the HTTP endpoint for /metrics, /healthz and /readyz.
type Metrics struct {
	Address string `koanf:"address"` // default ":9464"; "" disables
	// Debug serves the debug endpoints on the metrics address: /debug/pprof/ (profiles) and
	// /debug/config (the effective configuration, secrets redacted). False turns them off, and
	// /debug/partitions with them. Default true.
	Debug bool `koanf:"debug"`
	// DebugPartitions serves /debug/partitions on the metrics address: the partition keys (entity ids)
	// of the largest open partitions. That port has no authentication; false turns it off. Default true.
	DebugPartitions bool `koanf:"debug_partitions"`
}

// Log configures the slog handler.
type Log struct {
	Level  string `koanf:"level"`  // debug, info (default), warn, error
	Format string `koanf:"format"` // json (default) or text
	// QuoteValues shows the bad value (and a bad map key) in the log line of a record that cannot be
	// mapped. Default false: the line names the topic, partition, offset, column, field and reason, and
	// the value is in the dead letter only. For debugging; logs usually outlive the data.
	QuoteValues bool `koanf:"quote_values"`
}

// Topic is the per-topic policy: where records come from, how they become rows, and which
// Cassandra partition each row lands in.
type Topic struct {
	Topic string `koanf:"topic"` // Kafka topic; defaults to the map key
	// Codec is the record value's format: "json" (default), or "avro", "protobuf", "json_schema" in
	// the Confluent wire format, whose writer schemas come from schema_registry.
	Codec string `koanf:"codec"`
	// ID lists the column names whose values form the entity id (a composite id has several).
	// Each must be a column in Columns. They lead the partition key.
	ID       []string  `koanf:"id"`
	Time     EventTime `koanf:"time"`
	Bucket   Bucket    `koanf:"bucket"`
	Keyspace string    `koanf:"keyspace"` // default cassandra.keyspace
	Table    string    `koanf:"table"`    // base table name; sliced topics append _<slice suffix>
	// Columns in table order. A column takes its value from a JSON field (dot path for nested
	// fields) or from a source (see Column).
	Columns         []Column     `koanf:"columns"`
	Clustering      []Clustering `koanf:"clustering"`
	TTL             Duration     `koanf:"ttl"`         // default_time_to_live and USING TTL; 0 = none
	GCGrace         Duration     `koanf:"gc_grace"`    // gc_grace_seconds in `sink schema`; default 1d
	Consistency     string       `koanf:"consistency"` // default cassandra.consistency
	DeadLetterTopic string       `koanf:"dead_letter_topic"`
	// WriteTimestamp is the Cassandra write timestamp of each row: "kafka" (default: the record
	// timestamp in µs, plus offset%1000 as a tiebreak, which wraps), "event_time" (µs), "offset"
	// (the record's offset: of two versions of a row from one partition the later record always
	// wins), or "server" (not deterministic on replay; discouraged).
	WriteTimestamp string `koanf:"write_timestamp"`
	// PartitionBudget is the size a partition should stay under; `sink plan` and the
	// largest-partition metrics judge against it. Default 100 MB.
	PartitionBudget Bytes `koanf:"partition_budget"`
	// TTLFrom is what TTL counts from: "write" (default: Cassandra's own rule, the row expires ttl
	// after it is written) or "event_time" (the row expires ttl after its event time: each row is
	// written with ttl minus its age, and a record already older than ttl is skipped, committed and
	// counted in sink_records_skipped_total{reason="expired"}).
	TTLFrom string `koanf:"ttl_from"`
	// TTLField takes each row's TTL from a field of the record's value (ttl.go); nil: every row has TTL.
	TTLField *TTLField `koanf:"ttl_field"`
	// Accept bounds the event time around the record's Kafka timestamp (accept.go).
	Accept Accept `koanf:"accept"`
	// Split splits hot entities' partitions at write time (split.go).
	Split Split `koanf:"split"`
	// OnTombstone is what a record with a null value (a Kafka tombstone) becomes: "dead_letter"
	// (default: bad input, reason decode), "skip" (committed, counted in
	// sink_records_skipped_total{reason="tombstone"}) or, for a latest-value entry, "delete" (the
	// entity the Kafka key names is deleted; latest.go, docs/CONFIG.md).
	OnTombstone string `koanf:"on_tombstone"`
	// KeyCodec is the Kafka key's format, which on_tombstone delete reads the entity from, and columns of
	// source key and where tests of key fields read fields of: "text" (default: the key's UTF-8 text, or a
	// JSON object), or "avro", "protobuf", "json_schema" in the Confluent wire format, its writer schema
	// from schema_registry (latest.go, sources.go).
	KeyCodec string `koanf:"key_codec"`
	// Where filters the records this entry maps (where.go); nil maps every record.
	Where *Where `koanf:"where"`
	// Envelope says the value is a change event: "debezium" (envelope.go); "" (default) a plain value.
	Envelope string `koanf:"envelope"`
	// OnDelete is what a delete event becomes on a bucketed envelope entry: "skip" (default, counted in
	// sink_records_skipped_total{reason="deleted"}), "dead_letter" or "row" (a row of the before image).
	OnDelete string `koanf:"on_delete"`
	// Rollups are aggregate tables over windows of this entry's rows, computed by the sink from
	// the raw rows it stored (rollup.go).
	Rollups []Rollup `koanf:"rollups"`
}

// EventTime says where the event time of a record comes from.
type EventTime struct {
	// Source is "field" (default), "kafka" (the record timestamp) or, with an envelope, "change" (the
	// change's source time).
	Source string `koanf:"source"`
	Field  string `koanf:"field"` // dot path, for source "field"
	// Format of the field: rfc3339 (default; offset required), unix_s, unix_ms, unix_us, unix_ns, or a
	// Go layout (times.go). Numbers may be JSON numbers or numeric strings.
	Format string `koanf:"format"`
	// Zone is the IANA zone of a layout without an offset (times.go).
	Zone string `koanf:"zone"`
}

// Bucket is the bucket policy of a topic. See package bucketer for the arithmetic.
type Bucket struct {
	// Width: a fixed duration ("1m", "10m", "1h", "6h", "1d"; it must divide a day or be whole days),
	// or a calendar unit: "week" (ISO 8601 week), "month", "year"; or "none" for a latest-value
	// entry (latest.go), which takes no other bucket key and may be spelt `bucket: none`.
	Width  string `koanf:"width"`
	Column string `koanf:"column"` // the bucket column in the partition key; default "bucket"
	// Key is the column's form: text (default), date, timestamp, int (2024011514, 20240115, 202403,
	// 202401, 2024) or number (bucket number since the epoch; bigint).
	Key    string `koanf:"key"`
	Layout string `koanf:"layout"` // for key text; default per width (see bucketer)
	// EventBuckets > 1 splits every (id, time bucket) into that many sub-partitions, chosen by a
	// stable hash of a value that varies between the rows of one entity: EventBucketField when
	// set, else the clustering column values (the row's identity inside its partition, so a
	// replayed record lands in the same sub-partition). Hashing the entity id would send every
	// row of an entity to one sub-partition and split nothing, so an id column is rejected.
	// Load stores 1 for an unset or zero value (1 = no split).
	EventBuckets      int    `koanf:"event_buckets"`
	EventBucketColumn string `koanf:"event_bucket_column"` // default "event_bucket"
	EventBucketField  string `koanf:"event_bucket_field"`  // a column name, not an id column; default: the clustering columns
	// Slice, when set, puts each slice of time in its own table (<table>_<suffix>) so old slices
	// drop whole. A multiple of the bucket width.
	Slice string `koanf:"slice"`
	// MissingSlice says what happens to a row whose slice table does not exist (a late, early or
	// backfilled event, or a slice already dropped): "create" (default) creates that slice's table
	// from this topic's DDL, then writes the row; "dead_letter" sends the record to the dead-letter
	// topic with reason slice. Only for sliced topics.
	MissingSlice string `koanf:"missing_slice"`
	// Rolling > 0 makes the key the bucket number mod Rolling (key must be int or number).
	Rolling int `koanf:"rolling"`
}

// Column maps one value to one Cassandra column.
type Column struct {
	Name string `koanf:"name"`
	Type string `koanf:"type"` // CQL type: text, ascii, varchar, int, bigint, smallint, tinyint, float, double,
	// boolean, timestamp, date, time, duration, uuid, timeuuid, blob (base64 in JSON), inet, decimal,
	// varint, list<T>, set<T>, map<K,T> for the scalar T above, tuple<T1, T2, ...>, vector<float, n>;
	// with Fields, the name of a UDT.
	// Fields, when set, make Type the name of a user-defined type with these fields, in order, which
	// `sink schema` creates (CREATE TYPE) in the topic's keyspace; the column is written frozen.
	Fields []UDTField `koanf:"fields"`
	Field  string     `koanf:"field"` // dot path into the decoded record
	// Source instead of Field: event_time, kafka_key, kafka_timestamp, kafka_topic, kafka_partition,
	// kafka_offset, timeuuid (deterministic from event time and Kafka coordinates, so replays upsert
	// the same row), raw (the whole record as text), header (the record header Header names), key (the
	// Kafka key's text, or with Field a field of the key as a JSON object; sources.go), change (with Field,
	// the change envelope's field; envelope.go). Validate checks the type against the source:
	// event_time and kafka_timestamp need timestamp; kafka_key text, varchar, ascii or blob;
	// kafka_topic text, varchar or ascii; kafka_partition int or bigint; kafka_offset bigint;
	// timeuuid timeuuid; raw text, varchar or blob; header and key any scalar type.
	Source string `koanf:"source"`
	// Header is the record header a column of source header takes (sources.go).
	Header   string `koanf:"header"`
	Required bool   `koanf:"required"` // a missing or null value is bad input (id and clustering columns always are)
	// Format is how a timestamp or date column's value spells its time (times.go): unset, RFC 3339 or
	// epoch milliseconds for a timestamp and YYYY-MM-DD for a date; or rfc3339, unix_s, unix_ms,
	// unix_us, unix_ns (timestamp), unix_days (date), or a Go layout.
	Format string `koanf:"format"`
	// Zone is the IANA zone of a Format layout without an offset.
	Zone string `koanf:"zone"`
	// WriteNull binds a missing or null value as null (a tombstone cell) instead of leaving the column
	// unset; for a column whose previous value a later record must be able to clear. Not for id,
	// clustering or required columns, which always need a value.
	WriteNull bool `koanf:"write_null"`
}

// UDTField is one field of a column's user-defined type.
type UDTField struct {
	Name string `koanf:"name"` // a CQL identifier; a record's nested field of this name feeds it
	Type string `koanf:"type"` // a type Column.Type takes, but not a UDT, a tuple or a vector
}

// ColumnType parses col's type: a UDT when it has fields (ParseUDT), else ParseCQLType.
func ColumnType(col Column) (CQLType, error) {
	if len(col.Fields) > 0 {
		return ParseUDT(col)
	}
	return ParseCQLType(col.Type)
}

// Clustering is one clustering column and its order.
type Clustering struct {
	Column string `koanf:"column"`
	Order  string `koanf:"order"` // desc (default) or asc
}

// Duration accepts Go durations plus "d" (day) and "w" (week) units, e.g. "90d", "1w", "36h".
// A number needs a unit (except 0). See ParseDuration.
type Duration time.Duration

// Bytes accepts plain numbers of bytes or units: "64MiB", "32KiB", "100MB", "1GB" (KB, MB, GB
// are powers of 1000; KiB, MiB, GiB powers of 1024). See ParseBytes.
type Bytes int64

// Secret is a string that never prints: String, GoString, Format, LogValue, MarshalText and
// MarshalJSON all show "[redacted]". Reveal returns the value for the driver.
type Secret string
