package mapper

import (
	"fmt"
	"testing"
	"time"

	"github.com/bucketsink/sink/bucketer"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/routing"
)

func splitOn(tp *config.Topic) {
	tp.Split = config.Split{Enabled: true, MaxEventBuckets: 16, MaxRows: 100_000}
}

func sensorAt(ts string) Record {
	return rec(`{"device_id":"dev-0042","ts":"` + ts + `","temperature":21.5}`)
}

// TestSplitTopicWritesEventBucketZeroBeforeAnySplit: with split on and event_buckets 1, every row
// carries the event bucket column, 0 until a routing record says otherwise, so a later split adds
// partitions without changing the key of the rows already written.
func TestSplitTopicWritesEventBucketZeroBeforeAnySplit(t *testing.T) {
	m := newMapper(t, splitOn)
	tbl, _ := m.Table("readings")
	if got := tbl.PartitionKey; len(got) != 3 || got[2] != "event_bucket" {
		t.Fatalf("partition key %v; want device_id, day, event_bucket", got)
	}
	ex, err := m.Explain(sensorAt("2024-01-15T14:37:22.123Z"))
	if err != nil {
		t.Fatal(err)
	}
	if ex.EventBucket != 0 || ex.Split != nil || len(ex.PartitionKey) != 3 {
		t.Errorf("event bucket %d, split %v, key %v; want 0, none, 3 columns", ex.EventBucket, ex.Split, ex.PartitionKey)
	}
	// The entity key is the id column's composite component: length, bytes, 0x00.
	if want := "\x00\x08dev-0042\x00"; string(ex.Entity) != want {
		t.Errorf("entity key %q; want %q", ex.Entity, want)
	}
}

// TestSplitRoutesRowsByEventTimeFromTheRecord: once a routing record says "from T, 8 event
// buckets from 1", rows before T stay in event bucket 0 and rows at or after T go to 1 + the row's
// hash mod 8; a second generation (32 from 9, from T2) takes over from T2; other entities are
// untouched.
func TestSplitRoutesRowsByEventTimeFromTheRecord(t *testing.T) {
	m := newMapper(t, splitOn)
	ex, err := m.Explain(sensorAt("2024-01-15T10:00:00.000Z"))
	if err != nil {
		t.Fatal(err)
	}
	t1 := time.Date(2024, 1, 15, 12, 0, 0, 0, time.UTC)
	t2 := time.Date(2024, 1, 15, 18, 0, 0, 0, time.UTC)
	m.Routes("readings").Set(ex.Bucket, string(ex.Entity), []routing.Generation{{N: 1, From: t1, First: 1, Buckets: 8}, {N: 2, From: t2, First: 9, Buckets: 32}})

	spread := map[int]bool{}
	for i := range 200 {
		at := time.Date(2024, 1, 15, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * 7 * time.Minute)
		ts := at.Format("2006-01-02T15:04:05.000Z")
		got, err := m.Explain(sensorAt(ts))
		if err != nil {
			t.Fatal(err)
		}
		if got.Bucket != ex.Bucket {
			continue // the next day
		}
		first, k := 0, 1
		switch {
		case !at.Before(t2):
			first, k = 9, 32
		case !at.Before(t1):
			first, k = 1, 8
		}
		want := first + bucketer.EventBucketString(ts, k)
		if got.EventBucket != want {
			t.Fatalf("row at %s: event bucket %d; want %d (%d + hash mod %d)", ts, got.EventBucket, want, first, k)
		}
		if (k == 1) != (got.Split == nil) || (got.Split != nil && got.Split.Buckets != k) {
			t.Fatalf("row at %s: split %+v; want %d event buckets", ts, got.Split, k)
		}
		if !at.Before(t1) {
			spread[got.EventBucket] = true
		}
		if ev := fmt.Sprint(got.PartitionKey[2].Value); ev != fmt.Sprint(want) {
			t.Fatalf("row at %s: bound event bucket %s; want %d", ts, ev, want)
		}
	}
	if len(spread) < 8 {
		t.Errorf("rows after the split went to %d event buckets; want them spread over at least 8", len(spread))
	}
	other := rec(`{"device_id":"dev-0043","ts":"2024-01-15T20:00:00.000Z","temperature":1}`)
	if got, err := m.Explain(other); err != nil || got.EventBucket != 0 || got.Split != nil {
		t.Errorf("an entity without a record: event bucket %d, split %v, err %v; want 0, none", got.EventBucket, got.Split, err)
	}
}

// BenchmarkMapSensorSplitElsewhere maps sensor records of a topic with split on while another
// entity of the same bucket has split: the common case of a split topic (one map lookup by
// bucket, one by entity, no hit).
func BenchmarkMapSensorSplitElsewhere(b *testing.B) {
	m := newMapper(b, splitOn)
	ex, err := m.Explain(rec(sensorJSON))
	if err != nil {
		b.Fatal(err)
	}
	m.Routes("readings").Set(ex.Bucket, "\x00\x08dev-9999\x00", []routing.Generation{{N: 1, From: ex.BucketStart, First: 1, Buckets: 8}})
	benchMap(b, m)
}

// BenchmarkMapSensorSplitHere maps records of an entity that has split: the row is hashed into
// one of 8 event buckets.
func BenchmarkMapSensorSplitHere(b *testing.B) {
	m := newMapper(b, splitOn)
	ex, err := m.Explain(rec(sensorJSON))
	if err != nil {
		b.Fatal(err)
	}
	m.Routes("readings").Set(ex.Bucket, string(ex.Entity), []routing.Generation{{N: 1, From: ex.BucketStart, First: 1, Buckets: 8}})
	benchMap(b, m)
}

func benchMap(b *testing.B, m *Mapper) {
	r := rec(sensorJSON)
	b.ReportAllocs()
	b.SetBytes(int64(len(sensorJSON)))
	for b.Loop() {
		if _, err := m.Map(r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMapSensorSplitNone maps sensor records of a topic with split on before any split: the
// cost of split being enabled (the event bucket column, the hash column's canonical text kept).
func BenchmarkMapSensorSplitNone(b *testing.B) {
	benchMap(b, newMapper(b, splitOn))
}
