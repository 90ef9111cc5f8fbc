package writestage

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/cassandra"
)

// orderWriter records the partition key of every batch in the order the writes start; while hold is
// set, a write waits for it to be closed.
type orderWriter struct {
	mu   sync.Mutex
	keys []string
	hold chan struct{}
}

func (w *orderWriter) Write(_ context.Context, b *batcher.Batch) ([]cassandra.RowFailure, error) {
	w.mu.Lock()
	w.keys = append(w.keys, b.Key)
	hold := w.hold
	w.mu.Unlock()
	if hold != nil {
		<-hold
	}
	return nil, nil
}

// writeOrder runs a stage with one write slot: a full batch of the busy partition takes the slot and its
// write is slow, a sparse partition's row arrives meanwhile, then the busy partition fills another batch,
// younger than the sparse row. Once the sparse row is overdue the slow write ends; writeOrder returns the
// partitions of the writes in the order they started.
func writeOrder(t *testing.T, budgetFull bool) []string {
	hold := make(chan struct{})
	w := &orderWriter{hold: hold}
	ctx, cancel := context.WithCancel(context.Background())
	cfg := testConfig(w, 2, 1, time.Second)
	cfg.Batcher.Linger = 5 * time.Millisecond
	cfg.BudgetFull = func() bool { return budgetFull }
	s := New(ctx, cfg)
	go s.Run()
	defer func() {
		cancel()
		s.Wait()
	}()
	o := newOwner(0)
	s.In() <- Msg{Rows: []batcher.Row{row(o, "busy", 0), row(o, "busy", 1)}, Owner: o}
	s.In() <- Msg{Rows: []batcher.Row{row(o, "sparse", 2)}, Owner: o}
	synctest.Wait()
	time.Sleep(50 * time.Millisecond)
	s.In() <- Msg{Rows: []batcher.Row{row(o, "busy", 3), row(o, "busy", 4)}, Owner: o}
	time.Sleep(150 * time.Millisecond) // the sparse row is overdue
	synctest.Wait()
	w.mu.Lock()
	w.hold = nil
	w.mu.Unlock()
	close(hold)
	time.Sleep(time.Second)
	synctest.Wait()
	if done := o.seen(&o.completed); len(done) != 5 {
		t.Fatalf("%d rows completed, want 5", len(done))
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.keys)
}

// TestOverdueRowGoesBeforeYoungerFullBatches guards the order in which a free write slot is given: a row of
// a sparse partition that has waited past its linger by more than overdue goes before a full batch of a busy
// partition whose rows all arrived after it. Full batches used to take every slot first, so after a slow
// write the sparse partitions' oldest rows waited behind the busy partitions' newer ones. Under a full byte
// budget (a backlog) the rule stands aside: there, full batches first catch up soonest.
func TestOverdueRowGoesBeforeYoungerFullBatches(t *testing.T) {
	for _, tc := range []struct {
		name       string
		budgetFull bool
		want       []string
	}{
		{"budget has room", false, []string{"busy", "sparse", "busy"}},
		{"budget full", true, []string{"busy", "busy", "sparse"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				if got := writeOrder(t, tc.budgetFull); !slices.Equal(got, tc.want) {
					t.Fatalf("writes in the order %v, want %v", got, tc.want)
				}
			})
		})
	}
}
