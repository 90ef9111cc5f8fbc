package pipeline

import (
	"context"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/cassandra"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/mapper"
	"github.com/bucketsink/sink/pipeline/metrics"
	"github.com/bucketsink/sink/pipeline/rollup"
	"github.com/bucketsink/sink/pipeline/split"
	"github.com/bucketsink/sink/routing"
)

// discardWriter acknowledges every batch at once: the benchmark measures the pipeline's own cost.
type discardWriter struct{}

func (discardWriter) Write(context.Context, *batcher.Batch) ([]cassandra.RowFailure, error) {
	return nil, nil
}

func BenchmarkPipeline(b *testing.B) { benchmarkPipeline(b, discardWriter{}, false) }

// BenchmarkPipelineSplitTopic is BenchmarkPipeline with split on for the topic (a routing table
// without records): the routing and the write stage's fence of split topics are paid on every row and
// batch.
func BenchmarkPipelineSplitTopic(b *testing.B) { benchmarkPipeline(b, discardWriter{}, true) }

// BenchmarkPipelineSlowWriter writes through a writer with 2 ms of latency per batch and 8 slots: the
// rows-per-batch metric shows how batches grow when the writer, not the pipeline, is the bottleneck.
func BenchmarkPipelineSlowWriter(b *testing.B) {
	w := &latencyWriter{delay: 2 * time.Millisecond}
	benchmarkPipeline(b, w, false)
	b.ReportMetric(float64(w.rows.Load())/float64(max(w.batches.Load(), 1)), "rows/batch")
}

// benchmarkPipeline runs b.N records through the whole pipeline with a fake mapper (no decode) writing
// one row per record; with split, the topic has split on.
func benchmarkPipeline(b *testing.B, w BatchWriter, withSplit bool) {
	cfg := &config.Config{
		Writer: config.Writer{CommitInterval: config.Duration(100 * time.Millisecond), MaxInFlight: 8},
		Topics: map[string]config.Topic{"events": {Topic: testTopic, Table: "events", Bucket: config.Bucket{Width: "1h"}}},
	}
	var mp Mapper = oneEntry{fakeMapper{target: &batcher.Target{Topic: testTopic, Keyspace: "ks", Table: "events", Entry: "events"}}}
	var splits split.Store
	if withSplit {
		tc := cfg.Topics["events"]
		tc.Split = config.Split{Enabled: true, MaxEventBuckets: 8, MaxRows: 1000}
		cfg.Topics["events"] = tc
		mp, splits = splitFakeMapper{mp.(oneEntry), &routing.Routes{}}, noSplits{}
	}
	runPipelineBench(b, cfg, mp, splits, w, func(i int) []byte {
		return fmt.Appendf(nil, `{"device_id":"dev-%d","n":%d}`, i%500, i)
	})
}

// BenchmarkPipelineEntries runs sensor events through the whole pipeline and the real mapper for a
// topic read by one entry (readings by device and day) and by two (plus readings by site and hour),
// side by side in one run: an op is one record, so entries=2's cpu-ns/record (and ns/op) ÷ entries=1's
// is what the second table costs per record with the decode shared; rows/record counts the rows the
// writer was given.
func BenchmarkPipelineEntries(b *testing.B) {
	for _, n := range []int{1, 2} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) { runSensorBench(b, sensorBenchConfig(n), nil) })
	}
}

// runSensorBench runs b.N sensor events of 500 devices in the current hour through the pipeline and the
// real mapper of cfg, whose entries' rollups (if any) use the store rollups, and reports the rows the
// writer was given per record.
func runSensorBench(b *testing.B, cfg *config.Config, rollups rollup.Store) {
	cfg.ApplyDefaults()
	mp, err := mapper.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	w := &countingWriter{}
	base := time.Now().UTC().Truncate(time.Hour)
	runPipelineBenchWith(b, cfg, mp, nil, rollups, w, func(i int) []byte {
		return fmt.Appendf(nil, `{"device_id":"dev-%d","ts":%q,"temperature":21.5,"humidity":40.2,"battery":3.71,"site":{"id":"plant-%d"}}`,
			i%500, base.Add(time.Duration(i)*time.Millisecond).Format(time.RFC3339Nano), i%500%8)
	})
	b.ReportMetric(float64(w.rows.Load())/float64(b.N), "rows/record")
}

// BenchmarkPipelineRollups runs BenchmarkPipelineEntries' one entry without rollups and with an hourly
// rollup of the raw rows and a daily one made of the hourly rows (the bench harness's, `sink bench
// --rollups`), side by side in one run: with ÷ without of cpu-ns/record is what the record path pays
// for rollups, the pending marker each raw row adds to its record (rows/record counts it). The rollup
// workers find nothing due (the events are in the current hour), so no window is computed here: the
// reads of a computation are per window, measured by `sink bench --rollups`.
func BenchmarkPipelineRollups(b *testing.B) {
	for _, with := range []bool{false, true} {
		b.Run(fmt.Sprintf("rollups=%v", with), func(b *testing.B) {
			cfg := sensorBenchConfig(1)
			var store rollup.Store
			if with {
				tc := cfg.Topics["readings"]
				tc.Rollups = benchRollups()
				cfg.Topics["readings"] = tc
				store = nothingDue{}
			}
			runSensorBench(b, cfg, store)
		})
	}
}

