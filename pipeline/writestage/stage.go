package writestage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/cassandra"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/internal/backoff"
	"github.com/bucketsink/sink/pipeline/consumer"
	"github.com/bucketsink/sink/pipeline/deadletter"
	"github.com/bucketsink/sink/pipeline/metrics"
	"github.com/bucketsink/sink/pipeline/offsets"
)

// BatchWriter writes one batch: one partition's rows, or several partitions' joined by Config.Group.
// *cassandra.Writer implements it; tests and benchmarks plug in their own. A nil error means every row not listed in the failures was written; a non-nil error
// means nothing of the batch may be acknowledged.
type BatchWriter interface {
	Write(ctx context.Context, b *batcher.Batch) ([]cassandra.RowFailure, error)
}

// SliceMaker creates the table of the slice of topics.<topic> that holds at, and returns its name
// (keyspace.table) and whether it ran the statement (false: it made the table a moment ago).
// *cassandra.SliceMaker implements it.
type SliceMaker interface {
	CreateSlice(ctx context.Context, topic string, at time.Time) (table string, ran bool, err error)
}

// Owner is one assignment of a Kafka partition whose rows the stage holds: the stage tells it what
// became of them. A later assignment of the same partition is another Owner.
type Owner interface {
	TopicPartition() offsets.TopicPartition
	// Context ends when the assignment is given up.
	Context() context.Context
	// Complete: the rows at offsets were written.
	Complete(offsets []int64)
	// WriteRetrying: the batch holding the rows of entry (topics.<name>; a record has one row per entry)
	// was given back unwritten and will be sent again.
	WriteRetrying(offsets []int64, entry, reason string, attempt int, err error)
	// WriteRecovered: rows of entry given back before are no longer held by a failed write.
	WriteRecovered(offsets []int64, entry string)
	// WriteAbandoned: the stage will not send the rows of entry again (stopping, or the partition given up).
	WriteAbandoned(offsets []int64, entry string)
	// DeadLetterWrite: the row at offset cannot be written (reason deadletter.ReasonWrite: Cassandra
	// refused it; deadletter.ReasonSlice: its slice table does not exist) and goes to the dead-letter
	// topic. row is that row, never nil: the dead letter is made of it if the record has left Kafka.
	DeadLetterWrite(offset int64, reason, table string, row *batcher.Row, err error)
}

// Topic is what the stage knows of an entry (topics.<name>), one table a Kafka topic feeds.
type Topic struct {
	Name         string // the key under topics: in the configuration
	Sliced       bool
	MissingSlice string // bucket.missing_slice
}

// Config is what a Stage needs; every field is required but Slices.
type Config struct {
	Batcher     batcher.Config
	MaxInFlight int // writer.max_in_flight
	Writer      BatchWriter
	// Group joins batches taken out of the batcher together into fewer requests (batches of several
	// partitions that share a coordinator; *cassandra.Writer.Group); nil sends each batch alone.
	Group func([]*batcher.Batch) []*batcher.Batch
	// JoinMax is the most partitions Group joins into one request (writer.group_max_partitions): with a
	// Group, a slot taken for due batches tops the oldest of them up to that many (see slotPolicy).
	JoinMax int
	// Slices creates a missing slice table for topics with bucket.missing_slice: create; nil: such rows
	// wait, retried with backoff, until the table exists.
	Slices  SliceMaker
	Topics  map[string]Topic // by entry name (batcher.Target.Entry): a Kafka topic may feed several
	Metrics *metrics.Metrics
	Log     *slog.Logger
	Now     func() time.Time
	Backoff backoff.Policy // writer.retry_initial .. writer.retry_max, between probes of a failing table
	// Stopping reports whether the process is shutting down: failed batches are then not retried.
	Stopping func() bool
	// BudgetFull reports whether the byte budget is full: the stage then picks batches by efficiency.
	BudgetFull func() bool
	// Written is called with every request Cassandra acknowledged (readiness, event-time lag, largest
	// partitions): once for a batch of several partitions joined by Group (Batch.EachPartition and
	// batcher.PartitionLen give its partitions).
	Written func(*batcher.Batch)
	// WriteFailed, when set, is called with every batch given back after its retries ran out on errors of
	// the cluster (cassandra.FailExhausted: timeouts, unavailable replicas, overload), for readiness.
	WriteFailed func(error)
	// Fence, when set, is asked before every send of a batch for the context to send it under (ctx is
	// the stage's). It may wait (the pipeline holds a split topic's batch until the member's group
	// session is confirmed), and the context it returns may end before ctx does: a write it ends is
	// fenced again and sent again. An error means the batch must not be sent: its partitions are no
	// longer ours, and the next owner replays its rows.
	Fence func(ctx context.Context, b *batcher.Batch, owners []Owner) (context.Context, error)
}

