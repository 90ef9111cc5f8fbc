package pipeline

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/cassandra"
	"github.com/bucketsink/sink/config"
)

// discardWriter acknowledges every batch at once: the benchmark measures the pipeline's own cost.
type discardWriter struct{}

func (discardWriter) Write(context.Context, *batcher.Batch) ([]cassandra.RowFailure, error) {
	return nil, nil
}

// BenchmarkPipeline runs b.N records from an in-process cluster through the whole pipeline (poll, queue,
// map, batch, write, track, mark) to committed offsets, with a writer that discards. kfake's own cost is
// included, so this is a lower bound of the pipeline's throughput.
func BenchmarkPipeline(b *testing.B) {
	b.ReportAllocs()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(testParts, testTopic), kfake.SeedTopics(1, testDLQ))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	recs := make([]*kgo.Record, 0, b.N)
	for i := range b.N {
		recs = append(recs, &kgo.Record{Topic: testTopic, Partition: int32(i % testParts),
			Key: fmt.Appendf(nil, "dev-%d", i%500), Value: fmt.Appendf(nil, `{"device_id":"dev-%d","n":%d}`, i%500, i)})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		b.Fatal(err)
	}
	end := make(map[int32]int64)
	for _, r := range recs {
		end[r.Partition] = max(end[r.Partition], r.Offset+1)
	}
	cfg := &config.Config{
		Kafka:  config.Kafka{Brokers: c.ListenAddrs(), Group: "bench"},
		Writer: config.Writer{CommitInterval: config.Duration(100 * time.Millisecond)},
		Topics: map[string]config.Topic{"events": {Topic: testTopic, Table: "events", Bucket: config.Bucket{Width: "1h"}}},
	}
	cfg.ApplyDefaults()
	pl, err := New(Config{Sink: cfg, Mapper: fakeMapper{target: &batcher.Target{Keyspace: "ks", Table: "events"}},
		Writer: discardWriter{}, Metrics: NewMetrics(prometheus.NewRegistry())})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- pl.Run(ctx) }()
	for done := false; !done; {
		time.Sleep(5 * time.Millisecond)
		if !pl.joined.Load() {
			continue
		}
		marked := pl.client.MarkedOffsets()[testTopic]
		committed := pl.client.CommittedOffsets()[testTopic]
		done = true
		for p, o := range end {
			if max(marked[p].Offset, committed[p].Offset) < o {
				done = false
			}
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	cancel()
	if err := <-errc; err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "records/s")
}
