package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/cassandra"
	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/mapper"
	"github.com/bucketsink/sink/packed"
	"github.com/bucketsink/sink/pipeline/budget"
	"github.com/bucketsink/sink/pipeline/deadletter"
	"github.com/bucketsink/sink/pipeline/metrics"
	"github.com/bucketsink/sink/pipeline/offsets"
	"github.com/bucketsink/sink/pipeline/split"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(removingBuilds{m})
}

// removingBuilds runs the tests, then removes the sink binary the kill tests built (sinkBinary), so
// runs do not leave a build behind each in the temporary directory.
type removingBuilds struct{ m *testing.M }

func (r removingBuilds) Run() int {
	code := r.m.Run()
	if builtSink.dir != "" {
		os.RemoveAll(builtSink.dir)
	}
	return code
}

// The fast tests run the real pipeline against kfake, an in-process Kafka cluster speaking the real
// protocol, with an in-memory writer in place of Cassandra. They check the commit rules; the integration
// tests check the same against the real stack.

const (
	testTopic = "events"
	testDLQ   = "events.dlq"
	testParts = 3
)

// fakeMapper maps a record to a one-row batch of its own (the record key is the partition key, and keys
// are unique), so a held or failing row affects exactly one record. Values starting with "bad" are bad
// input.
type fakeMapper struct{ target *batcher.Target }

func (m fakeMapper) MapContext(_ context.Context, r mapper.Record) (batcher.Row, error) {
	if bytes.HasPrefix(r.Value, []byte("bad")) {
		return batcher.Row{}, &mapper.RecordError{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
			Reason: mapper.ReasonDecode, Err: errors.New("decoding JSON: not an object")}
	}
	return batcher.Row{
		Target:      m.target,
		Key:         string(r.Key),
		Packed:      packText(string(r.Value)),
		Offset:      r.Offset,
		EventMicros: r.Timestamp.UnixMicro(),
		Partition:   r.Partition,
		Size:        int32(len(r.Value) + 16),
	}, nil
}

// rowMapper maps a record to one row, as the tests' fake mappers do (and the real mapper for a topic
// of one entry).
type rowMapper interface {
	MapContext(ctx context.Context, r mapper.Record) (batcher.Row, error)
}

// oneEntry is the pipeline's Mapper over a rowMapper: every topic has one entry, "events" (the entry of
// the fixture's config). A registry that does not answer is the record's wait, as MapAll says.
type oneEntry struct{ m rowMapper }

func (o oneEntry) MapAll(ctx context.Context, r mapper.Record, out []mapper.Mapped) ([]mapper.Mapped, error) {
	row, err := o.m.MapContext(ctx, r)
	if ue := (*codec.UnavailableError)(nil); errors.As(err, &ue) {
		return out, err
	}
	return append(out, mapper.Mapped{Entry: "events", Row: row, Err: err}), nil
}

func (o oneEntry) MapEntry(ctx context.Context, _ string, r mapper.Record) (batcher.Row, error) {
	return o.m.MapContext(ctx, r)
}

// memWriter is Cassandra in a map. hold makes a batch wait for release (or for ctx); fail makes it fail.
type memWriter struct {
	mu      sync.Mutex
	rows    map[batcher.Source]int // writes per row: replays show up as counts above 1
	parts   int                    // the most partitions one request held
	hold    func(batcher.Source) bool
	fail    func(batcher.Source) error
	reject  func(batcher.Source) bool
	release chan struct{}
}

func newMemWriter() *memWriter {
	return &memWriter{rows: make(map[batcher.Source]int), release: make(chan struct{})}
}

func (w *memWriter) Write(ctx context.Context, b *batcher.Batch) ([]cassandra.RowFailure, error) {
	for _, r := range b.Rows {
		if w.hold != nil && w.hold(r.Source()) {
			select {
			case <-w.release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			break
		}
	}
	for _, r := range b.Rows {
		if w.fail != nil {
			if err := w.fail(r.Source()); err != nil {
				return nil, err
			}
		}
	}
	failures := w.rejected(b)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.parts = max(w.parts, b.Partitions)
rows:
	for _, r := range b.Rows {
		for _, f := range failures {
			if f.Row.Source() == r.Source() {
				continue rows
			}
		}
		w.rows[r.Source()]++
	}
	return failures, nil
}

// rejected lists the rows w.reject refuses for good (RowFailures); the rest of the batch is written.
func (w *memWriter) rejected(b *batcher.Batch) []cassandra.RowFailure {
	var out []cassandra.RowFailure
	for _, r := range b.Rows {
		if w.reject != nil && w.reject(r.Source()) {
			out = append(out, cassandra.RowFailure{Row: r, Err: errors.New("Invalid query: value too large")})
		}
	}
	return out
}

func (w *memWriter) has(src batcher.Source) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rows[src] > 0
}

func (w *memWriter) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.rows)
}

type fixture struct {
	t       *testing.T
	cluster *kfake.Cluster
	addrs   []string
	adm     *kadm.Client
	admCl   *kgo.Client
	group   string
	end     map[int32]int64
	bad     map[batcher.Source]bool
	join    func([]*batcher.Batch) []*batcher.Batch // Config.Group of the members it starts
	logs    io.Writer                               // when set, members log there too
	splits  split.Store                             // Config.Splits of the members it starts
}

