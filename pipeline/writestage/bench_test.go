package writestage

import (
	"context"
	"fmt"
	"math/rand"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/cassandra"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/pipeline/consumer"
	"github.com/bucketsink/sink/pipeline/offsets"
)

// benchOwner is a Kafka partition of BenchmarkStageSteady: it counts the rows acknowledged and wakes the
// feeder once all it sent are.
type benchOwner struct {
	fakeOwner
	run *benchRun
}

func (o *benchOwner) Complete(offs []int64) { o.run.completed(len(offs)) }

// benchRun counts the rows acknowledged against the rows sent.
type benchRun struct {
	done, want atomic.Int64
	all        chan struct{}
}

func (r *benchRun) completed(n int) {
	if r.done.Add(int64(n)) >= r.want.Load() {
		select {
		case r.all <- struct{}{}:
		default:
		}
	}
}

// discardBatches acknowledges every batch at once, counting them: the benchmark measures the stage's
// own work.
type discardBatches struct{ requests atomic.Int64 }

func (w *discardBatches) Write(context.Context, *batcher.Batch) ([]cassandra.RowFailure, error) {
	w.requests.Add(1)
	return nil, nil
}

// BenchmarkStageSteady drives the real write stage (its loop, the slot policy, the batcher, the writer
// goroutines and their acknowledgements) at the shape of a steady stream: six Kafka partitions take turns
// sending 75 rows each (15,000 rows/s arriving every 30 ms), of 10,000 Zipf-skewed keys (s = 1.1, as
// `sink bench` draws its devices), and due batches are joined ten partitions a request (simGroup, as on
// a single node). An op is one row. Each message's rows are written and acknowledged before the next
// is sent, with a linger of zero: every message's batches are due at once, so what a request holds
// does not depend on how fast the machine runs the benchmark (rows/request reports it), and counted instructions compare builds
// (docs/PERFORMANCE.md, "The mapper and the pipeline in instructions").
func BenchmarkStageSteady(b *testing.B) {
	const partitions, perMessage, keys = 6, 75, 10_000
	names := make([]string, keys)
	for i := range names {
		names[i] = fmt.Sprintf("dev-%05d", i)
	}
	zipf := rand.NewZipf(rand.New(rand.NewSource(1)), 1.1, 1, keys-1)
	rows := make([]batcher.Row, b.N)
	run := &benchRun{all: make(chan struct{}, 1)}
	owners := make([]*benchOwner, partitions)
	for p := range owners {
		owners[p] = &benchOwner{fakeOwner: fakeOwner{tp: offsets.TopicPartition{Topic: "events", Partition: int32(p)}, ctx: context.Background()}, run: run}
	}
	for i := range rows {
		msg := i / perMessage
		rows[i] = batcher.Row{Target: target, Key: names[zipf.Uint64()], Size: 122, EventMicros: int64(i),
			Partition: int32(msg % partitions), Offset: int64(msg/partitions*perMessage + i%perMessage)}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &discardBatches{}
	cfg := testConfig(w, config.DefaultBatchMaxRows, config.DefaultMaxInFlight, time.Second)
	cfg.Batcher = batcher.Config{MaxRows: config.DefaultBatchMaxRows, MaxBytes: int(config.DefaultBatchMaxBytes)}
	cfg.Group, cfg.JoinMax = simGroup, 10
	s := New(ctx, cfg)
	go s.Run()
	b.ReportAllocs()
	b.ResetTimer()
	for sent := 0; sent < b.N; {
		n := min(perMessage, b.N-sent)
		m := Msg{Rows: append(consumer.GetHandOff(), rows[sent:sent+n]...), Owner: owners[sent/perMessage%partitions]}
		sent += n
		run.want.Store(int64(sent))
		s.In() <- m
		for run.done.Load() < int64(sent) {
			<-run.all
		}
	}
	b.StopTimer()
	s.Close()
	s.Wait()
	b.ReportMetric(float64(b.N)/float64(w.requests.Load()), "rows/request")
}