// Msg carries rows of one partition to the stage.
type Msg struct {
	Rows  []batcher.Row
	Owner Owner
	flush chan struct{} // non-nil: take every open batch out of the batcher, then close it
}

// Stage writes the workers' rows. One goroutine feeds its batcher (held by the slot policy) from a bounded
// channel and hands batches to writer goroutines, at most maxInFlight at a time: full batches as soon as
// a slot is free, due ones (linger passed, on a single reused timer) likewise. While every slot is taken, due batches stay in the batcher
// and keep growing, so under load batches fill up instead of going out small: the batch size adapts to
// what Cassandra absorbs. The stage keeps taking rows meanwhile; memory stays bounded by the byte budget,
// at which the poll loop stops polling. Workers block only when the channel is full, never the poll loop.
type Stage struct {
	cfg Config
	in  chan Msg
	// pol owns the batcher and the requests waiting for a slot, and decides which goes next (Run's alone).
	pol   *slotPolicy
	slots chan struct{}
	freed chan struct{}   // a write finished and gave its slot back
	jobs  chan readyBatch // batches for the writer goroutines, one per slot taken
	wg    sync.WaitGroup  // writer goroutines
	ctx   context.Context // canceled at hard stop: in-flight writes give up
	done  chan struct{}   // closed when run returns

	gatesMu sync.Mutex
	gates   map[string]*gateEntry // by keyspace.table, while batches of the table are retried

	batched, acknowledged prometheus.Observer // sink_stage_seconds of the stages the stage sees
	// counters holds the written-rows counters (*entryCounters) of each Target's entry, by Target (a
	// pointer: a string key would be allocated for every lookup). Found by their label values they cost
	// two lookups, hashing and locking, for every batch written. It holds a Target the mapper holds too.
	counters sync.Map
}

// entryCounters are the counters an entry's written rows add to.
type entryCounters struct {
	records prometheus.Counter // sink_records_written_total{topic}
	rows    prometheus.Counter // sink_entry_rows_written_total{topic, entry}
}

// countersOf returns the counters of t's entry, made at its first batch.
func (s *Stage) countersOf(t *batcher.Target) *entryCounters {
	if c, ok := s.counters.Load(t); ok {
		return c.(*entryCounters)
	}
	m := s.cfg.Metrics
	c, _ := s.counters.LoadOrStore(t, &entryCounters{
		records: m.RecordsWritten.WithLabelValues(t.Topic),
		rows:    m.EntryRowsWritten.WithLabelValues(t.Topic, t.Entry),
	})
	return c.(*entryCounters)
}

// New returns a stage for cfg; start it with Run. ctx is canceled at hard stop: in-flight writes give up.
func New(ctx context.Context, cfg Config) *Stage {
	maxInFlight := cfg.MaxInFlight
	s := &Stage{
		cfg:   cfg,
		in:    make(chan Msg, 2*maxInFlight),
		pol:   newSlotPolicy(cfg.Batcher, maxInFlight, cfg.Group, cfg.JoinMax),
		slots: make(chan struct{}, maxInFlight),
		jobs:  make(chan readyBatch, maxInFlight),
		freed: make(chan struct{}, 1),
		ctx:   ctx,
		done:  make(chan struct{}),
		gates: make(map[string]*gateEntry),

		batched:      cfg.Metrics.StageSeconds.WithLabelValues(metrics.StageBatched),
		acknowledged: cfg.Metrics.StageSeconds.WithLabelValues(metrics.StageAcknowledged),
	}
	s.pol.taken = func(waited time.Duration) { s.batched.Observe(waited.Seconds()) }
	return s
}

