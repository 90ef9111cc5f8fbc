package pipeline

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/cassandra"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/mapper"
	"github.com/bucketsink/sink/pipeline/deadletter"
	"github.com/bucketsink/sink/pipeline/offsets"
)

// Tests of a Kafka topic read by several entries: a record has a row in each entry's table, and its
// offset is committed once all of them are acknowledged or it is dead-lettered.

// The two entries of the test topic, each writing its own table.
var (
	targetA = &batcher.Target{Topic: testTopic, Keyspace: "ks", Table: "table_a", Columns: []string{"v"}, Entry: "a"}
	targetB = &batcher.Target{Topic: testTopic, Keyspace: "ks", Table: "table_b", Columns: []string{"v"}, Entry: "b"}
)

// twoEntries maps every record for entries a and b. A value "bad-<entries> ..." is refused by the
// entries named in <entries> ("bad-a", "bad-b", "bad-ab"), and "skip-<entries> ..." skipped by them (its
// row would be born expired); every other record is mapped by both.
type twoEntries struct{}

func (twoEntries) MapAll(_ context.Context, r mapper.Record, out []mapper.Mapped) ([]mapper.Mapped, error) {
	refusers, skippers := "", ""
	if v, ok := strings.CutPrefix(string(r.Value), "bad-"); ok {
		refusers, _, _ = strings.Cut(v, " ")
	}
	if v, ok := strings.CutPrefix(string(r.Value), "skip-"); ok {
		skippers, _, _ = strings.Cut(v, " ")
	}
	for _, t := range []*batcher.Target{targetA, targetB} {
		if strings.Contains(skippers, t.Entry) {
			out = append(out, mapper.Mapped{Entry: t.Entry, Err: &mapper.RecordError{Topic: r.Topic, Partition: r.Partition,
				Offset: r.Offset, Reason: mapper.ReasonExpired, Entry: t.Entry, Err: errors.New("the row would be born expired")}})
			continue
		}
		if strings.Contains(refusers, t.Entry) {
			out = append(out, mapper.Mapped{Entry: t.Entry, Err: &mapper.RecordError{Topic: r.Topic, Partition: r.Partition,
				Offset: r.Offset, Reason: mapper.ReasonMap, Entry: t.Entry, Err: errors.New("column v: no field v")}})
			continue
		}
		out = append(out, mapper.Mapped{Entry: t.Entry, Row: batcher.Row{Target: t, Key: string(r.Key),
			Packed: packText(string(r.Value)), Size: int32(len(r.Value) + 16), EventMicros: r.Timestamp.UnixMicro(),
			Partition: r.Partition, Offset: r.Offset}})
	}
	return out, nil
}

func (m twoEntries) MapEntry(ctx context.Context, entry string, r mapper.Record) (batcher.Row, error) {
	ms, _ := m.MapAll(ctx, r, nil)
	for _, x := range ms {
		if x.Entry == entry {
			return x.Row, x.Err
		}
	}
	return batcher.Row{}, errors.New("no entry " + entry)
}

// tablesWriter is Cassandra in a map per table. hold makes the batch of a row wait for release.
type tablesWriter struct {
	mu      sync.Mutex
	rows    map[string]map[batcher.Source]int // table → row → writes
	hold    func(table string, src batcher.Source) bool
	release chan struct{}
}

func newTablesWriter() *tablesWriter {
	return &tablesWriter{rows: map[string]map[batcher.Source]int{}, release: make(chan struct{})}
}

