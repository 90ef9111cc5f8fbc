package gen

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bucketsink/sink/internal/testenv"
)

func TestPacerSpreadsRecordsEvenly(t *testing.T) {
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	p := pacer{rate: 200, start: start}
	for _, tc := range []struct {
		n    int64
		now  time.Duration
		want time.Duration
	}{
		{0, 0, 0},
		{1, 0, 5 * time.Millisecond},
		{200, time.Second, 0},
		{200, 900 * time.Millisecond, 100 * time.Millisecond},
		{10, time.Second, -950 * time.Millisecond}, // behind schedule: send at once
	} {
		if got := p.wait(tc.n, start.Add(tc.now)); got != tc.want {
			t.Errorf("record %d at +%v: wait %v, want %v", tc.n, tc.now, got, tc.want)
		}
	}
	if got := (pacer{start: start}).wait(1_000_000, start); got != 0 {
		t.Errorf("no rate: wait %v, want 0", got)
	}
}

// TestProduceAndCountBack produces 2,000 records to the real Kafka and reads them back: every
// record is acknowledged, arrives once, keyed by its device id, with the bytes the generator made.
func TestProduceAndCountBack(t *testing.T) {
	brokers := testenv.Kafka(t)
	topic := testenv.Name(t, "gen")
	// Produce creates the topic (that is part of what is tested); the test removes it.
	t.Cleanup(func() {
		cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
		if err != nil {
			return
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := kadm.NewClient(cl).DeleteTopics(ctx, topic); err != nil {
			t.Logf("deleting topic %s: %v", topic, err)
		}
	})
	cfg := Config{Seed: 11, Start: t0, BadFraction: 0.01}
	g := mustNew(t, cfg)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var progress []Stats
	st, err := Produce(ctx, g, ProduceConfig{
		Brokers: brokers, Topic: topic, Count: 2000, Partitions: 3,
		Progress: func(s Stats) { progress = append(progress, s) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if st.Produced != 2000 || st.Acked != 2000 || st.Failed != 0 {
		t.Fatalf("stats %+v, want 2000 produced and acknowledged", st)
	}
	if len(progress) == 0 || progress[len(progress)-1] != st {
		t.Errorf("the last progress report %v is not the final stats %+v", progress, st)
	}

	want := map[string]int{}
	ref := mustNew(t, cfg)
	for range 2000 {
		want[string(ref.Next().Value)]++
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got, partitions := 0, map[int32]bool{}
	for got < 2000 {
		fetches := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read back %d of 2000 records before the deadline", got)
		}
		fetches.EachError(func(topic string, p int32, err error) { t.Fatalf("fetching %s/%d: %v", topic, p, err) })
		fetches.EachRecord(func(r *kgo.Record) {
			got++
			partitions[r.Partition] = true
			v := string(r.Value)
			if want[v] == 0 {
				t.Fatalf("record at %d/%d was not generated (or arrived twice): %s", r.Partition, r.Offset, v)
			}
			want[v]--
			// Bad records (about 1%) have no usable id or time; the good ones must be keyed by
			// their device and stamped with their event time.
			var doc struct {
				DeviceID string    `json:"device_id"`
				TS       time.Time `json:"ts"`
			}
			if json.Unmarshal(r.Value, &doc) != nil || doc.DeviceID == "" {
				return
			}
			if doc.DeviceID != string(r.Key) || !r.Timestamp.Equal(doc.TS) {
				t.Fatalf("record at %d/%d: key %q timestamp %v, but device_id %q ts %v",
					r.Partition, r.Offset, r.Key, r.Timestamp, doc.DeviceID, doc.TS)
			}
		})
	}
	if len(partitions) != 3 {
		t.Errorf("records landed in %d partitions, want all 3 of the created topic", len(partitions))
	}
}
