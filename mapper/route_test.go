package mapper

import (
	"fmt"
	"testing"
	"time"

	"github.com/bucketsink/sink/bucketer"
	"github.com/bucketsink/sink/config"
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
	m.Routes("readings").Set(ex.Bucket, string(ex.Entity), []Generation{{N: 1, From: t1, First: 1, Buckets: 8}, {N: 2, From: t2, First: 9, Buckets: 32}})

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

// TestRoutesNeverShrink: a list of generations no longer than the one held is ignored (a stale
// load cannot undo a decision), and Forget drops closed buckets only.
func TestRoutesNeverShrink(t *testing.T) {
	var r Routes
	g1 := Generation{N: 1, From: time.Unix(100, 0), Buckets: 4}
	g2 := Generation{N: 2, From: time.Unix(200, 0), Buckets: 16}
	r.Set(7, "e", []Generation{g1, g2})
	r.Set(7, "e", []Generation{g1})
	if got := r.Lookup(7, "e"); len(got) != 2 {
		t.Fatalf("after a shorter Set: %v; want both generations", got)
	}
	r.Set(9, "f", []Generation{g1})
	r.Forget(8)
	if r.HasBucket(7) || !r.HasBucket(9) {
		t.Errorf("after Forget(8): bucket 7 %v, bucket 9 %v; want dropped, kept", r.HasBucket(7), r.HasBucket(9))
	}
	if g := Applying([]Generation{g1, g2}, time.Unix(150, 0)); g == nil || g.N != 1 {
		t.Errorf("Applying at 150: %v; want generation 1", g)
	}
	if g := Applying([]Generation{g1, g2}, time.Unix(99, 0)); g != nil {
		t.Errorf("Applying before the first split: %v; want none (generation 0)", g)
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
	m.Routes("readings").Set(ex.Bucket, "\x00\x08dev-9999\x00", []Generation{{N: 1, From: ex.BucketStart, First: 1, Buckets: 8}})
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
	m.Routes("readings").Set(ex.Bucket, string(ex.Entity), []Generation{{N: 1, From: ex.BucketStart, First: 1, Buckets: 8}})
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

// TestRouteFollowsAGenerationOnlyFromItsSourcesAdoption: with FollowAdoptions, a generation routes
// a row only when the row's Kafka partition adopted it at or before the row's offset; otherwise the
// highest earlier generation it adopted does, or generation 0. Adoptions merge into what is held and
// never change once held.
func TestRouteFollowsAGenerationOnlyFromItsSourcesAdoption(t *testing.T) {
	var r Routes
	r.FollowAdoptions()
	g1 := Generation{N: 1, From: time.Unix(100, 0), First: 1, Buckets: 4, Adopted: map[int32]int64{0: 10}}
	g2 := Generation{N: 2, From: time.Unix(200, 0), First: 5, Buckets: 8}
	r.Set(7, "e", []Generation{g1, g2})
	at := time.Unix(250, 0)
	for _, c := range []struct {
		part   int32
		offset int64
		want   int
	}{{0, 9, 0}, {0, 10, 1}, {1, 50, 0}} {
		got := 0
		if g := r.Route(7, "e", at, c.part, c.offset); g != nil {
			got = g.N
		}
		if got != c.want {
			t.Errorf("partition %d offset %d: generation %d; want %d", c.part, c.offset, got, c.want)
		}
	}
	r.Adopt(7, "e", 2, 0, 20)
	r.Adopt(7, "e", 2, 0, 5) // a second adoption of the same partition changes nothing
	r.Set(7, "e", []Generation{g1, {N: 2, From: g2.From, First: 5, Buckets: 8, Adopted: map[int32]int64{1: 30}}})
	for _, c := range []struct {
		part   int32
		offset int64
		want   int
	}{{0, 19, 1}, {0, 20, 2}, {1, 29, 0}, {1, 30, 2}} {
		got := 0
		if g := r.Route(7, "e", at, c.part, c.offset); g != nil {
			got = g.N
		}
		if got != c.want {
			t.Errorf("after the adoptions, partition %d offset %d: generation %d; want %d", c.part, c.offset, got, c.want)
		}
	}
	if g := r.Route(7, "e", time.Unix(150, 0), 0, 100); g == nil || g.N != 1 {
		t.Errorf("a row before generation 2's instant: %v; want generation 1", g)
	}
}
