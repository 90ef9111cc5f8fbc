package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/bucketer"
	"github.com/bucketsink/sink/cassandra"
	"github.com/bucketsink/sink/codec/registry"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/internal/testenv"
	"github.com/bucketsink/sink/mapper"
	"github.com/bucketsink/sink/packed"
	"github.com/bucketsink/sink/pipeline/deadletter"
	"github.com/bucketsink/sink/pipeline/metrics"
	"github.com/bucketsink/sink/pipeline/rollup"
	"github.com/bucketsink/sink/pipeline/split"
	"github.com/bucketsink/sink/rollup/recompute"
)

// The integration tests run the pipeline against the real Kafka and Cassandra of internal/testenv
// (`scripts/stack up`, then SINK_TEST_KAFKA and SINK_TEST_CASSANDRA). Each test uses its own topics,
// group and keyspace, and checks what it asserts exactly: every good record in the Cassandra partition its
// policy computes, every bad one in the dead-letter topic with its coordinates, committed offsets never
// ahead of what Cassandra holds.

// itRecord is one produced record and what should become of it.
type itRecord struct {
	device string
	ts     time.Time
	bad    string // "" for good input, else the expected dead-letter reason
	value  []byte
	// headers are produced with the record; a dead letter must carry them first, in order.
	headers []kgo.RecordHeader
	// Kafka coordinates, known once produced.
	partition int32
	offset    int64
}

// stack is the per-test environment: topics, group, keyspace and clients.
type stack struct {
	t        *testing.T
	cfg      *config.Config
	topic    string
	dlq      string
	ks       string
	group    string
	cl       *kgo.Client
	adm      *kadm.Client
	session  *cassandra.Session
	policy   *bucketer.Policy
	recsMu   sync.Mutex
	recs     []*itRecord
	produced map[int32]int64 // end offset per partition of what was produced
	// kafkaOpts are added to the client options of the members start runs (a dialer through a proxy).
	kafkaOpts []kgo.Opt
}

var itBase = time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)

func newStack(t *testing.T, partitions int32, dlqConfigs map[string]*string) *stack {
	t.Helper()
	return newStackWith(t, partitions, dlqConfigs, nil)
}

// newStackWith is newStack with the configuration changed by edit before it is validated; the Kafka
// topics of every configured topic are created (with partitions) and the tables of every topic applied.
func newStackWith(t *testing.T, partitions int32, dlqConfigs map[string]*string, edit func(*config.Config)) *stack {
	t.Helper()
	brokers := testenv.Kafka(t)
	hosts := testenv.Cassandra(t)
	s := &stack{t: t, topic: testenv.Name(t, "in"), ks: testenv.Name(t, "ks"), group: testenv.Name(t, "g"),
		produced: make(map[int32]int64)}
	s.dlq = s.topic + "_dlq"
	s.cfg = &config.Config{
		Kafka: config.Kafka{Brokers: brokers, Group: s.group,
			SessionTimeout: config.Duration(10 * time.Second), RebalanceTimeout: config.Duration(30 * time.Second)},
		Cassandra: config.Cassandra{Hosts: hosts, Keyspace: s.ks, Consistency: "ONE",
			Replication: map[string]string{"class": "SimpleStrategy", "replication_factor": "1"}},
		Writer: config.Writer{
			CommitInterval:  config.Duration(200 * time.Millisecond),
			ShutdownTimeout: config.Duration(15 * time.Second),
			RetryInitial:    config.Duration(50 * time.Millisecond),
			RetryMax:        config.Duration(time.Second),
		},
		Metrics: config.Metrics{Address: ""},
		Topics: map[string]config.Topic{"readings": {
			Topic:  s.topic,
			ID:     []string{"device_id"},
			Time:   config.EventTime{Source: "field", Field: "ts", Format: "rfc3339"},
			Bucket: config.Bucket{Width: "1h", Key: "text"},
			Table:  "readings",
			Columns: []config.Column{
				{Name: "device_id", Type: "text", Field: "device_id"},
				{Name: "ts", Type: "timestamp", Source: "event_time"},
				{Name: "value", Type: "double", Field: "value", Required: true},
			},
			Clustering:      []config.Clustering{{Column: "ts", Order: "desc"}},
			DeadLetterTopic: s.dlq,
		}},
	}
	if edit != nil {
		edit(s.cfg)
	}
	s.cfg.ApplyDefaults()
	s.cfg.Metrics.Address = ""
	if err := s.cfg.Validate(); err != nil {
		t.Fatalf("test config: %v", err)
	}
	var err error
	if s.policy, err = s.cfg.Policy("readings"); err != nil {
		t.Fatal(err)
	}

	s.cl, err = kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	s.adm = kadm.NewClient(s.cl)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Time-based retention is off for every topic: tests produce records with Kafka timestamps of 1970 and 2024,
	// far past the broker's default retention of seven days, and its retention check (every five minutes) would
	// delete them under a running test. Only DeleteRecords removes records here.
	keep := map[string]*string{"retention.ms": kadm.StringPtr("-1")}
	dlqKeep := maps.Clone(keep)
	maps.Copy(dlqKeep, dlqConfigs)
	if _, err := s.adm.CreateTopic(ctx, partitions, 1, keep, s.topic); err != nil {
		t.Fatal(err)
	}
	if _, err := s.adm.CreateTopic(ctx, 1, 1, dlqKeep, s.dlq); err != nil {
		t.Fatal(err)
	}
	var others []string
	for _, tp := range s.cfg.Topics {
		if tp.Topic != s.topic {
			others = append(others, tp.Topic)
		}
	}
	if len(others) > 0 {
		if _, err := s.adm.CreateTopics(ctx, partitions, 1, keep, others...); err != nil {
			t.Fatal(err)
		}
	}
	s.session, err = cassandra.Connect(ctx, s.cfg.Cassandra)
	if err != nil {
		t.Fatal(err)
	}
	if err := cassandra.ApplySchema(ctx, s.session, s.cfg, nil, itBase); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = s.session.Driver().Query("DROP KEYSPACE IF EXISTS " + s.ks).Exec()
		s.session.Close()
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = s.adm.DeleteTopics(dctx, append(others, s.topic, s.dlq)...)
		_, _ = s.adm.DeleteGroup(dctx, s.group)
		s.cl.Close()
	})
	return s
}

// makeRecords builds n records over `partitions` partitions, every badEvery-th bad (cycling through the
// kinds of bad input). Event times step by 2s from itBase, so 5,000 records span three hourly buckets,
// and each (device, time) is unique: no row overwrites another.
func makeRecords(n, badEvery int, partitions int32) []*itRecord {
	recs := make([]*itRecord, n)
	kinds := []string{"malformed", "missing id", "missing time", "bad time", "bad value"}
	for i := range n {
		r := &itRecord{device: fmt.Sprintf("dev-%03d", i%37), ts: itBase.Add(time.Duration(i) * 2 * time.Second)}
		// Devices map to partitions like keys would, but explicitly, so tests can target partitions.
		r.partition = int32(i%37) % partitions
		ts := r.ts.Format(time.RFC3339Nano)
		r.value = fmt.Appendf(nil, `{"device_id":%q,"ts":%q,"value":%d.5}`, r.device, ts, i)
		if badEvery > 0 && i%badEvery == badEvery-1 {
			switch kinds[(i/badEvery)%len(kinds)] {
			case "malformed":
				r.bad, r.value = mapper.ReasonDecode, fmt.Appendf(nil, `{"device_id":%q,"ts":`, r.device)
			case "missing id":
				r.bad, r.value = mapper.ReasonMap, fmt.Appendf(nil, `{"ts":%q,"value":1}`, ts)
			case "missing time":
				r.bad, r.value = mapper.ReasonMap, fmt.Appendf(nil, `{"device_id":%q,"value":1}`, r.device)
			case "bad time":
				r.bad, r.value = mapper.ReasonMap, fmt.Appendf(nil, `{"device_id":%q,"ts":"yesterday","value":1}`, r.device)
			case "bad value":
				r.bad, r.value = mapper.ReasonMap, fmt.Appendf(nil, `{"device_id":%q,"ts":%q,"value":"n/a"}`, r.device, ts)
			}
		}
		recs[i] = r
	}
	return recs
}

