package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// validConfig is a valid one-topic config built in Go, defaults applied.
func validConfig(t *testing.T, mutate func(*Config)) *Config {
	t.Helper()
	c := &Config{
		Kafka:     Kafka{Brokers: []string{"127.0.0.1:9092"}},
		Cassandra: Cassandra{Hosts: []string{"127.0.0.1"}, Keyspace: "telemetry"},
		Topics: map[string]Topic{"readings": {
			Topic:  "sensor-readings",
			ID:     []string{"device_id"},
			Time:   EventTime{Field: "ts"},
			Bucket: Bucket{Width: "1d"},
			Table:  "readings",
			Columns: []Column{
				{Name: "device_id", Type: "text", Field: "device_id"},
				{Name: "reading_time", Type: "timestamp", Source: SourceEventTime},
				{Name: "temperature", Type: "double", Field: "temperature"},
			},
			Clustering: []Clustering{{Column: "reading_time"}},
		}},
	}
	c.ApplyDefaults()
	if err := c.Validate(); err != nil {
		t.Fatalf("the base config is invalid: %v", err)
	}
	if mutate != nil {
		mutate(c)
	}
	return c
}

// wantProblems checks that Validate reports exactly one problem per wanted key path, each containing its
// text; want empty means valid.
func wantProblems(t *testing.T, c *Config, want map[string]string) {
	t.Helper()
	got := Problems(c.Validate())
	if len(got) != len(want) {
		t.Errorf("got %d problems, want %d:\n  %s", len(got), len(want), strings.Join(got, "\n  "))
	}
	for path, text := range want {
		found := false
		for _, p := range got {
			found = found || strings.HasPrefix(p, path+": ") && strings.Contains(p, text)
		}
		if !found {
			t.Errorf("no problem at %s containing %q in:\n  %s", path, text, strings.Join(got, "\n  "))
		}
	}
}

func TestValidateRefusesConsistencyAny(t *testing.T) {
	wantProblems(t, validConfig(t, func(c *Config) { c.Cassandra.Consistency = "ANY" }),
		map[string]string{"cassandra.consistency": "a lost hint loses the row"})
	wantProblems(t, validConfig(t, func(c *Config) {
		tp := c.Topics["readings"]
		tp.Consistency = "ANY"
		c.Topics["readings"] = tp
	}), map[string]string{"topics.readings.consistency": "ANY is refused"})
	wantProblems(t, validConfig(t, func(c *Config) { c.Cassandra.Consistency = "LOCAL_ONE" }), nil)
}

func TestValidateRefusesBatchMaxRowsAboveProtocolLimit(t *testing.T) {
	wantProblems(t, validConfig(t, func(c *Config) { c.Writer.BatchMaxRows = 65535 }), nil)
	wantProblems(t, validConfig(t, func(c *Config) { c.Writer.BatchMaxRows = 65536 }),
		map[string]string{"writer.batch_max_rows": "65536 is more than 65535"})
}

// The revoke path flushes for up to writer.shutdown_timeout and then commits for up to
// RevokeCommitTimeout; a rebalance timeout between the flush alone and the two together used to pass.
func TestValidateRebalanceTimeoutMustCoverRevokeFlushAndCommit(t *testing.T) {
	set := func(rebalance time.Duration) func(*Config) {
		return func(c *Config) {
			c.Writer.ShutdownTimeout = Duration(30 * time.Second)
			c.Kafka.RebalanceTimeout = Duration(rebalance)
		}
	}
	wantProblems(t, validConfig(t, set(35*time.Second)),
		map[string]string{"kafka.rebalance_timeout": "then up to 10s to commit their offsets, 40s in all"})
	wantProblems(t, validConfig(t, set(40*time.Second)),
		map[string]string{"kafka.rebalance_timeout": "raise it above 40s"})
	wantProblems(t, validConfig(t, set(41*time.Second)), nil)
}

// Unquoted CQL names fold to lower case; a mixed-case name passed validation and then the startup
// schema check looked for a table that does not exist under that name and skipped it.
func TestValidateRefusesUpperCaseKeyspaceAndTable(t *testing.T) {
	wantProblems(t, validConfig(t, func(c *Config) {
		c.Cassandra.Keyspace = "Telemetry"
		tp := c.Topics["readings"]
		tp.Keyspace, tp.Table = "Telemetry", "SensorReadings"
		c.Topics["readings"] = tp
	}), map[string]string{
		"cassandra.keyspace":       `write "telemetry"`,
		"topics.readings.keyspace": `"Telemetry" has upper-case letters`,
		"topics.readings.table":    `write "sensorreadings"`,
	})
}

