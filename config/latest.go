package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Latest-value entries: `bucket: {width: none}` (or the scalar `bucket: none`) writes a table with no
// time bucket and no time in its primary key, one row per entity (plus optional non-time clustering),
// each record an upsert whose write timestamp is its event time, so the row holds the newest event by
// event time whatever the arrival order (docs/CONFIG.md, "Latest-value entries").

// BucketNone is bucket.width of a latest-value entry.
const BucketNone = "none"

// Values of topics.<name>.on_tombstone: what a record with a null value (a Kafka tombstone) becomes.
const (
	OnTombstoneDeadLetter = "dead_letter" // bad input, as any record that cannot be mapped (the default)
	OnTombstoneSkip       = "skip"        // skipped and committed, counted in sink_records_skipped_total{reason="tombstone"}
	OnTombstoneDelete     = "delete"      // latest-value entries: the entity named by the Kafka key is deleted
)

// DefaultOnTombstone keeps a tombstone what it has always been: a record the sink cannot map.
const DefaultOnTombstone = OnTombstoneDeadLetter

// KeyCodecText is topics.<name>.key_codec's default: the Kafka key is text (one id field's value), or a
// JSON object of the id fields. The other key codecs are the registry codecs (CodecAvro, CodecProtobuf,
// CodecJSONSchema): the key is in the Confluent wire format, its writer schema in schema_registry.
const KeyCodecText = "text"

// DefaultKeyCodec is the key rule on_tombstone delete has always had.
const DefaultKeyCodec = KeyCodecText

// KeyCodecs lists every key codec, for validation and messages.
var KeyCodecs = []string{KeyCodecText, CodecAvro, CodecProtobuf, CodecJSONSchema}

// readsKey reports whether the entry decodes Kafka keys by a schema-registry codec: its tombstones'
// (on_tombstone delete), or the key fields its columns and filter read.
func (t Topic) readsKey() bool {
	return NeedsRegistry(t.KeyCodec) && (t.OnTombstone == OnTombstoneDelete || t.readsKeyFields())
}

// Latest reports whether the entry writes a latest-value table (bucket width none).
func (t Topic) Latest() bool { return t.Bucket.Width == BucketNone }

// fromScalar lets the bucket key be spelt `bucket: none`, the short form of `bucket: {width: none}`.
func (b *Bucket) fromScalar(s string) bool {
	if !strings.EqualFold(strings.TrimSpace(s), BucketNone) {
		return false
	}
	b.Width = BucketNone
	return true
}

func (b *Bucket) scalarForms() string { return strconv.Quote(BucketNone) }

// deleteSources are the id column sources a tombstone can supply: a field (read from the key), the key
// itself, and the tombstone's own topic and partition, which a compacted topic keeps per key.
var deleteSources = []string{"", SourceKafkaKey, SourceKafkaTopic, SourceKafkaPartition}

// timeSources fill a column with a time of the record, or something unique per record: a clustering
// column of one of them gives every event a row of its own.
var timeSources = []string{SourceEventTime, SourceKafkaTimestamp, SourceTimeUUID, SourceKafkaOffset}

// validateLatest checks what a latest-value entry may not have: everything about buckets, a write
// timestamp other than the event time or the offset, and a clustering key that holds a time.
func (c *Config) validateLatest(v *validator, p string, t Topic, mapped func(string) (CQLType, bool)) {
	b := t.Bucket
	for _, f := range []struct {
		key string
		set bool
	}{
		{"column", b.Column != ""}, {"key", b.Key != ""}, {"layout", b.Layout != ""},
		{"event_buckets", b.EventBuckets > 1}, {"event_bucket_column", b.EventBucketColumn != ""},
		{"event_bucket_field", b.EventBucketField != ""}, {"slice", b.Slice != ""},
		{"missing_slice", b.MissingSlice != ""}, {"rolling", b.Rolling != 0},
	} {
		if f.set {
			v.add(p+".bucket."+f.key, "set on a latest-value entry (bucket width none), which has no time bucket for it to apply to; remove it")
		}
	}
	if t.Split.Enabled {
		v.add(p+".split.enabled", "true on a latest-value entry: its partitions hold one row per entity (and its non-time clustering), so there is nothing to split; remove split")
	}
	if t.WriteTimestamp != WriteTimestampEventTime && t.WriteTimestamp != WriteTimestampOffset {
		v.add(p+".write_timestamp", "%q on a latest-value entry, which keeps the newest event by its event time (event_time) or the last record of a Kafka partition (offset); use one of those", t.WriteTimestamp)
	}
	for i, cl := range t.Clustering {
		col, ok := t.column(cl.Column)
		if !ok {
			continue // reported with the other clustering problems
		}
		typ, _ := mapped(cl.Column)
		var held string
		switch {
		case slices.Contains(timeSources, col.Source):
			held = "source " + col.Source
		case t.Time.Source == TimeSourceField && col.Source == "" && col.Field == t.Time.Field:
			held = "the event time field " + t.Time.Field
		case typ.Kind == "timestamp" || typ.Kind == "timeuuid":
			held = "a " + typ.Kind
		}
		if held != "" {
			v.add(fmt.Sprintf("%s.clustering[%d].column", p, i), "%q holds %s: in a latest-value table (no time bucket) every event would add a row to its entity's one partition, which then grows without bound; cluster by a non-time column, or give the entry a bucket width", cl.Column, held)
		}
	}
}

// validateOnTombstone checks on_tombstone: delete only for latest-value entries whose id a tombstone's
// key can name.
func (t Topic) validateOnTombstone(v *validator, p string) {
	v.enum(p+".on_tombstone", t.OnTombstone, OnTombstoneDeadLetter, OnTombstoneSkip, OnTombstoneDelete)
	v.enum(p+".key_codec", t.KeyCodec, KeyCodecs...)
	if t.OnTombstone != OnTombstoneDelete {
		if t.KeyCodec != KeyCodecText && slices.Contains(KeyCodecs, t.KeyCodec) && !t.readsKeyFields() {
			v.add(p+".key_codec", "%q while on_tombstone is %s and nothing reads a field of the key: only a delete, a column of source key with a field and a where test of a key field read the Kafka key (a kafka_key column takes its bytes as they are), so the setting does nothing; remove it", t.KeyCodec, t.OnTombstone)
		}
		return
	}
	if !t.Latest() {
		v.add(p+".on_tombstone", "delete on a bucketed entry: a tombstone carries no event time, so it cannot say which time bucket (or buckets) of the entity to delete from; use skip or dead_letter, or make the entry latest-value (bucket: none)")
		return
	}
	for i, id := range t.ID {
		if col, ok := t.column(id); ok && !slices.Contains(deleteSources, col.Source) {
			v.add(fmt.Sprintf("%s.id[%d]", p, i), "%q comes from source %s, which a tombstone (a key and no value) cannot supply, so on_tombstone delete could not name the row; take the id from a field (read from the key), the kafka_key, kafka_topic or kafka_partition", id, col.Source)
		}
	}
}

// column is the configured column called name (CQL names are case-insensitive).
func (t Topic) column(name string) (Column, bool) {
	for _, c := range t.Columns {
		if strings.EqualFold(c.Name, name) {
			return c, true
		}
	}
	return Column{}, false
}
