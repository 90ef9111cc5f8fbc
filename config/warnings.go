package config

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// Warnings lists what a valid config allows but an operator should see: credentials that travel in
// clear (to Kafka, Cassandra or the schema registry), certificates that are not verified, a registry
// topic that deletes by a key read as text, grouped requests larger than Cassandra accepts by default, a
// clustering key that lets rows of different Kafka partitions overwrite each other. Each names its key path and says what and why, in a stable order.
// `sink validate` prints them after "config OK" and `sink run` logs each at WARN when it starts: they
// are legitimate on a trusted network, on servers configured for them or for a topic with one partition,
// so they never fail validation.
func (c *Config) Warnings() []FieldError {
	var out []FieldError
	warn := func(path, format string, args ...any) {
		out = append(out, FieldError{Path: path, Problem: fmt.Sprintf(format, args...)})
	}
	k := c.Kafka
	if k.SASL.Mechanism == "PLAIN" && !k.TLS.Enabled {
		warn("kafka.sasl.mechanism", "PLAIN without kafka.tls sends the password in clear to every broker; enable kafka.tls, or use SCRAM-SHA-512")
	}
	if k.TLS.Enabled && k.TLS.InsecureSkipVerify {
		warn("kafka.tls.insecure_skip_verify", "the brokers' certificates are not verified: anyone on the network path can pose as a broker "+
			"(and, with kafka.sasl, take the credentials); set kafka.tls.ca_file to the CA that signed them instead")
	}
	cs := c.Cassandra
	if (cs.Auth.Password.IsSet() || cs.Auth.PasswordFile != "") && !cs.TLS.Enabled {
		warn("cassandra.auth", "a password without cassandra.tls travels in clear to every Cassandra node; enable cassandra.tls")
	}
	if cs.TLS.Enabled && cs.TLS.InsecureSkipVerify {
		warn("cassandra.tls.insecure_skip_verify", "the nodes' certificates are not verified: anyone on the network path can pose as a node "+
			"(and, with cassandra.auth, take the password); set cassandra.tls.ca_file to the CA that signed them instead")
	}
	r := c.SchemaRegistry
	if r.Auth.Username != "" || r.Auth.Password.IsSet() || r.Auth.PasswordFile != "" {
		for i, u := range r.URLs {
			if pu, err := url.Parse(u); err == nil && strings.EqualFold(pu.Scheme, "http") {
				warn(fmt.Sprintf("schema_registry.urls[%d]", i), "http:// with schema_registry.auth sends the password in clear to the registry "+
					"with every request (HTTP basic auth); use an https:// URL")
			}
		}
	}
	if r.TLS.Enabled && r.TLS.InsecureSkipVerify {
		warn("schema_registry.tls.insecure_skip_verify", "the registry's certificate is not verified: anyone on the network path can pose as "+
			"the registry, serve the writer schemas the records are decoded by (and, with schema_registry.auth, take the password); "+
			"set schema_registry.tls.ca_file to the CA that signed it instead")
	}
	if c.Writer.GroupMaxBytes > groupBytesFailAt {
		warn("writer.group_max_bytes", "%s lets a request of several partitions come within a fifth of Cassandra's default "+
			"batch_size_fail_threshold (50 KiB), beyond which it is refused and sent again partition by partition; "+
			"keep it at %s or less unless the servers' threshold was raised", c.Writer.GroupMaxBytes, groupBytesFailAt)
	}
	for _, name := range c.TopicNames() {
		out = append(out, c.Topics[name].warnings("topics."+name)...)
	}
	return out
}

// warnings of one topic; path is "topics.<name>".
func (t Topic) warnings(path string) []FieldError {
	var out []FieldError
	source := make(map[string]string, len(t.Columns))
	for _, col := range t.Columns {
		source[col.Name] = col.Source
	}
	// The primary key: the id columns, then the clustering columns.
	var offsetCol string
	hasPartition := false
	for _, name := range slices.Concat(t.ID, clusteringColumns(t.Clustering)) {
		switch source[name] {
		case SourceKafkaOffset:
			offsetCol = name
		case SourceKafkaPartition:
			hasPartition = true
		}
	}
	if offsetCol != "" && !hasPartition {
		out = append(out, FieldError{Path: path + ".clustering", Problem: fmt.Sprintf("column %s holds kafka_offset but no key column "+
			"holds kafka_partition: an offset is unique only within its Kafka partition, so records of different partitions with "+
			"the same offset (and the same other key values) overwrite each other's row; add a kafka_partition column to the "+
			"clustering key before %s (or ignore this for a topic with one partition)", offsetCol, offsetCol)})
	}
	if t.OnTombstone == OnTombstoneDelete && t.KeyCodec == KeyCodecText && NeedsRegistry(t.Codec) && t.keyFieldIDs() {
		out = append(out, FieldError{Path: path + ".key_codec", Problem: fmt.Sprintf("text (the default) with codec %s and on_tombstone delete: "+
			"the id is read from the Kafka key as plain text, but producers that write their values through the schema registry "+
			"usually write their keys through it too (magic byte 0, a schema id, the body); such a key is dead-lettered with "+
			"reason key, and none of the deletes happens. Set key_codec to the keys' format (avro, protobuf or json_schema), "+
			"or ignore this if the keys are plain text", t.Codec)})
	}
	if deletes := t.OnTombstone == OnTombstoneDelete || t.Enveloped() && t.Latest(); deletes && t.GCGrace < deleteGCGrace {
		what := "on_tombstone delete"
		if t.Enveloped() {
			what = "envelope " + t.Envelope + " (its delete events delete rows)"
		}
		out = append(out, FieldError{Path: path + ".gc_grace", Problem: fmt.Sprintf("%s with %s: Cassandra purges a "+
			"delete's tombstone gc_grace after it, and then a replica that missed the delete (not repaired within gc_grace), or "+
			"a replay of the entity's older upserts, brings the row back; raise it above the repair interval (Cassandra's "+
			"default is %s)", t.GCGrace, what, deleteGCGrace)})
	}
	return out
}

// keyFieldIDs reports whether an id column is read from a field, which a deleting entry reads from the
// tombstone's key (the other id sources take the key's bytes, or the tombstone's own coordinates).
func (t Topic) keyFieldIDs() bool {
	for _, id := range t.ID {
		if col, ok := t.column(id); ok && col.Source == "" {
			return true
		}
	}
	return false
}

// deleteGCGrace is Cassandra's own default gc_grace_seconds (10 days), which assumes a repair at least
// every week or so: below it, an entry that deletes rows gets a warning.
const deleteGCGrace = Duration(10 * Day)

// groupBytesFailAt is the largest writer.group_max_bytes whose requests stay within Cassandra's default
// batch_size_fail_threshold (50 KiB) with the margin DefaultGroupMaxBytes keeps under the warning
// threshold: a fifth, for what the sink's count of a row may miss.
const groupBytesFailAt = Bytes(40 << 10)

func clusteringColumns(cs []Clustering) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Column
	}
	return out
}
