package cassandra

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/internal/backoff"
	"github.com/bucketsink/sink/packed"
)

// Outcomes of one write attempt, the values of the outcome label of sink_write_duration_seconds.
const (
	OutcomeOK    = "ok"    // Cassandra acknowledged the write at the requested consistency
	OutcomeRetry = "retry" // failed; it will be sent again
	OutcomeError = "error" // failed; no more attempts
)

// Observer receives the writer's measurements; the pipeline implements it with its metrics.
// Its methods are called from the goroutines calling Write, concurrently.
type Observer interface {
	// OnBatch is called after every attempt, with the rows and bytes of what was sent (a whole batch;
	// while isolating bad rows, one partition of a refused request or one row), how long the attempt
	// took, and its outcome.
	OnBatch(rows, bytes int, d time.Duration, outcome string)
	// OnRetry is called before each retry with the reason: timeout, unavailable, overloaded or other.
	OnRetry(reason string)
	// InFlight is called with +1 when a request starts and -1 when it ends.
	InFlight(delta int)
}

type nopObserver struct{}

func (nopObserver) OnBatch(int, int, time.Duration, string) {}
func (nopObserver) OnRetry(string)                          {}
func (nopObserver) InFlight(int)                            {}

// WriterConfig bounds the writer's concurrency and retries. Zero fields take the defaults named;
// they match the writer.* keys of the configuration.
type WriterConfig struct {
	// MaxInFlight bounds concurrent requests to Cassandra (writer.max_in_flight). Default 64.
	MaxInFlight int
	// RetryInitial and RetryMax shape the backoff (backoff.Policy): the n-th retry waits a uniformly
	// random time in [0, min(RetryMax, RetryInitial·2^(n-1))) ("full jitter", so retrying writers
	// spread out). Defaults 100ms and 10s.
	RetryInitial, RetryMax time.Duration
	// RetryAttempts caps the requests sent for one batch (or one partition or row sent alone while
	// isolating), the first included; 0 retries until the context ends (writer.retry_attempts). A batch
	// whose attempts run out comes back as a *WriteError with Reason FailExhausted.
	RetryAttempts int
	// AttemptTimeout bounds one request; 0 leaves it to the session timeout (cassandra.timeout).
	// A request that runs out of time is retried like a server timeout, never taken as written.
	AttemptTimeout time.Duration
	// Group bounds the requests Group makes of batches due together (writer.group_max_partitions,
	// writer.group_max_bytes). Zero fields take config.DefaultGroupMaxPartitions and
	// config.DefaultGroupMaxBytes.
	Group GroupConfig
}

// Validate reports negative fields and a RetryMax below RetryInitial.
func (c WriterConfig) Validate() error {
	var errs []error
	if c.MaxInFlight < 0 {
		errs = append(errs, fmt.Errorf("writer.max_in_flight %d is negative; want 1 or more (0 = 64)", c.MaxInFlight))
	}
	if c.RetryInitial < 0 || c.RetryMax < 0 {
		errs = append(errs, fmt.Errorf("writer.retry_initial %v and writer.retry_max %v must not be negative", c.RetryInitial, c.RetryMax))
	}
	if c.RetryInitial > 0 && c.RetryMax > 0 && c.RetryMax < c.RetryInitial {
		errs = append(errs, fmt.Errorf("writer.retry_max %v is below writer.retry_initial %v", c.RetryMax, c.RetryInitial))
	}
	if c.RetryAttempts < 0 {
		errs = append(errs, fmt.Errorf("writer.retry_attempts %d is negative; want 0 (until shutdown) or more", c.RetryAttempts))
	}
	if c.AttemptTimeout < 0 {
		errs = append(errs, fmt.Errorf("attempt timeout %v is negative", c.AttemptTimeout))
	}
	if c.Group.MaxPartitions < 0 || c.Group.MaxBytes < 0 {
		errs = append(errs, fmt.Errorf("writer.group_max_partitions %d and writer.group_max_bytes %d must not be negative", c.Group.MaxPartitions, c.Group.MaxBytes))
	}
	return errors.Join(errs...)
}

