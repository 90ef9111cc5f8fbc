package config

import (
	"slices"
	"testing"
)

// TestWarningsNameCredentialsInClearAndUnverifiedCertificates guards the start-up warnings of a valid
// config: SASL PLAIN without TLS, a Cassandra or schema registry password without TLS and
// insecure_skip_verify used to pass `sink validate` and start `sink run` without a word.
func TestWarningsNameCredentialsInClearAndUnverifiedCertificates(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Config)
		want   []string // key paths warned about
	}{
		{"none", func(*Config) {}, nil},
		{"PLAIN without TLS", func(c *Config) {
			c.Kafka.SASL = SASL{Mechanism: "PLAIN", Username: "u", Password: "p"}
		}, []string{"kafka.sasl.mechanism"}},
		{"PLAIN over TLS", func(c *Config) {
			c.Kafka.SASL = SASL{Mechanism: "PLAIN", Username: "u", Password: "p"}
			c.Kafka.TLS.Enabled = true
		}, nil},
		{"SCRAM without TLS", func(c *Config) {
			c.Kafka.SASL = SASL{Mechanism: "SCRAM-SHA-512", Username: "u", Password: "p"}
		}, nil},
		{"Cassandra password without TLS", func(c *Config) {
			c.Cassandra.Auth = Auth{Username: "u", Password: "p"}
		}, []string{"cassandra.auth"}},
		{"Cassandra password over TLS", func(c *Config) {
			c.Cassandra.Auth = Auth{Username: "u", Password: "p"}
			c.Cassandra.TLS.Enabled = true
		}, nil},
		{"insecure_skip_verify on both", func(c *Config) {
			c.Kafka.TLS = TLS{Enabled: true, InsecureSkipVerify: true}
			c.Cassandra.TLS = TLS{Enabled: true, InsecureSkipVerify: true}
		}, []string{"kafka.tls.insecure_skip_verify", "cassandra.tls.insecure_skip_verify"}},
		{"registry password over http", func(c *Config) {
			c.SchemaRegistry.URLs = []string{"https://registry-1:8081", "http://registry-2:8081"}
			c.SchemaRegistry.Auth = Auth{Username: "u", Password: "p"}
		}, []string{"schema_registry.urls[1]"}},
		{"registry password over https", func(c *Config) {
			c.SchemaRegistry.URLs = []string{"https://registry:8081"}
			c.SchemaRegistry.Auth = Auth{Username: "u", Password: "p"}
		}, nil},
		{"registry over http without a password", func(c *Config) {
			c.SchemaRegistry.URLs = []string{"http://registry:8081"}
		}, nil},
		{"registry insecure_skip_verify", func(c *Config) {
			c.SchemaRegistry.URLs = []string{"https://registry:8081"}
			c.SchemaRegistry.TLS = TLS{Enabled: true, InsecureSkipVerify: true}
		}, []string{"schema_registry.tls.insecure_skip_verify"}},
	} {
		c := loadValid(t, "testdata/good/minimal.yaml", nil)
		tc.change(c)
		if err := c.Validate(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var got []string
		for _, w := range c.Warnings() {
			got = append(got, w.Path)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: warnings %v, want %v", tc.name, c.Warnings(), tc.want)
		}
	}
}

