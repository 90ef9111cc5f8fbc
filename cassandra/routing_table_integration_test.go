package cassandra

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bucketsink/sink/routing"
)

// splitOnStack is the iot-sensors example with split on, in a fresh keyspace of the test
// Cassandra whose schema (routing table included) is applied.
func splitOnStack(t *testing.T) (*Session, *Splits, string) {
	t.Helper()
	cfg, ks := exampleOnStack(t, "iot-sensors")
	tp := cfg.Topics["readings"]
	tp.Split.Enabled = true
	cfg.Topics["readings"] = tp
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	s := connectForTest(t, cfg)
	t.Cleanup(func() { _ = s.Driver().Query("DROP KEYSPACE IF EXISTS " + ks).Exec() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stmts, err := Schema(cfg, nil, schemaNow)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(stmts, func(s string) bool { return strings.Contains(s, ks+"."+RoutingTable+" (") }) {
		t.Fatalf("sink schema of a split topic does not create %s.%s:\n%s", ks, RoutingTable, FormatDDL(stmts))
	}
	if err := ApplySchema(ctx, s, cfg, nil, schemaNow); err != nil {
		t.Fatal(err)
	}
	missing, err := CheckSchema(ctx, s, cfg, nil, schemaNow)
	if err != nil || len(missing) > 0 {
		t.Fatalf("after apply: missing %v, err %v", missing, err)
	}
	return s, NewSplits(s, ks, cfg.Cassandra), ks
}

// TestConcurrentSplitDecidersAgreeOnOneRecord: many deciders (two sessions' worth of goroutines,
// as two instances after a rebalance) propose different splits for the same entity, bucket and
// generation at once. Exactly one proposal is applied, every decider gets that one back, and the
// routing table holds exactly that record.
func TestConcurrentSplitDecidersAgreeOnOneRecord(t *testing.T) {
	_, sp, _ := splitOnStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Date(2024, 1, 15, 0, 0, 0, 0, time.UTC)
	for e := range 3 {
		entity := []byte(fmt.Sprintf("\x00\x07dev-%03d\x00", e))
		const deciders = 8
		var wg sync.WaitGroup
		got := make([]routing.Record, deciders)
		applied := make([]bool, deciders)
		errs := make([]error, deciders)
		for i := range deciders {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got[i], applied[i], errs[i] = sp.Propose(ctx, routing.Record{
					Table: "sensor_readings", BucketStart: start, Entity: entity, Generation: 1,
					From: start.Add(time.Duration(i+1) * time.Minute), FirstEventBucket: 1, EventBuckets: 2 + i,
					DecidedAt: time.Now(), DecidedBy: fmt.Sprintf("decider-%d", i),
				})
			}()
		}
		wg.Wait()
		winners := 0
		for i := range deciders {
			if errs[i] != nil {
				t.Fatalf("decider %d: %v", i, errs[i])
			}
			if applied[i] {
				winners++
			}
		}
		if winners != 1 {
			t.Fatalf("entity %d: %d proposals applied; want exactly one", e, winners)
		}
		for i := 1; i < deciders; i++ {
			if !sameDecision(got[i], got[0]) {
				t.Fatalf("entity %d: decider %d holds %+v, decider 0 %+v; all must hold the winner's", e, i, got[i], got[0])
			}
		}
		held, err := sp.Entity(ctx, "sensor_readings", start, entity)
		if err != nil {
			t.Fatal(err)
		}
		if len(held) != 1 || !sameDecision(held[0], got[0]) {
			t.Fatalf("entity %d: the routing table holds %+v; want the one decision %+v", e, held, got[0])
		}
	}
	all, err := sp.Bucket(ctx, "sensor_readings", start)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 3 {
		t.Fatalf("the bucket lists %d records; want one per entity (3)", len(all))
	}
}

// TestSplitGenerationsFollowEachOther: a second generation is a new record beside the first, and
// loading the bucket returns both in order, with the instants as written (UTC, milliseconds).
func TestSplitGenerationsFollowEachOther(t *testing.T) {
	_, sp, _ := splitOnStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Date(2024, 1, 15, 0, 0, 0, 0, time.UTC)
	entity := []byte("\x00\x03hot\x00")
	from1 := start.Add(90*time.Minute + 123*time.Millisecond)
	from2 := start.Add(5 * time.Hour)
	for _, rec := range []routing.Record{
		{Table: "sensor_readings", BucketStart: start, Entity: entity, Generation: 1, From: from1, FirstEventBucket: 1, EventBuckets: 4, DecidedBy: "a"},
		{Table: "sensor_readings", BucketStart: start, Entity: entity, Generation: 2, From: from2, FirstEventBucket: 5, EventBuckets: 16, DecidedBy: "a"},
	} {
		if _, ok, err := sp.Propose(ctx, rec); err != nil || !ok {
			t.Fatalf("proposing generation %d: applied %v, %v", rec.Generation, ok, err)
		}
	}
	got, err := sp.Bucket(ctx, "sensor_readings", start)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Generation != 1 || got[1].Generation != 2 ||
		!got[0].From.Equal(from1) || !got[1].From.Equal(from2) || got[1].EventBuckets != 16 || got[1].FirstEventBucket != 5 || !bytes.Equal(got[1].Entity, entity) {
		t.Fatalf("loaded %+v; want generations 1 (from %s, 4) and 2 (from %s, 16)", got, from1, from2)
	}
	if other, err := sp.Bucket(ctx, "sensor_readings", start.Add(24*time.Hour)); err != nil || len(other) != 0 {
		t.Fatalf("the next bucket: %v, %v; want no records", other, err)
	}
}

func sameDecision(a, b routing.Record) bool {
	return a.Table == b.Table && a.BucketStart.Equal(b.BucketStart) && bytes.Equal(a.Entity, b.Entity) &&
		a.Generation == b.Generation && a.From.Equal(b.From) && a.EventBuckets == b.EventBuckets && a.FirstEventBucket == b.FirstEventBucket && a.DecidedBy == b.DecidedBy
}

// TestConcurrentAdoptersOfASplitAgreeOnOneOffset: several owners of one Kafka partition (a rebalance
// overlap) adopt the same generation at different offsets at once. Exactly one adoption is applied,
// every adopter gets its offset back, and the table holds that one; another partition's adoption of
// the same generation is a row of its own.
func TestConcurrentAdoptersOfASplitAgreeOnOneOffset(t *testing.T) {
	_, sp, _ := splitOnStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Date(2024, 1, 15, 0, 0, 0, 0, time.UTC)
	entity := []byte("\x00\x03hot\x00")
	const adopters = 6
	var wg sync.WaitGroup
	got := make([]routing.Adoption, adopters)
	applied := make([]bool, adopters)
	errs := make([]error, adopters)
	for i := range adopters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], applied[i], errs[i] = sp.Adopt(ctx, routing.Adoption{Table: "sensor_readings", BucketStart: start, Entity: entity, Generation: 1,
				Topic: "sensors", Partition: 3, From: int64(100 + i), AdoptedBy: fmt.Sprintf("adopter-%d", i)})
		}()
	}
	wg.Wait()
	winners := 0
	for i := range adopters {
		if errs[i] != nil {
			t.Fatalf("adopter %d: %v", i, errs[i])
		}
		if applied[i] {
			winners++
		}
		if got[i].From != got[0].From || got[i].AdoptedBy != got[0].AdoptedBy {
			t.Errorf("adopter %d holds offset %d (%s), adopter 0 %d (%s); all must hold the winner's", i, got[i].From, got[i].AdoptedBy, got[0].From, got[0].AdoptedBy)
		}
	}
	if winners != 1 {
		t.Errorf("%d adoptions applied; want exactly one", winners)
	}
	if _, ok, err := sp.Adopt(ctx, routing.Adoption{Table: "sensor_readings", BucketStart: start, Entity: entity, Generation: 1,
		Topic: "sensors", Partition: 4, From: 7, AdoptedBy: "other"}); err != nil || !ok {
		t.Fatalf("partition 4's adoption: applied %v, %v", ok, err)
	}
	held, err := sp.Adoptions(ctx, "sensor_readings", start)
	if err != nil {
		t.Fatal(err)
	}
	if len(held) != 2 || held[0].Partition != 3 || held[0].From != got[0].From || held[1].Partition != 4 || held[1].From != 7 {
		t.Errorf("the bucket holds the adoptions %+v; want partition 3 from %d and partition 4 from 7", held, got[0].From)
	}
}