// Writer writes batches as UNLOGGED batches (of one partition, or of several that share their replicas:
// see Group) with bounded concurrency, retries transient failures itself, and isolates rows Cassandra
// refuses. It is safe for concurrent use;
// run one Write per goroutine, up to MaxInFlight of them make progress at once.
type Writer struct {
	s       *Session
	cfg     WriterConfig
	backoff backoff.Policy
	obs     Observer
	sem     chan struct{}
}

// NewWriter returns a Writer on s. obs may be nil. NewWriter panics if cfg.Validate fails: the
// values come from validated configuration, so a bad one is a programming error.
func NewWriter(s *Session, cfg WriterConfig, obs Observer) *Writer {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	if obs == nil {
		obs = nopObserver{}
	}
	cfg = cfg.withDefaults()
	return &Writer{
		s: s, cfg: cfg, obs: obs, sem: make(chan struct{}, cfg.MaxInFlight),
		backoff: backoff.Policy{Initial: cfg.RetryInitial, Max: cfg.RetryMax},
	}
}

// Write writes every row of b, retrying transient failures with capped, jittered backoff.
//
// When Cassandra refuses the batch for a reason retrying cannot fix and that names a row (an invalid
// value, a marshaling error), each row is written alone (a request of several partitions is first
// written partition by partition, and only a refused partition row by row); the rows still refused
// come back as failures, every other row has been written. A non-nil error means the batch (or one
// of its rows) was not written, because retries ran out, ctx ended, or the failure is not the rows'
// fault (a missing table, a refused statement, no authorization, an unknown error): then no row of b
// may be acknowledged. The error is a *WriteError whose Reason says which.
func (w *Writer) Write(ctx context.Context, b *batcher.Batch) ([]RowFailure, error) {
	if b == nil || len(b.Rows) == 0 {
		return nil, nil
	}
	t := b.Target
	cons := w.s.cons
	if t.Consistency != "" {
		c, err := parseConsistency(t.Consistency)
		if err != nil {
			return nil, w.fail(ctx, b, 0, classFatal, fmt.Errorf("consistency of %s.%s: %w", t.Keyspace, t.Table, err))
		}
		cons = c
	}

	// Prepare first (cached after the first batch of a statement): a statement the server refuses
	// (no such table, a type mismatch in the CQL) is not the rows' fault; it must not dead-letter
	// every row as if each one were bad. Only a statement not cached yet asks the server, so only then
	// does it take an in-flight slot and an attempt's deadline: a cached one took both for a map lookup,
	// on every request.
	info, ok := w.s.cachedStatement(t.Keyspace, t.Insert)
	if !ok {
		attempts, cls, err := w.retry(ctx, func(ctx context.Context) error {
			var err error
			info, err = w.s.statement(ctx, t.Keyspace, t.Insert)
			return err
		}, nil)
		if err != nil {
			return nil, w.fail(ctx, b, attempts, cls, fmt.Errorf("preparing the insert of %s.%s: %w", t.Keyspace, t.Table, err))
		}
	}

	// A row with the wrong number of values would fail the whole batch with a driver error that
	// names no row; take such rows out first.
	rows := b.Rows
	var failed []RowFailure
	for i := range rows {
		if packed.Count(rows[i].Packed) != info.binds {
			failed, rows = splitMismatched(rows, info.binds, t)
			break
		}
	}
	if len(rows) == 0 {
		return failed, nil
	}

	attempts, cls, err := w.send(ctx, t, cons, rows, info.binds)
	if err == nil {
		return failed, nil
	}
	if cls != classRejected {
		// A missing table at EXECUTE (the statement was prepared before the table was dropped) lands
		// here too: the batch comes back whole, never isolated row by row.
		return nil, w.fail(ctx, b, attempts, cls, err)
	}
	if b.Partitions <= 1 || batcher.PartitionLen(rows) == len(rows) {
		return w.isolate(ctx, b, cons, rows, info.binds, err, failed)
	}
	// A request of several partitions (Group): one bad row refuses it whole. Each partition goes again
	// as the batch it was before it was joined, and only a partition Cassandra refuses is sent row by
	// row: a bad row costs a request per partition and one per row of its own partition, not one per
	// row of the request. Sequential on purpose, as in isolate.
	for len(rows) > 0 {
		n := batcher.PartitionLen(rows)
		part := rows[:n:n]
		rows = rows[n:]
		attempts, cls, err := w.send(ctx, t, cons, part, info.binds)
		switch {
		case err == nil:
			continue
		case cls != classRejected:
			return nil, w.fail(ctx, b, attempts, cls, fmt.Errorf("isolating the partitions of a refused request: offset %d: %w", part[0].Offset, err))
		}
		if failed, err = w.isolate(ctx, b, cons, part, info.binds, err, failed); err != nil {
			return nil, err
		}
	}
	return failed, nil
}