// Run is the stage's goroutine. When in is closed it writes out what it holds and returns; when ctx ends
// it returns at once, leaving what it holds unwritten (and unacknowledged). It moves data only: rows into
// the policy, batches the policy picks onto the slots it offers to take, and the timer to when the
// policy says; every decision is the policy's (slotPolicy).
func (s *Stage) Run() {
	defer close(s.done)
	// maxInFlight writer goroutines for the stage's life: a batch taken a slot for goes to one of them.
	// One goroutine per write cost a goroutine start and the growth of its stack to the driver's depth,
	// every batch. Closing jobs lets them finish what was handed to them and exit.
	for range cap(s.slots) {
		s.wg.Add(1)
		go s.writer()
	}
	defer close(s.jobs)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var armed time.Time // the deadline the timer is set for; zero when stopped
	in := s.in
	pol := s.pol
	for {
		if in == nil && pol.empty() {
			return // closed and everything handed to writers
		}
		var slot, freed chan struct{}
		take, holdPartial := pol.offer(s.cfg.Now(), len(s.slots))
		if take {
			slot = s.slots
		}
		if holdPartial {
			// Only a write that finishes can let held partial batches go before they are overdue. Anything
			// else a finished write changes is seen through the slot case (a ready request waits for room
			// in slots) or not at all (nothing to send): woken for every write, the loop went round once
			// more per request for nothing at a steady rate. A token left from then is taken here later,
			// costing one look.
			freed = s.freed
		}
		select {
		case <-s.ctx.Done():
			timer.Stop()
			return
		case <-freed:
			// A slot came back: look again at what may be sent.
		case m, ok := <-in:
			switch {
			case !ok:
				in = nil
				pol.flushAll(s.cfg.Now())
			case m.flush != nil:
				pol.flushAll(s.cfg.Now())
				close(m.flush)
			default:
				pol.add(m.Owner, m.Rows, s.cfg.Now())
				consumer.PutHandOff(m.Rows)
			}
		case <-timer.C:
			armed = time.Time{}
			pol.timerFired()
		case slot <- struct{}{}:
			if rb, ok := pol.next(s.cfg.Now(), len(s.slots), s.cfg.BudgetFull()); ok {
				s.start(rb)
			} else {
				<-s.slots // nothing to send after all
			}
		}
		s.cfg.Metrics.OpenBatchRows.Set(float64(pol.b.Rows()))
		if at, change := pol.wake(holdPartial, armed); change {
			if at.IsZero() {
				timer.Stop()
			} else {
				timer.Reset(max(at.Sub(s.cfg.Now()), 0))
			}
			armed = at
		}
	}
}

