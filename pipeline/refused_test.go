package pipeline

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/cassandra"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/mapper"
	"github.com/bucketsink/sink/pipeline/deadletter"
	"github.com/bucketsink/sink/pipeline/metrics"
)

// produceWithHeaders produces n records to every partition of the fixture's topic, each with two headers
// naming it, and a fixed timestamp per offset.
func (f *fixture) produceWithHeaders(n int) {
	f.t.Helper()
	var recs []*kgo.Record
	for p := range int32(testParts) {
		for i := range n {
			recs = append(recs, &kgo.Record{Topic: testTopic, Partition: p,
				Key: fmt.Appendf(nil, "k-%d-%d", p, i), Value: fmt.Appendf(nil, `{"n":%d,"p":%d}`, i, p),
				Headers: []kgo.RecordHeader{
					{Key: "trace-id", Value: fmt.Appendf(nil, "trace-%d-%d", p, i)},
					{Key: "content-type", Value: []byte("application/json")},
				},
				Timestamp: time.UnixMilli(1_700_000_000_000 + int64(i)).UTC()})
		}
		f.end[p] += int64(n)
	}
	if err := f.admCl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		f.t.Fatal(err)
	}
}

// TestRefusedRowDeadLetterCarriesTheOriginalRecord guards the re-read of refused rows: the pipeline
// keeps nothing of a record once it is mapped, so the dead letter of a row Cassandra refuses is built from
// the record read back from Kafka, and must be exactly what it would have been from the record in hand:
// original key, value, headers in order, then the source coordinates, timestamp, reason and error.
func TestRefusedRowDeadLetterCarriesTheOriginalRecord(t *testing.T) {
	f := newFixture(t, 0, 0)
	f.produceWithHeaders(100)
	w := newMemWriter()
	w.reject = func(s batcher.Source) bool { return s.Offset%30 == 7 } // offsets 7, 37, 67, 97
	m := f.start(f.config(nil), w)
	f.waitFor(20*time.Second, "committed offsets to reach the end", f.allCommitted)
	dls := f.deadLetters(12)
	seen := make(map[[2]int64]bool)
	for _, r := range dls {
		p, _ := strconv.ParseInt(header(r, deadletter.HeaderSourcePartition), 10, 32)
		o, _ := strconv.ParseInt(header(r, deadletter.HeaderSourceOffset), 10, 64)
		seen[[2]int64{p, o}] = true
		want := []string{
			"trace-id=" + fmt.Sprintf("trace-%d-%d", p, o), "content-type=application/json",
			deadletter.HeaderSourceTopic + "=" + testTopic, deadletter.HeaderSourcePartition + "=" + strconv.FormatInt(p, 10),
			deadletter.HeaderSourceOffset + "=" + strconv.FormatInt(o, 10),
			deadletter.HeaderSourceTimestamp + "=" + time.UnixMilli(1_700_000_000_000+o).UTC().Format("2006-01-02T15:04:05.000Z07:00"),
			deadletter.HeaderError + "=Invalid query: value too large", deadletter.HeaderReason + "=" + deadletter.ReasonWrite,
			deadletter.HeaderEntry + "=events", deadletter.HeaderTable + "=ks.events",
		}
		var got []string
		for _, h := range r.Headers {
			got = append(got, h.Key+"="+string(h.Value))
		}
		if o%30 != 7 || string(r.Key) != fmt.Sprintf("k-%d-%d", p, o) || string(r.Value) != fmt.Sprintf(`{"n":%d,"p":%d}`, o, p) ||
			strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("dead letter %d/%d: key %q value %q headers\n%s\nwant\n%s", p, o, r.Key, r.Value,
				strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	if len(dls) != 12 || len(seen) != 12 {
		t.Errorf("%d dead letters for %d refused rows, want 12 for 12", len(dls), len(seen))
	}
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(m.pl.metrics.RecordsDeadLettered.WithLabelValues(testTopic, deadletter.ReasonWrite)); got != 12 {
		t.Errorf("sink_records_dead_lettered_total{reason=write} %v, want 12", got)
	}
}

// TestRefusedRowInAJoinedRequestIsDeadLetteredAloneAndTheRestCommitted: with the write stage joining
// the batches due together (every partition here has one row) into requests of several partitions, a
// row the writer refuses inside such a request goes to the dead-letter topic alone, every other row of
// the request is written, and the commits reach the end of every partition.
func TestRefusedRowInAJoinedRequestIsDeadLetteredAloneAndTheRestCommitted(t *testing.T) {
	f := newFixture(t, 0, 0)
	f.join = func(bs []*batcher.Batch) []*batcher.Batch {
		var out []*batcher.Batch
		for len(bs) > 0 {
			n := min(len(bs), 10)
			out = append(out, batcher.Join(bs[:n]))
			bs = bs[n:]
		}
		return out
	}
	f.produceWithHeaders(100)
	w := newMemWriter()
	w.reject = func(s batcher.Source) bool { return s.Offset%30 == 7 }
	m := f.start(f.config(nil), w)
	f.waitFor(20*time.Second, "committed offsets to reach the end", f.allCommitted)
	if dls := f.deadLetters(12); len(dls) != 12 {
		t.Errorf("%d dead letters, want 12", len(dls))
	}
	for p := range int32(testParts) {
		for o := range int64(100) {
			src := batcher.Source{Topic: testTopic, Partition: p, Offset: o}
			if w.has(src) == (o%30 == 7) {
				t.Errorf("row %d/%d written: %v", p, o, w.has(src))
			}
		}
	}
	w.mu.Lock()
	parts := w.parts
	w.mu.Unlock()
	if parts < 2 {
		t.Errorf("no request held more than %d partition: nothing was joined", parts)
	}
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
}

// deadLetterOfGoneRecord waits for partition 1 to stop before its row at offset 40, which w holds,
// deletes the partition's records below 60 (retention), lets the row go on, and returns the one dead
// letter once every partition is committed to its end.
func (f *fixture) deadLetterOfGoneRecord(w *memWriter) *kgo.Record {
	f.t.Helper()
	f.waitFor(20*time.Second, "partition 1 to wait at the held row", func() bool {
		c := f.committed()
		return c[0] == 100 && c[1] == 40 && c[2] == 100
	})
	resp, err := f.adm.DeleteRecords(f.t.Context(), kadm.Offsets{testTopic: {1: {Topic: testTopic, Partition: 1, At: 60}}})
	if err != nil || resp.Error() != nil {
		f.t.Fatalf("deleting records: %v %v", err, resp.Error())
	}
	close(w.release)
	f.waitFor(20*time.Second, "every partition committed to its end", f.allCommitted)
	dls := f.deadLetters(1)
	if len(dls) != 1 {
		f.t.Fatalf("%d dead letters, want 1", len(dls))
	}
	return dls[0]
}

// TestRefusedRowWhoseRecordIsGoneIsDeadLetteredAsTheRow: retention removed a refused row's record before
// it could be read back. The row the sink mapped is all that is left of it, so that is what is
// dead-lettered (its columns as JSON, the coordinates, reason write, sink.source.missing=true), and the
// partition goes on to the end instead of stopping there for good.
func TestRefusedRowWhoseRecordIsGoneIsDeadLetteredAsTheRow(t *testing.T) {
	f := newFixture(t, 100, 0)
	w := newMemWriter()
	refused := batcher.Source{Topic: testTopic, Partition: 1, Offset: 40}
	w.hold = func(s batcher.Source) bool { return s == refused }
	w.reject = func(s batcher.Source) bool { return s == refused }
	m := f.start(f.config(nil), w)
	r := f.deadLetterOfGoneRecord(w)
	var got []string
	for _, h := range r.Headers {
		got = append(got, h.Key+"="+string(h.Value))
	}
	want := []string{
		deadletter.HeaderSourceTopic + "=" + testTopic, deadletter.HeaderSourcePartition + "=1", deadletter.HeaderSourceOffset + "=40",
		deadletter.HeaderError + "=Invalid query: value too large", deadletter.HeaderReason + "=" + deadletter.ReasonWrite,
		deadletter.HeaderEntry + "=events", deadletter.HeaderTable + "=ks.events", deadletter.HeaderSourceMissing + "=true",
	}
	if string(r.Value) != `{"v":"{\"n\":40}"}` || r.Key != nil || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("dead letter: key %q value %s headers\n%s\nwant value {\"v\":\"{\\\"n\\\":40}\"} and headers\n%s",
			r.Key, r.Value, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(m.pl.metrics.RecordsDeadLettered.WithLabelValues(testTopic, deadletter.ReasonWrite)); got != 1 {
		t.Errorf("sink_records_dead_lettered_total{reason=write} %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.pl.metrics.RecordsFailed.WithLabelValues(testTopic)); got != 0 {
		t.Errorf("sink_records_failed_total %v, want 0", got)
	}
}

// cleanupMapper maps with m and counts the records whose value's memory (the fetched batch it lives in)
// the collector has freed.
type cleanupMapper struct {
	m             rowMapper
	mapped, freed *atomic.Int64
}

func (m cleanupMapper) MapContext(_ context.Context, r mapper.Record) (batcher.Row, error) {
	if len(r.Value) > 0 {
		runtime.AddCleanup(&r.Value[0], func(n *atomic.Int64) { n.Add(1) }, m.freed)
	}
	m.mapped.Add(1)
	return m.m.MapContext(context.Background(), r)
}

// TestMappedRecordsAreNotRetained guards what the byte budget assumes: once mapped, a record's memory
// (record struct, slab, decompressed batch, fetch response) is free even while its row waits to be
// written. The tracker used to keep every record until its row was written, for the rare dead letter of
// a refused row; this test failed then (no record was freed while writes were held). With the real
// mapper it also guards that a row holds copies, never views into the record.
func TestMappedRecordsAreNotRetained(t *testing.T) {
	for _, real := range []bool{false, true} {
		name := map[bool]string{false: "fake mapper", true: "real mapper"}[real]
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, 0, 0)
			const n = 2000
			var recs []*kgo.Record
			for p := range int32(testParts) {
				for i := range n {
					recs = append(recs, &kgo.Record{Topic: testTopic, Partition: p, Key: fmt.Appendf(nil, "dev-%d", i%50),
						Value: fmt.Appendf(nil, `{"device_id":"dev-%d","ts":"2024-03-01T10:%02d:%02dZ","value":%d.5}`, i%50, i/60%60, i%60, i)})
				}
			}
			if err := f.admCl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
				t.Fatal(err)
			}
			cfg := f.config(func(c *config.Config) {
				c.Writer.MaxBufferedBytes = 64 << 20
				if real {
					c.Topics["events"] = config.Topic{Topic: testTopic, Table: "events", DeadLetterTopic: testDLQ,
						ID:     []string{"device_id"},
						Time:   config.EventTime{Source: "field", Field: "ts", Format: "rfc3339"},
						Bucket: config.Bucket{Width: "1h", Key: "text"},
						Columns: []config.Column{
							{Name: "device_id", Type: "text", Field: "device_id"},
							{Name: "ts", Type: "timestamp", Source: "event_time"},
							{Name: "value", Type: "double", Field: "value", Required: true},
						},
						Clustering: []config.Clustering{{Column: "ts", Order: "desc"}},
					}
					c.Cassandra.Keyspace = "ks"
					c.Cassandra.Hosts = []string{"never-contacted:9042"} // Validate wants one
					// Validate wants room for a revoke: shutdown_timeout (5s) plus the commit's 10s.
					c.Kafka.RebalanceTimeout = config.Duration(20 * time.Second)
					c.ApplyDefaults()
				}
			})
			var inner rowMapper = fakeMapper{target: &batcher.Target{Topic: testTopic, Keyspace: "ks", Table: "events", Columns: []string{"v"}, Entry: "events"}}
			if real {
				if err := cfg.Validate(); err != nil {
					t.Fatalf("test config: %v", err)
				}
				m, err := mapper.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				inner = m
			}
			w := newMemWriter()
			w.hold = func(batcher.Source) bool { return true }
			var mapped, freed atomic.Int64
			pl, err := New(Config{Sink: cfg, Mapper: oneEntry{cleanupMapper{inner, &mapped, &freed}}, Writer: w,
				Metrics: metrics.NewMetrics(prometheus.NewRegistry())})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() { errc <- pl.Run(ctx) }()
			defer func() {
				close(w.release)
				cancel()
				if err := <-errc; err != nil {
					t.Error(err)
				}
			}()
			f.waitFor(20*time.Second, "every record mapped", func() bool { return mapped.Load() == 3*n })
			// Every row is still held by the writer, so every record is still registered and undone. The
			// values' memory must be collectable all the same.
			f.waitFor(20*time.Second, "the mapped records' memory to be freed", func() bool {
				runtime.GC()
				return freed.Load() == mapped.Load()
			})
			pl.mu.Lock()
			parts := maps.Clone(pl.parts)
			pl.mu.Unlock()
			var undone int
			for _, p := range parts {
				p.mu.Lock()
				undone += p.tr.InFlight()
				p.mu.Unlock()
			}
			if undone != 3*n {
				t.Errorf("%d records in flight, want all %d (the writes are held)", undone, 3*n)
			}
			if got := testutil.ToFloat64(pl.metrics.RecordsDeadLettered.WithLabelValues(testTopic, mapper.ReasonMap)) +
				testutil.ToFloat64(pl.metrics.RecordsDeadLettered.WithLabelValues(testTopic, mapper.ReasonDecode)); got != 0 {
				t.Errorf("%v records dead-lettered: the test's records must all map", got)
			}
		})
	}
}

