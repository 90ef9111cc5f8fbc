package mapper_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/mapper"
	"github.com/bucketsink/sink/packed"
)

// TestEventTimeTTLAndZeroTimeOnCassandra writes two rows through the mapper's INSERT into the table
// `sink schema` created and reads them back. Under ttl_from event_time a row whose event is ten minutes
// old is stored with the TTL left (Cassandra counts a TTL from the write, so expiry = event + ttl), not
// the whole ttl. An event at 0001-01-01T00:00:00Z, the zero time.Time, is stored as that instant in
// both its timestamp column and its timestamp bucket key, where gocql would have sent empty values.
func TestEventTimeTTLAndZeroTimeOnCassandra(t *testing.T) {
	ttlTopic := config.Topic{
		Topic:  "ttl-topic",
		ID:     []string{"device"},
		Time:   config.EventTime{Source: "field", Field: "ts", Format: "rfc3339"},
		Bucket: config.Bucket{Width: "1h", Key: "timestamp"},
		Table:  "ttl_rows",
		Columns: []config.Column{
			{Name: "device", Type: "text", Field: "device"},
			{Name: "at", Type: "timestamp", Source: "event_time"},
			{Name: "v", Type: "double", Field: "v"},
		},
		Clustering:     []config.Clustering{{Column: "at", Order: "desc"}},
		TTL:            config.Duration(time.Hour),
		TTLFrom:        config.TTLFromEventTime,
		WriteTimestamp: config.WriteTimestampOffset,
	}
	zeroTopic := ttlTopic
	zeroTopic.Topic, zeroTopic.Table, zeroTopic.TTL, zeroTopic.TTLFrom = "zero-topic", "zero_rows", 0, ""
	// Year 1 lies far outside any accept window around today's Kafka timestamp; this topic takes it.
	zeroTopic.Accept = config.Accept{Before: config.Duration(math.MaxInt64), After: config.Duration(math.MaxInt64)}
	ks, m, s, ctx := onCassandra(t, map[string]config.Topic{"ttl": ttlTopic, "zero": zeroTopic})
	write := func(topic, device string, at time.Time) {
		t.Helper()
		row, err := m.Map(mapper.Record{Topic: topic, Partition: 0, Offset: 7, Timestamp: time.Now(),
			Value: fmt.Appendf(nil, `{"device":%q,"ts":%q,"v":1.5}`, device, at.Format(time.RFC3339Nano))})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Driver().Query(row.Target.Insert, packed.Values(row.Packed)...).ExecContext(ctx); err != nil {
			t.Fatalf("insert: %v", err)
		}
	}
	read := func(table, device string) (at, bucket time.Time, ttl int, wt int64) {
		t.Helper()
		var ttlp *int
		err := s.Driver().Query("SELECT at, bucket, ttl(v), writetime(v) FROM "+ks+"."+table+" WHERE device = ? ALLOW FILTERING", device).ScanContext(ctx, &at, &bucket, &ttlp, &wt)
		if err != nil {
			t.Fatalf("reading %s back: %v", device, err)
		}
		if ttlp != nil {
			ttl = *ttlp
		}
		return at.UTC(), bucket.UTC(), ttl, wt
	}

	write("ttl-topic", "aged", time.Now().Add(-10*time.Minute))
	if _, _, ttl, wt := read("ttl_rows", "aged"); ttl > 3000 || ttl < 2900 || wt != 7 {
		t.Errorf("a 10-minute-old event with ttl 1h: ttl(v) %d, want just under 3000; writetime %d, want the offset 7", ttl, wt)
	}

	zero := time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	write("zero-topic", "zero", zero)
	if at, bucket, _, _ := read("zero_rows", "zero"); !at.Equal(zero) || !bucket.Equal(zero) {
		t.Errorf("zero time: at %s, bucket %s; want %s for both", at, bucket, zero)
	}
}
