package bucketer_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/bucketsink/sink/bucketer"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/mapper"
)

// explain maps one record of topics.t through the real mapper.
func explain(t *testing.T, cfg *config.Config, kafkaTopic, value string) mapper.Explanation {
	t.Helper()
	m, err := mapper.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ex, err := m.Explain(mapper.Record{Topic: kafkaTopic, Partition: 3, Offset: 1207, Value: []byte(value),
		Timestamp: time.Date(2024, 1, 15, 14, 37, 23, 500_000_000, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	return ex
}

// docExampleConfig is the package doc's worked example as a topic: width 1h, key text, 4 event
// buckets, id sensor_id, clustering ts (the event time), and seq when withSeq.
func docExampleConfig(withSeq bool) *config.Config {
	tp := config.Topic{
		Topic:  "doc-example",
		ID:     []string{"sensor_id"},
		Time:   config.EventTime{Source: "field", Field: "at", Format: "rfc3339"},
		Bucket: config.Bucket{Width: "1h", Key: "text", EventBuckets: 4},
		Table:  "readings",
		Columns: []config.Column{
			{Name: "sensor_id", Type: "text", Field: "sensor_id"},
			{Name: "ts", Type: "timestamp", Source: "event_time"},
			{Name: "seq", Type: "int", Field: "seq"},
		},
		Clustering: []config.Clustering{{Column: "ts", Order: "desc"}},
	}
	if withSeq {
		tp.Clustering = append(tp.Clustering, config.Clustering{Column: "seq", Order: "asc"})
	}
	cfg := &config.Config{
		Kafka:     config.Kafka{Brokers: []string{"127.0.0.1:9092"}},
		Cassandra: config.Cassandra{Hosts: []string{"127.0.0.1"}, Keyspace: "doc"},
		Topics:    map[string]config.Topic{"example": tp},
	}
	cfg.ApplyDefaults()
	return cfg
}

// TestDocWorkedExample: the worked example of the package doc, the on-disk contract readers in other
// languages follow, is what the mapper writes. Each line of the example is in doc.go as written here,
// and the bucket, key and event bucket it states are the ones the real mapper computes for that record.
func TestDocWorkedExample(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		`//	index = floor(1705309632 / 3600) = 473697`,
		`//	text  = "2024-01-15-09", int = 2024011509, number = 473697`,
		`//	FNV-1a 64("2024-01-15T09:07:12.000Z") = 9737493038805735161; mod 4 = 1 → event bucket 1`,
		`//	FNV-1a 64("2024-01-15T09:07:12.000Z" 0x00 "7") = 350632916081792452; mod 4 = 0`,
	} {
		if !strings.Contains(string(doc), line+"\n") {
			t.Errorf("doc.go no longer has the example line\n%s", line)
		}
	}

	const record = `{"sensor_id":"sensor-42","at":"2024-01-15T14:37:12+05:30","seq":7}`
	ex := explain(t, docExampleConfig(false), "doc-example", record)
	if ex.Bucket != 473697 || ex.PartitionKey[1].Value != "2024-01-15-09" {
		t.Errorf("bucket %d key %v, the doc says 473697 and \"2024-01-15-09\"", ex.Bucket, ex.PartitionKey[1].Value)
	}
	h := bucketer.NewIDHash()
	h.PartString("2024-01-15T09:07:12.000Z")
	if h.Sum64() != 9737493038805735161 || ex.EventBucket != 1 {
		t.Errorf("clustering ts: hash %d, mapper's event bucket %d; the doc says 9737493038805735161 and 1", h.Sum64(), ex.EventBucket)
	}
	ex = explain(t, docExampleConfig(true), "doc-example", record)
	h.PartString("7")
	if h.Sum64() != 350632916081792452 || ex.EventBucket != 0 {
		t.Errorf("clustering (ts, seq): hash %d, mapper's event bucket %d; the doc says 350632916081792452 and 0", h.Sum64(), ex.EventBucket)
	}
}

// TestREADMEEventBucketFollowsTheDoc: the README's high-volume example (event_bucket_field
// reading_time, 8 event buckets) lands in the event bucket the doc's rule gives for the canonical text
// of its reading time, the one the README shows; hashing the entity id, the old text of the doc, gives
// another.
func TestREADMEEventBucketFollowsTheDoc(t *testing.T) {
	cfg, err := config.Load("../examples/high-volume.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	ex := explain(t, cfg, "sensor-firehose", `{"device_id":"dev-0042","ts":"2024-01-15T14:37:22.123Z","temperature":21.5,`+
		`"humidity":40.2,"battery":3.71,"site":{"id":"plant-1"}}`)
	byDoc := bucketer.EventBucket([]byte("2024-01-15T14:37:22.123Z"), 8)
	if ex.EventBucket != byDoc {
		t.Errorf("the mapper puts the README's record in event bucket %d, the doc's rule in %d", ex.EventBucket, byDoc)
	}
	if byID := bucketer.EventBucket([]byte("dev-0042"), 8); byID == ex.EventBucket {
		t.Errorf("hashing the id gives the same event bucket %d; pick a record that tells the two rules apart", byID)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if want := "  shard          = 1  event bucket 1 of 8\n"; ex.EventBucket != 1 || !strings.Contains(string(readme), want) {
		t.Errorf("event bucket %d; the README should show %q", ex.EventBucket, want)
	}
}