// TestWarningForAnOffsetKeyWithoutItsPartition guards a silent overwrite: with kafka_offset in the
// clustering key but no kafka_partition in the key, records of two Kafka partitions at the same offset
// write the same row (102 rows lost in an end-to-end run), and validate said nothing.
func TestWarningForAnOffsetKeyWithoutItsPartition(t *testing.T) {
	for _, tc := range []struct {
		name string
		cols []Column
		clus []Clustering
		want bool
	}{
		{"offset without partition", []Column{{Name: "off", Type: "bigint", Source: "kafka_offset"}},
			[]Clustering{{Column: "reading_time", Order: "desc"}, {Column: "off", Order: "asc"}}, true},
		{"offset with partition", []Column{{Name: "off", Type: "bigint", Source: "kafka_offset"}, {Name: "part", Type: "int", Source: "kafka_partition"}},
			[]Clustering{{Column: "reading_time", Order: "desc"}, {Column: "part", Order: "asc"}, {Column: "off", Order: "asc"}}, false},
		{"offset as a plain column", []Column{{Name: "off", Type: "bigint", Source: "kafka_offset"}},
			[]Clustering{{Column: "reading_time", Order: "desc"}}, false},
	} {
		c := loadValid(t, "testdata/good/minimal.yaml", nil)
		tp := c.Topics["readings"]
		tp.Columns = append(slices.Clone(tp.Columns), tc.cols...)
		tp.Clustering = tc.clus
		c.Topics["readings"] = tp
		if err := c.Validate(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		ws := c.Warnings()
		if got := len(ws) == 1 && ws[0].Path == "topics.readings.clustering"; got != tc.want {
			t.Errorf("%s: warnings %v, want one on topics.readings.clustering: %v", tc.name, ws, tc.want)
		}
	}
}

// TestWarningForGroupMaxBytesPastTheServersFailThreshold guards writer.group_max_bytes between 40 KiB
// (Cassandra's default batch_size_fail_threshold, 50 KiB, less the margin the default keeps under the
// warning threshold) and 8 MiB: valid (a server's batch_size_fail_threshold can be raised), but with
// Cassandra's default every large grouped request is refused and sent again partition by partition, and
// validate said nothing.
func TestWarningForGroupMaxBytesPastTheServersFailThreshold(t *testing.T) {
	for _, tc := range []struct {
		bytes Bytes
		want  bool
	}{{DefaultGroupMaxBytes, false}, {40 << 10, false}, {40<<10 + 1, true}, {50 << 10, true}} {
		c := loadValid(t, "testdata/good/minimal.yaml", nil)
		c.Writer.GroupMaxBytes = tc.bytes
		if err := c.Validate(); err != nil {
			t.Fatalf("%s: %v", tc.bytes, err)
		}
		ws := c.Warnings()
		if got := len(ws) == 1 && ws[0].Path == "writer.group_max_bytes"; got != tc.want {
			t.Errorf("group_max_bytes %s: warnings %v, want one on writer.group_max_bytes: %v", tc.bytes, ws, tc.want)
		}
	}
}

// TestWarningForARegistryTopicThatDeletesByATextKey guards against deletes that silently miss: an Avro,
// Protobuf or JSON Schema topic that deletes with key_codec left at text reads a key its producers most
// likely framed for the registry, and validate said nothing.
func TestWarningForARegistryTopicThatDeletesByATextKey(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Topic)
		warn   bool
	}{
		{"avro, key text", func(*Topic) {}, true},
		{"protobuf, key text", func(tp *Topic) { tp.Codec = CodecProtobuf }, true},
		{"json_schema, key text", func(tp *Topic) { tp.Codec = CodecJSONSchema }, true},
		{"avro, key avro", func(tp *Topic) { tp.KeyCodec = CodecAvro }, false},
		{"json, key text", func(tp *Topic) { tp.Codec = CodecJSON }, false},
		{"avro, skip", func(tp *Topic) { tp.OnTombstone, tp.KeyCodec = OnTombstoneSkip, KeyCodecText }, false},
		{"avro, id from the key's bytes", func(tp *Topic) {
			tp.Columns[0] = Column{Name: "device_id", Type: "text", Source: SourceKafkaKey}
		}, false},
	} {
		c := loadValid(t, "testdata/good/minimal.yaml", nil)
		c.SchemaRegistry.URLs = []string{"https://registry:8081"}
		name := c.TopicNames()[0]
		tp := c.Topics[name]
		tp.Codec, tp.Bucket, tp.Clustering = CodecAvro, Bucket{Width: BucketNone}, nil
		tp.OnTombstone, tp.KeyCodec, tp.GCGrace = OnTombstoneDelete, KeyCodecText, deleteGCGrace
		tp.WriteTimestamp = WriteTimestampEventTime
		tc.change(&tp)
		c.Topics[name] = tp
		if err := c.Validate(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var got []string
		for _, w := range c.Warnings() {
			got = append(got, w.Path)
		}
		if want := []string{"topics." + name + ".key_codec"}; tc.warn != slices.Equal(got, want) {
			t.Errorf("%s: warnings %v, want %v: %v", tc.name, got, tc.warn, c.Warnings())
		}
	}
}