func TestValidateRefusesOneTableWithTwoSchemas(t *testing.T) {
	second := func(change func(*Topic)) func(*Config) {
		return func(c *Config) {
			tp := c.Topics["readings"]
			tp.Topic = "more-readings"
			tp.Columns = append([]Column(nil), tp.Columns...)
			change(&tp)
			c.Topics["zz-readings"] = tp
		}
	}
	// The same table definition may be written by several topics, with their own write settings.
	wantProblems(t, validConfig(t, second(func(tp *Topic) { tp.Consistency = "LOCAL_ONE"; tp.DeadLetterTopic = "dlq" })), nil)
	wantProblems(t, validConfig(t, second(func(tp *Topic) { tp.Columns[2].Type = "float" })),
		map[string]string{"topics.zz-readings.table": "a different column list: [device_id text, reading_time timestamp, temperature float] here"})
	wantProblems(t, validConfig(t, second(func(tp *Topic) { tp.Bucket.Width = "1h" })),
		map[string]string{"topics.zz-readings.table": "writes telemetry.readings like topics.readings, but with a different bucket policy"})
	wantProblems(t, validConfig(t, second(func(tp *Topic) { tp.TTL = Duration(Day) })),
		map[string]string{"topics.zz-readings.table": "a different ttl: 1d here and 0s in topics.readings"})
	// Another keyspace is another table.
	wantProblems(t, validConfig(t, second(func(tp *Topic) { tp.Keyspace = "other"; tp.TTL = Duration(Day) })), nil)
}

func TestAcceptWindowDefaultsAndLimits(t *testing.T) {
	c := validConfig(t, nil)
	if a := c.Topics["readings"].Accept; a.Before != DefaultAcceptBefore || a.After != DefaultAcceptAfter {
		t.Errorf("default accept window %+v, want before %s, after %s", a, DefaultAcceptBefore, DefaultAcceptAfter)
	}
	wantProblems(t, validConfig(t, func(c *Config) {
		tp := c.Topics["readings"]
		tp.Accept = Accept{Before: 0, After: -1}
		c.Topics["readings"] = tp
	}), map[string]string{"topics.readings.accept.before": "not positive", "topics.readings.accept.after": "negative"})
	wantProblems(t, validConfig(t, func(c *Config) {
		tp := c.Topics["readings"]
		tp.Accept = Accept{Before: Duration(7 * Day), After: 0}
		c.Topics["readings"] = tp
	}), nil)
}

// The accept window is set per topic in YAML or the environment; an explicit after: 0s (no event time
// after the Kafka timestamp) is kept, not replaced by the default.
func TestAcceptWindowFromYAMLAndEnvironment(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	yaml := `kafka: {brokers: ["127.0.0.1:9092"]}
cassandra: {hosts: ["127.0.0.1"], keyspace: telemetry}
topics:
  readings:
    id: [device_id]
    time: {field: ts}
    bucket: {width: 1d}
    table: readings
    columns:
      - {name: device_id, type: text, field: device_id}
      - {name: reading_time, type: timestamp, source: event_time}
    clustering: [{column: reading_time}]
    accept: {before: 7d, after: 0s}
  other:
    id: [device_id]
    time: {field: ts}
    bucket: {width: 1d}
    table: other
    columns:
      - {name: device_id, type: text, field: device_id}
      - {name: reading_time, type: timestamp, source: event_time}
    clustering: [{column: reading_time}]
`
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	c := loadValid(t, path, []string{"SINK_TOPICS__OTHER__ACCEPT__AFTER=5m"})
	if a := c.Topics["readings"].Accept; a.Before != Duration(7*Day) || a.After != 0 {
		t.Errorf("readings accept %+v, want before 7d, after 0s", a)
	}
	if a := c.Topics["other"].Accept; a.Before != DefaultAcceptBefore || a.After != Duration(5*time.Minute) {
		t.Errorf("other accept %+v, want before %s (default), after 5m (environment)", a, DefaultAcceptBefore)
	}
}

