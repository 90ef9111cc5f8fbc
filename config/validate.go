package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// validator collects every problem instead of stopping at the first, so one run of
// `sink validate` shows the operator the whole list.
type validator struct{ problems []error }

func (v *validator) add(path, format string, args ...any) {
	v.problems = append(v.problems, &FieldError{Path: path, Problem: fmt.Sprintf(format, args...)})
}

// Validate checks the loaded configuration and returns every problem, joined (errors.Join), each
// a *FieldError naming the key path, what is wrong and how to fix it. It expects defaults to be
// applied (Load does; call ApplyDefaults on a Config built in Go). It reads the file system only
// to check that TLS files exist.
func (c *Config) Validate() error {
	v := &validator{}
	c.validateKafka(v)
	c.validateCassandra(v)
	c.validateWriter(v)
	c.validateMetrics(v)
	c.validateLog(v)
	c.validateTopics(v)
	c.validateSchemaRegistry(v)
	return errors.Join(v.problems...)
}

// Problems splits an error from Load or Validate into its individual problems, one line each.
func Problems(err error) []string {
	if err == nil {
		return nil
	}
	var out []string
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			out = append(out, Problems(e)...)
		}
		return out
	}
	return []string{err.Error()}
}

// consistencies are the write consistency levels the sink accepts: every one but ANY (see consistency).
var consistencies = []string{"ONE", "TWO", "THREE", "QUORUM", "ALL", "LOCAL_QUORUM", "EACH_QUORUM", "LOCAL_ONE"}

// consistency checks a write consistency level. ANY is refused: it acknowledges a write once any node,
// even one that owns none of the row's replicas, has stored a hint for it; the offset is then committed,
// and if that node dies before the hint is delivered the row is lost. It is the only level with which an
// acknowledged write can vanish.
func (v *validator) consistency(path, got string) {
	if got == "ANY" {
		v.add(path, "ANY is refused: it counts a write as done once any node has stored a hint for it, even a node that holds no replica, so the offset is committed and a lost hint loses the row; use LOCAL_QUORUM (the default), QUORUM or LOCAL_ONE")
		return
	}
	v.enum(path, got, consistencies...)
}

func oneOf(values []string) string {
	switch len(values) {
	case 1:
		return values[0]
	case 2:
		return values[0] + " or " + values[1]
	}
	return strings.Join(values[:len(values)-1], ", ") + " or " + values[len(values)-1]
}

func (v *validator) enum(path, got string, allowed ...string) {
	if !slices.Contains(allowed, got) {
		v.add(path, "%q is not valid; use %s", got, oneOf(allowed))
	}
}

func (v *validator) positive(path string, n int64, what string) {
	if n <= 0 {
		v.add(path, "must be positive, got %s; %s", what, "remove the key to use the default")
	}
}

func (c *Config) validateKafka(v *validator) {
	k := c.Kafka
	if len(k.Brokers) == 0 {
		v.add("kafka.brokers", "no brokers; list at least one host:port, e.g. [\"kafka-0:9092\"]")
	}
	for i, b := range k.Brokers {
		if _, port, err := net.SplitHostPort(b); err != nil || !validPort(port) {
			v.add(fmt.Sprintf("kafka.brokers[%d]", i), "%q is not host:port; write e.g. \"kafka-0:9092\"", b)
		}
	}
	if k.Group == "" {
		v.add("kafka.group", "empty; name the consumer group (default \"sink\")")
	}
	if k.ClientID == "" {
		v.add("kafka.client_id", "empty; remove the key to use \"sink\"")
	}
	v.positive("kafka.fetch_max_bytes", int64(k.FetchMaxBytes), k.FetchMaxBytes.String())
	v.positive("kafka.fetch_max_partition_bytes", int64(k.FetchMaxPartitionBytes), k.FetchMaxPartitionBytes.String())
	for _, f := range []struct {
		key string
		v   Bytes
	}{{"kafka.fetch_max_bytes", k.FetchMaxBytes}, {"kafka.fetch_max_partition_bytes", k.FetchMaxPartitionBytes}} {
		if f.v > maxFetchBytes {
			v.add(f.key, "%s is more than %s; the Kafka protocol carries it as a 32-bit number, and fetches that large stall the pipeline anyway", f.v, maxFetchBytes)
		}
	}
	v.positive("kafka.fetch_min_bytes", int64(k.FetchMinBytes), k.FetchMinBytes.String())
	if k.FetchMinBytes > k.FetchMaxBytes && k.FetchMaxBytes > 0 {
		v.add("kafka.fetch_min_bytes", "%s is larger than kafka.fetch_max_bytes (%s); make it at most that",
			k.FetchMinBytes, k.FetchMaxBytes)
	}
	if k.FetchMaxWait < Duration(MinFetchMaxWait) || k.FetchMaxWait > Duration(MaxFetchMaxWait) {
		v.add("kafka.fetch_max_wait", "%s is outside %s to %s: the client refuses less, and a fetch held longer delays every record by as much",
			k.FetchMaxWait, Duration(MinFetchMaxWait), Duration(MaxFetchMaxWait))
	}
	if k.FetchMaxPartitionBytes > k.FetchMaxBytes && k.FetchMaxBytes > 0 {
		v.add("kafka.fetch_max_partition_bytes", "%s is larger than kafka.fetch_max_bytes (%s); make it at most that",
			k.FetchMaxPartitionBytes, k.FetchMaxBytes)
	}
	v.positive("kafka.session_timeout", int64(k.SessionTimeout), k.SessionTimeout.String())
	v.positive("kafka.rebalance_timeout", int64(k.RebalanceTimeout), k.RebalanceTimeout.String())
	if revoke := c.Writer.ShutdownTimeout + Duration(RevokeCommitTimeout); k.RebalanceTimeout > 0 && k.RebalanceTimeout <= revoke {
		v.add("kafka.rebalance_timeout", "%s does not exceed what a revoke may take: writer.shutdown_timeout (%s) to flush the revoked partitions, then up to %s to commit their offsets, %s in all; the group would move on without this member's commit and the records since its last commit would be written twice; raise it above %s or lower writer.shutdown_timeout",
			k.RebalanceTimeout, c.Writer.ShutdownTimeout, Duration(RevokeCommitTimeout), revoke, revoke)
	}
	v.enum("kafka.start_offset", k.StartOffset, "earliest", "latest")
	v.enum("kafka.isolation_level", k.IsolationLevel, IsolationReadCommitted, IsolationReadUncommitted)
	validateTLS(v, "kafka.tls", k.TLS)

	s := k.SASL
	switch s.Mechanism {
	case "":
		if s.Username != "" || s.Password.IsSet() || s.PasswordFile != "" {
			v.add("kafka.sasl.mechanism", "empty but credentials are set; use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512, or remove the credentials")
		}
	case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
		if s.Username == "" {
			v.add("kafka.sasl.username", "empty; SASL %s needs a username", s.Mechanism)
		}
		if !s.Password.IsSet() {
			v.add("kafka.sasl.password", "empty; SASL %s needs a password (or password_file, or SINK_KAFKA__SASL__PASSWORD)", s.Mechanism)
		}
	default:
		v.add("kafka.sasl.mechanism", "%q is not supported; use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", s.Mechanism)
	}
}