// isolate finds the rows of rows, one partition's (or a request's of one partition), that Cassandra
// refuses: refused is its answer to them sent together. A single row is refused as it is; more are
// each sent alone. It returns failed with the refused rows appended, or the error of a row that failed
// for another reason (nothing of b may then be acknowledged). Sequential on purpose: a poison batch
// is rare, and it should not take more than its share of MaxInFlight.
func (w *Writer) isolate(ctx context.Context, b *batcher.Batch, cons gocql.Consistency, rows []batcher.Row, binds int, refused error, failed []RowFailure) ([]RowFailure, error) {
	t := b.Target
	if len(rows) == 1 {
		return append(failed, RowFailure{Row: rows[0], Err: rowError(t, rows[0], refused)}), nil
	}
	for i := range rows {
		attempts, cls, err := w.send(ctx, t, cons, rows[i:i+1], binds)
		if err == nil {
			continue
		}
		if cls != classRejected {
			return nil, w.fail(ctx, b, attempts, cls, fmt.Errorf("isolating rows of a refused batch: offset %d: %w", rows[i].Offset, err))
		}
		failed = append(failed, RowFailure{Row: rows[i], Err: rowError(t, rows[i], err)})
	}
	return failed, nil
}

// Group joins the batches of bs that may share a request (Session.Group, with the writer's
// GroupConfig). The pipeline's write stage calls it with the batches that are due together.
func (w *Writer) Group(bs []*batcher.Batch) []*batcher.Batch { return w.s.Group(w.cfg.Group, bs) }

// splitMismatched separates the rows whose value count does not match the statement.
func splitMismatched(rows []batcher.Row, binds int, t *batcher.Target) ([]RowFailure, []batcher.Row) {
	var failed []RowFailure
	ok := make([]batcher.Row, 0, len(rows))
	for _, r := range rows {
		if n := packed.Count(r.Packed); n != binds {
			failed = append(failed, RowFailure{Row: r, Err: fmt.Errorf("writing to %s.%s: the row has %d values, the insert binds %d",
				t.Keyspace, t.Table, n, binds)})
			continue
		}
		ok = append(ok, r)
	}
	return failed, ok
}

func rowError(t *batcher.Target, r batcher.Row, err error) error {
	return fmt.Errorf("writing to %s.%s refused (topic %s partition %d offset %d): %w",
		t.Keyspace, t.Table, t.Topic, r.Partition, r.Offset, err)
}

func (w *Writer) fail(ctx context.Context, b *batcher.Batch, attempts int, cls class, err error) error {
	return &WriteError{
		Keyspace: b.Target.Keyspace, Table: b.Target.Table, Rows: len(b.Rows),
		Attempts: attempts, Source: b.Rows[0].Source(), Reason: failReason(ctx, cls, err), Err: err,
	}
}