// produce writes recs in order and records their offsets.
func (s *stack) produce(recs []*itRecord) {
	s.t.Helper()
	krs := make([]*kgo.Record, len(recs))
	for i, r := range recs {
		krs[i] = &kgo.Record{Topic: s.topic, Partition: r.partition, Key: []byte(r.device), Value: r.value, Headers: r.headers}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	results := s.cl.ProduceSync(ctx, krs...)
	if err := results.FirstErr(); err != nil {
		s.t.Errorf("producing: %v", err)
		return
	}
	s.recsMu.Lock()
	defer s.recsMu.Unlock()
	// Results come back per partition batch, not in the order given: match them by record.
	index := make(map[*kgo.Record]*itRecord, len(krs))
	for i, kr := range krs {
		index[kr] = recs[i]
	}
	for _, res := range results {
		r := index[res.Record]
		r.offset = res.Record.Offset
		s.produced[r.partition] = max(s.produced[r.partition], r.offset+1)
	}
	s.recs = append(s.recs, recs...)
}

// produceStream produces recs in chunks with a pause between them, so consumers see a stream.
func (s *stack) produceStream(recs []*itRecord, chunk int, pause time.Duration) {
	for len(recs) > 0 {
		n := min(chunk, len(recs))
		s.produce(recs[:n])
		recs = recs[n:]
		time.Sleep(pause)
	}
}

func (s *stack) committed() map[int32]int64 {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := s.adm.FetchOffsets(ctx, s.group)
	if err != nil {
		return nil
	}
	out := make(map[int32]int64)
	resp.Each(func(o kadm.OffsetResponse) {
		if o.Topic == s.topic && o.Err == nil {
			out[o.Partition] = o.At
		}
	})
	return out
}

func (s *stack) allCommitted() bool {
	s.recsMu.Lock()
	end := make(map[int32]int64, len(s.produced))
	for p, o := range s.produced {
		end[p] = o
	}
	s.recsMu.Unlock()
	c := s.committed()
	for p, o := range end {
		if c[p] != o {
			return false
		}
	}
	return len(end) > 0
}

func (s *stack) waitFor(d time.Duration, what string, cond func() bool) {
	s.t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			s.t.Fatalf("timed out after %s waiting for %s (committed %v, produced %v)", d, what, s.committed(), s.produced)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// rowKey identifies one row: partition key values and clustering value.
type rowKey struct {
	device, bucket string
	ts             time.Time
}

// rows reads every row of the table.
func (s *stack) rows() map[rowKey]bool {
	s.t.Helper()
	iter := s.session.Driver().Query("SELECT device_id, bucket, ts FROM " + s.ks + ".readings").PageSize(5000).IterContext(context.Background())
	out := make(map[rowKey]bool)
	var k rowKey
	for iter.Scan(&k.device, &k.bucket, &k.ts) {
		k.ts = k.ts.UTC()
		out[k] = true
	}
	if err := iter.Close(); err != nil {
		s.t.Fatalf("reading %s.readings: %v", s.ks, err)
	}
	return out
}

// expectedKey is where the policy says a good record lands.
func (s *stack) expectedKey(r *itRecord) rowKey {
	return rowKey{device: r.device, bucket: s.policy.Text(s.policy.Index(r.ts)), ts: r.ts}
}

// checkPlacement asserts every good record is in exactly the partition its policy computes, by querying
// each expected partition, and that the table holds nothing else.
func (s *stack) checkPlacement() {
	s.t.Helper()
	want := make(map[[2]string]map[time.Time]bool)
	good := 0
	for _, r := range s.recs {
		if r.bad != "" {
			continue
		}
		good++
		k := s.expectedKey(r)
		pk := [2]string{k.device, k.bucket}
		if want[pk] == nil {
			want[pk] = make(map[time.Time]bool)
		}
		want[pk][k.ts] = true
	}
	for pk, times := range want {
		iter := s.session.Driver().Query("SELECT ts FROM "+s.ks+".readings WHERE device_id = ? AND bucket = ?", pk[0], pk[1]).IterContext(context.Background())
		got := make(map[time.Time]bool)
		var ts time.Time
		for iter.Scan(&ts) {
			got[ts.UTC()] = true
		}
		if err := iter.Close(); err != nil {
			s.t.Fatal(err)
		}
		if len(got) != len(times) {
			s.t.Errorf("partition (%s, %s): %d rows, want %d", pk[0], pk[1], len(got), len(times))
		}
		for ts := range times {
			if !got[ts] {
				s.t.Errorf("partition (%s, %s): no row at %s", pk[0], pk[1], ts)
			}
		}
	}
	var total int
	if err := s.session.Driver().Query("SELECT COUNT(*) FROM " + s.ks + ".readings").Scan(&total); err != nil {
		s.t.Fatal(err)
	}
	if total != good {
		s.t.Errorf("%s.readings holds %d rows, want exactly the %d good records", s.ks, total, good)
	}
	s.t.Logf("%d good records in %d partitions, each where its policy puts it; %d rows in all", good, len(want), total)
}

// checkDeadLetters asserts the dead-letter topic holds every bad record (at least once; exactly once
// when exact) with its coordinates and reason, and nothing else.
func (s *stack) checkDeadLetters(exact bool) {
	s.t.Helper()
	bad := make(map[[2]int64]*itRecord)
	for _, r := range s.recs {
		if r.bad != "" {
			bad[[2]int64{int64(r.partition), r.offset}] = r
		}
	}
	seen := make(map[[2]int64]int)
	dls := s.dlqRecords()
	n := len(dls)
	for _, r := range dls {
		{
			p, _ := strconv.ParseInt(header(r, deadletter.HeaderSourcePartition), 10, 32)
			o, _ := strconv.ParseInt(header(r, deadletter.HeaderSourceOffset), 10, 64)
			k := [2]int64{p, o}
			src := bad[k]
			switch {
			case header(r, deadletter.HeaderSourceTopic) != s.topic || src == nil:
				s.t.Errorf("dead letter for %s/%d/%d, which is not a bad record", header(r, deadletter.HeaderSourceTopic), p, o)
			case string(r.Value) != string(src.value) || string(r.Key) != src.device:
				s.t.Errorf("dead letter %v: key/value %q/%q, want the original %q/%q", k, r.Key, r.Value, src.device, src.value)
			case header(r, deadletter.HeaderReason) != src.bad || header(r, deadletter.HeaderError) == "" || header(r, deadletter.HeaderSourceTimestamp) == "":
				s.t.Errorf("dead letter %v: reason %q error %q timestamp %q, want reason %q", k,
					header(r, deadletter.HeaderReason), header(r, deadletter.HeaderError), header(r, deadletter.HeaderSourceTimestamp), src.bad)
			case !originalHeadersFirst(r.Headers, src.headers):
				s.t.Errorf("dead letter %v: headers %v, want the original %v first, then the sink.* ones", k, r.Headers, src.headers)
			}
			seen[k]++
		}
	}
	for k, r := range bad {
		if seen[k] == 0 {
			s.t.Errorf("bad record %v (%s) is not in the dead-letter topic", k, r.value)
		} else if exact && seen[k] > 1 {
			s.t.Errorf("bad record %v dead-lettered %d times", k, seen[k])
		}
	}
	s.t.Logf("%d dead letters for %d bad records", n, len(bad))
}

// dlqRecords reads the dead-letter topic (one partition) from its start to its current end.
func (s *stack) dlqRecords() []*kgo.Record {
	s.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.cfg.Kafka.Brokers...), kgo.ConsumeTopics(s.dlq),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		s.t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ends, err := s.adm.ListEndOffsets(ctx, s.dlq)
	if err != nil {
		s.t.Fatal(err)
	}
	end, _ := ends.Lookup(s.dlq, 0)
	var out []*kgo.Record
	for int64(len(out)) < end.Offset {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			s.t.Fatalf("read %d of %d dead letters", len(out), end.Offset)
		}
		out = append(out, fs.Records()...)
	}
	return out
}

