package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bucketsink/sink/bucketer"
	"github.com/bucketsink/sink/cassandra"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/internal/testenv"
	"github.com/bucketsink/sink/routing"
)

// TestIntegrationExplainShowsTheRoutingRecordThatApplies: for a split topic, `sink explain` reads the
// entity's routing records from Cassandra and says which one places the record, and in which event
// bucket: generation 1 for a record after its instant, generation 0 for one before.
func TestIntegrationExplainShowsTheRoutingRecordThatApplies(t *testing.T) {
	path, s, ks, cfg := explainSplitStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	day := time.Date(2024, 1, 30, 0, 0, 0, 0, time.UTC)
	from := day.Add(12 * time.Hour)
	if _, ok, err := cassandra.NewSplits(s, ks, cfg.Cassandra).Propose(ctx, routing.Record{
		Table: "readings", BucketStart: day, Entity: []byte("\x00\x05dev-1\x00"), Generation: 1, From: from, FirstEventBucket: 1, EventBuckets: 8, DecidedBy: "test",
	}); err != nil || !ok {
		t.Fatalf("writing the routing record: applied %v, %v", ok, err)
	}

	after := "2024-01-30T13:00:00.250Z"
	code, out, errOut := runCmd(t, runExplain, "--config", path, "--topic", "readings", "--record", `{"device_id":"dev-1","ts":"`+after+`"}`)
	want := 1 + bucketer.EventBucketString(after, 8)
	if code != exitOK || !strings.Contains(out, "* generation 1 from 2024-01-30T12:00:00.000Z: event buckets 1..8 (8)") ||
		!strings.Contains(out, fmt.Sprintf("generation 1 applies (*): event bucket %d = 1 + hash mod 8", want)) {
		t.Errorf("a record after the split: exit %d, want event bucket %d of generation 1\n%s%s", code, want, out, errOut)
	}
	code, out, errOut = runCmd(t, runExplain, "--config", path, "--topic", "readings", "--record", `{"device_id":"dev-1","ts":"2024-01-30T11:59:59Z"}`)
	if code != exitOK || !strings.Contains(out, "generation 0 applies, event bucket 0") {
		t.Errorf("a record before the split: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = runCmd(t, runExplain, "--config", path, "--topic", "readings", "--record", `{"device_id":"dev-2","ts":"`+after+`"}`)
	if code != exitOK || !strings.Contains(out, "none recorded for this entity and time bucket: generation 0, 1 event bucket") {
		t.Errorf("an entity that never split: exit %d\n%s", code, out)
	}
}

// TestIntegrationExplainShowsTheAdoptionOfTheRecordsPartition: a split applies to a record only from
// the offset at which the record's Kafka partition adopted it; `sink explain` shows that adoption, and
// the layout before it for a record at an earlier offset.
func TestIntegrationExplainShowsTheAdoptionOfTheRecordsPartition(t *testing.T) {
	path, s, ks, cfg := explainSplitStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	day := time.Date(2024, 1, 30, 0, 0, 0, 0, time.UTC)
	sp := cassandra.NewSplits(s, ks, cfg.Cassandra)
	entity := []byte("\x00\x05dev-1\x00")
	if _, ok, err := sp.Propose(ctx, routing.Record{
		Table: "readings", BucketStart: day, Entity: entity, Generation: 1, From: day.Add(12 * time.Hour), FirstEventBucket: 1, EventBuckets: 8, DecidedBy: "test",
	}); err != nil || !ok {
		t.Fatalf("writing the routing record: applied %v, %v", ok, err)
	}
	if _, ok, err := sp.Adopt(ctx, routing.Adoption{
		Table: "readings", BucketStart: day, Entity: entity, Generation: 1, Topic: cfg.Topics["readings"].Topic, Partition: 1, From: 100, AdoptedBy: "test",
	}); err != nil || !ok {
		t.Fatalf("writing the adoption: applied %v, %v", ok, err)
	}
	after := "2024-01-30T13:00:00.250Z"
	record := `{"device_id":"dev-1","ts":"` + after + `"}`
	code, out, errOut := runCmd(t, runExplain, "--config", path, "--topic", "readings", "--record", record, "--partition", "1", "--offset", "99")
	if code != exitOK || !strings.Contains(out, "generation 1 from 2024-01-30T12:00:00.000Z: event buckets 1..8 (8); adopted by partition 1 from offset 100") ||
		!strings.Contains(out, "partition 1 adopted it after offset 99: generation 0 applies, event bucket 0") {
		t.Errorf("a record below its partition's adoption: exit %d, want generation 0\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCmd(t, runExplain, "--config", path, "--topic", "readings", "--record", record, "--partition", "1", "--offset", "100")
	want := 1 + bucketer.EventBucketString(after, 8)
	if code != exitOK || !strings.Contains(out, fmt.Sprintf("generation 1 applies (*): event bucket %d = 1 + hash mod 8", want)) ||
		strings.Contains(out, "has not adopted") {
		t.Errorf("a record at its partition's adoption: exit %d, want event bucket %d of generation 1\n%s%s", code, want, out, errOut)
	}
	code, out, errOut = runCmd(t, runExplain, "--config", path, "--topic", "readings", "--record", record, "--partition", "0", "--offset", "5")
	if code != exitOK || !strings.Contains(out, "partition 0 has not adopted generation 1: the sink adopts it at the first row of the partition that uses it") ||
		!strings.Contains(out, fmt.Sprintf("event bucket %d", want)) {
		t.Errorf("a record of a partition that has not adopted the split: exit %d\n%s%s", code, out, errOut)
	}
}

// explainSplitStack is a config file of a daily split topic (readings, id device_id) and a fresh
// keyspace of the test Cassandra with its schema applied.
func explainSplitStack(t *testing.T) (string, *cassandra.Session, string, *config.Config) {
	t.Helper()
	hosts := testenv.Cassandra(t)
	ks := testenv.Name(t, "explain")
	path := filepath.Join(t.TempDir(), "sink.yaml")
	yaml := fmt.Sprintf(`kafka: {brokers: ["127.0.0.1:9092"]}
cassandra: {hosts: [%s], keyspace: %s, consistency: ONE}
topics:
  readings:
    id: [device_id]
    time: {source: field, field: ts}
    bucket: {width: 1d}
    split: {enabled: true}
    table: readings
    columns:
      - {name: device_id, type: text, field: device_id}
      - {name: ts, type: timestamp, source: event_time}
    clustering: [{column: ts, order: desc}]
`, strings.Join(hosts, ", "), ks)
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := cassandra.Connect(ctx, cfg.Cassandra)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	t.Cleanup(func() { _ = s.Driver().Query("DROP KEYSPACE IF EXISTS " + ks).Exec() })
	if err := cassandra.ApplySchema(ctx, s, cfg, nil, time.Date(2024, 1, 30, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	return path, s, ks, cfg
}
