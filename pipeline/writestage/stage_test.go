package writestage

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/cassandra"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/internal/backoff"
	"github.com/bucketsink/sink/pipeline/deadletter"
	"github.com/bucketsink/sink/pipeline/metrics"
	"github.com/bucketsink/sink/pipeline/offsets"
)

// spinLimit is how many times a fake owner lets its context be looked at before it calls the looker a
// spinner and gives itself up, which ends a busy retry loop so the test can report it instead of hanging.
const spinLimit = 10_000

// fakeOwner is one assignment of a Kafka partition. It records what the stage tells it and counts the
// looks at its context: every turn of a retry loop looks at the context of each owner still assigned, so
// the count is the number of turns.
type fakeOwner struct {
	tp     offsets.TopicPartition
	ctx    context.Context
	cancel context.CancelFunc
	looks  atomic.Int64
	spun   atomic.Bool

	mu          sync.Mutex
	completed   []int64
	retrying    []int64
	retryingOf  []string // the entry of each WriteRetrying call
	recovered   []int64
	abandoned   []int64
	deadLetters []fakeDeadLetter
}

type fakeDeadLetter struct {
	offset int64
	reason string
	row    *batcher.Row
}

func newOwner(partition int32) *fakeOwner {
	ctx, cancel := context.WithCancel(context.Background())
	return &fakeOwner{tp: offsets.TopicPartition{Topic: "events", Partition: partition}, ctx: ctx, cancel: cancel}
}

func (o *fakeOwner) TopicPartition() offsets.TopicPartition { return o.tp }

func (o *fakeOwner) Context() context.Context {
	if o.looks.Add(1) > spinLimit && !o.spun.Swap(true) {
		o.cancel()
	}
	return o.ctx
}

func (o *fakeOwner) Complete(offs []int64) { o.note(&o.completed, offs) }
func (o *fakeOwner) WriteRetrying(offs []int64, entry, _ string, _ int, _ error) {
	o.note(&o.retrying, offs)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.retryingOf = append(o.retryingOf, entry)
}
func (o *fakeOwner) WriteRecovered(offs []int64, _ string) { o.note(&o.recovered, offs) }
func (o *fakeOwner) WriteAbandoned(offs []int64, _ string) { o.note(&o.abandoned, offs) }
func (o *fakeOwner) DeadLetterWrite(offset int64, reason, _ string, row *batcher.Row, _ error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.deadLetters = append(o.deadLetters, fakeDeadLetter{offset: offset, reason: reason, row: row})
}

func (o *fakeOwner) note(to *[]int64, offs []int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	*to = append(*to, offs...)
}

// seen returns a copy of one of the owner's records.
func (o *fakeOwner) seen(of *[]int64) []int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(*of)
}

// fakeWriter fails every batch with err while err is set, and counts the batches it is asked to write.
// While hold is set, a write waits until hold is closed before it returns.
type fakeWriter struct {
	mu       sync.Mutex
	err      error
	hold     chan struct{}
	writes   int
	inFlight int
}

func (w *fakeWriter) Write(_ context.Context, _ *batcher.Batch) ([]cassandra.RowFailure, error) {
	w.mu.Lock()
	w.writes++
	w.inFlight++
	hold := w.hold
	w.mu.Unlock()
	if hold != nil {
		<-hold
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.inFlight--
	return nil, w.err
}

func (w *fakeWriter) set(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.err = err
}

func (w *fakeWriter) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writes
}

var target = &batcher.Target{Topic: "events", Keyspace: "ks", Table: "readings", Columns: []string{"id"}, Entry: "readings"}

// row is a row of entity key from the owner's partition at offset.
func row(o *fakeOwner, key string, offset int64) batcher.Row {
	return batcher.Row{Target: target, Key: key, Size: 16, Partition: o.tp.Partition, Offset: offset}
}

