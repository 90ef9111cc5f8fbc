package writestage

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/cassandra"
)

// partsWriter records the partitions of every request it is given.
type partsWriter struct {
	mu    sync.Mutex
	parts []int
}

func (w *partsWriter) Write(_ context.Context, b *batcher.Batch) ([]cassandra.RowFailure, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.parts = append(w.parts, b.Partitions)
	return nil, nil
}

// TestDueCohortGoesAsJoinedRequests: the batches of rows that arrived together become due together and
// go out through Config.Group, as few requests as it makes of them, and a later cohort is not swept
// into them: it keeps filling until its own linger has passed.
func TestDueCohortGoesAsJoinedRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &partsWriter{}
		ctx, cancel := context.WithCancel(context.Background())
		cfg := testConfig(w, 100, 4, time.Second)
		cfg.Batcher.Linger = 5 * time.Millisecond
		cfg.Group = func(bs []*batcher.Batch) []*batcher.Batch {
			var out []*batcher.Batch
			for len(bs) > 0 {
				n := min(len(bs), 10)
				out = append(out, batcher.Join(bs[:n]))
				bs = bs[n:]
			}
			return out
		}
		s := New(ctx, cfg)
		go s.Run()
		defer func() {
			cancel()
			s.Wait()
		}()
		o := newOwner(0)
		var first []batcher.Row
		for i := range 25 {
			first = append(first, row(o, fmt.Sprintf("e%02d", i), int64(i)))
		}
		s.In() <- Msg{Rows: first, Owner: o}
		time.Sleep(3 * time.Millisecond)
		s.In() <- Msg{Rows: []batcher.Row{row(o, "late", 25)}, Owner: o}
		time.Sleep(3 * time.Millisecond) // the first cohort's linger has passed, not the second's
		synctest.Wait()
		w.mu.Lock()
		got := slices.Sorted(slices.Values(w.parts)) // written by concurrent writer goroutines
		w.mu.Unlock()
		if want := []int{5, 10, 10}; !slices.Equal(got, want) {
			t.Fatalf("requests of %v partitions, want %v", got, want)
		}
		time.Sleep(5 * time.Millisecond)
		synctest.Wait()
		if done := o.seen(&o.completed); len(done) != 26 {
			t.Fatalf("%d rows completed, want 26", len(done))
		}
	})
}