// buildBatch makes the driver batch for rows. Every entry is marked idempotent: the driver honours
// retry and speculative-execution policies only for idempotent batches, and ours are upserts with
// deterministic timestamps. The keyspace is what the token-aware policy looks the replicas up by;
// the routing key is the first entry's partition key: the driver sends the batch to one of that
// partition's replicas, which are those of every partition of a batch Group joined.
// The arguments of packed rows are unpacked by bd and valid until its Reset. Every row binds binds
// values: Write took out the rows that do not.
func buildBatch(gs *gocql.Session, t *batcher.Target, cons gocql.Consistency, rows []batcher.Row, binds int, bd *packed.Binder) *gocql.Batch {
	gb := gs.Batch(gocql.UnloggedBatch)
	gb.Entries = make([]gocql.BatchEntry, len(rows))
	bd.Reserve(len(rows) * binds)
	for i := range rows {
		gb.Entries[i] = gocql.BatchEntry{Stmt: t.Insert, Args: bd.Args(rows[i].Packed), Idempotent: true}
	}
	gb.SetKeyspace(t.Keyspace)
	gb.Consistency(cons)
	return gb
}

// binders hold the unpacked arguments of batches being sent.
var binders = sync.Pool{New: func() any { return new(packed.Binder) }}

// send writes rows as one batch with retries, reporting every attempt to the observer.
func (w *Writer) send(ctx context.Context, t *batcher.Target, cons gocql.Consistency, rows []batcher.Row, binds int) (int, class, error) {
	bd := binders.Get().(*packed.Binder)
	defer func() { bd.Reset(); binders.Put(bd) }()     // the driver has framed the values by the time ExecContext returns
	gb := buildBatch(w.s.gs, t, cons, rows, binds, bd) // v2 batches are immutable during execution: reuse across attempts
	size := 0
	for i := range rows {
		size += int(rows[i].Size)
	}
	return w.retry(ctx, gb.ExecContext, func(d time.Duration, outcome string) {
		w.obs.OnBatch(len(rows), size, d, outcome)
	})
}

// retry runs op until it succeeds, fails for a reason retrying cannot fix, runs out of attempts, or
// ctx ends. Each attempt holds one in-flight slot; the backoff between attempts holds none. It
// returns the attempts made and, on failure, the class of the last error (classFatal when ctx ended,
// classTransient when the attempts ran out).
func (w *Writer) retry(ctx context.Context, op func(context.Context) error, observe func(time.Duration, string)) (int, class, error) {
	for attempt := 1; ; attempt++ {
		select {
		case w.sem <- struct{}{}:
		case <-ctx.Done():
			return attempt - 1, classFatal, fmt.Errorf("waiting for an in-flight slot: %w", context.Cause(ctx))
		}
		w.obs.InFlight(1)
		actx, cancel := ctx, context.CancelFunc(func() {})
		if w.cfg.AttemptTimeout > 0 {
			actx, cancel = context.WithTimeout(ctx, w.cfg.AttemptTimeout)
		}
		start := time.Now()
		err := op(actx)
		d := time.Since(start)
		cancel()
		w.obs.InFlight(-1) // before the slot is free, so the gauge never reads above MaxInFlight
		<-w.sem

		if err == nil {
			if observe != nil {
				observe(d, OutcomeOK)
			}
			return attempt, 0, nil
		}
		cls, reason := classify(err)
		if ctx.Err() != nil {
			// Our caller gave up (shutdown, revoke): whatever the driver said, stop here.
			cls = classFatal
			err = fmt.Errorf("%w (last error: %v)", context.Cause(ctx), err)
		}
		outOfAttempts := w.cfg.RetryAttempts > 0 && attempt >= w.cfg.RetryAttempts
		again := cls == classTransient && !outOfAttempts
		if !again {
			if observe != nil {
				observe(d, OutcomeError)
			}
			return attempt, cls, err
		}
		if observe != nil {
			observe(d, OutcomeRetry)
		}
		w.obs.OnRetry(reason)
		if serr := backoff.Sleep(ctx, w.backoff.Delay(attempt)); serr != nil {
			return attempt, classFatal, fmt.Errorf("%w (last error: %v)", serr, err)
		}
	}
}
