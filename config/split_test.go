package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const splitYAML = `
kafka: {brokers: ["127.0.0.1:9092"]}
cassandra: {hosts: ["127.0.0.1"], keyspace: telemetry}
topics:
  readings:
    id: [device_id]
    time: {field: ts}
    bucket: {width: 1h, event_bucket_field: seq}
    split: {enabled: true}
    table: readings
    columns:
      - {name: device_id, type: text, field: device_id}
      - {name: seq, type: bigint, field: seq}
      - {name: ts, type: timestamp, source: event_time}
    clustering:
      - {column: ts}
      - {column: seq}
`

// TestSplitDefaultsAreTheGuidanceCeilings: an enabled split without further keys aims at the
// guidance's ceilings (100 MB through partition_budget, 100,000 rows) with 64 event buckets at
// most, and a split alone (event_buckets 1) accepts an event_bucket_field and puts the event bucket
// column in the partition key.
func TestSplitDefaultsAreTheGuidanceCeilings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "split.yaml")
	if err := os.WriteFile(path, []byte(splitYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	c := loadValid(t, path, nil)
	tp := c.Topics["readings"]
	if !tp.Split.Enabled || tp.Split.MaxEventBuckets != 64 || tp.Split.MaxRows != 100_000 || tp.PartitionBudget != 100_000_000 {
		t.Errorf("split = %+v, budget %s; want enabled, 64 event buckets, 100000 rows, 100MB", tp.Split, tp.PartitionBudget)
	}
	if !tp.UsesEventBucketColumn() {
		t.Error("a topic with split on and event_buckets 1 does not use the event bucket column; a split row would have nowhere to go")
	}
}

// TestSplitOffLeavesTheKeyAlone: a topic without split keeps its partition key as before (no event
// bucket column unless event_buckets > 1), so enabling nothing changes no table.
func TestSplitOffLeavesTheKeyAlone(t *testing.T) {
	c := loadValid(t, "../examples/local.yaml", nil)
	tp := c.Topics["readings"]
	if tp.Split.Enabled || tp.UsesEventBucketColumn() {
		t.Errorf("local example: split %+v, event bucket column %v; want off and absent", tp.Split, tp.UsesEventBucketColumn())
	}
}

// TestSplitRefreshIntervalDefaultsToFiveSecondsAndIsBounded: a split reads its routing records again
// every 5 s unless told otherwise; an interval under 100 ms or over 10 minutes is refused by name.
func TestSplitRefreshIntervalDefaultsToFiveSecondsAndIsBounded(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "split.yaml")
	if err := os.WriteFile(path, []byte(splitYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := loadValid(t, path, nil).Topics["readings"].Split.RefreshInterval; got != Duration(5*time.Second) {
		t.Errorf("split.refresh_interval = %s; want 5s by default", got)
	}
	for _, v := range []string{"50ms", "11m"} {
		path := filepath.Join(dir, "split-"+v+".yaml")
		yaml := strings.Replace(splitYAML, "split: {enabled: true}", "split: {enabled: true, refresh_interval: "+v+"}", 1)
		if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := Load(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = c.Validate()
		if err == nil || !strings.Contains(err.Error(), "split.refresh_interval") {
			t.Errorf("refresh_interval %s: %v; want it refused by name", v, err)
		}
	}
}