func (w *tablesWriter) Write(ctx context.Context, b *batcher.Batch) ([]cassandra.RowFailure, error) {
	for _, r := range b.Rows {
		if w.hold != nil && w.hold(b.Target.Table, r.Source()) {
			select {
			case <-w.release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			break
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	t := w.rows[b.Target.Table]
	if t == nil {
		t = map[batcher.Source]int{}
		w.rows[b.Target.Table] = t
	}
	for _, r := range b.Rows {
		t[r.Source()]++
	}
	return nil, nil
}

func (w *tablesWriter) count(table string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.rows[table])
}

func (w *tablesWriter) has(table string, src batcher.Source) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rows[table][src] > 0
}

// twoEntriesConfig is the fixture's config with entries a and b reading its topic.
func (f *fixture) twoEntriesConfig(dlq string) *config.Config {
	return f.config(func(c *config.Config) {
		c.Topics = map[string]config.Topic{}
		for _, e := range []string{"a", "b"} {
			c.Topics[e] = config.Topic{Topic: testTopic, Keyspace: "ks", Table: "table_" + e, DeadLetterTopic: dlq, Bucket: config.Bucket{Width: "1h"}}
		}
		c.ApplyDefaults()
	})
}

// headers returns the values of every header of r named key, in order.
func headers(r *kgo.Record, key string) []string {
	var out []string
	for _, h := range r.Headers {
		if h.Key == key {
			out = append(out, string(h.Value))
		}
	}
	return out
}

// TestRecordIsCommittedOnlyOnceItsRowInEveryTableIs holds one record's row in table b while its row in
// table a is acknowledged: the committed offset must not pass the record until the held row is written.
func TestRecordIsCommittedOnlyOnceItsRowInEveryTableIs(t *testing.T) {
	f := newFixture(t, 50, 0)
	w := newTablesWriter()
	held := batcher.Source{Topic: testTopic, Partition: 0, Offset: 20}
	w.hold = func(table string, s batcher.Source) bool { return table == "table_b" && s == held }
	m := f.startFull(f.twoEntriesConfig(testDLQ), twoEntries{}, w, nil)

	f.waitFor(20*time.Second, "every other row written", func() bool {
		return w.count("table_a") == 3*50 && w.count("table_b") == 3*50-1
	})
	f.waitFor(20*time.Second, "partitions 1 and 2 committed", func() bool {
		c := f.committed()
		return c[1] == 50 && c[2] == 50 && c[0] == 20
	})
	if !w.has("table_a", held) {
		t.Fatal("the held record's row in table_a is not written")
	}
	// Give the periodic committer many intervals (100ms) to get it wrong.
	for range 20 {
		if c := f.committed(); c[0] > 20 {
			t.Fatalf("partition 0 committed %d past offset 20, whose row in table_b is not acknowledged", c[0])
		}
		if mk := m.pl.client.MarkedOffsets()[testTopic][0]; mk.Offset > 20 {
			t.Fatalf("partition 0 marked %d past offset 20, whose row in table_b is not acknowledged", mk.Offset)
		}
		time.Sleep(25 * time.Millisecond)
	}
	close(w.release)
	f.waitFor(20*time.Second, "all committed after the ack", f.allCommitted)
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	for _, e := range []string{"a", "b"} {
		if got := testutil.ToFloat64(m.pl.metrics.EntryRowsWritten.WithLabelValues(testTopic, e)); got != 3*50 {
			t.Errorf("sink_entry_rows_written_total{entry=%q} %v, want %d", e, got, 3*50)
		}
	}
	if got := testutil.ToFloat64(m.pl.metrics.BufferedBytes); got != 0 {
		t.Errorf("sink_buffered_bytes %v after shutdown, want 0", got)
	}
}

// runRefused produces a record that some entries refuse, between good ones, and waits until every
// partition is committed to its end. It returns the one dead letter and the stopped member.
func runRefused(t *testing.T, value string) (*fixture, *tablesWriter, *member, *kgo.Record, batcher.Source) {
	t.Helper()
	f := newFixture(t, 30, 0)
	at := f.produceTo(0, `{"n":"before"}`, value, `{"n":"after"}`) + 1
	w := newTablesWriter()
	m := f.startFull(f.twoEntriesConfig(testDLQ), twoEntries{}, w, nil)
	f.waitFor(20*time.Second, "committed offsets to reach the end (the partition goes on)", f.allCommitted)
	dls := f.deadLetters(1)
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	if len(dls) != 1 {
		t.Fatalf("%d dead letters, want 1", len(dls))
	}
	if got := testutil.ToFloat64(m.pl.metrics.RecordsDeadLettered.WithLabelValues(testTopic, deadletter.ReasonMap)); got != 1 {
		t.Errorf("sink_records_dead_lettered_total %v, want 1: one dead letter per record", got)
	}
	src := batcher.Source{Topic: testTopic, Partition: 0, Offset: at}
	r := dls[0]
	if header(r, deadletter.HeaderSourceOffset) != strconv.FormatInt(at, 10) || header(r, deadletter.HeaderSourcePartition) != "0" ||
		string(r.Value) != value {
		t.Errorf("dead letter of partition %s offset %s value %q, want 0, %d, %q", header(r, deadletter.HeaderSourcePartition),
			header(r, deadletter.HeaderSourceOffset), r.Value, at, value)
	}
	for _, after := range []int64{at - 1, at + 1} {
		s := batcher.Source{Topic: testTopic, Partition: 0, Offset: after}
		if !w.has("table_a", s) || !w.has("table_b", s) {
			t.Errorf("offset %d around the refused record not written in both tables", after)
		}
	}
	return f, w, m, r, src
}

// TestRecordOneEntryRefusesIsDeadLetteredOnceAndItsOtherRowWritten: entry a refuses a record that entry
// b maps: one dead letter names entry a and its table, b's row is written, the partition goes on.
func TestRecordOneEntryRefusesIsDeadLetteredOnceAndItsOtherRowWritten(t *testing.T) {
	_, w, m, r, src := runRefused(t, "bad-a {}")
	if got, want := headers(r, deadletter.HeaderEntry), []string{"a"}; !slices.Equal(got, want) {
		t.Errorf("sink.entry %v, want %v", got, want)
	}
	if got, want := headers(r, deadletter.HeaderTable), []string{"ks.table_a"}; !slices.Equal(got, want) {
		t.Errorf("sink.table %v, want %v", got, want)
	}
	if got, want := headers(r, deadletter.HeaderReason), []string{deadletter.ReasonMap}; !slices.Equal(got, want) {
		t.Errorf("sink.reason %v, want %v", got, want)
	}
	if w.has("table_a", src) || !w.has("table_b", src) {
		t.Errorf("refused record: in table_a %v, in table_b %v; want only in table_b", w.has("table_a", src), w.has("table_b", src))
	}
	if got := testutil.ToFloat64(m.pl.metrics.EntryDeadLetters.WithLabelValues(testTopic, "a", deadletter.ReasonMap)); got != 1 {
		t.Errorf("sink_entry_dead_letters_total{entry=a} %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.pl.metrics.EntryDeadLetters.WithLabelValues(testTopic, "b", deadletter.ReasonMap)); got != 0 {
		t.Errorf("sink_entry_dead_letters_total{entry=b} %v, want 0", got)
	}
}

// TestRecordTwoEntriesRefuseIsOneDeadLetterNamingBoth: a record both entries refuse is dead-lettered
// once, with a group of headers per entry (in entry-name order), and has no row anywhere.
func TestRecordTwoEntriesRefuseIsOneDeadLetterNamingBoth(t *testing.T) {
	_, w, m, r, src := runRefused(t, "bad-ab {}")
	if got, want := headers(r, deadletter.HeaderEntry), []string{"a", "b"}; !slices.Equal(got, want) {
		t.Errorf("sink.entry %v, want %v", got, want)
	}
	if got, want := headers(r, deadletter.HeaderTable), []string{"ks.table_a", "ks.table_b"}; !slices.Equal(got, want) {
		t.Errorf("sink.table %v, want %v", got, want)
	}
	if got := headers(r, deadletter.HeaderError); len(got) != 2 || got[0] == "" || got[1] == "" {
		t.Errorf("sink.error %q, want one per entry", got)
	}
	if w.has("table_a", src) || w.has("table_b", src) {
		t.Error("a record both entries refuse has a row")
	}
	for _, e := range []string{"a", "b"} {
		if got := testutil.ToFloat64(m.pl.metrics.EntryDeadLetters.WithLabelValues(testTopic, e, deadletter.ReasonMap)); got != 1 {
			t.Errorf("sink_entry_dead_letters_total{entry=%q} %v, want 1", e, got)
		}
	}
}

// TestRecordOneEntryRefusesWithoutDeadLetterTopicStopsThePartition: with no dead-letter topic, one
// entry's refusal stops the partition at the record, as a bad record of a single entry does.
func TestRecordOneEntryRefusesWithoutDeadLetterTopicStopsThePartition(t *testing.T) {
	f := newFixture(t, 30, 0)
	at := f.produceTo(0, "bad-b {}", `{"n":"after"}`)
	w := newTablesWriter()
	m := f.startFull(f.twoEntriesConfig(""), twoEntries{}, w, nil)
	f.waitFor(20*time.Second, "partitions 1 and 2 committed, partition 0 up to the refused record", func() bool {
		c := f.committed()
		return c[1] == 30 && c[2] == 30 && c[0] == at
	})
	f.waitFor(20*time.Second, "partition 0 stuck", func() bool {
		return testutil.ToFloat64(m.pl.metrics.StuckPartitions.WithLabelValues(testTopic)) == 1
	})
	for range 10 {
		if c := f.committed(); c[0] > at {
			t.Fatalf("partition 0 committed %d past the refused record at %d", c[0], at)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// retryingTables fails the first write of each table; table_b's second write then waits for release.
type retryingTables struct {
	*tablesWriter
	mu      sync.Mutex
	calls   map[string]int
	waiting chan struct{} // closed when table_b's second write waits
}

func (w *retryingTables) Write(ctx context.Context, b *batcher.Batch) ([]cassandra.RowFailure, error) {
	w.mu.Lock()
	w.calls[b.Target.Table]++
	n := w.calls[b.Target.Table]
	w.mu.Unlock()
	switch {
	case n == 1:
		return nil, errors.New("server error: something unknown")
	case n == 2 && b.Target.Table == "table_b":
		close(w.waiting)
		select {
		case <-w.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return w.tablesWriter.Write(ctx, b)
}

// TestRecordWithRowsOfTwoFailingTablesStaysStuckUntilBothAreWritten: both tables' writes of a record
// fail; table a's retry succeeds while table b's is still failing (its retry in flight). The record
// still holds its partition: stuck, counted once as blocked, nothing committed, until b's row is
// written. The partition used to count as recovered as soon as one table's write was.
func TestRecordWithRowsOfTwoFailingTablesStaysStuckUntilBothAreWritten(t *testing.T) {
	f := newFixture(t, 0, 0)
	f.produceTo(0, `{"n":1}`)
	w := &retryingTables{tablesWriter: newTablesWriter(), calls: map[string]int{}, waiting: make(chan struct{})}
	m := f.startFull(f.twoEntriesConfig(testDLQ), twoEntries{}, w, nil)
	src := batcher.Source{Topic: testTopic, Partition: 0, Offset: 0}
	f.waitFor(20*time.Second, "table a's row written and table b's retry in flight", func() bool {
		select {
		case <-w.waiting:
			return w.has("table_a", src)
		default:
			return false
		}
	})
	tp := offsets.TopicPartition{Topic: testTopic, Partition: 0}
	for range 20 {
		if got := testutil.ToFloat64(m.pl.metrics.StuckPartitions.WithLabelValues(testTopic)); got != 1 {
			t.Fatalf("sink_stuck_partitions %v while table b's row of the record is still failing, want 1", got)
		}
		m.pl.mu.Lock()
		p := m.pl.parts[tp]
		m.pl.mu.Unlock()
		p.mu.Lock()
		blocked := len(p.blockers)
		p.mu.Unlock()
		if blocked != 1 {
			t.Fatalf("%d records blocked, want 1: the record whose table b row is retried", blocked)
		}
		if c := f.committed(); c[0] > 0 {
			t.Fatalf("partition 0 committed %d past the record whose row in table b is not written", c[0])
		}
		time.Sleep(25 * time.Millisecond)
	}
	close(w.release)
	f.waitFor(20*time.Second, "all committed once table b's row is written", f.allCommitted)
	f.waitFor(20*time.Second, "no partition stuck", func() bool {
		return testutil.ToFloat64(m.pl.metrics.StuckPartitions.WithLabelValues(testTopic)) == 0
	})
}

// TestRecordBlockedSeveralWaysCountsOnceUntilTheLast: a record whose rows in two tables are held by
// failed writes and whose dead letter was given up at a stop counts once among the records a stopping
// partition no longer waits for, and stays counted until the last of these is undone.
func TestRecordBlockedSeveralWaysCountsOnceUntilTheLast(t *testing.T) {
	p := &partition{tr: offsets.NewTracker(0), blockers: map[int64]int{}, held: map[heldRow]bool{}, heldRecords: map[int64]int{}}
	if err := p.tr.Register(5, 0, 0, 3); err != nil {
		t.Fatal(err)
	}
	p.hold(5, "ks.a")
	p.hold(5, "ks.b")
	p.hold(5, "ks.a") // the same batch failing again
	p.block(5)        // its dead letter given up
	if len(p.blockers) != 1 {
		t.Fatalf("%d records blocked, want 1", len(p.blockers))
	}
	if _, free := p.unhold(5, "ks.a"); free || len(p.blockers) != 1 {
		t.Fatalf("after table a's row was written: no row held %v, %d records blocked; want false, 1", free, len(p.blockers))
	}
	if _, free := p.unhold(5, "ks.b"); !free || len(p.blockers) != 1 {
		t.Fatalf("after table b's row was written: no row held %v, %d records blocked; want true, 1 (its dead letter)", free, len(p.blockers))
	}
	p.unblock(5)
	if len(p.blockers) != 0 {
		t.Fatalf("%d records blocked once nothing blocks the record, want 0", len(p.blockers))
	}
}

// TestRecordIsSkippedOnlyWhenEveryEntrySkipsIt: a record one entry skips is written by the other and
// committed once that row is; a record both skip is committed with no row; neither is dead-lettered.
func TestRecordIsSkippedOnlyWhenEveryEntrySkipsIt(t *testing.T) {
	f := newFixture(t, 10, 0)
	at := f.produceTo(0, "skip-a {}", "skip-ab {}", `{"n":"after"}`)
	w := newTablesWriter()
	m := f.startFull(f.twoEntriesConfig(testDLQ), twoEntries{}, w, nil)
	f.waitFor(20*time.Second, "committed offsets to reach the end", f.allCommitted)
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	one, both := batcher.Source{Topic: testTopic, Partition: 0, Offset: at}, batcher.Source{Topic: testTopic, Partition: 0, Offset: at + 1}
	if w.has("table_a", one) || !w.has("table_b", one) {
		t.Errorf("the record a skips: in table_a %v, in table_b %v; want only in table_b", w.has("table_a", one), w.has("table_b", one))
	}
	if w.has("table_a", both) || w.has("table_b", both) {
		t.Error("the record both entries skip has a row")
	}
	if got := testutil.ToFloat64(m.pl.metrics.RecordsSkipped.WithLabelValues(testTopic, mapper.ReasonExpired)); got != 3 {
		t.Errorf("sink_records_skipped_total %v, want 3 (one per entry that skips a record)", got)
	}
	if got := testutil.ToFloat64(m.pl.metrics.RecordsDeadLettered.WithLabelValues(testTopic, mapper.ReasonExpired)); got != 0 {
		t.Errorf("sink_records_dead_lettered_total{reason=expired} %v, want 0", got)
	}
}

// TestEveryEntryOfATopicFitsARecordsParts: config.Validate lets at most config.MaxEntriesPerTopic entries
// read one Kafka topic; a record of them all, plus its dead letter, must fit the tracker's parts.
func TestEveryEntryOfATopicFitsARecordsParts(t *testing.T) {
	if config.MaxEntriesPerTopic+1 > offsets.MaxParts {
		t.Errorf("config.MaxEntriesPerTopic %d: a record of every entry and a dead letter has %d parts, the tracker holds %d",
			config.MaxEntriesPerTopic, config.MaxEntriesPerTopic+1, offsets.MaxParts)
	}
}

// TestOnePartRecoveringLeavesThePartitionStuckOnAnotherPartOfTheRecord: a record's held row and its
// failing dead letter stop the partition apart; the row recovering must not unstick it while the dead
// letter still fails (before, both were one flag per offset).
func TestOnePartRecoveringLeavesThePartitionStuckOnAnotherPartOfTheRecord(t *testing.T) {
	f := newFixture(t, 0, 0)
	f.produceTo(0, `{"n":1}`)
	m := f.startFull(f.twoEntriesConfig(testDLQ), twoEntries{}, newTablesWriter(), nil)
	f.waitFor(20*time.Second, "the record committed", f.allCommitted)
	tp := offsets.TopicPartition{Topic: testTopic, Partition: 0}
	m.pl.mu.Lock()
	p := m.pl.parts[tp]
	m.pl.mu.Unlock()
	stuck := func() float64 { return testutil.ToFloat64(m.pl.metrics.StuckPartitions.WithLabelValues(testTopic)) }
	p.setStuckBy(5, stuckWrite, true)
	p.setStuckBy(5, stuckDeadLetter, true)
	p.setStuckBy(5, stuckWrite, false)
	if got := stuck(); got != 1 {
		t.Fatalf("sink_stuck_partitions %v once the row recovered while the record's dead letter still fails, want 1", got)
	}
	p.setStuckBy(5, stuckDeadLetter, false)
	if got := stuck(); got != 0 {
		t.Fatalf("sink_stuck_partitions %v once every part of the record recovered, want 0", got)
	}
}
