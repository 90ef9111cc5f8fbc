package pipeline

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/cassandra"
	"github.com/bucketsink/sink/mapper"
	"github.com/bucketsink/sink/packed"
	"github.com/bucketsink/sink/pipeline/metrics"
	"github.com/bucketsink/sink/pipeline/rollup"
)

// markerWriter acknowledges every batch and keeps, per row of the pending table (a marker's identity),
// how often it was written and the highest record it named.
type markerWriter struct {
	mu      sync.Mutex
	raw     int
	writes  int
	highest map[string]int64
}

func (w *markerWriter) Write(_ context.Context, b *batcher.Batch) ([]cassandra.RowFailure, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := range b.Rows {
		r := &b.Rows[i]
		if r.Target.Table != cassandra.PendingTable {
			w.raw++
			continue
		}
		w.writes++
		vals := packed.Values(r.Packed)
		record := packed.GoValue(vals[6]).(int64)
		id := string(rollup.Identity(r))
		if old, ok := w.highest[id]; !ok || record > old {
			w.highest[id] = record
		}
	}
	return nil, nil
}

// Records of one device and hour add one marker row to the pending table while the marker stands (the
// rollup worker has not taken it), not one each and not one per hand-off: the first record of the
// window writes it, and the later ones rely on it (rollup.Standing). Guards against writing a marker
// per raw row, which doubled the rows the sink writes, and per hand-off, which wrote a third as many.
func TestMarkersOfOneWindowStandForItsLaterRecords(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(testParts, testTopic), kfake.SeedTopics(1, testDLQ))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// Two devices over two hours, interleaved, into one partition: four windows.
	const n = 200
	base := time.Date(2024, 1, 15, 10, 0, 0, 0, time.UTC)
	first := map[string]int64{} // "device hour" -> the offset of its first record
	var recs []*kgo.Record
	for i := range n {
		dev, at := fmt.Sprintf("dev-%d", i%2), base.Add(time.Duration(i)*time.Hour*2/n)
		if k := fmt.Sprintf("%s %d", dev, at.Hour()); !seen(first, k) {
			first[k] = int64(i)
		}
		recs = append(recs, &kgo.Record{Topic: testTopic, Partition: 0, Key: []byte(dev), Value: fmt.Appendf(nil,
			`{"device_id":%q,"ts":%q,"temperature":21.5,"humidity":40.2,"battery":3.71,"site":{"id":"plant-1"}}`, dev, at.Format(time.RFC3339Nano))})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	cfg := sensorBenchConfig(1)
	tc := cfg.Topics["readings"]
	tc.Rollups = benchRollups()
	cfg.Topics["readings"] = tc
	cfg.ApplyDefaults()
	cfg.Kafka.Brokers, cfg.Kafka.Group = c.ListenAddrs(), "fold"
	mp, err := mapper.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w := &markerWriter{highest: map[string]int64{}}
	pl, err := New(Config{Sink: cfg, Mapper: mp, Rollups: nothingDue{}, Writer: w, Metrics: metrics.NewMetrics(prometheus.NewRegistry())})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- pl.Run(ctx) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		pl.mu.Lock()
		kc := pl.client
		pl.mu.Unlock()
		if kc != nil && pl.health.Joined() {
			o := kc.MarkedOffsets()[testTopic][0].Offset
			if c := kc.CommittedOffsets()[testTopic][0].Offset; c > o {
				o = c
			}
			if o >= n {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the records were not all committed within 30 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}

	w.mu.Lock()
	defer w.mu.Unlock()
	if w.raw != n {
		t.Fatalf("%d raw rows written, want %d", w.raw, n)
	}
	if w.writes != len(first) {
		t.Fatalf("%d marker rows written for %d records of %d windows, want one a window: later records of a window did not rely on its marker", w.writes, n, len(first))
	}
	if len(w.highest) != len(first) {
		t.Fatalf("markers for %d windows, want %d", len(w.highest), len(first))
	}
	got := map[int64]bool{}
	for _, rec := range w.highest {
		got[rec] = true
	}
	for window, off := range first {
		if !got[off] {
			t.Errorf("no marker of window %s names its first record, offset %d (markers name %v)", window, off, w.highest)
		}
	}
}

func seen(m map[string]int64, k string) bool {
	_, ok := m[k]
	return ok
}
