package cassandra

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/packed"
)

// recorder is an Observer that keeps everything it is told.
type recorder struct {
	mu       sync.Mutex
	outcomes []string
	rows     []int // of each request, in the order sent
	retries  []string
	inFlight int
	maxIn    int
	starts   int // InFlight(+1) calls: slots taken
}

func (r *recorder) OnBatch(rows, bytes int, d time.Duration, outcome string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.outcomes = append(r.outcomes, outcome)
	r.rows = append(r.rows, rows)
}

// sent is the rows of each request sent so far.
func (r *recorder) sent() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.rows)
}

func (r *recorder) OnRetry(reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.retries = append(r.retries, reason)
}

func (r *recorder) InFlight(delta int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inFlight += delta
	r.maxIn = max(r.maxIn, r.inFlight)
	if delta > 0 {
		r.starts++
	}
}

// failing returns an op that fails with errs in turn, then succeeds.
func failing(errs ...error) (func(context.Context) error, *int) {
	calls := 0
	return func(context.Context) error {
		calls++
		if calls <= len(errs) {
			return errs[calls-1]
		}
		return nil
	}, &calls
}

func TestRetry(t *testing.T) {
	wt := &gocql.RequestErrWriteTimeout{WriteType: "SIMPLE", Received: 1, BlockFor: 2}
	tests := []struct {
		name     string
		cfg      WriterConfig
		errs     []error
		wantErr  bool
		class    class
		attempts int
		outcomes []string
		retries  []string
	}{
		{
			name:     "transient errors are retried until success",
			errs:     []error{wt, &gocql.RequestErrUnavailable{}, &gocql.RequestErrOverloaded{}},
			attempts: 4, outcomes: []string{"retry", "retry", "retry", "ok"},
			retries: []string{"timeout", "unavailable", "overloaded"},
		},
		{
			name: "a write timeout is never success: it fails once attempts run out",
			cfg:  WriterConfig{RetryAttempts: 3},
			errs: []error{wt, wt, wt, wt}, wantErr: true, class: classTransient,
			attempts: 3, outcomes: []string{"retry", "retry", "error"}, retries: []string{"timeout", "timeout"},
		},
		{
			name: "replica write failures while a schema settles are retried until they pass",
			errs: []error{&gocql.RequestErrWriteFailure{}, &gocql.RequestErrWriteFailure{}, &gocql.RequestErrWriteFailure{},
				&gocql.RequestErrWriteFailure{}, &gocql.RequestErrCDCWriteFailure{}},
			attempts: 6, outcomes: []string{"retry", "retry", "retry", "retry", "retry", "ok"},
			retries: []string{"other", "other", "other", "other", "other"},
		},
		{
			name:    "replica write failures outlasting retry_attempts are transient, never rejected",
			cfg:     WriterConfig{RetryAttempts: 2},
			errs:    []error{&gocql.RequestErrWriteFailure{}, &gocql.RequestErrWriteFailure{}},
			wantErr: true, class: classTransient,
			attempts: 2, outcomes: []string{"retry", "error"}, retries: []string{"other"},
		},
		{
			name: "invalid is not retried",
			errs: []error{&gocql.RequestErrInvalid{}}, wantErr: true, class: classRejected,
			attempts: 1, outcomes: []string{"error"},
		},
		{
			name: "unauthorized is not retried and not the rows' fault",
			errs: []error{&gocql.RequestErrUnauthorized{}}, wantErr: true, class: classFatal,
			attempts: 1, outcomes: []string{"error"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rec := &recorder{}
				w := NewWriter(nil, tt.cfg, rec)
				op, calls := failing(tt.errs...)
				attempts, cls, err := w.retry(t.Context(), op, func(_ time.Duration, o string) { rec.OnBatch(1, 1, 0, o) })
				if (err != nil) != tt.wantErr || (err != nil && cls != tt.class) {
					t.Fatalf("retry = %v (%v), want error %v class %v", err, cls, tt.wantErr, tt.class)
				}
				if attempts != tt.attempts || *calls != tt.attempts {
					t.Fatalf("attempts %d, op called %d times, want %d", attempts, *calls, tt.attempts)
				}
				if !equal(rec.outcomes, tt.outcomes) || !equal(rec.retries, tt.retries) {
					t.Fatalf("outcomes %v retries %v, want %v %v", rec.outcomes, rec.retries, tt.outcomes, tt.retries)
				}
				if rec.inFlight != 0 {
					t.Fatalf("in-flight gauge ends at %d", rec.inFlight)
				}
			})
		})
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// With RetryAttempts 0 the writer retries until its context ends, then reports the context's end
// together with the last error, and the batch is not written.
func TestRetryUntilContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := NewWriter(nil, WriterConfig{RetryInitial: time.Second, RetryMax: 4 * time.Second}, nil)
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		start := time.Now()
		attempts, cls, err := w.retry(ctx, func(context.Context) error { return gocql.ErrTimeoutNoResponse }, nil)
		if !errors.Is(err, context.DeadlineExceeded) || cls != classFatal {
			t.Fatalf("retry = %v (%v), want the context deadline", err, cls)
		}
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != time.Minute {
			t.Fatalf("gave up after %v, want exactly the context's minute", time.Since(start))
		}
		// Backoff is capped at 4s with full jitter: at least 15 attempts fit in a minute.
		if attempts < 15 {
			t.Fatalf("only %d attempts in a minute", attempts)
		}
	})
}

func TestPerAttemptTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := NewWriter(nil, WriterConfig{RetryAttempts: 2, AttemptTimeout: 50 * time.Millisecond}, nil)
		attempts, cls, err := w.retry(t.Context(), func(ctx context.Context) error {
			<-ctx.Done() // a request that never answers
			return ctx.Err()
		}, nil)
		if err == nil || cls != classTransient || attempts != 2 {
			t.Fatalf("retry = %v (%v) after %d attempts, want a transient timeout after 2", err, cls, attempts)
		}
	})
}

func TestMaxInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		w := NewWriter(nil, WriterConfig{MaxInFlight: 3}, rec)
		var running, peak atomic.Int32
		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() {
				w.retry(t.Context(), func(context.Context) error {
					n := running.Add(1)
					for {
						p := peak.Load()
						if n <= p || peak.CompareAndSwap(p, n) {
							break
						}
					}
					time.Sleep(10 * time.Millisecond)
					running.Add(-1)
					return nil
				}, nil)
			})
		}
		wg.Wait()
		if peak.Load() != 3 || rec.maxIn != 3 || rec.inFlight != 0 {
			t.Fatalf("peak concurrency %d, gauge peak %d end %d; want 3, 3, 0", peak.Load(), rec.maxIn, rec.inFlight)
		}
	})
}

func TestWriterConfigValidate(t *testing.T) {
	bad := []WriterConfig{
		{MaxInFlight: -1}, {RetryInitial: -1}, {RetryInitial: time.Second, RetryMax: time.Millisecond},
		{RetryAttempts: -1}, {AttemptTimeout: -1},
	}
	for _, c := range bad {
		if c.Validate() == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	if err := (WriterConfig{}).Validate(); err != nil {
		t.Fatalf("zero config rejected: %v", err)
	}
}

// BenchmarkBuildBatch measures turning a 100-row batcher.Batch into a driver batch, without
// executing it: two allocations per batch (the batch and its entries), none per row.
func BenchmarkBuildBatch(b *testing.B) {
	target := &batcher.Target{Keyspace: "ks", Table: "t", Insert: "INSERT INTO ks.t (id, bucket, ts, v) VALUES (?, ?, ?, ?)"}
	rows := make([]batcher.Row, 100)
	for i := range rows {
		rows[i] = batcher.Row{Target: target, Key: "k", Size: 40,
			Packed: packed.MustPack([]string{"text", "text", "timestamp", "double"}, "id", "2024-01-15", time.Unix(int64(i), 0), float64(i))}
	}
	gs := new(gocql.Session) // building needs no connection
	var bd packed.Binder
	b.ReportAllocs()
	for b.Loop() {
		gb := buildBatch(gs, target, gocql.LocalQuorum, rows, 4, &bd)
		if len(gb.Entries) != 100 || !gb.IsIdempotent() {
			b.Fatal("bad batch")
		}
		bd.Reset()
	}
}