// TestRefusedRowWaitsWhileItsRecordCannotBeReadBack: the broker refuses the re-read of a refused row's
// record twice (an authorization error, as after an ACL change). The partition is stuck meanwhile (not
// ready, failures counted, committed offset held at the row), nothing is skipped, and once the re-read
// succeeds the dead letter goes out, the partition recovers and commits to the end.
func TestRefusedRowWaitsWhileItsRecordCannotBeReadBack(t *testing.T) {
	f := newFixture(t, 0, 0)
	f.produceWithHeaders(60)
	refused := batcher.Source{Topic: testTopic, Partition: 2, Offset: 25}
	w := newMemWriter()
	w.reject = func(s batcher.Source) bool { return s == refused }
	// The pipeline's consumer fetches at most 256 KiB; the re-read client asks for 1 MiB, which tells its
	// fetches apart. The first two are refused; later ones get empty answers until the test has seen the
	// stuck partition (counted stuck, both failures counted).
	var refusedFetches atomic.Int32
	letThrough := make(chan struct{})
	f.cluster.ControlKey(kmsg.Fetch.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		f.cluster.KeepControl()
		fr := req.(*kmsg.FetchRequest)
		if fr.MaxBytes != 1<<20 {
			return nil, nil, false
		}
		select {
		case <-letThrough:
			return nil, nil, false
		default:
		}
		if refusedFetches.Load() >= 2 {
			// Held back until the test has seen the stuck state; an empty answer makes the client ask again.
			resp := fr.ResponseKind().(*kmsg.FetchResponse)
			return resp, nil, true
		}
		refusedFetches.Add(1)
		resp := fr.ResponseKind().(*kmsg.FetchResponse)
		for _, rt := range fr.Topics {
			st := kmsg.NewFetchResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewFetchResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	m := f.start(f.config(func(c *config.Config) { c.Kafka.FetchMaxBytes = 256 << 10 }), w)
	f.waitFor(20*time.Second, "the stuck partition to be counted", func() bool {
		return testutil.ToFloat64(m.pl.metrics.RecordsFailed.WithLabelValues(testTopic)) >= 2 &&
			testutil.ToFloat64(m.pl.metrics.StuckPartitions.WithLabelValues(testTopic)) == 1
	})
	if c := f.committed(); c[2] > refused.Offset {
		t.Fatalf("partition 2 committed %d past the refused row at %d before its dead letter", c[2], refused.Offset)
	}
	close(letThrough)
	f.waitFor(20*time.Second, "committed offsets to reach the end", f.allCommitted)
	f.waitFor(10*time.Second, "the partition no longer counted stuck", func() bool {
		return testutil.ToFloat64(m.pl.metrics.StuckPartitions.WithLabelValues(testTopic)) == 0
	})
	dls := f.deadLetters(1)
	if len(dls) != 1 || header(dls[0], deadletter.HeaderSourceOffset) != "25" || header(dls[0], "trace-id") != "trace-2-25" ||
		string(dls[0].Value) != `{"n":25,"p":2}` {
		t.Errorf("dead letters %v, want the one for 2/25 with its value and headers", dls)
	}
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
}

// TestMissingSliceRowWhoseRecordIsGoneIsDeadLetteredAsTheRow guards the slice reason as the test above
// guards the write reason: a row whose slice table is missing under bucket.missing_slice: dead_letter,
// whose record retention removed before the sender could read it back, is dead-lettered as the row. The
// write stage used to hand such a row over without the row, and the partition stopped there for good.
func TestMissingSliceRowWhoseRecordIsGoneIsDeadLetteredAsTheRow(t *testing.T) {
	f := newFixture(t, 100, 0)
	w := newMemWriter()
	missing := batcher.Source{Topic: testTopic, Partition: 1, Offset: 40}
	w.hold = func(s batcher.Source) bool { return s == missing }
	w.fail = func(s batcher.Source) error {
		if s == missing {
			return &cassandra.WriteError{Table: "events_20240101", Reason: cassandra.FailMissingTable,
				Err: errors.New("table events_20240101 does not exist")}
		}
		return nil
	}
	m := f.start(f.config(func(c *config.Config) {
		tp := c.Topics["events"]
		tp.Bucket.Slice = "1d"
		tp.Bucket.MissingSlice = config.MissingSliceDeadLetter
		c.Topics["events"] = tp
	}), w)
	r := f.deadLetterOfGoneRecord(w)
	if header(r, deadletter.HeaderReason) != deadletter.ReasonSlice || header(r, deadletter.HeaderSourceMissing) != "true" ||
		header(r, deadletter.HeaderSourceOffset) != "40" || string(r.Value) != `{"v":"{\"n\":40}"}` {
		t.Errorf("dead letter: value %s reason %q missing %q offset %q; want the row of offset 40 with reason slice",
			r.Value, header(r, deadletter.HeaderReason), header(r, deadletter.HeaderSourceMissing), header(r, deadletter.HeaderSourceOffset))
	}
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(m.pl.metrics.RecordsFailed.WithLabelValues(testTopic)); got != 0 {
		t.Errorf("sink_records_failed_total %v, want 0", got)
	}
}