// testConfig is the Config of a test's stage writing through w: batches close at maxRows, retries wait
// retry, no slice maker, the budget never full, nothing to tell when a batch is written. Tests change what
// they are about.
func testConfig(w BatchWriter, maxRows, maxInFlight int, retry time.Duration) Config {
	return Config{
		Batcher:     batcher.Config{MaxRows: maxRows, Linger: time.Hour},
		MaxInFlight: maxInFlight,
		Writer:      w,
		Metrics:     metrics.NewMetrics(prometheus.NewRegistry()),
		Log:         slog.New(slog.NewTextHandler(io.Discard, nil)),
		Now:         time.Now,
		Backoff:     backoff.Policy{Initial: retry, Max: retry},
		Stopping:    func() bool { return false },
		BudgetFull:  func() bool { return false },
		Written:     func(*batcher.Batch) {},
	}
}

// startStage runs a stage writing through w, batches closing at maxRows, and stops it when the test
// ends: the stage's context is canceled (every retry gives up) and Run is waited for. opts change the
// stage's Config before it starts.
func startStage(t *testing.T, w BatchWriter, maxRows int, retry time.Duration, topics map[string]Topic, opts ...func(*Config)) *Stage {
	ctx, cancel := context.WithCancel(context.Background())
	cfg := testConfig(w, maxRows, 4, retry)
	cfg.Topics = topics
	for _, o := range opts {
		o(&cfg)
	}
	s := New(ctx, cfg)
	go s.Run()
	t.Cleanup(func() {
		cancel()
		s.Wait()
	})
	return s
}

var errDown = errors.New("cassandra is down")

// sendMixedBatch sends one row of entity e1 from each of two partitions, 0 at offset 10 and 1 at offset
// 20 (round-robin producing), into a stage whose batches close at two rows: one batch of two owners.
// It returns once the stage has done what it can with it.
func sendMixedBatch(s *Stage) (a, b *fakeOwner) {
	a, b = newOwner(0), newOwner(1)
	s.In() <- Msg{Rows: []batcher.Row{row(a, "e1", 10)}, Owner: a}
	s.In() <- Msg{Rows: []batcher.Row{row(b, "e1", 20)}, Owner: b}
	synctest.Wait()
	return a, b
}

// TestRetriedBatchDoesNotSpinWhenOneOfItsOwnersIsRevoked guards against the retry of a batch mixing two
// Kafka partitions waiting on the first partition's context only: once that partition was revoked, its
// closed context woke the retry loop on every turn, a core per batch for the whole outage. Revoking one
// owner must cost a turn or two, the retry must go on for the owner that stays, and its rows be written
// once Cassandra is back.
func TestRetriedBatchDoesNotSpinWhenOneOfItsOwnersIsRevoked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &fakeWriter{err: errDown}
		s := startStage(t, w, 2, time.Hour, nil)
		a, b := sendMixedBatch(s)
		if got := w.count(); got != 1 {
			t.Fatalf("writes before the revoke = %d, want 1 (one batch of both partitions)", got)
		}
		if !slices.Equal(a.seen(&a.retrying), []int64{10}) || !slices.Equal(b.seen(&b.retrying), []int64{20}) {
			t.Fatalf("retrying: a %v, b %v; want [10] and [20]", a.seen(&a.retrying), b.seen(&b.retrying))
		}

		before := b.looks.Load()
		a.cancel()
		synctest.Wait()
		if b.spun.Load() {
			t.Fatalf("the retry loop looked at the remaining owner's context %d times after the other owner was revoked: it spins", spinLimit)
		}
		if turns := b.looks.Load() - before; turns > 3 {
			t.Errorf("revoking one owner cost the retry loop %d turns, want at most 3", turns)
		}
		if got := b.seen(&b.abandoned); len(got) != 0 {
			t.Fatalf("the batch was abandoned (%v) though partition 1 is still assigned", got)
		}

		w.set(nil)
		time.Sleep(time.Hour) // past the backoff: the retry probes the table again
		synctest.Wait()
		if got := b.seen(&b.completed); !slices.Equal(got, []int64{20}) {
			t.Errorf("completed on partition 1 = %v, want [20]", got)
		}
		if got := s.RetryGates(); got != 0 {
			t.Errorf("retry gates left after the batch was written: %d", got)
		}
	})
}

