package mapper_test

import (
	"context"
	"testing"
	"time"

	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/mapper"
	"github.com/bucketsink/sink/packed"
)

// TestMapAllRowsLandInEachEntrysTable maps one record of a Kafka topic read by two entries (by
// device and day, by site and hour with event buckets) and writes each row through its own INSERT
// into the table `sink schema` created: each table then holds the record's row in the partition its
// entry's policy says, with the values decoded once for both.
func TestMapAllRowsLandInEachEntrysTable(t *testing.T) {
	columns := func(id, idField string) []config.Column {
		return []config.Column{
			{Name: id, Type: "text", Field: idField},
			{Name: "at", Type: "timestamp", Source: "event_time"},
			{Name: "device", Type: "text", Field: "device_id"},
			{Name: "temperature", Type: "double", Field: "temperature"},
		}
	}
	_, m, s, ctx := onCassandra(t, map[string]config.Topic{
		"by-device": {Topic: "fanout", ID: []string{"device_id"}, Time: config.EventTime{Field: "ts"},
			Bucket: config.Bucket{Width: "1d"}, Table: "by_device", Columns: columns("device_id", "device_id")[:2:2],
			Clustering: []config.Clustering{{Column: "at"}}},
		"by-site": {Topic: "fanout", ID: []string{"site_id"}, Time: config.EventTime{Field: "ts"},
			Bucket: config.Bucket{Width: "1h", Key: "timestamp", EventBuckets: 4}, Table: "by_site", Columns: columns("site_id", "site.id"),
			Clustering: []config.Clustering{{Column: "at"}, {Column: "device", Order: "asc"}}},
	})
	rec := mapper.Record{Topic: "fanout", Partition: 2, Offset: 9, Timestamp: time.Now(),
		Value: []byte(`{"device_id":"dev-1","ts":"2024-01-15T14:37:22.123Z","temperature":21.5,"site":{"id":"plant-1"}}`)}
	all, err := m.MapAll(context.Background(), rec, nil)
	if err != nil || len(all) != 2 {
		t.Fatalf("MapAll: %v, %d results", err, len(all))
	}
	for _, got := range all {
		if got.Err != nil {
			t.Fatalf("%s: %v", got.Entry, got.Err)
		}
		if err := s.Driver().Query(got.Row.Target.Insert, packed.Values(got.Row.Packed)...).ExecContext(ctx); err != nil {
			t.Fatalf("%s: insert: %v", got.Entry, err)
		}
	}
	at := time.Date(2024, 1, 15, 14, 37, 22, 123e6, time.UTC)
	var device string
	if err := s.Driver().Query(`SELECT device_id FROM `+all[0].Row.Target.Keyspace+`.by_device WHERE device_id = ? AND bucket = ? AND at = ?`,
		"dev-1", "2024-01-15", at).ScanContext(ctx, &device); err != nil || device != "dev-1" {
		t.Errorf("by_device: %q, %v", device, err)
	}
	vals := packed.Values(all[1].Row.Packed)
	var temp float64
	if err := s.Driver().Query(`SELECT temperature FROM `+all[1].Row.Target.Keyspace+`.by_site WHERE site_id = ? AND bucket = ? AND event_bucket = ? AND at = ? AND device = ?`,
		"plant-1", time.Date(2024, 1, 15, 14, 0, 0, 0, time.UTC), packed.GoValue(vals[5]), at, "dev-1").ScanContext(ctx, &temp); err != nil || temp != 21.5 {
		t.Errorf("by_site: %v, %v", temp, err)
	}
}
