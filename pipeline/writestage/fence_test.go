package writestage

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/cassandra"
)

// leaseWriter waits, in each write, until its context ends or Cassandra answers after answerAfter;
// it counts the writes and those that were answered.
type leaseWriter struct {
	answerAfter time.Duration
	mu          sync.Mutex
	writes      int
	answered    int
}

func (w *leaseWriter) Write(ctx context.Context, _ *batcher.Batch) ([]cassandra.RowFailure, error) {
	w.mu.Lock()
	w.writes++
	w.mu.Unlock()
	select {
	case <-ctx.Done():
		return nil, &cassandra.WriteError{Reason: cassandra.FailCanceled, Err: ctx.Err()}
	case <-time.After(w.answerAfter):
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.answered++
	return nil, nil
}

// TestWriteTheFenceEndsIsFencedAgainBeforeItIsSentAgain: a batch is sent under the context its fence
// gives (a lease of 1 s); a write still unanswered when that context ends is neither given up nor
// retried blindly: the fence is asked again, and the batch is sent again under the new lease.
func TestWriteTheFenceEndsIsFencedAgainBeforeItIsSentAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &leaseWriter{answerAfter: 1500 * time.Millisecond}
		var fenced []time.Duration
		start := time.Now()
		lease := func(ctx context.Context, _ *batcher.Batch, _ []Owner) (context.Context, error) {
			fenced = append(fenced, time.Since(start))
			lctx, cancel := context.WithTimeout(ctx, time.Duration(len(fenced))*time.Second)
			context.AfterFunc(lctx, cancel)
			return lctx, nil
		}
		s := startStage(t, w, 1, time.Hour, nil, func(c *Config) { c.Fence = lease })
		o := newOwner(0)
		s.In() <- Msg{Rows: []batcher.Row{row(o, "e1", 7)}, Owner: o}
		time.Sleep(time.Minute)
		synctest.Wait()
		if !slices.Equal(fenced, []time.Duration{0, time.Second}) {
			t.Errorf("fenced at %v, want at 0s and again at 1s, when the first lease ended", fenced)
		}
		if w.writes != 2 || w.answered != 1 {
			t.Errorf("%d writes, %d answered; want 2 and 1", w.writes, w.answered)
		}
		if got := o.seen(&o.completed); !slices.Equal(got, []int64{7}) {
			t.Errorf("completed %v, want [7]", got)
		}
		if got := o.seen(&o.abandoned); len(got) != 0 {
			t.Errorf("abandoned %v, want none", got)
		}
	})
}

// TestBatchTheFenceRefusesIsNeverSent: a fence that refuses a batch (its partitions were lost while
// it waited) leaves it unsent; its rows are abandoned, for the next owner to replay.
func TestBatchTheFenceRefusesIsNeverSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &fakeWriter{}
		refuse := func(context.Context, *batcher.Batch, []Owner) (context.Context, error) {
			return nil, errors.New("the batch's partitions are no longer ours")
		}
		s := startStage(t, w, 1, time.Hour, nil, func(c *Config) { c.Fence = refuse })
		o := newOwner(0)
		s.In() <- Msg{Rows: []batcher.Row{row(o, "e1", 7)}, Owner: o}
		synctest.Wait()
		if got := w.count(); got != 0 {
			t.Errorf("%d writes, want none", got)
		}
		if got := o.seen(&o.abandoned); !slices.Equal(got, []int64{7}) {
			t.Errorf("abandoned %v, want [7]", got)
		}
		if got := o.seen(&o.completed); len(got) != 0 {
			t.Errorf("completed %v, want none", got)
		}
	})
}
