package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const latestYAML = `kafka:
  brokers: ["127.0.0.1:9092"]
cassandra:
  hosts: ["127.0.0.1"]
  keyspace: telemetry
topics:
  latest:
    topic: readings
    id: [device_id]
    time: {field: ts}
    bucket: BUCKET
    table: latest
    columns:
      - {name: device_id, type: text, field: device_id}
      - {name: channel, type: int, field: channel}
      - {name: temperature, type: double, field: temperature}
    clustering:
      - {column: channel, order: asc}
`

// TestLatestValueEntryLoadsInBothSpellings guards the two spellings of a latest-value entry and its
// defaults: the write timestamp is the event time, no bucket column is made up, tombstones are
// dead-lettered unless on_tombstone says otherwise, and a non-time clustering column is allowed.
func TestLatestValueEntryLoadsInBothSpellings(t *testing.T) {
	for _, spelling := range []string{"none", "{width: none}", "None", "{width: NONE}"} {
		t.Run(spelling, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.yaml")
			text := []byte(strings.ReplaceAll(latestYAML, "BUCKET", spelling))
			if err := os.WriteFile(path, text, 0o644); err != nil {
				t.Fatal(err)
			}
			c := loadValid(t, path, nil)
			tp := c.Topics["latest"]
			if !tp.Latest() || tp.Bucket.Width != BucketNone {
				t.Errorf("bucket width %q: not a latest-value entry", tp.Bucket.Width)
			}
			if tp.WriteTimestamp != WriteTimestampEventTime {
				t.Errorf("write_timestamp = %q, want event_time", tp.WriteTimestamp)
			}
			if tp.Bucket.Column != "" || tp.Bucket.Key != "" || tp.Bucket.EventBucketColumn != "" {
				t.Errorf("bucket columns defaulted on a latest-value entry: %+v", tp.Bucket)
			}
			if tp.OnTombstone != OnTombstoneDeadLetter {
				t.Errorf("on_tombstone = %q, want dead_letter", tp.OnTombstone)
			}
			if p, err := c.Policy("latest"); p != nil || err != nil {
				t.Errorf("Policy = %v, %v; want no policy and no error", p, err)
			}
		})
	}
}

// TestLatestValueEntryTakesAnExplicitEventTimeWriteTimestamp: the only write timestamp it has may be
// written out, and on_tombstone delete is accepted there.
func TestLatestValueEntryTakesAnExplicitEventTimeWriteTimestamp(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	text := strings.ReplaceAll(latestYAML, "BUCKET", "none\n    write_timestamp: event_time\n    on_tombstone: delete")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if tp := loadValid(t, path, nil).Topics["latest"]; tp.OnTombstone != OnTombstoneDelete {
		t.Errorf("on_tombstone = %q, want delete", tp.OnTombstone)
	}
}

// TestWarningForADeletingEntryWithAShortGCGrace: an entry whose tombstones delete rows is valid with the
// default gc_grace of one day, but its deletes can be undone once their tombstones are purged; validate
// says so, and not once gc_grace reaches Cassandra's own default.
func TestWarningForADeletingEntryWithAShortGCGrace(t *testing.T) {
	for _, tc := range []struct {
		onTombstone string
		gcGrace     Duration
		want        bool
	}{
		{OnTombstoneDelete, DefaultGCGrace, true},
		{OnTombstoneDelete, Duration(10 * Day), false},
		{OnTombstoneSkip, DefaultGCGrace, false},
	} {
		path := filepath.Join(t.TempDir(), "c.yaml")
		text := strings.ReplaceAll(latestYAML, "BUCKET", "none\n    on_tombstone: "+tc.onTombstone+"\n    gc_grace: "+tc.gcGrace.String())
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		ws := loadValid(t, path, nil).Warnings()
		if got := len(ws) == 1 && ws[0].Path == "topics.latest.gc_grace"; got != tc.want {
			t.Errorf("%s, gc_grace %s: warnings %v, want one on topics.latest.gc_grace: %v", tc.onTombstone, tc.gcGrace, ws, tc.want)
		}
	}
}

// TestKeyCodecDefaultsToTextAndTakesARegistryCodec: a tombstone's key is text unless key_codec says
// otherwise, and a deleting entry takes a registry key codec (its case folded) with a schema_registry.
func TestKeyCodecDefaultsToTextAndTakesARegistryCodec(t *testing.T) {
	for _, tc := range []struct{ set, want string }{{"", KeyCodecText}, {"\n    key_codec: Avro", CodecAvro}, {"\n    key_codec: json_schema", CodecJSONSchema}} {
		path := filepath.Join(t.TempDir(), "c.yaml")
		text := strings.ReplaceAll(latestYAML, "BUCKET", "none\n    on_tombstone: delete"+tc.set) +
			"schema_registry:\n  urls: [\"http://127.0.0.1:8081\"]\n"
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := loadValid(t, path, nil).Topics["latest"].KeyCodec; got != tc.want {
			t.Errorf("key_codec set as %q: %q, want %q", tc.set, got, tc.want)
		}
	}
}

// TestLatestValueWriteTimestampEventTimeOrOffset: a latest-value entry takes write_timestamp event_time
// or offset and refuses the others; an envelope entry's default is offset (the changes of one database
// transaction share their source time, and only the offset orders them), a plain one's event_time, a
// bucketed envelope entry's kafka.
func TestLatestValueWriteTimestampEventTimeOrOffset(t *testing.T) {
	envelope := func(text string) string {
		text = strings.ReplaceAll(text, "time: {field: ts}", "time: {source: change}\n    envelope: debezium")
		text = strings.ReplaceAll(text, "      - {column: channel, order: asc}", "      - {column: channel, order: asc}\n      - {column: lsn, order: asc}")
		return strings.ReplaceAll(text, "    clustering:", "      - {name: lsn, type: bigint, source: change, field: source.lsn}\n    clustering:")
	}
	for _, tc := range []struct {
		bucket, set string
		enveloped   bool
		want        string // "": refused
	}{
		{"none", "", false, WriteTimestampEventTime},
		{"none", "offset", false, WriteTimestampOffset},
		{"none", "Offset", true, WriteTimestampOffset},
		{"none", "", true, WriteTimestampOffset},
		{"none", "event_time", true, WriteTimestampEventTime},
		{"{width: 1d}", "", true, WriteTimestampKafka},
		{"none", "kafka", false, ""},
		{"none", "server", true, ""},
	} {
		bucket := tc.bucket
		if tc.set != "" {
			bucket += "\n    write_timestamp: " + tc.set
		}
		text := strings.ReplaceAll(latestYAML, "BUCKET", bucket)
		if tc.enveloped {
			text = envelope(text)
		}
		path := filepath.Join(t.TempDir(), "c.yaml")
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		name := tc.bucket + " " + tc.set
		if tc.enveloped {
			name += " envelope"
		}
		if tc.want == "" {
			c, err := Load(path, nil)
			if err == nil {
				err = c.Validate()
			}
			if err == nil || !strings.Contains(err.Error(), "topics.latest.write_timestamp") || !strings.Contains(err.Error(), "event_time") {
				t.Errorf("%s: %v, want write_timestamp refused", name, err)
			}
			continue
		}
		if got := loadValid(t, path, nil).Topics["latest"].WriteTimestamp; got != tc.want {
			t.Errorf("%s: write_timestamp %q, want %q", name, got, tc.want)
		}
	}
}