// ackLog remembers when Cassandra acknowledged each row, across members.
type ackLog struct {
	mu    sync.Mutex
	acked map[[2]int64]time.Time
}

type itMember struct {
	pl      *Pipeline
	metrics *metrics.Metrics
	cancel  context.CancelFunc
	errc    chan error
	once    sync.Once
	err     error
}

// testMapper is the mapper of cfg, reading writer schemas from the client of its schema_registry
// block when it names one, as sink run's is.
func testMapper(t testing.TB, cfg *config.Config) *mapper.Mapper {
	t.Helper()
	reg, err := registry.ForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m, err := mapper.New(cfg, mapper.WithRegistry(reg))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// start runs an in-process pipeline with the real mapper and Cassandra writer; wrap may decorate the writer.
func (s *stack) start(wrap func(BatchWriter) BatchWriter) *itMember {
	return s.startWith(s.session, wrap)
}

// startWith is start with a Cassandra session of the caller's.
func (s *stack) startWith(session *cassandra.Session, wrap func(BatchWriter) BatchWriter) *itMember {
	s.t.Helper()
	m := testMapper(s.t, s.cfg)
	metrics := metrics.NewMetrics(prometheus.NewRegistry())
	cw := cassandra.NewWriter(session, cassandra.WriterConfig{
		MaxInFlight: s.cfg.Writer.MaxInFlight, RetryInitial: s.cfg.Writer.RetryInitial.Std(),
		RetryMax: s.cfg.Writer.RetryMax.Std(), RetryAttempts: s.cfg.Writer.RetryAttempts,
		Group: cassandra.GroupConfig{MaxPartitions: s.cfg.Writer.GroupMaxPartitions, MaxBytes: int(s.cfg.Writer.GroupMaxBytes)},
	}, metrics)
	var w BatchWriter = cw
	if wrap != nil {
		w = wrap(w)
	}
	var rollups rollup.Store
	if entries, err := rollup.Entries(s.cfg); err != nil {
		s.t.Fatal(err)
	} else if len(entries) > 0 {
		if rollups, err = recompute.NewStore(session, s.cfg); err != nil {
			s.t.Fatal(err)
		}
	}
	// Requests are joined as `sink run` joins them, so every test here runs with grouped requests.
	pl, err := New(Config{Rollups: rollups, Sink: s.cfg, Mapper: m, Writer: w, Group: cw.Group, Metrics: metrics, PingInterval: time.Second,
		Slices:       cassandra.NewSliceMaker(session, s.cfg),
		KafkaOptions: s.kafkaOpts,
		Splits:       split.StoreOf(cassandra.NewSplitStores(session, s.cfg.Cassandra)),
		Ping: func(ctx context.Context) error {
			return session.Driver().Query("SELECT release_version FROM system.local").ExecContext(ctx)
		},
		Logger: slog.New(slog.NewTextHandler(tWriter{s.t}, &slog.HandlerOptions{Level: max(testLogLevel, slog.LevelError)}))})
	if err != nil {
		s.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	im := &itMember{pl: pl, metrics: metrics, cancel: cancel, errc: make(chan error, 1)}
	go func() { im.errc <- pl.Run(ctx) }()
	s.t.Cleanup(func() { _ = im.stop() })
	return im
}

func (m *itMember) stop() error {
	m.once.Do(func() {
		m.cancel()
		m.err = <-m.errc
	})
	return m.err
}

// TestIntegrationEndToEnd: 5,000 records with 50 bad ones of five kinds over three partitions. Every good
// record lands in exactly the partition its policy computes, every bad one is dead-lettered once with its
// coordinates, and the committed offsets reach the end.
func TestIntegrationEndToEnd(t *testing.T) {
	s := newStack(t, 3, nil)
	s.produce(makeRecords(5000, 100, 3))
	m := s.start(nil)
	s.waitFor(2*time.Minute, "committed offsets to reach the end", s.allCommitted)
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	s.checkPlacement()
	s.checkDeadLetters(true)
	if got := testutil.ToFloat64(m.metrics.RecordsWritten.WithLabelValues(s.topic)); got != 4950 {
		t.Errorf("sink_records_written_total %v, want 4950", got)
	}
	dl := testutil.ToFloat64(m.metrics.RecordsDeadLettered.WithLabelValues(s.topic, mapper.ReasonDecode)) +
		testutil.ToFloat64(m.metrics.RecordsDeadLettered.WithLabelValues(s.topic, mapper.ReasonMap))
	if dl != 50 {
		t.Errorf("sink_records_dead_lettered_total %v, want 50", dl)
	}
}

// TestIntegrationRebalance: a second member joins mid-stream, then the first leaves. Nothing is lost,
// and at every sampled instant every record below the committed offset had already been acknowledged by
// Cassandra (the commit-after-acknowledgement invariant, observed from outside).
func TestIntegrationRebalance(t *testing.T) {
	s := newStack(t, 3, nil)
	recs := makeRecords(6000, 100, 3)
	acks := &ackLog{acked: make(map[[2]int64]time.Time)}
	var writers []*ackLogFor
	wrap := func(w BatchWriter) BatchWriter {
		a := &ackLogFor{log: acks, w: w}
		writers = append(writers, a)
		return a
	}

	type sample struct {
		at        time.Time
		committed map[int32]int64
	}
	var samples []sample
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stopSampling:
				return
			default:
			}
			c := s.committed()
			samples = append(samples, sample{at: time.Now(), committed: c})
			time.Sleep(20 * time.Millisecond)
		}
	}()

	first := s.start(wrap)
	s.produceStream(recs[:2000], 200, 50*time.Millisecond)
	second := s.start(wrap)
	s.produceStream(recs[2000:4000], 200, 50*time.Millisecond)
	if err := first.stop(); err != nil {
		t.Fatal(err)
	}
	s.produceStream(recs[4000:], 200, 50*time.Millisecond)
	s.waitFor(2*time.Minute, "committed offsets to reach the end", s.allCommitted)
	close(stopSampling)
	<-sampled
	if err := second.stop(); err != nil {
		t.Fatal(err)
	}

	byCoord := make(map[[2]int64]*itRecord)
	for _, r := range s.recs {
		byCoord[[2]int64{int64(r.partition), r.offset}] = r
	}
	acks.mu.Lock()
	defer acks.mu.Unlock()
	violations := 0
	for _, sm := range samples {
		for p, c := range sm.committed {
			for o := int64(0); o < c; o++ {
				r := byCoord[[2]int64{int64(p), o}]
				if r == nil || r.bad != "" {
					continue
				}
				if at, ok := acks.acked[[2]int64{int64(p), o}]; !ok || at.After(sm.at) {
					violations++
					if violations < 10 {
						t.Errorf("at %s partition %d was committed at %d, but offset %d was acknowledged at %v",
							sm.at.Format(time.StampMicro), p, c, o, at)
					}
				}
			}
		}
	}
	t.Logf("%d samples of committed offsets checked against %d acknowledgements; rows written by the members: %d, %d",
		len(samples), len(acks.acked), writers[0].rows.Load(), writers[1].rows.Load())
	if writers[0].rows.Load() == 0 || writers[1].rows.Load() == 0 {
		t.Error("one member wrote nothing: the test did not exercise a rebalance")
	}
	// A clean handover commits everything written before the partition moves, so nothing is written twice
	// (the Kafka Connect bounce test's rule: duplicates only after unclean stops).
	if n := writers[0].rows.Load() + writers[1].rows.Load(); n != 5940 {
		t.Errorf("%d rows written in all, want 5940: a clean rebalance replayed rows", n)
	}
	s.checkPlacement()
	s.checkDeadLetters(false)
}

// ackLogFor wraps one member's writer and logs its acknowledgements in the shared ackLog.
type ackLogFor struct {
	log  *ackLog
	w    BatchWriter
	rows atomic.Int64 // rows this member wrote
}