// TestRetryEndsWhenEveryOwnerOfTheBatchIsGone guards the other half of the retry loop's promise: it waits
// on an owner still assigned, and gives the batch up as soon as the last one is revoked, without waiting
// for the backoff to pass.
func TestRetryEndsWhenEveryOwnerOfTheBatchIsGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &fakeWriter{err: errDown}
		s := startStage(t, w, 2, time.Hour, nil)
		a, b := sendMixedBatch(s)
		start := time.Now()
		a.cancel()
		synctest.Wait()
		b.cancel()
		synctest.Wait()
		if elapsed := time.Since(start); elapsed != 0 {
			t.Errorf("the retry ended %v after the last owner was revoked, want at once", elapsed)
		}
		if !slices.Equal(a.seen(&a.abandoned), []int64{10}) || !slices.Equal(b.seen(&b.abandoned), []int64{20}) {
			t.Errorf("abandoned: a %v, b %v; want [10] and [20]", a.seen(&a.abandoned), b.seen(&b.abandoned))
		}
		if got := s.RetryGates(); got != 0 {
			t.Errorf("retry gates left after every owner was revoked: %d", got)
		}
		if got := w.count(); got != 1 {
			t.Errorf("writes = %d, want 1: a batch whose owners are all gone is not sent again", got)
		}
	})
}

// TestRetryGateProbesAFailingTableWithOneBatchAtATime guards the retry gate: while a table fails, its
// waiting batches stay out of Cassandra but one, the probe; once a probe is written, every waiting batch
// goes.
func TestRetryGateProbesAFailingTableWithOneBatchAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const batches = 4
		w := &fakeWriter{err: errDown}
		s := startStage(t, w, 1, time.Second, nil)
		o := newOwner(0)
		for i := range batches {
			s.In() <- Msg{Rows: []batcher.Row{row(o, string(rune('a'+i)), int64(i))}, Owner: o}
		}
		synctest.Wait()
		if got := w.count(); got != batches {
			t.Fatalf("first attempts = %d, want %d", got, batches)
		}

		// Hold the next write in Cassandra: however long it takes, no other batch of the table is sent.
		probe := make(chan struct{})
		w.mu.Lock()
		w.hold = probe
		w.mu.Unlock()
		time.Sleep(time.Second) // past the backoff (less than writer.retry_max)
		synctest.Wait()
		time.Sleep(time.Minute)
		synctest.Wait()
		w.mu.Lock()
		writes, inFlight := w.writes, w.inFlight
		w.hold = nil
		w.mu.Unlock()
		if writes != batches+1 || inFlight != 1 {
			t.Fatalf("while a probe is in flight: %d writes, %d in flight; want %d and 1", writes, inFlight, batches+1)
		}
		close(probe) // the probe fails
		synctest.Wait()
		if got := s.RetryGates(); got != 1 {
			t.Fatalf("retry gates = %d, want 1 (one table)", got)
		}

		w.set(nil)
		time.Sleep(time.Second)
		synctest.Wait()
		if got := w.count(); got != batches+1+batches {
			t.Errorf("writes = %d, want %d: the written probe opens the gate for every waiting batch", got, 2*batches+1)
		}
		completed := o.seen(&o.completed)
		slices.Sort(completed)
		if !slices.Equal(completed, []int64{0, 1, 2, 3}) {
			t.Errorf("completed = %v, want [0 1 2 3]", completed)
		}
		if got := s.RetryGates(); got != 0 {
			t.Errorf("retry gates left after every batch was written: %d", got)
		}
	})
}