// benchRollups are the rollups of examples/sensor-rollups.yaml: hourly windows of the raw rows, daily
// windows of the hourly rows.
func benchRollups() []config.Rollup {
	return []config.Rollup{
		{Name: "hourly", Width: "1h", Table: "readings_hourly", Bucket: config.Bucket{Width: "month"}, Aggregates: []config.Aggregate{
			{Column: "readings", Fn: config.AggCount},
			{Column: "temp_count", Fn: config.AggCount, Of: "temperature"},
			{Column: "temp_sum", Fn: config.AggSum, Of: "temperature"},
			{Column: "temp_min", Fn: config.AggMin, Of: "temperature"},
			{Column: "temp_max", Fn: config.AggMax, Of: "temperature"},
			{Column: "temp_avg", Fn: config.AggAvg, Of: "temperature"},
			{Column: "battery_last", Fn: config.AggLast, Of: "battery"},
		}},
		{Name: "daily", Width: "1d", From: "hourly", Table: "readings_daily", Bucket: config.Bucket{Width: "year"}, Aggregates: []config.Aggregate{
			{Column: "readings", Fn: config.AggCount},
			{Column: "temp_min", Fn: config.AggMin, Of: "temperature"},
			{Column: "temp_max", Fn: config.AggMax, Of: "temperature"},
			{Column: "temp_avg", Fn: config.AggAvg, Of: "temperature"},
			{Column: "battery_last", Fn: config.AggLast, Of: "battery"},
		}},
	}
}

// nothingDue is a rollup store with no window due: the benchmark's workers scan and find nothing.
type nothingDue struct{}

func (nothingDue) Due(context.Context, string, int32, time.Time, int) ([]rollup.Marker, error) {
	return nil, nil
}
func (nothingDue) Done(context.Context, string, int32, rollup.Marker) error { return nil }
func (nothingDue) Mark(context.Context, string, int32, rollup.Marker) error { return nil }
func (nothingDue) Recompute(context.Context, string, string, []byte, time.Time) (int, error) {
	return 0, nil
}

// sensorBenchConfig is the sensor policy of the bench harness on the test topic: readings by device and
// day, and with entries 2 also readings by site and hour (the device a clustering column).
func sensorBenchConfig(entries int) *config.Config {
	timeCfg := config.EventTime{Source: "field", Field: "ts", Format: "rfc3339"}
	ttl := config.Duration(7 * 24 * time.Hour)
	cfg := &config.Config{
		Kafka:     config.Kafka{Brokers: []string{"127.0.0.1:1"}}, // the in-process cluster's, set by runPipelineBench
		Cassandra: config.Cassandra{Hosts: []string{"127.0.0.1"}, Keyspace: "ks"},
		Writer:    config.Writer{CommitInterval: config.Duration(100 * time.Millisecond), MaxInFlight: 8},
		Topics: map[string]config.Topic{"readings": {
			Topic: testTopic, ID: []string{"device_id"}, Time: timeCfg, TTL: ttl,
			Bucket: config.Bucket{Width: "1d", Key: "text", Layout: "2006-01-02"}, Table: "readings",
			Columns: []config.Column{
				{Name: "device_id", Type: "text", Field: "device_id"},
				{Name: "reading_time", Type: "timestamp", Source: "event_time"},
				{Name: "site_id", Type: "text", Field: "site.id"},
				{Name: "temperature", Type: "double", Field: "temperature"},
				{Name: "humidity", Type: "double", Field: "humidity"},
				{Name: "battery", Type: "double", Field: "battery"},
			},
			Clustering: []config.Clustering{{Column: "reading_time", Order: "desc"}},
		}},
	}
	if entries == 2 {
		cfg.Topics["by-site"] = config.Topic{
			Topic: testTopic, ID: []string{"site_id"}, Time: timeCfg, TTL: ttl,
			Bucket: config.Bucket{Width: "1h"}, Table: "readings_by_site",
			Columns: []config.Column{
				{Name: "site_id", Type: "text", Field: "site.id"},
				{Name: "reading_time", Type: "timestamp", Source: "event_time"},
				{Name: "device_id", Type: "text", Field: "device_id"},
				{Name: "temperature", Type: "double", Field: "temperature"},
				{Name: "humidity", Type: "double", Field: "humidity"},
			},
			Clustering: []config.Clustering{{Column: "reading_time", Order: "desc"}, {Column: "device_id", Order: "asc"}},
		}
	}
	return cfg
}