// TestEntriesOfOneKafkaTopicMayDifferInEverythingButTheRecord guards the fan-out: a second entry
// reading the same Kafka topic is valid with its own table, id, time field, bucket, TTL, write
// timestamp, split and partition budget, as long as codec, accept window and dead-letter topic agree.
func TestEntriesOfOneKafkaTopicMayDifferInEverythingButTheRecord(t *testing.T) {
	c := validConfig(t, func(c *Config) {
		r := c.Topics["readings"]
		r.DeadLetterTopic = "sensor-readings.dlq"
		c.Topics["readings"] = r
		c.Topics["by-site"] = Topic{
			Topic:  r.Topic,
			Codec:  r.Codec,
			ID:     []string{"site_id"},
			Time:   EventTime{Source: TimeSourceKafka},
			Bucket: Bucket{Width: "1h", EventBuckets: 4},
			Table:  "readings_by_site",
			Columns: []Column{
				{Name: "site_id", Type: "text", Field: "site.id"},
				{Name: "reading_time", Type: "timestamp", Source: SourceEventTime},
				{Name: "device_id", Type: "text", Field: "device_id"},
			},
			Clustering:      []Clustering{{Column: "reading_time"}, {Column: "device_id", Order: "asc"}},
			TTL:             Duration(7 * Day),
			WriteTimestamp:  WriteTimestampOffset,
			PartitionBudget: 10e6,
			DeadLetterTopic: r.DeadLetterTopic,
			Accept:          r.Accept,
		}
		c.ApplyDefaults()
	})
	wantProblems(t, c, nil)
}

// TestEntryResolvesACommandLinesTopic: an entry name, or the Kafka topic of exactly one entry; a
// Kafka topic of several entries is refused with them listed, since a tool that reads one table
// cannot choose among them.
func TestEntryResolvesACommandLinesTopic(t *testing.T) {
	c := validConfig(t, func(c *Config) {
		r := c.Topics["readings"]
		c.Topics["by-site"], c.Topics["other"] = r, r
		o := c.Topics["other"]
		o.Topic = "other-readings"
		c.Topics["other"] = o
	})
	for _, tc := range []struct{ name, want, err string }{
		{"by-site", "by-site", ""},
		{"other-readings", "other", ""},
		{"sensor-readings", "", `Kafka topic "sensor-readings" is read by 2 entries (by-site, readings); name one of them`},
		{"nope", "", `"nope" is neither a configured topic nor the Kafka topic of one; topics: [by-site other readings]`},
	} {
		got, err := c.Entry(tc.name)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
			t.Errorf("Entry(%q) = %q, %v; want %q, %q", tc.name, got, err, tc.want, tc.err)
		}
	}
}

// TestValidateRefusesMoreEntriesOnOneKafkaTopicThanARecordCanTrack: a record's parts (a row per entry and
// its dead letter) are counted in one byte; a config past that is refused at validation, not at the
// first record (where the partition could only stop).
func TestValidateRefusesMoreEntriesOnOneKafkaTopicThanARecordCanTrack(t *testing.T) {
	withEntries := func(n int) *Config {
		return validConfig(t, func(c *Config) {
			r := c.Topics["readings"]
			for i := range n {
				e := r
				e.Table = fmt.Sprintf("readings_%03d", i)
				c.Topics[fmt.Sprintf("e%03d", i)] = e
			}
		})
	}
	wantProblems(t, withEntries(MaxEntriesPerTopic-1), nil) // with readings: MaxEntriesPerTopic entries
	wantProblems(t, withEntries(MaxEntriesPerTopic), map[string]string{"topics.readings.topic": "read by more than 255 entries"})
}

// TestFetchMinBytesDefaultFitsAFetch: the default fetch_min_bytes waits for 16 KiB, but never for more
// than kafka.fetch_max_bytes lets one fetch carry, so a small fetch_max_bytes alone stays valid.
func TestFetchMinBytesDefaultFitsAFetch(t *testing.T) {
	c := validConfig(t, nil)
	if c.Kafka.FetchMinBytes != DefaultFetchMinBytes || c.Kafka.FetchMaxWait != DefaultFetchMaxWait {
		t.Errorf("defaults: fetch_min_bytes %s, fetch_max_wait %s", c.Kafka.FetchMinBytes, c.Kafka.FetchMaxWait)
	}
	small := &Config{Kafka: Kafka{Brokers: []string{"127.0.0.1:9092"}, FetchMaxBytes: 8 << 10, FetchMaxPartitionBytes: 4 << 10}}
	small.ApplyDefaults()
	if small.Kafka.FetchMinBytes != 8<<10 {
		t.Errorf("fetch_min_bytes %s with fetch_max_bytes 8KiB, want 8KiB", small.Kafka.FetchMinBytes)
	}
	wantProblems(t, validConfig(t, func(c *Config) { c.Kafka.FetchMaxWait = Duration(5 * time.Millisecond) }),
		map[string]string{"kafka.fetch_max_wait": "outside 10ms to 5s"})
	wantProblems(t, validConfig(t, func(c *Config) { c.Kafka.FetchMinBytes = 0 }),
		map[string]string{"kafka.fetch_min_bytes": ""})
}