// Flush asks the stage to take every open batch out of the batcher and waits until it has, or until ctx
// ends. The batches are then written as slots allow.
func (s *Stage) Flush(ctx context.Context) bool {
	done := make(chan struct{})
	select {
	case s.in <- Msg{flush: done}:
	case <-ctx.Done():
		return false
	}
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

// start hands one batch to a writer goroutine, on the slot the caller took. jobs holds as many batches as
// there are slots, so this never blocks.
func (s *Stage) start(rb readyBatch) {
	s.cfg.Metrics.BatchRows.Observe(float64(len(rb.b.Rows)))
	s.cfg.Metrics.BatchBytes.Observe(float64(rb.b.Bytes))
	s.cfg.Metrics.BatchPartitions.Observe(float64(max(rb.b.Partitions, 1)))
	s.jobs <- rb
}

// writer writes the batches handed to it until jobs is closed.
func (s *Stage) writer() {
	defer s.wg.Done()
	for rb := range s.jobs {
		s.write(rb, 1)
	}
}

// write sends one batch on the slot the caller took, and gives the slot back. attempt counts the times
// the stage has sent this batch (the writer's own retries inside one Write not included).
//
// A batch the writer gives back unwritten is sent again later (retryLater), for as long as one of its
// partitions is still ours and the process is not stopping: every reason a batch can fail for (a table
// that does not exist yet, Cassandra failing for longer than writer.retry_attempts, a refused statement,
// an unknown error) may go away without a restart. For a sliced topic, a missing slice table is first
// created, or its rows dead-lettered, as the topic's bucket.missing_slice says.
func (s *Stage) write(rb readyBatch, attempt int) {
	b, owners := rb.b, rb.owners
	kept := false // the batch goes on to a retry, which releases it
	defer func() {
		if !kept {
			batcher.Release(b) // after everything below: none of it keeps b.Rows
			putOwners(owners)
		}
	}()
	defer func() {
		<-s.slots
		select {
		case s.freed <- struct{}{}:
		default:
		}
	}()
	var failures []cassandra.RowFailure
	var err error
	for {
		ctx, ferr := s.fence(b, owners)
		if ferr != nil {
			eachOwner(b, owners, nil, func(p Owner, offsets []int64) { p.WriteAbandoned(offsets, b.Target.Entry) })
			s.gateLeft(rb, false)
			return
		}
		failures, err = s.cfg.Writer.Write(ctx, b)
		if err != nil {
			var created bool
			if created, err = s.createSlice(b, err); created {
				failures, err = s.cfg.Writer.Write(ctx, b) // the table exists now
			}
		}
		if err == nil || ctx == s.ctx || ctx.Err() == nil || s.ctx.Err() != nil {
			break
		}
		// The fence ended the write, not the stage: it is fenced again before it is sent again.
	}
	if err != nil {
		kept = s.failed(rb, attempt, err)
		return
	}
	s.acknowledged.Observe(max(s.cfg.Now().Sub(rb.taken), 0).Seconds())
	if rb.retried {
		eachOwner(b, owners, nil, func(p Owner, offsets []int64) { p.WriteRecovered(offsets, b.Target.Entry) })
		s.gateLeft(rb, true)
	}
	if written := len(b.Rows) - len(failures); written > 0 && !b.Target.Bookkeeping {
		c := s.countersOf(b.Target)
		c.records.Add(float64(written))
		c.rows.Add(float64(written))
		s.cfg.Written(b)
	}
	var rejected map[int]error
	if len(failures) > 0 {
		rejected = make(map[int]error, len(failures))
		for _, f := range failures {
			for i := range b.Rows {
				if b.Rows[i].Partition == f.Row.Partition && b.Rows[i].Offset == f.Row.Offset {
					rejected[i] = f.Err
				}
			}
		}
		for i, ferr := range rejected {
			p := owners[i]
			if p == nil {
				continue
			}
			// The sender re-reads the record; the row goes along in case the record is gone by then.
			row := b.Rows[i]
			p.DeadLetterWrite(b.Rows[i].Offset, deadletter.ReasonWrite, b.Target.Table, &row, ferr)
		}
	}
	eachOwner(b, owners, rejected, func(p Owner, offsets []int64) { p.Complete(offsets) })
}

// fence returns the context to send b under (Config.Fence), or an error when it must not be sent.
func (s *Stage) fence(b *batcher.Batch, owners []Owner) (context.Context, error) {
	if s.cfg.Fence == nil {
		return s.ctx, nil
	}
	return s.cfg.Fence(s.ctx, b, owners)
}

// createSlice creates the table of a batch that failed because its table does not exist, when the topic
// is sliced with bucket.missing_slice: create. It reports whether the table now exists, and the error to
// go on with: err itself, or err with the reason the creation failed. A failed creation leaves the batch
// to be retried with backoff like any other failure (the ERROR log of a stuck partition carries the
// cause, rate-limited), and the creation with it.
func (s *Stage) createSlice(b *batcher.Batch, err error) (bool, error) {
	src := b.Rows[0].Source()
	ti, known := s.cfg.Topics[b.Target.Entry]
	if !known || !ti.Sliced || ti.MissingSlice != config.MissingSliceCreate || s.cfg.Slices == nil ||
		!cassandra.IsMissingTable(err) || s.ctx.Err() != nil {
		return false, err
	}
	table, ran, cerr := s.cfg.Slices.CreateSlice(s.ctx, ti.Name, b.Rows[0].EventTime())
	if cerr != nil {
		return false, fmt.Errorf("%w; creating it failed: %v", err, cerr)
	}
	if ran {
		s.cfg.Log.Info("created a missing slice table", slog.String("topic", src.Topic), slog.String("table", table),
			slog.Int("partition", int(src.Partition)), slog.Int64("offset", src.Offset))
	}
	return true, nil
}

// failed deals with a batch the writer gave back unwritten. It reports whether the batch was kept for a
// retry (retryLater then owns it).
func (s *Stage) failed(rb readyBatch, attempt int, err error) bool {
	b, owners := rb.b, rb.owners
	reason := cassandra.FailUnknown
	var we *cassandra.WriteError
	if errors.As(err, &we) {
		reason = we.Reason
	}
	if s.ctx.Err() != nil || s.cfg.Stopping() || reason == cassandra.FailCanceled || !AnyOwned(owners) {
		eachOwner(b, owners, nil, func(p Owner, offsets []int64) { p.WriteAbandoned(offsets, b.Target.Entry) })
		s.gateLeft(rb, false)
		return false
	}
	if ti, known := s.cfg.Topics[b.Target.Entry]; known && ti.Sliced &&
		ti.MissingSlice == config.MissingSliceDeadLetter && reason == cassandra.FailMissingTable {
		s.deadLetterSlice(b, owners, err)
		s.gateLeft(rb, false)
		return false
	}
	s.cfg.Metrics.WriteStageRetries.WithLabelValues(b.Target.Topic, reason).Inc()
	if reason == cassandra.FailExhausted && s.cfg.WriteFailed != nil {
		s.cfg.WriteFailed(err)
	}
	eachOwner(b, owners, nil, func(p Owner, offsets []int64) {
		p.WriteRetrying(offsets, b.Target.Entry, reason, attempt, err)
	})
	s.gateFailed(&rb)
	s.retryLater(rb, attempt)
	return true
}

// deadLetterSlice sends every row of a batch whose slice table does not exist to its partition's
// dead-letter topic, with reason slice and an error naming the table. The sender reads each record back
// from Kafka and completes it once produced; each row goes along, as for a refused row, so that a record
// Kafka no longer holds by then is dead-lettered as its row instead of stopping the partition.
func (s *Stage) deadLetterSlice(b *batcher.Batch, owners []Owner, err error) {
	table := tableOf(b)
	for i := range b.Rows {
		p := owners[i]
		if p == nil {
			continue
		}
		off := b.Rows[i].Offset
		p.WriteRecovered([]int64{off}, table) // no longer the write stage's: the sender finishes it
		derr := fmt.Errorf("slice table %s does not exist (event time %s) and topics.%s.bucket.missing_slice is dead_letter: %w",
			table, b.Rows[i].EventTime().Format(time.RFC3339Nano), b.Target.Entry, err)
		row := b.Rows[i] // a copy: b's row array is reused once the batch is released
		p.DeadLetterWrite(off, deadletter.ReasonSlice, table, &row, derr)
	}
}

// AnyOwned reports whether at least one partition of a batch's rows is still ours (Owner.Context not done).
func AnyOwned(owners []Owner) bool { return ownedBy(owners) != nil }

// ownedBy returns the first owner of a batch's rows whose partition is still ours, or nil.
func ownedBy(owners []Owner) Owner {
	for _, p := range owners {
		if p != nil && p.Context().Err() == nil {
			return p
		}
	}
	return nil
}

// eachOwner calls fn once per run of consecutive rows with the same owner, with their offsets, skipping
// the rows in skip. Rows of one batch usually come from one Kafka partition, so this is one call.
func eachOwner(b *batcher.Batch, owners []Owner, skip map[int]error, fn func(Owner, []int64)) {
	var cur Owner
	buf := offsetsPool.Get().(*[]int64)
	defer offsetsPool.Put(buf)
	offsets := (*buf)[:0]
	for i := range b.Rows {
		if _, ok := skip[i]; ok {
			continue
		}
		p := owners[i]
		if p != cur && len(offsets) > 0 {
			if cur != nil {
				fn(cur, offsets)
			}
			offsets = offsets[:0] // fn keeps nothing of it
		}
		cur = p
		offsets = append(offsets, b.Rows[i].Offset)
	}
	if cur != nil && len(offsets) > 0 {
		fn(cur, offsets)
	}
	*buf = offsets[:0]
}

// Per-batch bookkeeping is reused: a batch's owners live until its write is acknowledged, the
// offsets only during eachOwner.
var (
	ownersPool  = sync.Pool{New: func() any { return new([]Owner) }}
	offsetsPool = sync.Pool{New: func() any { return new([]int64) }}
)

func getOwners(n int) []Owner {
	if p := ownersPool.Get().(*[]Owner); cap(*p) >= n {
		return (*p)[:n]
	}
	return make([]Owner, n)
}

// putOwners takes back a batch's owners once its write is acknowledged; cleared, it keeps no
// partition alive.
func putOwners(o []Owner) {
	clear(o)
	ownersPool.Put(&o)
}

// In is where workers send their rows (a bounded channel: the only place a worker waits).
func (s *Stage) In() chan<- Msg { return s.in }

// Close tells the stage that no more rows come: it writes out what it holds, then Run returns.
func (s *Stage) Close() { close(s.in) }

// Done is closed when Run has returned.
func (s *Stage) Done() <-chan struct{} { return s.done }

// Wait waits for Run to return and for every writer goroutine and retry to end.
func (s *Stage) Wait() {
	<-s.done
	s.wg.Wait()
}

// InFlight is the number of write slots taken: batches being written.
func (s *Stage) InFlight() int { return len(s.slots) }

// RetryGates is the number of tables whose batches are being retried.
func (s *Stage) RetryGates() int {
	s.gatesMu.Lock()
	defer s.gatesMu.Unlock()
	return len(s.gates)
}

// Owners is the number of assignments the stage refers to; only meaningful once Done is closed.
func (s *Stage) Owners() int { return len(s.pol.owners) }