// runPipelineBench produces b.N records (value(i) the i-th value) to an in-process cluster and runs them
// through the whole pipeline (poll, queue, map, batch, write, track, mark) to committed offsets. cfg's
// brokers and group are set here and its defaults applied. kfake's own cost is included, so this is a
// lower bound of the pipeline's throughput.
func runPipelineBench(b *testing.B, cfg *config.Config, mp Mapper, splits split.Store, w BatchWriter, value func(int) []byte) {
	runPipelineBenchWith(b, cfg, mp, splits, nil, w, value)
}

// runPipelineBenchWith is runPipelineBench with the rollup store of an entry with rollups.
func runPipelineBenchWith(b *testing.B, cfg *config.Config, mp Mapper, splits split.Store, rollups rollup.Store, w BatchWriter, value func(int) []byte) {
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
			Key: fmt.Appendf(nil, "dev-%d", i%500), Value: value(i)})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		b.Fatal(err)
	}
	end := make(map[int32]int64)
	for _, r := range recs {
		end[r.Partition] = max(end[r.Partition], r.Offset+1)
	}
	cfg.Kafka = config.Kafka{Brokers: c.ListenAddrs(), Group: "bench"}
	cfg.ApplyDefaults()
	pl, err := New(Config{Sink: cfg, Mapper: mp, Splits: splits, Rollups: rollups,
		Writer: w, Metrics: metrics.NewMetrics(prometheus.NewRegistry())})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start, cpu0 := time.Now(), processCPU(b)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- pl.Run(ctx) }()
	for done := false; !done; {
		time.Sleep(5 * time.Millisecond)
		// Run sets the client under mu, and the group (which reports Joined) starts inside
		// kgo.NewClient, before Run has set it.
		pl.mu.Lock()
		cl := pl.client
		pl.mu.Unlock()
		if cl == nil || !pl.health.Joined() {
			continue
		}
		marked := cl.MarkedOffsets()[testTopic]
		committed := cl.CommittedOffsets()[testTopic]
		done = true
		for p, o := range end {
			if max(marked[p].Offset, committed[p].Offset) < o {
				done = false
			}
		}
	}
	elapsed, cpu := time.Since(start), processCPU(b)-cpu0
	b.StopTimer()
	cancel()
	if err := <-errc; err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "records/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/record")
}

// processCPU is the user and system CPU time the test process has used: the pipeline runs on several
// goroutines, so its CPU per record is not its wall time per record. The in-process cluster's share is
// included.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// countingWriter acknowledges every batch at once and counts its rows.
type countingWriter struct{ rows atomic.Int64 }

func (w *countingWriter) Write(_ context.Context, b *batcher.Batch) ([]cassandra.RowFailure, error) {
	w.rows.Add(int64(len(b.Rows)))
	return nil, nil
}

// latencyWriter acknowledges after a fixed delay and counts batches, standing in for a Cassandra whose
// request latency, not its throughput, limits the sink.
type latencyWriter struct {
	delay   time.Duration
	batches atomic.Int64
	rows    atomic.Int64
}

func (w *latencyWriter) Write(ctx context.Context, b *batcher.Batch) ([]cassandra.RowFailure, error) {
	w.batches.Add(1)
	w.rows.Add(int64(len(b.Rows)))
	t := time.NewTimer(w.delay)
	defer t.Stop()
	select {
	case <-t.C:
		return nil, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// BenchmarkObserveWritten is what the write stage's writer goroutine does with a request Cassandra
// acknowledged, for readiness, the event-time lag and the largest open partitions (Config.Written): a
// request of eight partitions of one, two or three rows, as due batches are joined at a steady rate.
// An op is one request.
func BenchmarkObserveWritten(b *testing.B) {
	cfg := (&fixture{addrs: []string{"127.0.0.1:1"}, group: "g"}).config(nil)
	pl, err := New(Config{Sink: cfg, Mapper: oneEntry{fakeMapper{}}, Writer: &memWriter{}, Metrics: metrics.NewMetrics(prometheus.NewRegistry())})
	if err != nil {
		b.Fatal(err)
	}
	tg := &batcher.Target{Topic: testTopic, Keyspace: "ks", Table: "events", Entry: "events"}
	now := time.Now()
	// Requests of 8 of 1,000 partitions in turn, so the tally holds as many as a steady stream's.
	reqs := make([]*batcher.Batch, 125)
	for i := range reqs {
		parts := make([]*batcher.Batch, 8)
		for j := range parts {
			bt := &batcher.Batch{Target: tg, Key: fmt.Sprintf("dev-%05d", i*8+j), Partitions: 1}
			for k := range 1 + j%3 {
				bt.Rows = append(bt.Rows, batcher.Row{Target: tg, Key: bt.Key, Size: 122, EventMicros: now.Add(time.Duration(k-10) * time.Second).UnixMicro()})
				bt.Bytes += 122
			}
			parts[j] = bt
		}
		reqs[i] = batcher.Join(parts)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		observeWrittenRequest(pl, reqs[i%len(reqs)])
	}
}

// observeWrittenRequest hands a written request to the pipeline as the write stage does.
func observeWrittenRequest(pl *Pipeline, b *batcher.Batch) { pl.observeWritten(b) }