func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n > 0 && n <= 65535
}

func validateTLS(v *validator, path string, t TLS) {
	files := []struct{ key, file string }{{"ca_file", t.CAFile}, {"cert_file", t.CertFile}, {"key_file", t.KeyFile}}
	for _, f := range files {
		if f.file == "" {
			continue
		}
		if !t.Enabled {
			v.add(path+"."+f.key, "set while %s.enabled is false; set enabled: true or remove the file", path)
			continue
		}
		if st, err := os.Stat(f.file); err != nil {
			v.add(path+"."+f.key, "cannot read %s: %v", f.file, errors.Unwrap(err))
		} else if st.IsDir() {
			v.add(path+"."+f.key, "%s is a directory; name the PEM file", f.file)
		}
	}
	if (t.CertFile == "") != (t.KeyFile == "") {
		v.add(path, "cert_file and key_file go together (client certificate authentication); set both or neither")
	}
	if t.InsecureSkipVerify && !t.Enabled {
		v.add(path+".insecure_skip_verify", "set while %s.enabled is false; remove it", path)
	}
}

var replicationKeyRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

func (c *Config) validateCassandra(v *validator) {
	cs := c.Cassandra
	if len(cs.Hosts) == 0 {
		v.add("cassandra.hosts", "no hosts; list at least one host or host:port, e.g. [\"cassandra-0:9042\"]")
	}
	for i, h := range cs.Hosts {
		if !validHost(h) {
			v.add(fmt.Sprintf("cassandra.hosts[%d]", i), "%q is not a host or host:port; write e.g. \"cassandra-0\" or \"10.0.0.5:9042\"", h)
		}
	}
	if cs.Keyspace != "" {
		if msg := checkName("keyspace", cs.Keyspace, tableNameRE); msg != "" {
			v.add("cassandra.keyspace", "%s", msg)
		}
	}
	v.consistency("cassandra.consistency", cs.Consistency)
	v.positive("cassandra.timeout", int64(cs.Timeout), cs.Timeout.String())
	v.positive("cassandra.connect_timeout", int64(cs.ConnectTimeout), cs.ConnectTimeout.String())
	v.positive("cassandra.num_conns", int64(cs.NumConns), strconv.Itoa(cs.NumConns))
	if p := cs.ProtocolVersion; p != 0 && (p < 3 || p > 5) {
		v.add("cassandra.protocol_version", "%d is not supported; use 3, 4 or 5, or 0 to negotiate", p)
	}
	validateTLS(v, "cassandra.tls", cs.TLS)
	a := cs.Auth
	if a.Username != "" && !a.Password.IsSet() {
		v.add("cassandra.auth.password", "empty while cassandra.auth.username is set; set password, password_file or SINK_CASSANDRA__AUTH__PASSWORD")
	}
	if a.Username == "" && a.Password.IsSet() {
		v.add("cassandra.auth.username", "empty while a password is set; set the username")
	}
	validateReplication(v, cs.Replication)
}

// validateSchemaRegistry checks the schema_registry block, without connecting: it is required as
// soon as one topic's codec reads writer schemas from it.
func (c *Config) validateSchemaRegistry(v *validator) {
	r := c.SchemaRegistry
	var users []string
	for _, name := range c.TopicNames() {
		if t := c.Topics[name]; NeedsRegistry(t.Codec) || t.readsKey() {
			users = append(users, "topics."+name)
		}
	}
	if len(r.URLs) == 0 && len(users) > 0 {
		v.add("schema_registry.urls", "empty while %s reads a schema-registry codec; set the registry's base URL", strings.Join(users, ", "))
	}
	for i, u := range r.URLs {
		pu, err := url.Parse(u)
		switch {
		case err != nil && strings.Contains(u, "@"):
			// The parse error quotes the whole URL, and with it a password that failed to parse.
			v.add(fmt.Sprintf("schema_registry.urls[%d]", i), "%q is not a URL, and seems to hold credentials (user:password@); "+
				"remove them from the URL and set schema_registry.auth.username and password (or password_file)", hideUserinfo(u))
		case err != nil:
			v.add(fmt.Sprintf("schema_registry.urls[%d]", i), "%q is not a URL: %v", u, err)
		case pu.User != nil:
			// Refused rather than redacted: a URL is printed with every registry failure, by this
			// sink and by the HTTP client's errors, and the auth keys keep the password a Secret.
			v.add(fmt.Sprintf("schema_registry.urls[%d]", i), "%q holds credentials (user:password@), which would be logged with every "+
				"registry failure; remove them from the URL and set schema_registry.auth.username and password (or password_file, "+
				"or SINK_SCHEMA_REGISTRY__AUTH__PASSWORD)", pu.Redacted())
		case pu.Scheme != "http" && pu.Scheme != "https" || pu.Host == "":
			v.add(fmt.Sprintf("schema_registry.urls[%d]", i), "%q is not an http:// or https:// URL with a host", u)
		}
	}
	validateTLS(v, "schema_registry.tls", r.TLS)
	v.positive("schema_registry.timeout", int64(r.Timeout), r.Timeout.String())
	if d := r.UnknownSchemaRetry; d < 0 || d > MaxUnknownSchemaRetry {
		v.add("schema_registry.unknown_schema_retry", "%s: must be from 0 (a 404 is final at once) to %s; the partition of a record "+
			"whose schema id the registry does not have waits this long before the record is dead-lettered", d, MaxUnknownSchemaRetry)
	}
	a := r.Auth
	if a.Username != "" && !a.Password.IsSet() {
		v.add("schema_registry.auth.password", "empty while schema_registry.auth.username is set; set password, password_file or SINK_SCHEMA_REGISTRY__AUTH__PASSWORD")
	}
	if a.Username == "" && a.Password.IsSet() {
		v.add("schema_registry.auth.username", "empty while a password is set; set the username")
	}
}