func (a *ackLogFor) Write(ctx context.Context, b *batcher.Batch) ([]cassandra.RowFailure, error) {
	failures, err := a.w.Write(ctx, b)
	if err != nil {
		return failures, err
	}
	a.rows.Add(int64(len(b.Rows) - len(failures)))
	now := time.Now()
	a.log.mu.Lock()
	defer a.log.mu.Unlock()
rows:
	for _, r := range b.Rows {
		for _, f := range failures {
			if f.Row.Source() == r.Source() {
				continue rows
			}
		}
		k := [2]int64{int64(r.Partition), r.Offset}
		if _, ok := a.log.acked[k]; !ok {
			a.log.acked[k] = now
		}
	}
	return failures, nil
}

// TestIntegrationOversizedDeadLetterReachesTopicTruncated: a bad record larger than the dead-letter
// topic's max.message.bytes reaches it cut to fit (coordinates, reason, sink.truncated and the original
// value size), and its partition goes on: the rows after it are written and the committed offsets reach
// the end. It used to be refused, and retried, forever.
func TestIntegrationOversizedDeadLetterReachesTopicTruncated(t *testing.T) {
	small := "4096"
	s := newStack(t, 3, map[string]*string{"max.message.bytes": &small})
	recs := makeRecords(300, 0, 3)
	// One bad record, far bigger than the dead-letter topic accepts, in partition 0, with rows after it.
	var bad *itRecord
	for i, r := range recs {
		if r.partition == 0 && i > 100 {
			r.bad = mapper.ReasonDecode
			r.value = []byte("not json " + randomText(20_000)) // incompressible: the broker measures it as sent
			bad = r
			break
		}
	}
	s.produce(recs)
	m := s.start(nil)
	s.waitFor(2*time.Minute, "committed offsets to reach the end", s.allCommitted)
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	s.checkPlacement()
	dls := s.dlqRecords()
	if len(dls) != 1 {
		t.Fatalf("%d dead letters, want 1", len(dls))
	}
	r := dls[0]
	if header(r, deadletter.HeaderSourcePartition) != "0" || header(r, deadletter.HeaderSourceOffset) != strconv.FormatInt(bad.offset, 10) ||
		header(r, deadletter.HeaderSourceTopic) != s.topic || header(r, deadletter.HeaderReason) != mapper.ReasonDecode ||
		header(r, deadletter.HeaderError) == "" || header(r, deadletter.HeaderTruncated) != "value" ||
		header(r, deadletter.HeaderSourceValueSize) != strconv.Itoa(len(bad.value)) || string(r.Key) != bad.device ||
		len(r.Value) == 0 || !strings.HasPrefix(string(bad.value), string(r.Value)) {
		t.Errorf("dead letter: key %q, %d value bytes, headers %v", r.Key, len(r.Value), r.Headers)
	}
	if n := deadletter.WireBatchOverhead + deadletter.WireSize(r); n > 4096 {
		t.Errorf("dead letter of %d bytes in a topic of max.message.bytes 4096", n)
	}
	if got := testutil.ToFloat64(m.metrics.RecordsFailed.WithLabelValues(s.topic)); got != 0 {
		t.Errorf("sink_records_failed_total %v, want 0", got)
	}
}

// TestIntegrationDeadLetterTopicCreatedLateHeals: the dead-letter topic does not exist when the bad
// records come (a runtime deletion, or a topic created after the sink started). Their partitions wait
// before them and retry; once the topic is created, every bad record reaches it and the committed offsets
// reach the end, without a restart.
func TestIntegrationDeadLetterTopicCreatedLateHeals(t *testing.T) {
	s := newStack(t, 3, nil)
	created := s.dlq
	s.dlq = created + "_late" // not created yet; the stack's cleanup deletes it
	t.Cleanup(func() { _, _ = s.adm.DeleteTopics(context.Background(), created) })
	tc := s.cfg.Topics["readings"]
	tc.DeadLetterTopic = s.dlq
	s.cfg.Topics["readings"] = tc
	recs := makeRecords(900, 100, 3)
	s.produce(recs)
	m := s.start(nil)
	s.waitFor(2*time.Minute, "a stuck partition to be counted", func() bool {
		return testutil.ToFloat64(m.metrics.StuckPartitions.WithLabelValues(s.topic)) >= 1
	})
	first := make(map[int32]int64)
	for _, r := range recs {
		if _, ok := first[r.partition]; r.bad != "" && !ok {
			first[r.partition] = r.offset
		}
	}
	for p, c := range s.committed() {
		if o, ok := first[p]; ok && c > o {
			t.Errorf("partition %d committed %d past its first undelivered dead letter %d", p, c, o)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := s.adm.CreateTopic(ctx, 1, 1, nil, s.dlq); err != nil {
		t.Fatal(err)
	}
	s.waitFor(2*time.Minute, "committed offsets to reach the end", s.allCommitted)
	s.waitFor(30*time.Second, "no partition stuck any more", func() bool {
		return testutil.ToFloat64(m.metrics.StuckPartitions.WithLabelValues(s.topic)) == 0
	})
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	s.checkPlacement()
	s.checkDeadLetters(false)
}

// sinkBinary builds cmd/sink once per test binary, for the tests that kill the process, into
// builtSink.dir (removed by TestMain when the tests end).
var sinkBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "sink-it-")
	if err != nil {
		return "", err
	}
	builtSink.dir = dir
	bin := filepath.Join(dir, "sink")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/bucketsink/sink/cmd/sink").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("building cmd/sink: %v\n%s", err, out)
	}
	return bin, nil
})

// builtSink is where sinkBinary built cmd/sink, empty until it has.
var builtSink struct{ dir string }

// writeConfig renders the stack's config as the YAML `sink run` reads: its servers, group, keyspace,
// timeouts and metrics address, and every entry under topics (entryYAML).
func (s *stack) writeConfig() string {
	s.t.Helper()
	var topics strings.Builder
	for _, name := range s.cfg.TopicNames() {
		topics.WriteString(entryYAML(name, s.cfg.Topics[name]))
	}
	yaml := fmt.Sprintf(`kafka:
  brokers: %s
  group: %s
  session_timeout: 10s
  rebalance_timeout: 30s
cassandra:
  hosts: %s
  keyspace: %s
  consistency: ONE
  timeout: %s
  connect_timeout: %s
writer:
  commit_interval: 200ms
  shutdown_timeout: %s
  linger: 5ms
  max_in_flight: 8
metrics:
  address: %q
log:
  level: warn
topics:
%s`, yamlList(s.cfg.Kafka.Brokers), s.group, yamlList(s.cfg.Cassandra.Hosts), s.ks,
		time.Duration(s.cfg.Cassandra.Timeout), time.Duration(s.cfg.Cassandra.ConnectTimeout),
		time.Duration(s.cfg.Writer.ShutdownTimeout), s.cfg.Metrics.Address, topics.String())
	path := filepath.Join(s.t.TempDir(), "sink.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		s.t.Fatal(err)
	}
	return path
}

func yamlList(ss []string) string { return `["` + strings.Join(ss, `", "`) + `"]` }

