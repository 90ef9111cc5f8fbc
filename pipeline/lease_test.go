package pipeline

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

	"github.com/bucketsink/sink/internal/backoff"
	"github.com/bucketsink/sink/pipeline/writestage"
)

// TestSessionLeaseConfirmsOncePerHalfLeaseAndHoldsBatchesWhenTheSessionIsGone: writers share one
// confirmation (a heartbeat) per half lease; once the coordinator refuses the session, a batch whose
// lease has run out is not let through but waits, and is refused as soon as its partition is lost.
func TestSessionLeaseConfirmsOncePerHalfLeaseAndHoldsBatchesWhenTheSessionIsGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var confirms atomic.Int32
		var refused atomic.Bool
		l := &sessionLease{
			confirm: func(context.Context) error {
				confirms.Add(1)
				if refused.Load() {
					return errors.New("UNKNOWN_MEMBER_ID")
				}
				return nil
			},
			span:  4 * time.Second,
			retry: backoff.Policy{Initial: 100 * time.Millisecond, Max: time.Second},
			log:   slog.New(slog.NewTextHandler(io.Discard, nil)),
		}
		ownerCtx, lose := context.WithCancel(context.Background())
		owners := []writestage.Owner{&partition{ctx: ownerCtx}}
		holdAll := func(n int) {
			t.Helper()
			var wg sync.WaitGroup
			for range n {
				wg.Go(func() {
					if _, err := l.hold(context.Background(), owners); err != nil {
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
		time.Sleep(time.Second)
		holdAll(10)
		if got := confirms.Load(); got != 1 {
			t.Fatalf("within the first half of the lease: %d confirmations, want 1", got)
		}
		time.Sleep(1500 * time.Millisecond) // past half the lease
		holdAll(10)
		if got := confirms.Load(); got != 2 {
			t.Fatalf("past half the lease: %d confirmations, want 2", got)
		}

		refused.Store(true)
		time.Sleep(5 * time.Second) // the lease has run out: a freeze, or heartbeats lost
		done := make(chan error, 1)
		go func() {
			_, err := l.hold(context.Background(), owners)
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
			if !errors.Is(err, errPartitionsGone) {
				t.Errorf("hold returned %v once the partition was lost, want errPartitionsGone", err)
			}
		default:
			t.Fatal("the batch still waits a second after its partition was lost")
		}
	})
}
