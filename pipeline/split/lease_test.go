package split

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/bucketsink/sink/internal/backoff"
	"github.com/bucketsink/sink/pipeline/writestage"
)

// testLease is a session lease with the group timeouts given whose heartbeats answer as confirm does.
func testLease(session, rebalance time.Duration, confirm func() (string, error)) *Lease {
	return &Lease{
		confirm: func(context.Context) (string, error) { return confirm() },
		session: session, rebalance: rebalance,
		retry: backoff.Policy{Initial: 100 * time.Millisecond, Max: time.Second},
		log:   slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
}

// TestSessionLeaseConfirmsOncePerHalfLeaseAndHoldsBatchesWhenTheSessionIsGone: writers share one
// confirmation (a heartbeat) per half lease; a refused confirmation does not hold batches while the
// lease lasts (nor is it tried again before its backoff); once the lease has run out, a batch is not
// let through but waits, and is refused as soon as its partition is lost.
func TestSessionLeaseConfirmsOncePerHalfLeaseAndHoldsBatchesWhenTheSessionIsGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var confirms atomic.Int32
		var refused atomic.Bool
		l := testLease(4*time.Second, 10*time.Second, func() (string, error) {
			confirms.Add(1)
			if refused.Load() {
				return "m1", kerr.UnknownMemberID
			}
			return "m1", nil
		})
		ownerCtx, lose := context.WithCancel(context.Background())
		owners := []writestage.Owner{owner{ctx: ownerCtx}}
		holdAll := func(n int) {
			t.Helper()
			var wg sync.WaitGroup
			for range n {
				wg.Go(func() {
					if _, err := l.Hold(context.Background(), owners); err != nil {
						t.Errorf("hold: %v", err)
					}
				})
			}
			wg.Wait()
		}
		holdAll(10)
		if got := confirms.Load(); got != 1 {
			t.Fatalf("10 batches at once confirmed the session %d times, want 1", got)
		}
		time.Sleep(500 * time.Millisecond)
		holdAll(10)
		if got := confirms.Load(); got != 1 {
			t.Fatalf("within the first half of the lease: %d confirmations, want 1", got)
		}
		time.Sleep(time.Second) // past half the lease (2 s, half the session timeout)
		holdAll(10)
		if got := confirms.Load(); got != 2 {
			t.Fatalf("past half the lease: %d confirmations, want 2", got)
		}

		refused.Store(true)
		time.Sleep(1100 * time.Millisecond) // past half the renewed lease, not its end
		began := time.Now()
		holdAll(10)
		holdAll(10)
		if took, got := time.Since(began), confirms.Load(); took != 0 || got != 3 {
			t.Fatalf("a refused confirmation while the lease holds: batches waited %v, %d confirmations in all; want no wait, 3", took, got)
		}
		time.Sleep(5 * time.Second) // the lease has run out: a freeze, or heartbeats lost
		done := make(chan error, 1)
		go func() {
			_, err := l.Hold(context.Background(), owners)
			done <- err
		}()
		time.Sleep(10 * time.Second)
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("a batch was let through (or refused: %v) with the session refused and its partition still held", err)
		default:
		}
		lose()
		time.Sleep(time.Second)
		synctest.Wait()
		select {
		case err := <-done:
			if !errors.Is(err, ErrPartitionsGone) {
				t.Errorf("hold returned %v once the partition was lost, want ErrPartitionsGone", err)
			}
		default:
			t.Fatal("the batch still waits a second after its partition was lost")
		}
	})
}

// TestSessionLeaseOutlastsARebalanceUpToHalfItsTimeout: while the group rebalances, the coordinator
// answers REBALANCE_IN_PROGRESS to a member it still knows; batches keep being sent (a revoke waits for
// them), but only until half the rebalance timeout after the last stable answer, when a rebalance that
// began after it may have removed the member.
func TestSessionLeaseOutlastsARebalanceUpToHalfItsTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rebalancing atomic.Bool
		l := testLease(10*time.Second, 6*time.Second, func() (string, error) {
			if rebalancing.Load() {
				return "m1", kerr.RebalanceInProgress
			}
			return "m1", nil
		})
		owners := []writestage.Owner{owner{ctx: context.Background()}}
		if _, err := l.Hold(context.Background(), owners); err != nil {
			t.Fatal(err)
		}
		rebalancing.Store(true)
		start := time.Now()
		var last time.Duration
		for time.Since(start) < 10*time.Second {
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			_, err := l.Hold(ctx, owners)
			cancel()
			if err != nil {
				break
			}
			last = time.Since(start)
			time.Sleep(100 * time.Millisecond)
		}
		if want := 3 * time.Second; last >= want || last < want-200*time.Millisecond {
			t.Errorf("batches were let through the rebalance until %v after the last stable answer; want until just before %v (half the rebalance timeout)", last, want)
		}
	})
}

// BenchmarkSessionLeaseHold is what the fence costs a split topic's batch in the normal case: the
// lease holds, so no heartbeat is sent.
func BenchmarkSessionLeaseHold(b *testing.B) {
	l := testLease(time.Hour, time.Hour, func() (string, error) { return "m1", nil })
	owners := []writestage.Owner{owner{ctx: context.Background()}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.Hold(context.Background(), owners); err != nil {
			b.Fatal(err)
		}
	}
}

// owner is an assignment of a Kafka partition that is ours while ctx is not done; the lease asks
// nothing else of it.
type owner struct {
	writestage.Owner
	ctx context.Context
}

func (o owner) Context() context.Context { return o.ctx }