// entryYAML renders topics.<name> with what the integration tests configure: the Kafka topic, ids, event
// time, bucket (width, key, event buckets), split, partition budget, write timestamp, table, columns,
// clustering and dead-letter topic.
func entryYAML(name string, tp config.Topic) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  %s:\n    topic: %s\n    id: [%s]\n", name, tp.Topic, strings.Join(tp.ID, ", "))
	fmt.Fprintf(&b, "    time: {source: %s, field: %s, format: %s}\n", tp.Time.Source, tp.Time.Field, tp.Time.Format)
	fmt.Fprintf(&b, "    bucket: {width: %s, key: %s, event_buckets: %d}\n", tp.Bucket.Width, tp.Bucket.Key, max(tp.Bucket.EventBuckets, 1))
	if tp.Split.Enabled {
		fmt.Fprintf(&b, "    split: {enabled: true, max_event_buckets: %d, max_rows: %d}\n", tp.Split.MaxEventBuckets, tp.Split.MaxRows)
	}
	if tp.PartitionBudget > 0 {
		fmt.Fprintf(&b, "    partition_budget: %s\n", tp.PartitionBudget)
	}
	if tp.WriteTimestamp != "" {
		fmt.Fprintf(&b, "    write_timestamp: %s\n", tp.WriteTimestamp)
	}
	fmt.Fprintf(&b, "    table: %s\n    columns:\n", tp.Table)
	for _, c := range tp.Columns {
		src := "field: " + c.Field
		if c.Source != "" {
			src = "source: " + c.Source
		}
		fmt.Fprintf(&b, "      - {name: %s, type: %s, %s, required: %t}\n", c.Name, c.Type, src, c.Required)
	}
	b.WriteString("    clustering:\n")
	for _, c := range tp.Clustering {
		fmt.Fprintf(&b, "      - {column: %s, order: %s}\n", c.Column, c.Order)
	}
	if tp.DeadLetterTopic != "" {
		fmt.Fprintf(&b, "    dead_letter_topic: %s\n", tp.DeadLetterTopic)
	}
	if len(tp.Rollups) > 0 {
		b.WriteString("    rollups:\n")
	}
	for _, r := range tp.Rollups {
		fmt.Fprintf(&b, "      - {name: %s, width: %s, table: %s, bucket: {width: %s}, grace: %s", r.Name, r.Width, r.Table, r.Bucket.Width, time.Duration(r.Grace))
		if r.From != "" {
			fmt.Fprintf(&b, ", from: %s", r.From)
		}
		b.WriteString(", aggregates: [")
		for i, a := range r.Aggregates {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "{column: %s, fn: %s", a.Column, a.Fn)
			if a.Of != "" {
				fmt.Fprintf(&b, ", of: %s", a.Of)
			}
			b.WriteString("}")
		}
		b.WriteString("]}\n")
	}
	return b.String()
}

// killAndRestart runs `sink run` on the stack's config while recs are produced in the background as a
// stream (chunk records, then pause), from the first start on. kills times it starts the daemon, waits
// for killAt(i) to return and kills it with SIGKILL (no flush, no commit), then calls afterKill(i) if
// it is not nil. Once the whole stream is produced it starts the daemon again, waits for it to be
// ready (/readyz) and for the committed offsets to reach the end, stops it with SIGTERM and expects
// exit code 0.
func (s *stack) killAndRestart(recs []*itRecord, chunk int, pause time.Duration, kills int, killAt, afterKill func(i int)) {
	t := s.t
	t.Helper()
	s.cfg.Metrics.Address = freeAddr(t)
	cfgPath := s.writeConfig()
	done := make(chan struct{})
	stream := func() {
		defer close(done)
		s.produceStream(recs, chunk, pause)
	}
	for i := range kills {
		cmd, _ := runSink(t, cfgPath)
		if i == 0 {
			go stream()
		}
		killAt(i)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		if afterKill != nil {
			afterKill(i)
		}
	}
	if kills == 0 {
		go stream()
	}
	<-done
	cmd, _ := runSink(t, cfgPath)
	s.waitFor(time.Minute, "sink run to be ready after the kills", s.sinkReady)
	s.waitFor(3*time.Minute, fmt.Sprintf("committed offsets to reach the end after %d kill(s)", kills), s.allCommitted)
	if code, took := stopSink(t, cmd); code != 0 {
		t.Errorf("sink run exited %d %s after SIGTERM, want 0", code, took.Round(time.Millisecond))
	}
}

// TestIntegrationKillAndRestart kills the daemon with SIGKILL mid-stream (no flush, no commit). At the
// moment of the kill every record below the committed offsets must be in Cassandra; after a restart,
// every record is.
func TestIntegrationKillAndRestart(t *testing.T) {
	s := newStack(t, 3, nil)
	recs := makeRecords(6000, 100, 3)
	thirdCommitted := func(int) {
		s.waitFor(2*time.Minute, "a third of the records committed", func() bool {
			var n int64
			for _, o := range s.committed() {
				n += o
			}
			return n >= 2000
		})
	}
	checkAtKill := func(int) {
		atKill := s.committed()
		rows := s.rows()
		s.recsMu.Lock()
		missing := 0
		for _, r := range s.recs {
			if r.bad == "" && r.offset < atKill[r.partition] && !rows[s.expectedKey(r)] {
				missing++
				if missing < 10 {
					t.Errorf("killed with partition %d committed at %d, but offset %d is not in Cassandra", r.partition, atKill[r.partition], r.offset)
				}
			}
		}
		s.recsMu.Unlock()
		t.Logf("at the kill: committed %v, %d rows in Cassandra", atKill, len(rows))
	}
	s.killAndRestart(recs, 100, 20*time.Millisecond, 1, thirdCommitted, checkAtKill)
	s.checkPlacement()
	s.checkDeadLetters(false)
}

// TestIntegrationSIGTERMFlushesAndCommits stops the daemon with SIGTERM mid-stream: it must exit 0 within
// writer.shutdown_timeout, having flushed and committed, so that Cassandra holds exactly the good records
// below the committed offsets: nothing consumed was left uncommitted (a restart replays nothing) and nothing
// committed is missing.
func TestIntegrationSIGTERMFlushesAndCommits(t *testing.T) {
	bin, err := sinkBinary()
	if err != nil {
		t.Fatal(err)
	}
	s := newStack(t, 3, nil)
	cfgPath := s.writeConfig()
	recs := makeRecords(6000, 100, 3)
	cmd := exec.Command(bin, "run", "--config", cfgPath)
	cmd.Stderr = tWriter{t}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.produceStream(recs, 100, 20*time.Millisecond)
	}()
	s.waitFor(2*time.Minute, "a third of the records committed", func() bool {
		var n int64
		for _, o := range s.committed() {
			n += o
		}
		return n >= 2000
	})
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("sink run after SIGTERM: %v", err)
	}
	took := time.Since(start)
	if limit := time.Duration(s.cfg.Writer.ShutdownTimeout) + 10*time.Second; took > limit {
		t.Errorf("exited %s after SIGTERM, over shutdown_timeout + commit (%s)", took, limit)
	}
	<-done
	committed := s.committed()
	rows := s.rows()
	s.recsMu.Lock()
	defer s.recsMu.Unlock()
	want := 0
	for _, r := range s.recs {
		if r.bad != "" {
			continue
		}
		below := r.offset < committed[r.partition]
		if below {
			want++
		}
		if in := rows[s.expectedKey(r)]; in != below {
			t.Errorf("partition %d offset %d: in Cassandra %v, below the committed offset %d %v",
				r.partition, r.offset, in, committed[r.partition], below)
		}
	}
	if len(rows) != want {
		t.Errorf("%d rows in Cassandra, want exactly the %d good records below the committed offsets", len(rows), want)
	}
	t.Logf("exited %s after SIGTERM; committed %v; %d rows, all of them below the commit", took.Round(time.Millisecond), committed, len(rows))
}