// MaxUnknownSchemaRetry bounds schema_registry.unknown_schema_retry: a record naming an id that never
// existed holds its partition that long.
const MaxUnknownSchemaRetry = Duration(10 * time.Minute)

// validHost accepts host or host:port; the port, when present, must be a number.
func validHost(h string) bool {
	if h == "" || strings.ContainsAny(h, " /") {
		return false
	}
	if host, port, err := net.SplitHostPort(h); err == nil {
		return host != "" && validPort(port)
	}
	// No port: a name or an IP; a bare IPv6 address contains colons, so accept those only
	// when they parse as one.
	return !strings.Contains(h, ":") || net.ParseIP(h) != nil
}

// validateReplication checks the keyspace replication map that `sink schema` puts in a CREATE
// KEYSPACE statement as string literals; only names and numbers may appear there.
func validateReplication(v *validator, r map[string]string) {
	if len(r) == 0 {
		return
	}
	keys := make([]string, 0, len(r))
	for k := range r {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	class := r["class"]
	switch class {
	case "SimpleStrategy":
		if _, ok := r["replication_factor"]; !ok {
			v.add("cassandra.replication.replication_factor", "missing; SimpleStrategy needs replication_factor, e.g. 3")
		}
	case "NetworkTopologyStrategy":
		if len(r) < 2 {
			v.add("cassandra.replication", "NetworkTopologyStrategy needs at least one data center, e.g. {class: NetworkTopologyStrategy, dc1: 3}")
		}
	case "":
		v.add("cassandra.replication.class", "missing; use SimpleStrategy or NetworkTopologyStrategy")
	default:
		v.add("cassandra.replication.class", "%q is not supported; use SimpleStrategy or NetworkTopologyStrategy", class)
	}
	for _, k := range keys {
		if k == "class" {
			continue
		}
		path := "cassandra.replication." + k
		if !replicationKeyRE.MatchString(k) {
			v.add(path, "%q is not a data center name; use letters, digits, '_', '-' or '.'", k)
		}
		if class == "SimpleStrategy" && k != "replication_factor" {
			v.add(path, "SimpleStrategy takes only replication_factor; use NetworkTopologyStrategy to name data centers")
		}
		if n, err := strconv.Atoi(r[k]); err != nil || n < 1 {
			v.add(path, "%q is not a replica count; use a positive integer, e.g. 3", r[k])
		}
	}
}

func (c *Config) validateWriter(v *validator) {
	w := c.Writer
	v.positive("writer.batch_max_rows", int64(w.BatchMaxRows), strconv.Itoa(w.BatchMaxRows))
	if w.BatchMaxRows > MaxBatchRows {
		v.add("writer.batch_max_rows", "%d is more than %d, the most statements the native protocol can carry in one batch; the driver would refuse every full batch and its partition would stop; use e.g. %d", w.BatchMaxRows, MaxBatchRows, DefaultBatchMaxRows)
	}
	v.positive("writer.batch_max_bytes", int64(w.BatchMaxBytes), w.BatchMaxBytes.String())
	if w.BatchMaxBytes > maxBatchBytes {
		v.add("writer.batch_max_bytes", "%s is more than %s; Cassandra rejects a mutation over half its commit log segment (16 MiB by default), and batches that large hurt latency; use e.g. 64KiB", w.BatchMaxBytes, maxBatchBytes)
	}
	if w.Linger < 0 {
		v.add("writer.linger", "negative (%s); use 0 to write every batch at once, or e.g. 5ms", w.Linger)
	}
	v.positive("writer.max_in_flight", int64(w.MaxInFlight), strconv.Itoa(w.MaxInFlight))
	v.positive("writer.max_buffered_bytes", int64(w.MaxBufferedBytes), w.MaxBufferedBytes.String())
	v.positive("writer.group_max_partitions", int64(w.GroupMaxPartitions), strconv.Itoa(w.GroupMaxPartitions))
	if w.GroupMaxPartitions > MaxBatchRows {
		v.add("writer.group_max_partitions", "%d is more than %d, the most statements the native protocol can carry in one batch; use e.g. %d", w.GroupMaxPartitions, MaxBatchRows, DefaultGroupMaxPartitions)
	}
	v.positive("writer.group_max_bytes", int64(w.GroupMaxBytes), w.GroupMaxBytes.String())
	if w.GroupMaxBytes > maxBatchBytes {
		v.add("writer.group_max_bytes", "%s is more than %s, half a commit log segment of Cassandra's default (16 MiB), the largest mutation it accepts; use e.g. %s", w.GroupMaxBytes, maxBatchBytes, DefaultGroupMaxBytes)
	}
	if w.BatchMaxBytes > 0 && w.MaxBufferedBytes > 0 && w.MaxBufferedBytes < w.BatchMaxBytes {
		v.add("writer.max_buffered_bytes", "%s is smaller than one batch (writer.batch_max_bytes %s); raise it", w.MaxBufferedBytes, w.BatchMaxBytes)
	}
	if w.MemoryLimit < 0 {
		v.add("writer.memory_limit", "negative (%s); use 0 to leave the Go runtime's memory limit alone, or e.g. %s", w.MemoryLimit, DefaultMemoryLimit)
	} else if w.MemoryLimit > 0 {
		fetch := FetchMemory(w.MaxBufferedBytes, c.Kafka.FetchMaxBytes)
		if need := w.MaxBufferedBytes + fetch; w.MemoryLimit <= need {
			v.add("writer.memory_limit", "%s does not exceed writer.max_buffered_bytes (%s) plus the fetch memory (%s: %d concurrent fetches of kafka.fetch_max_bytes, ×%d once buffered); the collector would run without pause; raise it to at least %s, or lower those", w.MemoryLimit, w.MaxBufferedBytes, fetch, MaxConcurrentFetches(w.MaxBufferedBytes, c.Kafka.FetchMaxBytes), FetchExpansion, MemoryLimitFloor(w.MaxBufferedBytes, c.Kafka.FetchMaxBytes))
		} else if w.MemoryLimit < MinMemoryLimit {
			v.add("writer.memory_limit", "%s is below %s, too little for the driver, the Kafka client and the runtime; raise it, or use 0 to leave the Go runtime alone", w.MemoryLimit, MinMemoryLimit)
		}
	}
	v.positive("writer.retry_initial", int64(w.RetryInitial), w.RetryInitial.String())
	v.positive("writer.retry_max", int64(w.RetryMax), w.RetryMax.String())
	if w.RetryInitial > 0 && w.RetryMax > 0 && w.RetryMax < w.RetryInitial {
		v.add("writer.retry_max", "%s is below writer.retry_initial (%s); make it at least that", w.RetryMax, w.RetryInitial)
	}
	if w.RetryAttempts < 0 {
		v.add("writer.retry_attempts", "negative (%d); use 0 to retry until shutdown, or a positive cap", w.RetryAttempts)
	}
	v.positive("writer.commit_interval", int64(w.CommitInterval), w.CommitInterval.String())
	if w.CommitInterval > 0 && time.Duration(w.CommitInterval) < 100*time.Millisecond {
		// franz-go refuses an autocommit interval under 100ms when the client is built.
		v.add("writer.commit_interval", "%s is under 100ms, the shortest interval the Kafka client accepts; use e.g. 1s", w.CommitInterval)
	}
	v.positive("writer.shutdown_timeout", int64(w.ShutdownTimeout), w.ShutdownTimeout.String())
	if w.TopPartitions < 0 {
		v.add("writer.top_partitions", "negative (%d); use 0 to export none, or e.g. 10", w.TopPartitions)
	}
}

func (c *Config) validateMetrics(v *validator) {
	a := c.Metrics.Address
	if a == "" {
		return // disabled on purpose
	}
	host, port, err := net.SplitHostPort(a)
	if err != nil || !validPort(port) || strings.ContainsAny(host, " /") {
		v.add("metrics.address", "%q is not [host]:port; write e.g. \":9464\" or \"127.0.0.1:9464\", or \"\" to disable", a)
	}
}

func (c *Config) validateLog(v *validator) {
	v.enum("log.level", c.Log.Level, "debug", "info", "warn", "error")
	v.enum("log.format", c.Log.Format, "json", "text")
}

// topicNameRE: the map key appears in metric labels, log attributes, `--topic` flags and
// environment variable names, and koanf uses "." to nest keys.
var topicNameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_-]*$`)

var fieldPathRE = regexp.MustCompile(`^[^.\s]+(\.[^.\s]+)*$`)

// sourceTypes lists the CQL types each column source can fill.
var sourceTypes = map[string][]string{
	SourceEventTime:      {"timestamp"},
	SourceKafkaKey:       {"text", "varchar", "ascii", "blob"},
	SourceKafkaTimestamp: {"timestamp"},
	SourceKafkaTopic:     {"text", "varchar", "ascii"},
	SourceKafkaPartition: {"int", "bigint"},
	SourceKafkaOffset:    {"bigint"},
	SourceTimeUUID:       {"timeuuid"},
	SourceRaw:            {"text", "varchar", "blob"},
	SourceHeader:         oneValueTypes,
	SourceKey:            oneValueTypes,
	SourceChange:         oneValueTypes,
}

var sourceNames = []string{SourceEventTime, SourceKafkaKey, SourceKafkaTimestamp, SourceKafkaTopic,
	SourceKafkaPartition, SourceKafkaOffset, SourceTimeUUID, SourceRaw, SourceHeader, SourceKey, SourceChange}

func (c *Config) validateTopics(v *validator) {
	if len(c.Topics) == 0 {
		v.add("topics", "no topics; configure at least one under topics.<name>")
		return
	}
	names := c.TopicNames()
	sources := map[string]string{}  // Kafka topic → the first entry (in name order) that reads it
	readers := map[string]int{}     // Kafka topic → how many entries read it
	deleters := map[string]string{} // Kafka topic → the first entry that reads its keys (on_tombstone delete, key fields)
	for _, name := range names {
		t := c.Topics[name]
		if readers[t.Topic]++; readers[t.Topic] == MaxEntriesPerTopic+1 && t.Topic != "" {
			v.add("topics."+name+".topic", "Kafka topic %q is read by more than %d entries; a record's rows in all its tables are tracked together, and at most %d can be: split the entries over several sinks", t.Topic, MaxEntriesPerTopic, MaxEntriesPerTopic)
		}
		if prev, shared := sources[t.Topic]; shared && t.Topic != "" {
			c.validateSharedTopic(v, prev, name)
		} else {
			sources[t.Topic] = name
		}
		if t.OnTombstone != OnTombstoneDelete && !t.readsKeyFields() {
			continue
		}
		if prev, shared := deleters[t.Topic]; shared && t.Topic != "" && t.KeyCodec != c.Topics[prev].KeyCodec {
			v.add("topics."+name+".key_codec", "%s here but %s in topics.%s.key_codec, and both entries read the keys of Kafka topic %q (to delete, or fields of it); the key's format is the topic's: make them the same",
				quotedOrNone(t.KeyCodec), quotedOrNone(c.Topics[prev].KeyCodec), prev, t.Topic)
		} else if !shared {
			deleters[t.Topic] = name
		}
	}
	for _, name := range names {
		c.validateTopic(v, name, c.Topics[name], sources)
	}
	c.validateSharedTables(v, names)
	c.validateUDTsAgree(v, names)
	tables := map[string]string{} // keyspace.table → the key path of what writes it
	for _, name := range names {
		if t := c.Topics[name]; t.Keyspace != "" && t.Table != "" {
			tables[strings.ToLower(t.Keyspace+"."+t.Table)] = "topics." + name
		}
	}
	reported := map[string]bool{} // Kafka topics whose parts were reported
	for _, name := range names {
		t := c.Topics[name]
		validateRollups(v, "topics."+name, t, tables)
		if n := parts(c.Topics, name); len(t.Rollups) > 0 && n > MaxEntriesPerTopic && readers[t.Topic] <= MaxEntriesPerTopic && !reported[t.Topic] {
			reported[t.Topic] = true
			v.add("topics."+name+".rollups", "the entries of Kafka topic %q and their rollups make %d parts of a record (a row per entry, a pending marker per rollup of raw rows), more than the %d tracked together; use fewer rollups or entries",
				t.Topic, n, MaxEntriesPerTopic)
		}
	}
}

// parts is how many parts a record of the Kafka topic of entry name has at most: a row per entry
// reading it and a pending marker per rollup of raw rows of each (pipeline/rollup).
func parts(topics map[string]Topic, name string) int {
	n := 0
	for _, t := range topics {
		if t.Topic != topics[name].Topic {
			continue
		}
		n++
		for _, r := range t.Rollups {
			if r.From == "" {
				n++
			}
		}
	}
	return n
}

// MaxEntriesPerTopic is the most entries that may read one Kafka topic: the offset tracker counts a
// record's parts (a row per entry, plus its dead letter) in one byte (pipeline/offsets.MaxParts).
const MaxEntriesPerTopic = 255

// validateSharedTopic checks entry name against first, the first entry (in name order) that reads
// the same Kafka topic. Several entries may read one topic: each record is fetched and decoded once
// and mapped by every entry. What belongs to the record rather than to a table must then be the
// same in all of them: the codec (the value is decoded once), the accept window (a record is late or
// early for the topic, whichever table it feeds) and the dead-letter topic (a record that entries
// refuse is dead-lettered once). The key's format (key_codec) is the topic's too, but only the entries
// that delete on tombstones read the key, so validateTopics compares it among them alone. Everything else (table, columns, id, time, bucket, TTL, split,
// write timestamp, consistency, partition budget) is the entry's own.
func (c *Config) validateSharedTopic(v *validator, first, name string) {
	a, b := c.Topics[first], c.Topics[name]
	for _, d := range []struct {
		key, mine, theirs string
	}{
		{"codec", b.Codec, a.Codec},
		{"envelope", b.Envelope, a.Envelope},
		{"accept.before", b.Accept.Before.String(), a.Accept.Before.String()},
		{"accept.after", b.Accept.After.String(), a.Accept.After.String()},
		{"dead_letter_topic", b.DeadLetterTopic, a.DeadLetterTopic},
	} {
		if d.mine != d.theirs {
			v.add("topics."+name+"."+d.key, "%s here but %s in topics.%s.%s, and both entries read Kafka topic %q; entries of one Kafka topic share its %s (a record is decoded, judged and dead-lettered once): make them the same",
				quotedOrNone(d.mine), quotedOrNone(d.theirs), first, d.key, b.Topic, d.key)
		}
	}
}

// quotedOrNone quotes a setting's value for a message, or says it is not set.
func quotedOrNone(s string) string {
	if s == "" {
		return "not set"
	}
	return strconv.Quote(s)
}

// EntriesOf returns the names of the entries that read Kafka topic kafkaTopic, sorted.
func (c *Config) EntriesOf(kafkaTopic string) []string {
	var names []string
	for _, name := range c.TopicNames() {
		if c.Topics[name].Topic == kafkaTopic {
			names = append(names, name)
		}
	}
	return names
}

// Entry resolves what a command line calls a topic: an entry name (a key under topics:), or the
// Kafka topic of exactly one entry. A Kafka topic read by several entries is an error listing them,
// as is a name that is neither.
func (c *Config) Entry(name string) (string, error) {
	if _, ok := c.Topics[name]; ok {
		return name, nil
	}
	switch entries := c.EntriesOf(name); len(entries) {
	case 0:
		return "", fmt.Errorf("%q is neither a configured topic nor the Kafka topic of one; topics: %v", name, c.TopicNames())
	case 1:
		return entries[0], nil
	default:
		return "", fmt.Errorf("Kafka topic %q is read by %d entries (%s); name one of them", name, len(entries), strings.Join(entries, ", "))
	}
}

// TopicNames returns the configured topic names, sorted.
func (c *Config) TopicNames() []string {
	names := make([]string, 0, len(c.Topics))
	for n := range c.Topics {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (c *Config) validateTopic(v *validator, name string, t Topic, sources map[string]string) {
	p := "topics." + name
	if !topicNameRE.MatchString(name) {
		v.add(p, "%q is not a valid topic entry name; use letters, digits, '_' and '-' (it appears in metrics, logs and SINK_ variables)", name)
	}
	if !kafkaTopicRE.MatchString(t.Topic) || t.Topic == "." || t.Topic == ".." {
		v.add(p+".topic", "%q is not a valid Kafka topic name; use up to 249 letters, digits, '.', '_' or '-'", t.Topic)
	}
	if !slices.Contains(Codecs, t.Codec) {
		v.add(p+".codec", "%q is not a codec; use %s", t.Codec, strings.Join(Codecs, ", "))
	}
	if t.Keyspace == "" {
		v.add(p+".keyspace", "empty and cassandra.keyspace is not set; set one of them")
	} else if msg := checkName("keyspace", t.Keyspace, tableNameRE); msg != "" {
		v.add(p+".keyspace", "%s", msg)
	}
	if msg := checkName("table", t.Table, tableNameRE); msg != "" {
		v.add(p+".table", "%s", msg)
	} else if t.Bucket.Slice != "" && len(t.Table)+1+maxSliceSuffix > MaxNameLen {
		v.add(p+".table", "%q is too long for a sliced table: with _<slice suffix> (up to %d characters) it exceeds %d; use at most %d characters",
			t.Table, 1+maxSliceSuffix, MaxNameLen, MaxNameLen-1-maxSliceSuffix)
	}

	// Columns.
	cols := map[string]CQLType{} // lower-case name → type; unquoted CQL names fold to lower case
	if len(t.Columns) == 0 {
		v.add(p+".columns", "no columns; map at least the id and clustering columns")
	}
	for i, col := range t.Columns {
		cp := fmt.Sprintf("%s.columns[%d]", p, i)
		if msg := checkName("column", col.Name, columnNameRE); msg != "" {
			v.add(cp+".name", "%s", msg)
		} else if _, dup := cols[strings.ToLower(col.Name)]; dup {
			v.add(cp+".name", "column %q appears twice (CQL names are case-insensitive); rename one", col.Name)
		}
		typ, err := ColumnType(col)
		if col.Type == "" {
			v.add(cp+".type", "empty; give the CQL type, e.g. text, double or timestamp")
		} else if err != nil {
			v.add(cp+".type", "%v", err)
		}
		validateUDTFields(v, cp, col)
		if col.Name != "" {
			cols[strings.ToLower(col.Name)] = typ
		}
		switch {
		case col.Field != "" && col.Source != "" && col.Source != SourceKey && col.Source != SourceChange:
			v.add(cp, "has both field and source; keep one (only source key and source change take a field: of the Kafka key, of the change envelope)")
		case col.Field == "" && col.Source == "":
			v.add(cp, "has neither field nor source; set field to a JSON path (e.g. site.id) or source to one of %s", oneOf(sourceNames))
		case col.Field != "" && col.Source == "":
			if !fieldPathRE.MatchString(col.Field) {
				v.add(cp+".field", "%q is not a field path; use names separated by dots, e.g. site.id", col.Field)
			}
		default:
			allowed, ok := sourceTypes[col.Source]
			if !ok {
				v.add(cp+".source", "%q is not a source; use %s", col.Source, oneOf(sourceNames))
			} else if err == nil && col.Type != "" && !slices.Contains(allowed, typ.String()) {
				v.add(cp+".type", "%q cannot hold source %s; use %s", col.Type, col.Source, oneOf(allowed))
			}
		}
		validateColumnHeader(v, cp, col)
		validateColumnKey(v, cp, t, col)
	}
	mapped := func(name string) (CQLType, bool) {
		t, ok := cols[strings.ToLower(name)]
		return t, ok
	}

	for i, col := range t.Columns {
		if col.WriteNull && col.Required {
			v.add(fmt.Sprintf("%s.columns[%d].write_null", p, i), "set on a required column, which never goes without a value; remove one of them")
		}
	}

	// Partition key: id columns, then the generated bucket and event bucket columns.
	if len(t.ID) == 0 {
		v.add(p+".id", "empty; list the column(s) that identify an entity, e.g. [device_id]")
	}
	ids := map[string]bool{}
	for i, id := range t.ID {
		ip := fmt.Sprintf("%s.id[%d]", p, i)
		typ, ok := mapped(id)
		switch {
		case !ok:
			v.add(ip, "%q is not a column; add it to columns or list an existing column", id)
		case ids[strings.ToLower(id)]:
			v.add(ip, "%q is listed twice; list each id column once", id)
		case typ.KeyProblem() != "":
			v.add(ip, "%q is a %s; a partition key column cannot be %s", id, typ, typ.KeyProblem())
		}
		ids[strings.ToLower(id)] = true
	}
	if t.Latest() {
		c.validateLatest(v, p, t, mapped)
	} else {
		c.validateBucketColumns(v, p, t, mapped)
	}

	// Clustering.
	if len(t.Clustering) == 0 && !t.Latest() {
		v.add(p+".clustering", "empty; without a clustering column each record overwrites the last one of its partition; add e.g. {column: event_time, order: desc}")
	}
	seen := map[string]bool{}
	for i, cl := range t.Clustering {
		cp := fmt.Sprintf("%s.clustering[%d]", p, i)
		typ, ok := mapped(cl.Column)
		switch {
		case cl.Column == "":
			v.add(cp+".column", "empty; name a column")
		case !ok:
			v.add(cp+".column", "%q is not a column; add it to columns or name an existing column", cl.Column)
		case ids[strings.ToLower(cl.Column)]:
			v.add(cp+".column", "%q is an id column (partition key); a column cannot be both", cl.Column)
		case seen[strings.ToLower(cl.Column)]:
			v.add(cp+".column", "%q is listed twice; list each clustering column once", cl.Column)
		case typ.KeyProblem() != "":
			v.add(cp+".column", "%q is a %s; a clustering column cannot be %s", cl.Column, typ, typ.KeyProblem())
		}
		seen[strings.ToLower(cl.Column)] = true
		if cl.Order != "asc" && cl.Order != "desc" {
			v.add(cp+".order", "%q is not an order; use desc (newest first, for latest-N reads) or asc", cl.Order)
		}
	}
	for i, col := range t.Columns {
		if name := strings.ToLower(col.Name); col.WriteNull && (ids[name] || seen[name]) {
			v.add(fmt.Sprintf("%s.columns[%d].write_null", p, i), "set on a key column (id or clustering), which never goes without a value; remove it")
		}
	}

	// Event time.
	switch t.Time.Source {
	case TimeSourceField:
		if t.Time.Field == "" {
			v.add(p+".time.field", "empty; name the JSON field holding the event time (e.g. ts), or set time.source: kafka")
		} else if !fieldPathRE.MatchString(t.Time.Field) {
			v.add(p+".time.field", "%q is not a field path; use names separated by dots, e.g. meta.ts", t.Time.Field)
		}
	case TimeSourceKafka, TimeSourceChange:
		if t.Time.Field != "" {
			what := "the record timestamp"
			if t.Time.Source == TimeSourceChange {
				what = "the change's source time"
			}
			v.add(p+".time.field", "set while time.source is %s (%s); remove it or use time.source: field", t.Time.Source, what)
		}
		if t.Time.Format != "" {
			v.add(p+".time.format", "set while time.source is %s; remove it", t.Time.Source)
		}
	default:
		v.add(p+".time.source", "%q is not valid; use field, kafka or (with an envelope) change", t.Time.Source)
	}

	validateTimeFormats(v, p, t)

	// Write path.
	if t.TTL < 0 {
		v.add(p+".ttl", "negative (%s); use 0 for no expiry or e.g. 90d", t.TTL)
	} else if t.TTL.Seconds() > maxTTLSeconds {
		v.add(p+".ttl", "%s exceeds Cassandra's maximum TTL of 20 years; lower it", t.TTL)
	} else if t.TTL > 0 && t.TTL.Seconds() == 0 {
		v.add(p+".ttl", "%s is under a second; CQL TTLs are whole seconds", t.TTL)
	} else if time.Duration(t.TTL)%time.Second != 0 {
		v.add(p+".ttl", "%s is not whole seconds; CQL TTLs are, and it would be cut to %s: write that, or %s", t.TTL, t.TTL.Truncate(), t.TTL.Truncate()+Duration(time.Second))
	}
	v.enum(p+".ttl_from", t.TTLFrom, TTLFromWrite, TTLFromEventTime)
	if t.TTLFrom == TTLFromEventTime && t.TTL == 0 && (t.TTLField == nil || t.TTLField.As != TTLAsDuration) {
		v.add(p+".ttl_from", "event_time without a ttl; set ttl (or a ttl_field read as a duration), or remove ttl_from")
	}
	if t.TTLField != nil {
		validateTTLField(v, p, t)
	}
	if t.GCGrace < 0 {
		v.add(p+".gc_grace", "negative (%s); use e.g. 1d", t.GCGrace)
	} else if time.Duration(t.GCGrace)%time.Second != 0 {
		v.add(p+".gc_grace", "%s is not whole seconds; gc_grace_seconds is, and it would be cut to %s: write that, or %s", t.GCGrace, t.GCGrace.Truncate(), t.GCGrace.Truncate()+Duration(time.Second))
	}
	if t.Consistency != "ANY" || c.Cassandra.Consistency != "ANY" { // an inherited ANY is reported once, on cassandra.consistency
		v.consistency(p+".consistency", t.Consistency)
	}
	v.enum(p+".write_timestamp", t.WriteTimestamp, WriteTimestampKafka, WriteTimestampEventTime, WriteTimestampOffset, WriteTimestampServer)
	v.positive(p+".partition_budget", int64(t.PartitionBudget), t.PartitionBudget.String())
	if d := t.DeadLetterTopic; d != "" {
		if !kafkaTopicRE.MatchString(d) || d == "." || d == ".." {
			v.add(p+".dead_letter_topic", "%q is not a valid Kafka topic name; use up to 249 letters, digits, '.', '_' or '-'", d)
		}
		if src, ok := sources[d]; ok {
			v.add(p+".dead_letter_topic", "%q is the source topic of topics.%s; dead letters would be read back in; use e.g. %q", d, src, d+".dlq")
		}
	}
	t.validateOnTombstone(v, p)
	t.validateEnvelope(v, p)
	if t.Where != nil {
		validateWhere(v, p+".where", t, t.Where, 0)
	}
	if t.Latest() {
		t.validateAccept(v, p)
		return // validateLatest has judged the bucket and split keys
	}
	if ms := t.Bucket.MissingSlice; t.Bucket.Slice == "" && ms != "" {
		v.add(p+".bucket.missing_slice", "set while bucket.slice is not; remove it (an unsliced topic's rows wait for its one table)")
	} else if ms != "" {
		v.enum(p+".bucket.missing_slice", ms, MissingSliceCreate, MissingSliceDeadLetter)
		if ms == MissingSliceDeadLetter && t.DeadLetterTopic == "" {
			v.add(p+".bucket.missing_slice", "dead_letter needs a dead_letter_topic; set one, or use create")
		}
	}
	c.validateBucket(v, p, t)
	t.validateAccept(v, p)
	validateSplit(v, p, t, c.Kafka.SessionTimeout)
}

// RevokeCommitTimeout bounds the synchronous offset commit at the end of a revoke, after the revoked
// partitions have flushed for up to writer.shutdown_timeout; kafka.rebalance_timeout must exceed the two
// together.
const RevokeCommitTimeout = 10 * time.Second

// MaxBatchRows is the most statements one batch may hold: the native protocol counts them in 16 bits.
const MaxBatchRows = 65535

// Upper bounds on sizes that reach a protocol.
const (
	maxFetchBytes = Bytes(1 << 30)
	maxBatchBytes = Bytes(8 << 20)
)

// MinFetchMaxWait and MaxFetchMaxWait bound kafka.fetch_max_wait: the Kafka client refuses a wait
// under 10ms, and a fetch held longer than a few seconds only delays records.
const (
	MinFetchMaxWait = 10 * time.Millisecond
	MaxFetchMaxWait = 5 * time.Second
)

// maxTTLSeconds is Cassandra's limit on a TTL (20 years).
const maxTTLSeconds = 20 * 365 * 24 * 3600

// maxSliceSuffix is the longest suffix a slice table name gets ("20240115", "2024011514").
const maxSliceSuffix = 10

func (c *Config) validateBucketColumns(v *validator, p string, t Topic, mapped func(string) (CQLType, bool)) {
	b := t.Bucket
	if msg := checkName("column", b.Column, columnNameRE); msg != "" {
		v.add(p+".bucket.column", "%s", msg)
	} else if _, ok := mapped(b.Column); ok {
		v.add(p+".bucket.column", "%q is also a mapped column; the bucket column is generated, so rename one of them (e.g. bucket.column: time_bucket)", b.Column)
	}
	if t.UsesEventBucketColumn() {
		if msg := checkName("column", b.EventBucketColumn, columnNameRE); msg != "" {
			v.add(p+".bucket.event_bucket_column", "%s", msg)
		} else if _, ok := mapped(b.EventBucketColumn); ok {
			v.add(p+".bucket.event_bucket_column", "%q is also a mapped column; the event bucket column is generated, so rename one of them", b.EventBucketColumn)
		} else if strings.EqualFold(b.EventBucketColumn, b.Column) {
			v.add(p+".bucket.event_bucket_column", "%q is also the bucket column; give them different names", b.EventBucketColumn)
		}
		if f := b.EventBucketField; f != "" {
			if ct, ok := mapped(f); !ok {
				v.add(p+".bucket.event_bucket_field", "%q is not a column; name a column whose value varies between the rows of one entity", f)
			} else if ct.Elem != "" {
				v.add(p+".bucket.event_bucket_field", "%q is a %s: a collection has no canonical text to hash, so every row would land in the same event bucket; name a scalar column", f, ct)
			} else if slices.ContainsFunc(t.ID, func(id string) bool { return strings.EqualFold(id, f) }) {
				v.add(p+".bucket.event_bucket_field", "%q is an id column: all rows of an entity would hash to the same event bucket and nothing would be split; name a column that varies per row, or remove the key", f)
			}
		}
	} else if b.EventBucketField != "" {
		v.add(p+".bucket.event_bucket_field", "set while bucket.event_buckets is %d and split is off; set event_buckets above 1, enable split, or remove it", b.EventBuckets)
	}
	if b.EventBuckets < 0 {
		v.add(p+".bucket.event_buckets", "negative (%d); use 1 (no split) or more", b.EventBuckets)
	}
}

// hideUserinfo replaces what lies between a URL's scheme and its last "@" (a user and password) with
// [redacted], for a URL that does not parse and so cannot be redacted by net/url.
func hideUserinfo(u string) string {
	start := 0
	if i := strings.Index(u, "://"); i >= 0 {
		start = i + len("://")
	}
	at := strings.LastIndex(u, "@")
	if at < start {
		return u
	}
	return u[:start] + redacted + u[at:]
}

// validateUDTFields checks the fields of a column of a UDT type: each a CQL identifier, once, of a
// type a UDT field may have.
func validateUDTFields(v *validator, cp string, col Column) {
	seen := map[string]bool{}
	for j, f := range col.Fields {
		fp := fmt.Sprintf("%s.fields[%d]", cp, j)
		if msg := checkName("field", f.Name, columnNameRE); msg != "" {
			v.add(fp+".name", "%s", msg)
		} else if seen[strings.ToLower(f.Name)] {
			v.add(fp+".name", "field %q appears twice (CQL names are case-insensitive); rename one", f.Name)
		}
		seen[strings.ToLower(f.Name)] = true
		typ, err := ParseCQLType(f.Type)
		switch {
		case f.Type == "":
			v.add(fp+".type", "empty; give the field's CQL type, e.g. text")
		case err != nil:
			v.add(fp+".type", "%v", err)
		case typ.Kind == "tuple" || typ.Kind == "vector":
			v.add(fp+".type", "%q: a UDT field cannot be a %s; use a scalar, time, duration or a collection", f.Type, typ.Kind)
		}
	}
}

// validateUDTsAgree checks that every column naming one UDT of a keyspace gives it the same fields:
// `sink schema` creates a UDT once (CREATE TYPE IF NOT EXISTS), so two definitions cannot both hold.
func (c *Config) validateUDTsAgree(v *validator, names []string) {
	type def struct{ path, fields string }
	seen := map[string]def{}
	for _, name := range names {
		t := c.Topics[name]
		for i, col := range t.Columns {
			if len(col.Fields) == 0 {
				continue
			}
			typ, err := ParseUDT(col)
			if err != nil {
				continue // reported with the column
			}
			var fs []string
			for _, f := range col.Fields {
				ft := f.Type
				if p, err := ParseCQLType(f.Type); err == nil {
					ft = p.String()
				}
				fs = append(fs, strings.ToLower(f.Name)+" "+ft)
			}
			d := def{path: fmt.Sprintf("topics.%s.columns[%d]", name, i), fields: strings.Join(fs, ", ")}
			key := strings.ToLower(t.Keyspace) + "." + typ.String()
			if prev, ok := seen[key]; ok && prev.fields != d.fields {
				v.add(d.path+".fields", "UDT %s has fields (%s) here but (%s) at %s; one UDT of a keyspace has one definition: give both the same fields or name one UDT differently",
					key, d.fields, prev.fields, prev.path)
			} else if !ok {
				seen[key] = d
			}
		}
	}
}