// newFixture starts a cluster with the topic (3 partitions) and its dead-letter topic and produces n
// records to every partition; every badEvery-th is bad input (0 = none).
func newFixture(t *testing.T, n, badEvery int) *fixture {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(testParts, testTopic), kfake.SeedTopics(1, testDLQ))
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, cluster: c, addrs: c.ListenAddrs(), group: "g-" + strings.ToLower(t.Name()),
		end: make(map[int32]int64), bad: make(map[batcher.Source]bool)}
	cl, err := kgo.NewClient(kgo.SeedBrokers(f.addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	f.admCl = cl
	f.adm = kadm.NewClient(cl)
	t.Cleanup(func() {
		cl.Close()
		c.Close()
	})
	var recs []*kgo.Record
	for p := range int32(testParts) {
		for i := range n {
			v := fmt.Sprintf(`{"n":%d}`, i)
			if badEvery > 0 && i%badEvery == badEvery-1 {
				v = "bad " + v
				f.bad[batcher.Source{Topic: testTopic, Partition: p, Offset: int64(i)}] = true
			}
			recs = append(recs, &kgo.Record{Topic: testTopic, Partition: p,
				Key: []byte(fmt.Sprintf("k-%d-%d", p, i)), Value: []byte(v)})
		}
		f.end[p] = int64(n)
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) config(mut func(*config.Config)) *config.Config {
	cfg := &config.Config{
		Kafka: config.Kafka{Brokers: f.addrs, Group: f.group,
			SessionTimeout: config.Duration(6 * time.Second), RebalanceTimeout: config.Duration(10 * time.Second)},
		Writer: config.Writer{
			Linger:          config.Duration(time.Millisecond),
			CommitInterval:  config.Duration(100 * time.Millisecond),
			ShutdownTimeout: config.Duration(5 * time.Second),
			RetryInitial:    config.Duration(10 * time.Millisecond),
			RetryMax:        config.Duration(100 * time.Millisecond),
		},
		Topics: map[string]config.Topic{"events": {
			Topic: testTopic, Table: "events", DeadLetterTopic: testDLQ,
			Bucket: config.Bucket{Width: "1h"},
		}},
	}
	cfg.ApplyDefaults()
	if mut != nil {
		mut(cfg)
	}
	return cfg
}

type member struct {
	pl     *Pipeline
	w      *memWriter
	reg    *prometheus.Registry
	cancel context.CancelFunc
	errc   chan error
}

func (f *fixture) start(cfg *config.Config, w *memWriter) *member {
	f.t.Helper()
	return f.startFull(cfg, oneEntry{fakeMapper{target: &batcher.Target{Topic: testTopic, Keyspace: "ks", Table: "events", Columns: []string{"v"}, Entry: "events"}}}, w, nil)
}

// startMapping is start with a mapper of the caller's.
func (f *fixture) startMapping(cfg *config.Config, w *memWriter, mp rowMapper) *member {
	f.t.Helper()
	return f.startFull(cfg, oneEntry{mp}, w, nil)
}

// startWith is start with any writer and a SliceMaker (nil: none).
func (f *fixture) startWith(cfg *config.Config, writer BatchWriter, slices SliceMaker) *member {
	f.t.Helper()
	return f.startFull(cfg, oneEntry{fakeMapper{target: &batcher.Target{Topic: testTopic, Keyspace: "ks", Table: "events", Columns: []string{"v"}, Entry: "events"}}}, writer, slices)
}

// startFull starts a member with the caller's mapper, writer and SliceMaker (nil: none).
func (f *fixture) startFull(cfg *config.Config, mp Mapper, writer BatchWriter, slices SliceMaker) *member {
	f.t.Helper()
	reg := prometheus.NewRegistry()
	pl, err := New(Config{
		Sink:    cfg,
		Mapper:  mp,
		Writer:  writer,
		Group:   f.join,
		Metrics: metrics.NewMetrics(reg),
		Logger:  slog.New(slog.NewTextHandler(f.logWriter(), &slog.HandlerOptions{Level: testLogLevel})),
		Slices:  slices,
		Splits:  f.splits,
	})
	if err != nil {
		f.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w, _ := writer.(*memWriter)
	m := &member{pl: pl, w: w, reg: reg, cancel: cancel, errc: make(chan error, 1)}
	go func() { m.errc <- pl.Run(ctx) }()
	f.t.Cleanup(func() { _ = m.stop() })
	f.waitFor(20*time.Second, "member joined", func() bool {
		select {
		case err := <-m.errc:
			f.t.Fatalf("Run returned before joining: %v", err)
		default:
		}
		return pl.health.Joined()
	})
	return m
}

// logWriter is where a member logs: the test's log, and f.logs when set.
func (f *fixture) logWriter() io.Writer {
	if f.logs == nil {
		return tWriter{f.t}
	}
	return io.MultiWriter(tWriter{f.t}, f.logs)
}

// stop shuts the member down gracefully; idempotent.
func (m *member) stop() error {
	m.cancel()
	err, ok := <-m.errc
	if ok {
		close(m.errc)
	}
	return err
}

func (f *fixture) committed() map[int32]int64 {
	f.t.Helper()
	resp, err := f.adm.FetchOffsets(context.Background(), f.group)
	if err != nil {
		return nil
	}
	out := make(map[int32]int64)
	resp.Each(func(o kadm.OffsetResponse) {
		if o.Topic == testTopic && o.Err == nil {
			out[o.Partition] = o.At
		}
	})
	return out
}

// waitFor polls cond until it holds or the deadline passes. Kafka is asynchronous, so a test can only
// observe a state once it is reached; nothing here sleeps for a fixed time to make something happen.
func (f *fixture) waitFor(d time.Duration, what string, cond func() bool) {
	f.t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			f.t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (f *fixture) allCommitted() bool {
	c := f.committed()
	for p, end := range f.end {
		if c[p] != end {
			return false
		}
	}
	return true
}

// deadLetters reads the dead-letter topic to its end.
func (f *fixture) deadLetters(want int) []*kgo.Record {
	f.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(f.addrs...), kgo.ConsumeTopics(testDLQ),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		f.t.Fatal(err)
	}
	defer cl.Close()
	var out []*kgo.Record
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for len(out) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			f.t.Fatalf("read %d dead letters, want %d", len(out), want)
		}
		out = append(out, fs.Records()...)
	}
	return out
}

func header(r *kgo.Record, key string) string { return deadletter.HeaderValue(r, key) }

func TestWritesEverythingAndDeadLettersBadRecords(t *testing.T) {
	f := newFixture(t, 200, 20)
	w := newMemWriter()
	m := f.start(f.config(nil), w)
	f.waitFor(20*time.Second, "committed offsets to reach the end", f.allCommitted)

	for p := range int32(testParts) {
		for o := range f.end[p] {
			src := batcher.Source{Topic: testTopic, Partition: p, Offset: o}
			if got := w.has(src); got == f.bad[src] {
				t.Errorf("partition %d offset %d: written %v, bad %v", p, o, got, f.bad[src])
			}
		}
	}
	dls := f.deadLetters(len(f.bad))
	if len(dls) != len(f.bad) {
		t.Fatalf("%d dead letters, want %d", len(dls), len(f.bad))
	}
	for _, r := range dls {
		p, _ := strconv.Atoi(header(r, deadletter.HeaderSourcePartition))
		o, _ := strconv.ParseInt(header(r, deadletter.HeaderSourceOffset), 10, 64)
		src := batcher.Source{Topic: header(r, deadletter.HeaderSourceTopic), Partition: int32(p), Offset: o}
		if !f.bad[src] {
			t.Errorf("dead letter for %+v, which is not a bad record", src)
		}
		if !bytes.HasPrefix(r.Value, []byte("bad")) || header(r, deadletter.HeaderReason) != deadletter.ReasonDecode ||
			!strings.Contains(header(r, deadletter.HeaderError), "not an object") {
			t.Errorf("dead letter %+v: value %q reason %q error %q", src, r.Value, header(r, deadletter.HeaderReason), header(r, deadletter.HeaderError))
		}
	}
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	good := 3*200 - len(f.bad)
	if got := testutil.ToFloat64(m.pl.metrics.RecordsWritten.WithLabelValues(testTopic)); got != float64(good) {
		t.Errorf("sink_records_written_total %v, want %d", got, good)
	}
	if got := testutil.ToFloat64(m.pl.metrics.RecordsDeadLettered.WithLabelValues(testTopic, deadletter.ReasonDecode)); got != float64(len(f.bad)) {
		t.Errorf("sink_records_dead_lettered_total %v, want %d", got, len(f.bad))
	}
	if got := testutil.ToFloat64(m.pl.metrics.BufferedBytes); got != 0 {
		t.Errorf("sink_buffered_bytes %v after shutdown, want 0", got)
	}
}

// TestCommitStaysBelowUnacknowledgedWrite holds one row's write: later rows of the same partition are
// written (they are other batches), yet the committed offset must not pass the held row until its write
// is acknowledged.
func TestCommitStaysBelowUnacknowledgedWrite(t *testing.T) {
	f := newFixture(t, 100, 0)
	w := newMemWriter()
	held := batcher.Source{Topic: testTopic, Partition: 0, Offset: 40}
	w.hold = func(s batcher.Source) bool { return s == held }
	m := f.start(f.config(nil), w)

	f.waitFor(20*time.Second, "every other row written", func() bool { return w.count() == 3*100-1 })
	f.waitFor(20*time.Second, "partitions 1 and 2 committed", func() bool {
		c := f.committed()
		return c[1] == 100 && c[2] == 100 && c[0] == 40
	})
	// Give the periodic committer many intervals (100ms) to get it wrong.
	for range 20 {
		if c := f.committed(); c[0] > 40 {
			t.Fatalf("partition 0 committed %d past the unacknowledged offset 40", c[0])
		}
		if mk := m.pl.client.MarkedOffsets()[testTopic][0]; mk.Offset > 40 {
			t.Fatalf("partition 0 marked %d past the unacknowledged offset 40", mk.Offset)
		}
		time.Sleep(25 * time.Millisecond)
	}
	close(w.release)
	f.waitFor(20*time.Second, "all committed after the ack", f.allCommitted)
}

// A batch the writer gives back unwritten (an error the writer does not know, transient errors outlasting
// writer.retry_attempts, a refused statement) stops its partition only until it is written: the write
// stage sends it again with backoff, the partition is counted as stuck meanwhile (without making the pod
// unready), and once the cause is gone it resumes by itself and its committed offset reaches the end. No
// offset past the failing row is committed while it fails.
func TestFailedBatchIsRetriedUntilThePartitionResumesByItself(t *testing.T) {
	for _, tt := range []struct {
		name, reason string
		err          error
	}{
		{"unknown driver error", cassandra.FailUnknown, errors.New("gocql: something new")},
		{"retry attempts exhausted", cassandra.FailExhausted, &cassandra.WriteError{Table: "events", Reason: cassandra.FailExhausted,
			Err: errors.New("write timeout")}},
		{"prepare refused", cassandra.FailRefused, &cassandra.WriteError{Table: "events", Reason: cassandra.FailRefused,
			Err: errors.New("unauthorized")}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, 100, 0)
			w := newMemWriter()
			healed := make(chan struct{})
			w.fail = func(s batcher.Source) error {
				select {
				case <-healed:
					return nil
				default:
				}
				if s.Partition == 1 && s.Offset == 30 {
					return tt.err
				}
				return nil
			}
			m := f.start(f.config(nil), w)
			f.waitFor(20*time.Second, "partitions 0 and 2 committed, 1 at the failing row, retried and counted stuck", func() bool {
				c := f.committed()
				return c[0] == 100 && c[2] == 100 && c[1] == 30 &&
					testutil.ToFloat64(m.pl.metrics.StuckPartitions.WithLabelValues(testTopic)) == 1 &&
					testutil.ToFloat64(m.pl.metrics.WriteStageRetries.WithLabelValues(testTopic, tt.reason)) >= 2
			})
			if err := m.pl.Ready(); err != nil {
				t.Errorf("Ready() = %v while one partition is stuck; want ready (the stuck partition is an alert, not a readiness failure)", err)
			}
			if c := f.committed(); c[1] != 30 {
				t.Fatalf("partition 1 committed %d past the failing row 30", c[1])
			}
			close(healed)
			f.waitFor(20*time.Second, "every partition committed to the end after the cause went away", f.allCommitted)
			if got := testutil.ToFloat64(m.pl.metrics.StuckPartitions.WithLabelValues(testTopic)); got != 0 {
				t.Errorf("sink_stuck_partitions %v after the partition resumed, want 0", got)
			}
			if !w.has(batcher.Source{Topic: testTopic, Partition: 1, Offset: 30}) {
				t.Error("the failing row was never written")
			}
			if err := m.stop(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Shutdown abandons a batch the stage keeps retrying, without marking it: the committed offset stays
// before it (the next start replays it) and Run returns cleanly.
func TestShutdownAbandonsARetryingBatchWithoutCommittingPastIt(t *testing.T) {
	f := newFixture(t, 100, 0)
	w := newMemWriter()
	w.fail = func(s batcher.Source) error {
		if s.Partition == 1 && s.Offset >= 30 {
			return errors.New("gocql: something new")
		}
		return nil
	}
	m := f.start(f.config(nil), w)
	f.waitFor(20*time.Second, "partitions 0 and 2 committed, 1 at the failure", func() bool {
		c := f.committed()
		return c[0] == 100 && c[2] == 100 && c[1] == 30
	})
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	if c := f.committed(); c[1] != 30 {
		t.Errorf("partition 1 committed %d after shutdown, want 30", c[1])
	}
}

// sliceMaker is a SliceMaker that fails its first failFirst calls, then "creates" the table.
type sliceMaker struct {
	failFirst int32
	calls     atomic.Int32
	created   atomic.Bool
}

func (m *sliceMaker) CreateSlice(_ context.Context, topic string, _ time.Time) (string, bool, error) {
	if m.calls.Add(1) <= m.failFirst {
		return "ks.events_20240101", true, errors.New("unauthorized: no CREATE permission")
	}
	m.created.Store(true)
	return "ks.events_20240101", true, nil
}

// A sliced topic whose slice table cannot be created yet (no CREATE permission, say) does not stop for
// good: the batch and the creation are retried with backoff, the partition stuck meanwhile, and once the
// creation succeeds the row is written and the partition reaches the end. Nothing is dead-lettered.
func TestFailedSliceCreationIsRetriedUntilTheTableExists(t *testing.T) {
	f := newFixture(t, 100, 0)
	w := newMemWriter()
	sm := &sliceMaker{failFirst: 3}
	w.fail = func(s batcher.Source) error {
		if s.Partition == 1 && s.Offset == 30 && !sm.created.Load() {
			return &cassandra.WriteError{Table: "events_20240101", Reason: cassandra.FailMissingTable,
				Err: errors.New("table events_20240101 does not exist")}
		}
		return nil
	}
	m := f.startWith(f.config(func(c *config.Config) {
		tp := c.Topics["events"]
		tp.Bucket.Slice = "1d"
		tp.Bucket.MissingSlice = config.MissingSliceCreate
		c.Topics["events"] = tp
	}), w, sm)
	f.waitFor(20*time.Second, "every partition committed to the end", f.allCommitted)
	if n := sm.calls.Load(); n != 4 {
		t.Errorf("CreateSlice called %d times, want 4 (three failures, then the creation)", n)
	}
	if got := testutil.ToFloat64(m.pl.metrics.WriteStageRetries.WithLabelValues(testTopic, cassandra.FailMissingTable)); got != 3 {
		t.Errorf("sink_write_stage_retries_total{reason=missing_table} %v, want 3", got)
	}
	if !w.has(batcher.Source{Topic: testTopic, Partition: 1, Offset: 30}) {
		t.Error("the row of the missing slice was never written")
	}
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(m.pl.metrics.RecordsDeadLettered.WithLabelValues(testTopic, deadletter.ReasonSlice)); got != 0 {
		t.Errorf("%v records dead-lettered for a slice that could be created", got)
	}
}

// probeWriter fails every batch as a missing table until healed, and holds every retried batch (a
// source it has seen before) until release is closed, counting how many are in flight at once.
type probeWriter struct {
	*memWriter
	healed  atomic.Bool
	release chan struct{}

	mu             sync.Mutex
	seen           map[batcher.Source]int
	retrying, peak int
}

func (w *probeWriter) Write(ctx context.Context, b *batcher.Batch) ([]cassandra.RowFailure, error) {
	src := b.Rows[0].Source()
	w.mu.Lock()
	w.seen[src]++
	retry := w.seen[src] > 1
	if retry {
		w.retrying++
		w.peak = max(w.peak, w.retrying)
	}
	w.mu.Unlock()
	if retry {
		defer func() {
			w.mu.Lock()
			w.retrying--
			w.mu.Unlock()
		}()
		select {
		case <-w.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if !w.healed.Load() {
		return nil, &cassandra.WriteError{Table: "events", Reason: cassandra.FailMissingTable, Err: errors.New("table events does not exist")}
	}
	return w.memWriter.Write(ctx, b)
}

func (w *probeWriter) peakRetrying() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.peak
}

// While a table fails, the batches waiting for it are not each retried on a schedule of their own (a
// missing table with thousands of buffered batches would be asked thousands of times per backoff): one
// of them at a time probes the table, and when the probe is written they all go.
func TestBatchesOfAFailingTableAreRetriedOneProbeAtATime(t *testing.T) {
	f := newFixture(t, 100, 0) // 300 batches of one table, every one of them failing at first
	w := &probeWriter{memWriter: newMemWriter(), release: make(chan struct{}), seen: make(map[batcher.Source]int)}
	m := f.startWith(f.config(nil), w, nil)
	f.waitFor(20*time.Second, "a retried batch to probe the table", func() bool { return w.peakRetrying() >= 1 })
	// With per-batch schedules (10 to 100 ms here), hundreds of other retries would start meanwhile.
	time.Sleep(time.Second)
	if n := w.peakRetrying(); n != 1 {
		t.Fatalf("%d retried batches of one failing table in flight at once, want 1 (the probe)", n)
	}
	w.healed.Store(true)
	close(w.release)
	f.waitFor(20*time.Second, "every partition committed to the end once the table works", f.allCommitted)
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	if n := m.pl.writes.RetryGates(); n != 0 {
		t.Errorf("%d retry gates left after every batch was written", n)
	}
}

// A member whose batch keeps failing hands its partition over on a revoke without waiting for the retry
// and without marking past it; the new owner replays the rows from the committed offset and writes them.
func TestRevokeHandsARetryingPartitionToTheNextOwner(t *testing.T) {
	f := newFixture(t, 100, 0)
	w1 := newMemWriter()
	w1.fail = func(s batcher.Source) error {
		if s.Partition == 1 && s.Offset == 30 {
			return errors.New("gocql: something new")
		}
		return nil
	}
	m1 := f.start(f.config(nil), w1)
	f.waitFor(20*time.Second, "partition 1 stuck at 30, the others at the end", func() bool {
		c := f.committed()
		return c[0] == 100 && c[1] == 30 && c[2] == 100
	})
	w2 := newMemWriter()
	m2 := f.start(f.config(nil), w2)
	if err := m1.stop(); err != nil { // every partition now moves to the second member
		t.Fatal(err)
	}
	f.waitFor(30*time.Second, "the next owner to write the stuck rows and commit to the end", f.allCommitted)
	if !w2.has(batcher.Source{Topic: testTopic, Partition: 1, Offset: 30}) {
		t.Error("the row the first member could not write was not replayed by the next owner")
	}
	if err := m2.stop(); err != nil {
		t.Fatal(err)
	}
}

// The write stage forgets the assignment of buffered rows once it has flushed them: a revoked partition
// (its tracker, its queue) is not kept reachable from the stage for the rest of the process.
func TestWriteStageForgetsPartitionsOnceFlushed(t *testing.T) {
	f := newFixture(t, 50, 0)
	m := f.start(f.config(nil), newMemWriter())
	f.waitFor(20*time.Second, "all committed", f.allCommitted)
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	<-m.pl.writes.Done() // the stage's goroutine is gone: its map may be read
	if n := m.pl.writes.Owners(); n != 0 {
		t.Errorf("the write stage still refers to %d partitions after they were given up", n)
	}
}

// TestBadRecordWithoutDeadLetterTopicStopsThePartition: with no dead_letter_topic a bad record is never
// skipped.
func TestBadRecordWithoutDeadLetterTopicStopsThePartition(t *testing.T) {
	f := newFixture(t, 50, 25) // offsets 24 and 49 of each partition are bad
	w := newMemWriter()
	m := f.start(f.config(func(c *config.Config) {
		tp := c.Topics["events"]
		tp.DeadLetterTopic = ""
		c.Topics["events"] = tp
	}), w)
	f.waitFor(20*time.Second, "every partition committed up to its first bad record", func() bool {
		c := f.committed()
		return c[0] == 24 && c[1] == 24 && c[2] == 24
	})
	if got := testutil.ToFloat64(m.pl.metrics.StuckPartitions.WithLabelValues(testTopic)); got != 3 {
		t.Errorf("sink_stuck_partitions %v, want 3", got)
	}
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	if c := f.committed(); c[0] != 24 || c[1] != 24 || c[2] != 24 {
		t.Errorf("committed %v after shutdown, want 24 everywhere", c)
	}
}

// TestRevokeCommitsTheWatermark turns the periodic commit off: the only commits are those of revokes.
// When a second member joins, the partitions the first gives up must be committed at their watermark.
func TestRevokeCommitsTheWatermark(t *testing.T) {
	f := newFixture(t, 100, 10)
	noAuto := func(c *config.Config) { c.Writer.CommitInterval = config.Duration(time.Hour) }
	w1 := newMemWriter()
	m1 := f.start(f.config(noAuto), w1)
	f.waitFor(20*time.Second, "all rows written by the first member", func() bool { return w1.count() == 3*90 })
	if c := f.committed(); len(c) != 0 {
		t.Fatalf("committed %v before any revoke, with the periodic commit off", c)
	}
	m2 := f.start(f.config(noAuto), newMemWriter())
	f.waitFor(30*time.Second, "a revoked partition committed at its end", func() bool {
		for _, o := range f.committed() {
			if o == 100 {
				return true
			}
		}
		return false
	})
	if err := m1.stop(); err != nil {
		t.Fatal(err)
	}
	if err := m2.stop(); err != nil {
		t.Fatal(err)
	}
	if !f.allCommitted() {
		t.Fatalf("committed %v after both members left, want 100 everywhere", f.committed())
	}
}

// TestLateAckAfterRevokeDoesNotMark guards the late-mark rewind (DRIVER-NOTES R5.2-2): a write
// acknowledged after its partition was revoked (the revoke gave up waiting) must not mark, or the client
// would commit that partition on behalf of its new owner.
func TestLateAckAfterRevokeDoesNotMark(t *testing.T) {
	f := newFixture(t, 100, 0)
	slow := func(c *config.Config) {
		c.Writer.CommitInterval = config.Duration(time.Hour)
		c.Writer.ShutdownTimeout = config.Duration(200 * time.Millisecond)
	}
	w1 := newMemWriter()
	w1.hold = func(s batcher.Source) bool { return s.Offset >= 10 && s.Offset < 20 }
	m1 := f.start(f.config(slow), w1)
	f.waitFor(20*time.Second, "offsets below 10 marked everywhere", func() bool {
		mk := m1.pl.client.MarkedOffsets()[testTopic]
		return len(mk) == 3 && mk[0].Offset == 10 && mk[1].Offset == 10 && mk[2].Offset == 10
	})

	m1.pl.mu.Lock()
	before := maps.Clone(m1.pl.parts)
	m1.pl.mu.Unlock()

	m2 := f.start(f.config(slow), newMemWriter())
	var revoked int32 = -1
	f.waitFor(30*time.Second, "the first member to give up a partition", func() bool {
		m1.pl.mu.Lock()
		defer m1.pl.mu.Unlock()
		if len(m1.pl.parts) == 3 {
			return false
		}
		for p := range int32(testParts) {
			if m1.pl.parts[offsets.TopicPartition{Topic: testTopic, Partition: p}] == nil {
				revoked = p
			}
		}
		return true
	})
	// The revoke gives up waiting for the held writes after shutdown_timeout.
	gone := before[offsets.TopicPartition{Topic: testTopic, Partition: revoked}]
	f.waitFor(20*time.Second, "the revoke to give up the partition", func() bool {
		gone.mu.Lock()
		defer gone.mu.Unlock()
		return gone.revoked
	})
	if mk, ok := m1.pl.client.MarkedOffsets()[testTopic][revoked]; ok && mk.Offset != 10 {
		t.Fatalf("revoked partition %d marked at %d before the late acks, want 10", revoked, mk.Offset)
	}
	// Now let the held writes finish: their acknowledgements arrive after the revoke.
	close(w1.release)
	f.waitFor(20*time.Second, "the late writes of the revoked partition", func() bool {
		return w1.has(batcher.Source{Topic: testTopic, Partition: revoked, Offset: 19})
	})
	// The late acks complete asynchronously after the write returns; wait for the writer goroutines.
	f.waitFor(20*time.Second, "no write in flight", func() bool { return m1.pl.writes.InFlight() == 0 })
	if mk, ok := m1.pl.client.MarkedOffsets()[testTopic][revoked]; ok && mk.Offset > 10 {
		t.Fatalf("revoked partition %d marked at %d by a late acknowledgement", revoked, mk.Offset)
	}
	if err := m1.stop(); err != nil {
		t.Fatal(err)
	}
	if err := m2.stop(); err != nil {
		t.Fatal(err)
	}
}

// testLogLevel is warn unless SINK_TEST_DEBUG is set, for reading what the pipeline and the client do.
var testLogLevel = func() slog.Level {
	if os.Getenv("SINK_TEST_DEBUG") != "" {
		return slog.LevelDebug
	}
	return slog.LevelWarn
}()

// tWriter sends log lines to the test's output.
type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestBackpressureBoundsBufferedBytes holds every write, so nothing completes: the buffered bytes must stop
// growing near writer.max_buffered_bytes (fetching paused) instead of reaching the backlog's size, and once
// the writes are released everything is written, committed, and resumed.
func TestBackpressureBoundsBufferedBytes(t *testing.T) {
	f := newFixture(t, 0, 0)
	// Many small batches, so fetches can stop at the partition byte limit.
	var recs []*kgo.Record
	for p := range int32(testParts) {
		for i := range 3000 {
			recs = append(recs, &kgo.Record{Topic: testTopic, Partition: p,
				Key: []byte(fmt.Sprintf("k-%d-%d", p, i)), Value: []byte(fmt.Sprintf(`{"n":%d}`, i))})
		}
		f.end[p] = 3000
	}
	for len(recs) > 0 {
		n := min(25, len(recs))
		if err := f.admCl.ProduceSync(context.Background(), recs[:n]...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		recs = recs[n:]
	}
	const budgetBytes = 32 << 10
	w := newMemWriter()
	w.hold = func(batcher.Source) bool { return true }
	m := f.start(f.config(func(c *config.Config) {
		c.Writer.MaxBufferedBytes = budgetBytes
		c.Kafka.FetchMaxBytes = 8 << 10
		c.Kafka.FetchMaxPartitionBytes = 4 << 10
	}), w)

	var peak float64
	f.waitFor(20*time.Second, "every partition paused", func() bool {
		peak = max(peak, testutil.ToFloat64(m.pl.metrics.BufferedBytes))
		return testutil.ToFloat64(m.pl.metrics.PausedPartitions) == testParts
	})
	// Paused: the total must stay put for a while, however long the writes are held.
	for range 30 {
		peak = max(peak, testutil.ToFloat64(m.pl.metrics.BufferedBytes))
		time.Sleep(10 * time.Millisecond)
	}
	sample := &kgo.Record{Key: []byte("k-0-0000"), Value: []byte(`{"n":0000}`)}
	// A record and its row as charged: the row is its overhead plus a few small values and the key.
	perRecord := float64(budget.RecordCost(sample) + budget.RowOverhead + 64)
	total := 9000 * perRecord
	t.Logf("buffered bytes peaked at %.0f with a budget of %d (the backlog is about %.0f)", peak, budgetBytes, total)
	// The overshoot is bounded by what the client had fetched when the budget was crossed: a partition is
	// paused only when it is charged, so at most one fetch of each partition plus the one in flight, each
	// fetch_max_bytes (8 KiB) of records encoded in about 30 bytes, each charged its cost and, once mapped,
	// its row's.
	perFetch := float64(8<<10) / 30
	if limit := budgetBytes + (testParts+1)*perFetch*perRecord; peak > limit {
		t.Errorf("buffered bytes peaked at %.0f, over %0.f", peak, limit)
	}
	close(w.release)
	f.waitFor(30*time.Second, "all committed after the release", f.allCommitted)
	f.waitFor(10*time.Second, "fetching resumed", func() bool {
		return testutil.ToFloat64(m.pl.metrics.PausedPartitions) == 0
	})
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(m.pl.metrics.BufferedBytes); got != 0 {
		t.Errorf("%v bytes still counted as buffered after everything was written", got)
	}
}

// forgetMemberOnce makes the coordinator answer the next heartbeat with UNKNOWN_MEMBER_ID, as after a
// session expiry: the member's partitions are lost, and it joins again.
func (f *fixture) forgetMemberOnce() {
	var injected atomic.Bool
	f.cluster.ControlKey(kmsg.Heartbeat.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		f.cluster.KeepControl()
		if injected.Swap(true) {
			return nil, nil, false
		}
		resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.ErrorCode = kerr.UnknownMemberID.Code
		return resp, nil, true
	})
}

// TestLostPartitionsCommitNothing makes the coordinator forget the member (UNKNOWN_MEMBER_ID on a
// heartbeat): its partitions are lost, not revoked, so nothing is committed for them, and the writes still
// in flight from before the loss never mark, even when they finish after the member got the partitions back.
func TestLostPartitionsCommitNothing(t *testing.T) {
	f := newFixture(t, 100, 0)
	w := newMemWriter()
	w.hold = func(s batcher.Source) bool { return s.Offset >= 10 && s.Offset < 20 }
	m := f.start(f.config(func(c *config.Config) { c.Writer.CommitInterval = config.Duration(time.Hour) }), w)
	f.waitFor(20*time.Second, "offsets below 10 marked everywhere", func() bool {
		mk := m.pl.client.MarkedOffsets()[testTopic]
		return len(mk) == 3 && mk[0].Offset == 10 && mk[1].Offset == 10 && mk[2].Offset == 10
	})
	m.pl.mu.Lock()
	before := maps.Clone(m.pl.parts)
	m.pl.mu.Unlock()

	f.forgetMemberOnce()
	f.waitFor(30*time.Second, "the partitions to be lost", func() bool {
		for _, p := range before {
			p.mu.Lock()
			gone := p.revoked
			p.mu.Unlock()
			if !gone {
				return false
			}
		}
		return true
	})
	if c := f.committed(); len(c) != 0 {
		t.Fatalf("committed %v for lost partitions", c)
	}
	f.waitFor(30*time.Second, "the partitions to be assigned again", func() bool {
		m.pl.mu.Lock()
		defer m.pl.mu.Unlock()
		return len(m.pl.parts) == 3
	})
	close(w.release)
	// Every row exists once the held writes finish, but the new assignment replays from offset 0 (nothing
	// was committed): the stop may commit 100 only once that replay is marked, so wait for the marks too.
	f.waitFor(30*time.Second, "every row written and the replay marked", func() bool {
		mk := m.pl.client.MarkedOffsets()[testTopic]
		return w.count() == 300 && len(mk) == 3 && mk[0].Offset == 100 && mk[1].Offset == 100 && mk[2].Offset == 100
	})
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	if !f.allCommitted() {
		t.Fatalf("committed %v after shutdown, want 100 everywhere", f.committed())
	}
}

// TestRowsRejectedByCassandraAreDeadLettered: rows the writer refuses for good go to the dead-letter topic
// with reason "write" and the original record; the offsets pass them once the dead letters are acknowledged.
func TestRowsRejectedByCassandraAreDeadLettered(t *testing.T) {
	f := newFixture(t, 100, 0)
	w := newMemWriter()
	w.reject = func(s batcher.Source) bool { return s.Offset%30 == 7 } // offsets 7, 37, 67, 97
	m := f.start(f.config(nil), w)
	f.waitFor(20*time.Second, "committed offsets to reach the end", f.allCommitted)
	dls := f.deadLetters(12)
	for _, r := range dls {
		o, _ := strconv.ParseInt(header(r, deadletter.HeaderSourceOffset), 10, 64)
		p := header(r, deadletter.HeaderSourcePartition)
		if o%30 != 7 || header(r, deadletter.HeaderReason) != deadletter.ReasonWrite || !strings.Contains(header(r, deadletter.HeaderError), "value too large") ||
			string(r.Key) != fmt.Sprintf("k-%s-%d", p, o) {
			t.Errorf("dead letter %s/%d: key %q reason %q error %q", p, o, r.Key, header(r, deadletter.HeaderReason), header(r, deadletter.HeaderError))
		}
	}
	if len(dls) != 12 {
		t.Errorf("%d dead letters, want 12", len(dls))
	}
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(m.pl.metrics.RecordsDeadLettered.WithLabelValues(testTopic, deadletter.ReasonWrite)); got != 12 {
		t.Errorf("sink_records_dead_lettered_total{reason=write} %v, want 12", got)
	}
}

// sizeWriter records the size of every batch and holds the first one until released.
type sizeWriter struct {
	mu      sync.Mutex
	sizes   []int
	release chan struct{}
}

func (w *sizeWriter) Write(ctx context.Context, b *batcher.Batch) ([]cassandra.RowFailure, error) {
	w.mu.Lock()
	first := len(w.sizes) == 0
	w.sizes = append(w.sizes, len(b.Rows))
	w.mu.Unlock()
	if first {
		select {
		case <-w.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return nil, nil
}

// oneKeyMapper puts every record of a partition into one Cassandra partition.
type oneKeyMapper struct{ fakeMapper }

func (m oneKeyMapper) MapContext(_ context.Context, r mapper.Record) (batcher.Row, error) {
	row, err := m.fakeMapper.MapContext(context.Background(), r)
	row.Key = strconv.Itoa(int(r.Partition))
	return row, err
}

// TestBatchesGrowWhileWritesAreBusy: with one write slot taken, due batches must not go out half empty
// the moment a slot frees; they keep filling while the slot is busy, so batch size follows the load. With
// a Group a slot tops the oldest due cohort up with other due batches, to be joined: the batches still
// grow while the slot is busy.
func TestBatchesGrowWhileWritesAreBusy(t *testing.T) {
	for _, tc := range []struct {
		name  string
		group func([]*batcher.Batch) []*batcher.Batch
	}{
		{"no group", nil},
		{"group", func(bs []*batcher.Batch) []*batcher.Batch { return bs }}, // tops the cohort up; joins none, as with batches this large
	} {
		t.Run(tc.name, func(t *testing.T) { batchesGrowWhileWritesAreBusy(t, tc.group) })
	}
}

func batchesGrowWhileWritesAreBusy(t *testing.T, group func([]*batcher.Batch) []*batcher.Batch) {
	f := newFixture(t, 1000, 0)
	cfg := f.config(func(c *config.Config) {
		c.Writer.MaxInFlight = 1
		c.Writer.BatchMaxRows = 100
	})
	w := &sizeWriter{release: make(chan struct{})}
	pl, err := New(Config{Sink: cfg, Mapper: oneEntry{oneKeyMapper{fakeMapper{target: &batcher.Target{Topic: testTopic, Table: "events", Entry: "events"}}}},
		Writer: w, Group: group, Metrics: metrics.NewMetrics(prometheus.NewRegistry())})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- pl.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-errc; err != nil {
			t.Error(err)
		}
	}()
	f.waitFor(20*time.Second, "every record consumed", func() bool {
		return testutil.ToFloat64(pl.metrics.RecordsConsumed.WithLabelValues(testTopic)) == 3000
	})
	close(w.release)
	f.waitFor(20*time.Second, "all committed", f.allCommitted)
	w.mu.Lock()
	defer w.mu.Unlock()
	full := 0
	for _, n := range w.sizes[1:] {
		if n == 100 {
			full++
		}
	}
	// 3,000 rows in 3 Cassandra partitions: after the held first batch, nearly all batches are full.
	if len(w.sizes) > 40 || full < 25 {
		t.Errorf("%d batches, %d of them full, sizes %v: batches did not grow while the slot was busy", len(w.sizes), full, w.sizes)
	}
	t.Logf("%d batches for 3,000 rows with one write slot; %d full", len(w.sizes), full)
}

// packText is the packed form of a row with one text value.
func packText(s string) []byte {
	p, _, err := packed.Pack(packed.MustTypes("text"), []any{s}, nil)
	if err != nil {
		panic(err)
	}
	return p
}

// TestStageHistogramsCoverEveryStage: once records are written and committed, sink_stage_seconds has
// observations for each stage a record passes (mapped, batched, acknowledged, committed), so a p99 can be
// attributed to one of them.
func TestStageHistogramsCoverEveryStage(t *testing.T) {
	f := newFixture(t, 200, 0)
	m := f.start(f.config(nil), newMemWriter())
	f.waitFor(20*time.Second, "committed offsets to reach the end", f.allCommitted)
	for _, stage := range []string{metrics.StageMapped, metrics.StageBatched, metrics.StageAcknowledged, metrics.StageCommitted} {
		f.waitFor(5*time.Second, "observations of stage "+stage, func() bool {
			return histogramCount(t, m.reg, stage) > 0
		})
	}
}

// histogramCount is the number of observations of sink_stage_seconds{stage}.
func histogramCount(t *testing.T, reg prometheus.Gatherer, stage string) uint64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "sink_stage_seconds" {
			continue
		}
		for _, s := range mf.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "stage" && l.GetValue() == stage {
					return s.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return 0
}