// TestIntegrationThreePolicies: three topics with different policies, 100,000 events in all, through one
// daemon: daily text buckets; hourly timestamp buckets with 4 event buckets; 10-minute integer buckets with
// daily table slices. Every row is in the partition its policy computes (each expected partition is
// queried), no row is anywhere else, and the committed offsets reach the end.
func TestIntegrationThreePolicies(t *testing.T) {
	type policyCase struct {
		name   string
		bucket config.Bucket
	}
	cases := []policyCase{
		{"daily", config.Bucket{Width: "1d", Key: "text"}},
		{"hourly", config.Bucket{Width: "1h", Key: "timestamp", EventBuckets: 4}},
		{"tenmin", config.Bucket{Width: "10m", Key: "int", Slice: "1d"}},
	}
	s := newStack(t, 3, nil)
	// newStack made one topic; replace the topic set with the three of this test.
	s.cfg.Topics = map[string]config.Topic{}
	topicOf := map[string]string{}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, c := range cases {
		kt := testenv.Name(t, c.name)
		topicOf[c.name] = kt
		if _, err := s.adm.CreateTopic(ctx, 3, 1, nil, kt); err != nil {
			t.Fatal(err)
		}
		s.cfg.Topics[c.name] = config.Topic{
			Topic:  kt,
			ID:     []string{"device_id"},
			Time:   config.EventTime{Source: "field", Field: "ts", Format: "rfc3339"},
			Bucket: c.bucket,
			Table:  c.name,
			Columns: []config.Column{
				{Name: "device_id", Type: "text", Field: "device_id"},
				{Name: "ts", Type: "timestamp", Source: "event_time"},
				{Name: "value", Type: "double", Field: "value", Required: true},
			},
			Clustering:      []config.Clustering{{Column: "ts", Order: "desc"}},
			DeadLetterTopic: s.dlq,
		}
	}
	s.cfg.ApplyDefaults()
	s.cfg.Metrics.Address = ""
	if err := s.cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = s.adm.DeleteTopics(dctx, topicOf["daily"], topicOf["hourly"], topicOf["tenmin"])
	})
	// Event times span itBase .. +18.5h: one daily slice, whose table (and the next) ApplySchema creates.
	if err := cassandra.ApplySchema(ctx, s.session, s.cfg, nil, itBase); err != nil {
		t.Fatal(err)
	}

	const perTopic = 33_334
	recsOf := map[string][]*itRecord{}
	for _, c := range cases {
		recs := makeRecords(perTopic, 0, 3)
		krs := make([]*kgo.Record, len(recs))
		for i, r := range recs {
			krs[i] = &kgo.Record{Topic: topicOf[c.name], Partition: r.partition, Key: []byte(r.device), Value: r.value}
		}
		if err := s.cl.ProduceSync(ctx, krs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		recsOf[c.name] = recs
	}
	ends, err := s.adm.ListEndOffsets(ctx, topicOf["daily"], topicOf["hourly"], topicOf["tenmin"])
	if err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	m := s.start(nil)
	s.waitFor(5*time.Minute, "committed offsets of all three topics to reach the end", func() bool {
		resp, err := s.adm.FetchOffsets(ctx, s.group)
		if err != nil {
			return false
		}
		ok := true
		ends.Each(func(o kadm.ListedOffset) {
			c, found := resp.Lookup(o.Topic, o.Partition)
			if !found || c.At != o.Offset {
				ok = false
			}
		})
		return ok
	})
	took := time.Since(start)
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d events through three topics in %s (%.0f records/s, including the group join)",
		3*perTopic, took.Round(time.Millisecond), float64(3*perTopic)/took.Seconds())

	mp := testMapper(t, s.cfg)
	for _, c := range cases {
		policy, err := s.cfg.Policy(c.name)
		if err != nil {
			t.Fatal(err)
		}
		type pkey struct {
			table  string
			device string
			bucket int64 // bucket index
			event  int   // event bucket, -1 when none
		}
		want := map[pkey]map[time.Time]bool{}
		tables := map[string]int{}
		for _, r := range recsOf[c.name] {
			i := policy.Index(r.ts)
			k := pkey{table: c.name, device: r.device, bucket: i, event: -1}
			if sfx := policy.SliceSuffix(r.ts); sfx != "" {
				k.table = c.name + "_" + sfx
			}
			if c.bucket.EventBuckets > 1 {
				// Which event bucket a row takes is the mapper's hash contract (of the clustering values by
				// default); ask the mapper, and check the value is a valid bucket.
				row, err := mp.Map(mapper.Record{Topic: topicOf[c.name], Key: []byte(r.device), Value: r.value, Timestamp: r.ts})
				if err != nil {
					t.Fatal(err)
				}
				eb := slices.Index(row.Target.Columns, "event_bucket")
				if eb < 0 {
					t.Fatalf("%s: the insert has no event_bucket column: %v", c.name, row.Target.Columns)
				}
				k.event = int(packed.GoValue(packed.Values(row.Packed)[eb]).(int32))
				if k.event < 0 || k.event >= c.bucket.EventBuckets {
					t.Fatalf("%s: event bucket %d out of range", c.name, k.event)
				}
			}
			if want[k] == nil {
				want[k] = map[time.Time]bool{}
			}
			want[k][r.ts] = true
			tables[k.table]++
		}
		for k, times := range want {
			q := "SELECT ts FROM " + s.ks + "." + k.table + " WHERE device_id = ? AND bucket = ?"
			args := []any{k.device, policy.Value(k.bucket)}
			if k.event >= 0 {
				q += " AND event_bucket = ?"
				args = append(args, k.event)
			}
			iter := s.session.Driver().Query(q, args...).IterContext(ctx)
			got := map[time.Time]bool{}
			var ts time.Time
			for iter.Scan(&ts) {
				got[ts.UTC()] = true
			}
			if err := iter.Close(); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			if len(got) != len(times) {
				t.Errorf("%s: partition (%s, %v, %d): %d rows, want %d", c.name, k.device, policy.Value(k.bucket), k.event, len(got), len(times))
			}
			for ts := range times {
				if !got[ts] {
					t.Errorf("%s: partition (%s, %v, %d): no row at %s", c.name, k.device, policy.Value(k.bucket), k.event, ts)
					break
				}
			}
		}
		for table, n := range tables {
			var total int
			if err := s.session.Driver().Query("SELECT COUNT(*) FROM "+s.ks+"."+table).ScanContext(ctx, &total); err != nil {
				t.Fatal(err)
			}
			if total != n {
				t.Errorf("%s.%s holds %d rows, want exactly %d", s.ks, table, total, n)
			}
		}
		t.Logf("%s: %d records in %d partitions of %d table(s), each where the policy puts it", c.name, len(recsOf[c.name]), len(want), len(tables))
	}
}

// cutProxy forwards TCP connections to a server and can cut them: while cut, it closes every connection
// and refuses new ones, which is what a client sees when the server goes away. It can also blackhole them:
// while held, connections (old and new) stay open but nothing is forwarded either way, which is what a
// client sees in a network partition; what was held is forwarded once the hold is lifted.
type cutProxy struct {
	t      *testing.T
	target string
	ln     net.Listener
	mu     sync.Mutex
	open   *sync.Cond // signaled when held or cut changes
	conns  map[net.Conn]bool
	cut    bool
	held   bool
	wg     sync.WaitGroup
	// accepted counts the client connections accepted.
	accepted atomic.Int64
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{t: t, target: target, ln: ln, conns: make(map[net.Conn]bool)}
	p.open = sync.NewCond(&p.mu)
	p.wg.Go(p.accept)
	t.Cleanup(func() {
		_ = ln.Close()
		p.setCut(true)
		p.wg.Wait()
	})
	return p
}

func (p *cutProxy) addr() string { return p.ln.Addr().String() }

func (p *cutProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.accepted.Add(1)
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		p.conns[c], p.conns[up] = true, true
		p.mu.Unlock()
		p.wg.Go(func() { p.pipe(up, c) })
		p.wg.Go(func() { p.pipe(c, up) })
	}
}

// pipe copies src to dst, holding each chunk read while the proxy is held.
func (p *cutProxy) pipe(dst, src net.Conn) {
	defer func() {
		_ = dst.Close()
		_ = src.Close()
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			for p.held && !p.cut {
				p.open.Wait()
			}
			p.mu.Unlock()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *cutProxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for c := range p.conns {
			_ = c.Close()
		}
		clear(p.conns)
	}
	p.open.Broadcast()
}

// setHeld blackholes every connection (held) or forwards again what was held and what follows.
func (p *cutProxy) setHeld(held bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held = held
	p.open.Broadcast()
}

