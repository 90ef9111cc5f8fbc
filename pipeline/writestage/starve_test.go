package writestage

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/cassandra"
)

// budgetedWriter takes 10 ms a write and notes when each key was first written. Each written batch of a
// hot key gives back a token the feeder took to send it: at most as many full batches wait unwritten as
// tokens exist, as the byte budget bounds them.
type budgetedWriter struct {
	mu      sync.Mutex
	written map[string]time.Time
	tokens  chan struct{}
}

func (w *budgetedWriter) Write(_ context.Context, b *batcher.Batch) ([]cassandra.RowFailure, error) {
	time.Sleep(10 * time.Millisecond)
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range b.Rows {
		if _, ok := w.written[r.Key]; !ok {
			w.written[r.Key] = time.Now()
		}
	}
	if strings.HasPrefix(b.Rows[0].Key, "hot") {
		<-w.tokens
	}
	return nil, nil
}

// TestColdRowsGoOutWithinTheStarveBoundBehindEndlessFullBatches: four cold partitions' rows, taken
// into two requests (Group joins two at a time), are written within about the starve bound while a hot
// partition sends full batches without a pause for a minute. Whether they left the batcher by the
// starve rule (the budget full) or as due batches while the stage was idle, the request Group could not
// join into the first was held, and held requests went only when no full batch waited: for the whole
// stream.
func TestColdRowsGoOutWithinTheStarveBoundBehindEndlessFullBatches(t *testing.T) {
	for _, tc := range []struct {
		name       string
		budgetFull bool
	}{
		{"taken by the starve rule", true},
		{"taken due while idle", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := &budgetedWriter{written: map[string]time.Time{}, tokens: make(chan struct{}, 5)}
				ctx, cancel := context.WithCancel(context.Background())
				cfg := testConfig(w, 2, 1, time.Second)
				cfg.Batcher.Linger = 5 * time.Millisecond
				cfg.Group, cfg.JoinMax = joinBy(2), 4
				cfg.BudgetFull = func() bool { return tc.budgetFull }
				s := New(ctx, cfg)
				go s.Run()
				defer func() { cancel(); s.Wait() }()
				send := (&keySender{s: s, o: newOwner(0)}).send
				start := time.Now()
				for _, k := range []string{"a", "b", "c", "d"} {
					send(k)
					time.Sleep(time.Millisecond)
				}
				if !tc.budgetFull {
					time.Sleep(10 * time.Millisecond) // due, and taken while no full batch waits
				}
				for i := 0; time.Since(start) < time.Minute; i++ {
					k := fmt.Sprintf("hot%d", i)
					w.tokens <- struct{}{}
					send(k, k) // a full batch
				}
				synctest.Wait()
				w.mu.Lock()
				defer w.mu.Unlock()
				for _, k := range []string{"a", "b", "c", "d"} {
					switch at, ok := w.written[k]; {
					case !ok:
						t.Errorf("%s never written in a minute of full batches, want within about %v", k, starve)
					case at.Sub(start) > 2*starve:
						t.Errorf("%s written %v after it arrived, want within about %v", k, at.Sub(start), starve)
					}
				}
			})
		})
	}
}