// TestSplitRecordCarriesItsDecidersAdoption: the decider's adoption is written in the routing
// record's own transaction; it reads back from the bucket, and a losing proposer gets it with the
// winner's record. A record written without one reads back as carrying none.
func TestSplitRecordCarriesItsDecidersAdoption(t *testing.T) {
	_, sp, _ := splitOnStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Date(2024, 1, 15, 0, 0, 0, 0, time.UTC)
	rec := routing.Record{Table: "sensor_readings", BucketStart: start, Entity: []byte("\x00\x03hot\x00"), Generation: 1, From: start.Add(time.Hour),
		FirstEventBucket: 1, EventBuckets: 4, DecidedBy: "a", Topic: "sensors", Partition: 2, FromOffset: 4711}
	if _, ok, err := sp.Propose(ctx, rec); err != nil || !ok {
		t.Fatalf("proposing: applied %v, %v", ok, err)
	}
	loser := rec
	loser.Partition, loser.FromOffset, loser.DecidedBy = 5, 9, "b"
	held, ok, err := sp.Propose(ctx, loser)
	if err != nil || ok {
		t.Fatalf("the second proposal: applied %v, %v; want the first one back", ok, err)
	}
	loaded, err := sp.Bucket(ctx, "sensor_readings", start)
	if err != nil || len(loaded) != 1 {
		t.Fatalf("loaded %v, %v; want the one record", loaded, err)
	}
	for what, r := range map[string]routing.Record{"the loser's copy": held, "the bucket's": loaded[0]} {
		if a, ok := r.Adoption(); !ok || a.Topic != "sensors" || a.Partition != 2 || a.From != 4711 || a.Generation != 1 {
			t.Errorf("%s adoption: %+v (%v); want sensors partition 2 from 4711", what, a, ok)
		}
	}
	bare := rec
	bare.Entity, bare.Topic, bare.Partition, bare.FromOffset = []byte("\x00\x04cold\x00"), "", 0, 0
	if _, ok, err := sp.Propose(ctx, bare); err != nil || !ok {
		t.Fatalf("proposing a record without an adoption: applied %v, %v", ok, err)
	}
	got, err := sp.Entity(ctx, "sensor_readings", start, bare.Entity)
	if err != nil || len(got) != 1 {
		t.Fatalf("loaded %v, %v", got, err)
	}
	if a, ok := got[0].Adoption(); ok {
		t.Errorf("a record written without an adoption reads back with %+v", a)
	}
}