// TestIntegrationCassandraOutage cuts the daemon off Cassandra for 30 s mid-stream. Meanwhile no offset
// may be committed past a record Cassandra has not acknowledged, the writer's backoff shows in
// sink_write_retries_total, readiness turns false; afterwards the daemon recovers on its own and every
// record is written.
func TestIntegrationCassandraOutage(t *testing.T) {
	s := newStack(t, 3, nil)
	proxy := newCutProxy(t, s.cfg.Cassandra.Hosts[0])
	s.cfg.Cassandra.Hosts = []string{proxy.addr()}
	s.cfg.Cassandra.Timeout = config.Duration(2 * time.Second)
	recs := makeRecords(6000, 100, 3)
	acks := &ackLog{acked: make(map[[2]int64]time.Time)}
	// The daemon's own session goes through the proxy; the test keeps its direct one for checking.
	daemonSession, err := cassandra.Connect(context.Background(), s.cfg.Cassandra)
	if err != nil {
		t.Fatal(err)
	}
	defer daemonSession.Close()
	m := s.startWith(daemonSession, func(w BatchWriter) BatchWriter { return &ackLogFor{log: acks, w: w} })

	s.produceStream(recs[:2000], 200, 20*time.Millisecond)
	s.waitFor(time.Minute, "the first records committed", func() bool { return len(s.committed()) == 3 })
	proxy.setCut(true)
	outageStart := time.Now()
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		s.produceStream(recs[2000:], 200, 100*time.Millisecond)
	}()
	var samples int
	for time.Since(outageStart) < 30*time.Second {
		at := time.Now()
		c := s.committed()
		samples++
		acks.mu.Lock()
		s.recsMu.Lock()
		for _, r := range s.recs {
			if r.bad != "" || r.offset >= c[r.partition] {
				continue
			}
			if ackAt, ok := acks.acked[[2]int64{int64(r.partition), r.offset}]; !ok || ackAt.After(at) {
				t.Errorf("during the outage partition %d was committed at %d, past offset %d which Cassandra had not acknowledged",
					r.partition, c[r.partition], r.offset)
			}
		}
		s.recsMu.Unlock()
		acks.mu.Unlock()
		time.Sleep(200 * time.Millisecond)
	}
	if err := m.pl.Ready(); err == nil {
		t.Error("ready during the Cassandra outage")
	}
	retries := 0.0
	for _, reason := range []string{"timeout", "unavailable", "overloaded", "other"} {
		retries += testutil.ToFloat64(m.metrics.WriteRetries.WithLabelValues(reason))
	}
	if retries == 0 {
		t.Error("sink_write_retries_total is 0 after a 30 s outage: the backoff is invisible")
	}
	proxy.setCut(false)
	t.Logf("outage over after %d samples; %v retries so far", samples, retries)
	<-produced
	s.waitFor(3*time.Minute, "committed offsets to reach the end after the outage", s.allCommitted)
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	s.checkPlacement()
}

// originalHeadersFirst reports whether a dead letter's headers are the original record's, in order,
// followed by the eight sink.* headers of one entry's refusal only (the source's four, then error,
// reason, entry and table).
func originalHeadersFirst(got, original []kgo.RecordHeader) bool {
	if len(got) != len(original)+8 {
		return false
	}
	for i, h := range original {
		if got[i].Key != h.Key || string(got[i].Value) != string(h.Value) {
			return false
		}
	}
	for _, h := range got[len(original):] {
		if !strings.HasPrefix(h.Key, "sink.") {
			return false
		}
	}
	return true
}

// TestIntegrationRefusedRowsAreDeadLetteredAsProduced: Cassandra itself refuses rows whose whole partition
// key is longer than 65535 bytes (the mapper checks each component, the server the composite). The pipeline keeps
// nothing of a record once it is mapped, so each refused row's dead letter is built from its record read
// back from Kafka: it must carry the original key, value and headers, the source coordinates and reason
// "write", exactly once; every other row is written where its policy puts it, and the committed offsets
// reach the end only as the dead letters are acknowledged.
func TestIntegrationRefusedRowsAreDeadLetteredAsProduced(t *testing.T) {
	s := newStack(t, 3, nil)
	recs := makeRecords(3000, 0, 3)
	for i, r := range recs {
		r.headers = []kgo.RecordHeader{
			{Key: "trace-id", Value: fmt.Appendf(nil, "trace-%d", i)},
			{Key: "source", Value: []byte("integration")},
			{Key: "empty"},
		}
		if i%250 == 123 {
			// A device id the mapper accepts whose partition key, with the bucket, Cassandra refuses. Refused
			// in the batch it joins, which the writer then isolates row by row.
			r.bad = deadletter.ReasonWrite
			r.value = fmt.Appendf(nil, `{"device_id":"%s","ts":%q,"value":%d.5}`, refusedDevice(r.device),
				r.ts.Format(time.RFC3339Nano), i)
		}
	}
	s.produce(recs)
	m := s.start(nil)
	s.waitFor(2*time.Minute, "committed offsets to reach the end", s.allCommitted)
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	s.checkPlacement()
	s.checkDeadLetters(true)
	if got := testutil.ToFloat64(m.metrics.RecordsDeadLettered.WithLabelValues(s.topic, deadletter.ReasonWrite)); got != 12 {
		t.Errorf("sink_records_dead_lettered_total{reason=write} %v, want 12", got)
	}
	if got := testutil.ToFloat64(m.metrics.RecordsFailed.WithLabelValues(s.topic)); got != 0 {
		t.Errorf("sink_records_failed_total %v, want 0: every refused row's record could be read back", got)
	}
}

// refusedDevice pads a device id to 65530 bytes: within the mapper's limit on one partition key component
// (65535), but with the bucket component the serialized partition key passes 65535 bytes, which Cassandra
// refuses as an invalid request. (Text that is not UTF-8, the server's other refusal, the mapper catches.)
func refusedDevice(device string) string {
	return device + strings.Repeat("x", 65530-len(device))
}

// holdWriter holds every batch with a row hold matches until release is closed, then writes it
// through w; held is closed when the first such batch arrives.
type holdWriter struct {
	w        BatchWriter
	hold     func(batcher.Source) bool
	held     chan struct{}
	heldOnce sync.Once
	release  chan struct{}
}