// TestMissingSliceDeadLetterCarriesTheRow guards against a row whose slice table does not exist being
// handed to the dead-letter sender without the row: the sender re-reads the record from Kafka, and when
// the record has left Kafka by then it had nothing to dead-letter and stopped the partition. The stage
// finds the settings by the row's entry (topics.readings), not by its Kafka topic (events), which
// several entries may read.
func TestMissingSliceDeadLetterCarriesTheRow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		missing := &cassandra.WriteError{Keyspace: "ks", Table: "readings", Reason: cassandra.FailMissingTable,
			Err: errors.New("unconfigured table readings")}
		w := &fakeWriter{err: missing}
		s := startStage(t, w, 2, time.Hour, map[string]Topic{
			"readings": {Name: "readings", Sliced: true, MissingSlice: config.MissingSliceDeadLetter},
		})
		a, b := sendMixedBatch(s)
		for _, o := range []*fakeOwner{a, b} {
			o.mu.Lock()
			dls := slices.Clone(o.deadLetters)
			o.mu.Unlock()
			if len(dls) != 1 {
				t.Fatalf("partition %d: %d dead letters, want 1", o.tp.Partition, len(dls))
			}
			d := dls[0]
			if d.reason != deadletter.ReasonSlice {
				t.Errorf("partition %d: reason %q, want %q", o.tp.Partition, d.reason, deadletter.ReasonSlice)
			}
			if d.row == nil {
				t.Fatalf("partition %d: the slice dead letter at offset %d carries no row", o.tp.Partition, d.offset)
			}
			if d.row.Offset != d.offset || d.row.Partition != o.tp.Partition || d.row.Target != target {
				t.Errorf("partition %d: dead letter at offset %d carries the row of %+v", o.tp.Partition, d.offset, d.row.Source())
			}
		}
		if got := s.RetryGates(); got != 0 {
			t.Errorf("retry gates = %d, want 0: dead-lettered rows are not retried", got)
		}
	})
}

// TestGivenBackRowsNameTheirEntryNotTheirTable: two entries of one Kafka topic may write one table, and a
// record then has a row of each in it; the owner counts the rows a failed write holds by entry, so the
// stage must name the entry, or the second row of the record would be taken for the first.
func TestGivenBackRowsNameTheirEntryNotTheirTable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &fakeWriter{err: errDown}
		s := startStage(t, w, 1, time.Hour, nil)
		o := newOwner(0)
		other := &batcher.Target{Topic: target.Topic, Keyspace: target.Keyspace, Table: target.Table, Columns: target.Columns, Entry: "readings-copy"}
		second := row(o, "e1", 10)
		second.Target = other
		s.In() <- Msg{Rows: []batcher.Row{row(o, "e1", 10), second}, Owner: o}
		synctest.Wait()
		o.mu.Lock()
		got := slices.Clone(o.retryingOf)
		o.mu.Unlock()
		slices.Sort(got)
		if want := []string{"readings", "readings-copy"}; !slices.Equal(got, want) {
			t.Errorf("rows given back named %v, want the entries %v", got, want)
		}
	})
}

// refusingWriter writes every batch but refuses, as Cassandra refuses a row it cannot take, the rows of
// one Kafka partition and offset.
type refusingWriter struct {
	partition int32
	offset    int64
}

func (w refusingWriter) Write(_ context.Context, b *batcher.Batch) ([]cassandra.RowFailure, error) {
	var failed []cassandra.RowFailure
	for _, r := range b.Rows {
		if r.Partition == w.partition && r.Offset == w.offset {
			failed = append(failed, cassandra.RowFailure{Row: r, Err: errors.New("refused")})
		}
	}
	return failed, nil
}

// TestRefusedRowIsTheOneOfItsPartitionAndOffset: a batch of one entity holds rows of several Kafka
// partitions, and two of them may have the same offset. A row Cassandra refuses is matched to the
// batch's rows by its partition and offset (its topic is the batch's Target's): only that row is
// dead-lettered, and the same offset of the other partition is written and acknowledged.
func TestRefusedRowIsTheOneOfItsPartitionAndOffset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := startStage(t, refusingWriter{partition: 1, offset: 10}, 2, time.Hour, nil)
		a, b := newOwner(0), newOwner(1)
		s.In() <- Msg{Rows: []batcher.Row{row(a, "e1", 10)}, Owner: a}
		s.In() <- Msg{Rows: []batcher.Row{row(b, "e1", 10)}, Owner: b}
		synctest.Wait()
		if got := a.seen(&a.completed); !slices.Equal(got, []int64{10}) || len(a.deadLetters) != 0 {
			t.Errorf("partition 0: completed %v, %d dead letters; want [10] and none", got, len(a.deadLetters))
		}
		if got := b.seen(&b.completed); len(got) != 0 || len(b.deadLetters) != 1 || b.deadLetters[0].offset != 10 ||
			b.deadLetters[0].reason != deadletter.ReasonWrite {
			t.Errorf("partition 1: completed %v, dead letters %+v; want none and one at offset 10", got, b.deadLetters)
		}
	})
}