func (h *holdWriter) Write(ctx context.Context, b *batcher.Batch) ([]cassandra.RowFailure, error) {
	for i := range b.Rows {
		if h.hold(b.Rows[i].Source()) {
			h.heldOnce.Do(func() { close(h.held) })
			select {
			case <-h.release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			break
		}
	}
	return h.w.Write(ctx, b)
}

// TestIntegrationRefusedRowWhoseRecordIsGoneIsDeadLetteredAsTheRow: retention (here DeleteRecords)
// removes a row's record while Cassandra is about to refuse the row. Its dead letter cannot carry the
// original record, so it carries the mapped row as JSON, marked sink.source.missing, and the partition
// goes on to the end instead of stopping for good.
func TestIntegrationRefusedRowWhoseRecordIsGoneIsDeadLetteredAsTheRow(t *testing.T) {
	s := newStack(t, 3, nil)
	recs := makeRecords(600, 0, 3)
	var bad *itRecord
	for i, r := range recs {
		if r.partition == 0 && i > 300 {
			r.bad = deadletter.ReasonWrite
			r.value = fmt.Appendf(nil, `{"device_id":"%s","ts":%q,"value":1.5}`, refusedDevice(r.device), r.ts.Format(time.RFC3339Nano))
			bad = r
			break
		}
	}
	s.produce(recs)
	hw := &holdWriter{held: make(chan struct{}), release: make(chan struct{}),
		hold: func(src batcher.Source) bool { return src.Partition == 0 && src.Offset == bad.offset }}
	m := s.start(func(w BatchWriter) BatchWriter { hw.w = w; return hw })
	select {
	case <-hw.held:
	case <-time.After(2 * time.Minute):
		t.Fatal("the refused row's batch never reached the writer")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := s.adm.DeleteRecords(ctx, kadm.Offsets{s.topic: {0: {Topic: s.topic, Partition: 0, At: bad.offset + 1}}})
	if err != nil || resp.Error() != nil {
		t.Fatalf("deleting the records of partition 0 up to %d: %v %v", bad.offset, err, resp.Error())
	}
	close(hw.release)
	s.waitFor(2*time.Minute, "committed offsets to reach the end", s.allCommitted)
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	dls := s.dlqRecords()
	if len(dls) != 1 {
		t.Fatalf("%d dead letters, want 1", len(dls))
	}
	r := dls[0]
	// The row as the mapper built it: the bucket column too, the text as Cassandra would have stored it
	// had it been valid UTF-8 (JSON has no other form for it).
	var row map[string]any
	if err := json.Unmarshal(r.Value, &row); err != nil {
		t.Fatalf("dead letter value %s: %v", r.Value, err)
	}
	wantValue := map[string]any{"device_id": refusedDevice(bad.device), "ts": bad.ts.UTC().Format(time.RFC3339Nano),
		"value": 1.5, "bucket": s.policy.Text(s.policy.Index(bad.ts))}
	if fmt.Sprint(row) != fmt.Sprint(wantValue) || r.Key != nil || header(r, deadletter.HeaderSourceMissing) != "true" ||
		header(r, deadletter.HeaderSourceOffset) != strconv.FormatInt(bad.offset, 10) || header(r, deadletter.HeaderSourcePartition) != "0" ||
		header(r, deadletter.HeaderReason) != deadletter.ReasonWrite || header(r, deadletter.HeaderTable) != s.ks+".readings" || header(r, deadletter.HeaderError) == "" {
		t.Errorf("dead letter: value %s key %q headers %v\nwant value %s", r.Value, r.Key, r.Headers, wantValue)
	}
	if got := testutil.ToFloat64(m.metrics.RecordsFailed.WithLabelValues(s.topic)); got != 0 {
		t.Errorf("sink_records_failed_total %v, want 0", got)
	}
}

// A sliced topic receives a record whose slice has no table (a late event, from a slice never created or
// already dropped). Without a restart, its partition goes on to the end, and the record ends as the
// topic's bucket.missing_slice says: with create, written to its slice's table, made on demand from the
// topic's own DDL; with dead_letter, in the dead-letter topic with reason slice and an error naming the
// table, which is not created.
func TestIntegrationMissingSliceTableFollowsTheTopicsPolicy(t *testing.T) {
	for _, policy := range []string{config.MissingSliceCreate, config.MissingSliceDeadLetter} {
		t.Run(policy, func(t *testing.T) {
			s := newStack(t, 3, nil)
			tc := s.cfg.Topics["readings"]
			tc.Bucket.Slice = "1d"
			tc.Bucket.MissingSlice = policy
			s.cfg.Topics["readings"] = tc
			if err := s.cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			// The slices of itBase and the day after exist, as a daily `sink schema --apply` leaves them.
			if err := cassandra.ApplySchema(ctx, s.session, s.cfg, nil, itBase); err != nil {
				t.Fatal(err)
			}
			recs := makeRecords(300, 0, 3)
			lateTS := time.Date(2023, 6, 15, 10, 0, 0, 0, time.UTC)
			late := &itRecord{device: "dev-late", ts: lateTS, partition: 1,
				value: fmt.Appendf(nil, `{"device_id":"dev-late","ts":%q,"value":7.5}`, lateTS.Format(time.RFC3339))}
			if policy == config.MissingSliceDeadLetter {
				late.bad = deadletter.ReasonSlice
			}
			recs = slices.Insert(recs, 150, late)
			lateTable, _, err := cassandra.SliceTableDDL(s.cfg, "readings", lateTS)
			if err != nil {
				t.Fatal(err)
			}
			current, _, _ := cassandra.SliceTableDDL(s.cfg, "readings", itBase)

			s.produce(recs)
			m := s.start(nil)
			s.waitFor(2*time.Minute, "committed offsets to reach the end, past the late record", s.allCommitted)
			if err := m.stop(); err != nil {
				t.Fatal(err)
			}

			count := func(table string) (int, error) {
				var n int
				err := s.session.Driver().Query("SELECT COUNT(*) FROM "+table).ScanContext(ctx, &n)
				return n, err
			}
			if n, err := count(current); err != nil || n != 300 {
				t.Errorf("%s holds %d rows (%v), want the 300 current records", current, n, err)
			}
			n, err := count(lateTable)
			switch policy {
			case config.MissingSliceCreate:
				var value float64
				qerr := s.session.Driver().Query("SELECT value FROM "+lateTable+" WHERE device_id = ? AND bucket = ? AND ts = ?",
					"dev-late", s.policy.Text(s.policy.Index(lateTS)), lateTS).ScanContext(ctx, &value)
				if err != nil || n != 1 || qerr != nil || value != 7.5 {
					t.Errorf("%s: %d rows (%v), late row value %v (%v); want the late record written there", lateTable, n, err, value, qerr)
				}
			case config.MissingSliceDeadLetter:
				if err == nil {
					t.Errorf("%s exists (%d rows); the dead_letter policy must not create it", lateTable, n)
				}
				s.checkDeadLetters(true)
				if got := testutil.ToFloat64(m.metrics.RecordsDeadLettered.WithLabelValues(s.topic, deadletter.ReasonSlice)); got != 1 {
					t.Errorf("sink_records_dead_lettered_total{reason=slice} %v, want 1", got)
				}
				s.checkSliceDeadLetterNames(lateTable)
			}
			if got := testutil.ToFloat64(m.metrics.StuckPartitions.WithLabelValues(s.topic)); got != 0 {
				t.Errorf("sink_stuck_partitions %v at the end, want 0", got)
			}
		})
	}
}

// dlqReader is a client reading the dead-letter topic from its start.
func (s *stack) dlqReader() *kgo.Client {
	s.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.cfg.Kafka.Brokers...), kgo.ConsumeTopics(s.dlq),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		s.t.Fatal(err)
	}
	return cl
}

// checkSliceDeadLetterNames asserts the one dead letter's error names the missing slice table.
func (s *stack) checkSliceDeadLetterNames(table string) {
	s.t.Helper()
	cl := s.dlqReader()
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fs := cl.PollFetches(ctx)
	recs := fs.Records()
	if len(recs) != 1 || !strings.Contains(header(recs[0], deadletter.HeaderError), table) {
		s.t.Fatalf("dead letters %d; want one whose error names %s", len(recs), table)
	}
	s.t.Logf("dead letter error: %s", header(recs[0], deadletter.HeaderError))
}

// The rows of a missing table that is not a slice wait, as the startup warning says: their partitions
// are stuck and retried with backoff, nothing is dead-lettered or committed past them, and once the table
// is created (`sink schema --apply`) every partition resumes by itself and reaches the end.
func TestIntegrationRowsOfAMissingTableWaitUntilItExists(t *testing.T) {
	s := newStack(t, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := s.session.Driver().Query("DROP TABLE " + s.ks + ".readings").ExecContext(ctx); err != nil {
		t.Fatal(err)
	}
	s.produce(makeRecords(300, 0, 3))
	m := s.start(nil)
	s.waitFor(time.Minute, "every partition stuck on the missing table and retried", func() bool {
		return testutil.ToFloat64(m.metrics.StuckPartitions.WithLabelValues(s.topic)) == 3 &&
			testutil.ToFloat64(m.metrics.WriteStageRetries.WithLabelValues(s.topic, cassandra.FailMissingTable)) >= 3
	})
	if c := s.committed(); c[0]+c[1]+c[2] != 0 {
		t.Fatalf("committed %v while no row could be written", c)
	}
	if err := m.pl.Ready(); err != nil {
		t.Errorf("Ready() = %v; stuck partitions must not make the pod unready", err)
	}
	if err := cassandra.ApplySchema(ctx, s.session, s.cfg, nil, itBase); err != nil {
		t.Fatal(err)
	}
	s.waitFor(2*time.Minute, "committed offsets to reach the end once the table exists", s.allCommitted)
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	s.checkPlacement()
	if got := testutil.ToFloat64(m.metrics.StuckPartitions.WithLabelValues(s.topic)); got != 0 {
		t.Errorf("sink_stuck_partitions %v at the end, want 0", got)
	}
	for _, reason := range []string{deadletter.ReasonWrite, deadletter.ReasonSlice} {
		if got := testutil.ToFloat64(m.metrics.RecordsDeadLettered.WithLabelValues(s.topic, reason)); got != 0 {
			t.Errorf("%v records dead-lettered (%s) for a missing table", got, reason)
		}
	}
}
