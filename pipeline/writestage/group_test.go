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
	hold  chan struct{} // when set, the first write waits until it is closed
}

func (w *partsWriter) Write(_ context.Context, b *batcher.Batch) ([]cassandra.RowFailure, error) {
	w.mu.Lock()
	w.parts = append(w.parts, b.Partitions)
	first := len(w.parts) == 1
	w.mu.Unlock()
	if first && w.hold != nil {
		<-w.hold
	}
	return nil, nil
}

// joinBy is a Group that joins batches n at a time (n below what a request may join stands for a ring
// whose replicas differ, or the group byte cap, splitting a take into several requests).
func joinBy(n int) func([]*batcher.Batch) []*batcher.Batch {
	return func(bs []*batcher.Batch) []*batcher.Batch {
		var out []*batcher.Batch
		for len(bs) > 0 {
			k := min(len(bs), n)
			out = append(out, batcher.Join(bs[:k]))
			bs = bs[k:]
		}
		return out
	}
}

// keySender sends messages to s of one row per key, for o, at the next offsets; off is the next one.
type keySender struct {
	s   *Stage
	o   *fakeOwner
	off int64
}

func (k *keySender) send(keys ...string) {
	var rows []batcher.Row
	for _, key := range keys {
		rows = append(rows, row(k.o, key, k.off))
		k.off++
	}
	k.s.In() <- Msg{Rows: rows, Owner: k.o}
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
		cfg.Group, cfg.JoinMax = joinBy(10), 10
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

// startOneSlotStage runs a stage with one write slot, batches full at two rows, a 5 ms linger, the byte
// budget full, and requests joined ten at a time up to joinMax partitions; stop ends it.
func startOneSlotStage(w BatchWriter, joinMax int) (s *Stage, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	cfg := testConfig(w, 2, 1, time.Second)
	cfg.Batcher.Linger = 5 * time.Millisecond
	cfg.Group, cfg.JoinMax = joinBy(10), joinMax
	cfg.BudgetFull = func() bool { return true }
	s = New(ctx, cfg)
	go s.Run()
	return s, func() {
		cancel()
		s.Wait()
	}
}

// TestDueBatchesOfSeveralArrivalsShareOneRequest: when a write slot frees, the oldest due cohort (the
// batches one message opened) is topped up with the next due batches to what one request may join
// (Config.JoinMax), and the rest wait for the next slot. Taking one cohort per slot, a stage whose writes
// were busy sent one request per message that had arrived meanwhile, each holding a few partitions: at
// 40,000 rows/s the requests cost the node more than it had, and rows waited for 800 ms
// (TestDueBatchesJoinedKeepFreshAt40000RowsPerSecond).
//
// The same holds for batches that waited past the starve bound with the byte budget full: the oldest
// goes with the next due batches joined to it. It went out alone, and what starves in a backlog is mostly
// cold partitions of a row or two: a third of a simulated backlog's requests carried 3 rows each
// (TestBacklogStarvedPartitionsShareRequests).
func TestDueBatchesOfSeveralArrivalsShareOneRequest(t *testing.T) {
	for _, tc := range []struct {
		name    string
		joinMax int
		wait    time.Duration // from the last arrival until the slot frees
		want    []int         // partitions of each request, in order
	}{
		{"join max 10", 10, 20 * time.Millisecond, []int{1, 3}},
		{"join max 2", 2, 20 * time.Millisecond, []int{1, 2, 1}},
		{"starved batches join too", 10, starve + time.Second, []int{1, 3}}, // [1 1 1 1] before
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := &partsWriter{hold: make(chan struct{})}
				s, stop := startOneSlotStage(w, tc.joinMax)
				defer stop()
				o := newOwner(0)
				s.In() <- Msg{Rows: []batcher.Row{row(o, "busy", 0), row(o, "busy", 1)}, Owner: o} // full: takes the slot
				for i, key := range []string{"a", "b", "c"} {
					time.Sleep(time.Millisecond)
					s.In() <- Msg{Rows: []batcher.Row{row(o, key, int64(2+i))}, Owner: o}
				}
				time.Sleep(tc.wait) // all three are due; the slot is still busy
				synctest.Wait()
				close(w.hold)
				synctest.Wait()
				w.mu.Lock()
				got := slices.Clone(w.parts)
				w.mu.Unlock()
				if !slices.Equal(got, tc.want) {
					t.Fatalf("requests of %v partitions, want %v", got, tc.want)
				}
				if done := o.seen(&o.completed); len(done) != 5 {
					t.Fatalf("%d rows completed, want 5", len(done))
				}
			})
		})
	}
}

// stepWriter records the partitions of every request and holds each write until a value comes on step
// (or step is closed).
type stepWriter struct {
	mu    sync.Mutex
	parts []int
	step  chan struct{}
}

func (w *stepWriter) Write(_ context.Context, b *batcher.Batch) ([]cassandra.RowFailure, error) {
	w.mu.Lock()
	w.parts = append(w.parts, b.Partitions)
	w.mu.Unlock()
	<-w.step
	return nil, nil
}

// TestStarvedRequestsWaitOneAtATime: while a request the starve rule took waits for a slot behind full
// batches, the next starved batches stay in the batcher and keep filling. The rule took a request on
// every slot, so in a long backlog, where the oldest batch is past the bound all the time, batches left
// the batcher to wait in the queue instead: a simulated 1,000,000-row backlog sent 57 rows per request
// against 65 (TestBacklogStarvedPartitionsShareRequests).
func TestStarvedRequestsWaitOneAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &stepWriter{step: make(chan struct{})}
		s, stop := startOneSlotStage(w, 2)
		defer stop()
		o := newOwner(0)
		ks := &keySender{s: s, o: o}
		send := ks.send
		send("busy", "busy") // full: takes the only slot
		for _, k := range []string{"a", "b", "c", "d"} {
			time.Sleep(time.Millisecond)
			send(k)
		}
		time.Sleep(starve + time.Second) // a, b, c and d starve
		send("x", "x", "y", "y")         // two full batches wait for the slot
		synctest.Wait()
		w.step <- struct{}{} // busy written: the starve rule takes a and b, x goes
		synctest.Wait()
		w.step <- struct{}{} // x written: y goes; c and d stay while a and b wait
		synctest.Wait()
		send("c", "d") // c and d fill up
		synctest.Wait()
		close(w.step)
		time.Sleep(time.Second)
		synctest.Wait()
		w.mu.Lock()
		got := slices.Clone(w.parts)
		w.mu.Unlock()
		// busy, x, y, a+b, then c and d full; the rule took c+d as well before, and their second rows
		// went out as new batches joined: [1 1 1 2 2 2].
		if want := []int{1, 1, 1, 2, 1, 1}; !slices.Equal(got, want) {
			t.Fatalf("requests of %v partitions, want %v", got, want)
		}
		if done := o.seen(&o.completed); len(done) != int(ks.off) {
			t.Fatalf("%d rows completed, want %d", len(done), ks.off)
		}
	})
}

// slotWriter holds every write: a full batch (two rows) until a value comes on full, a partial one
// until partial is closed. It counts the partial writes started.
type slotWriter struct {
	mu       sync.Mutex
	partials int
	full     chan struct{}
	partial  chan struct{}
}

// started is how many partial writes have started.
func (w *slotWriter) started() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.partials
}

func (w *slotWriter) Write(_ context.Context, b *batcher.Batch) ([]cassandra.RowFailure, error) {
	if len(b.Rows) >= 2 {
		<-w.full
		return nil, nil
	}
	w.mu.Lock()
	w.partials++
	w.mu.Unlock()
	<-w.partial
	return nil, nil
}

// startSlotStage runs, inside the caller's synctest bubble, a stage of 8 slots writing through a
// slotWriter, batches closing at 2 rows, a 5 ms linger, and a Group that joins nothing (JoinMax 10).
// release lets every write end; the stage stops when the test ends.
func startSlotStage(t *testing.T) (*Stage, *slotWriter, func()) {
	w := &slotWriter{full: make(chan struct{}), partial: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	cfg := testConfig(w, 2, 8, time.Second)
	cfg.Batcher.Linger = 5 * time.Millisecond
	cfg.Group, cfg.JoinMax = joinNone, 10
	s := New(ctx, cfg)
	go s.Run()
	release := sync.OnceFunc(func() { close(w.partial); close(w.full) }) // writes ignore ctx
	t.Cleanup(func() {
		release()
		cancel()
		s.Wait()
	})
	return s, w, release
}

// joinNone is a Group whose batches never share a coordinator: every batch is a request of its own.
func joinNone(bs []*batcher.Batch) []*batcher.Batch { return bs }

// TestDueTakeThatGroupCannotJoinKeepsHalfTheSlotsForFullBatches: a slot taken for due batches tops them
// up to what one request may join, but when Group cannot join them (their coordinators differ, as on a
// ring), that slot sends one request and the others wait as partial batches do. Sending them all at once
// put ten partial requests in flight for one freed slot, past the half of the slots kept for full
// batches (the reviewer's case: 8 slots, 4 busy with full batches, 12 due single-row batches).
func TestDueTakeThatGroupCannotJoinKeepsHalfTheSlotsForFullBatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, w, release := startSlotStage(t)
		o := newOwner(0)
		off := int64(0)
		for i := range 4 { // four full batches: half the slots busy
			key := fmt.Sprintf("busy%d", i)
			s.In() <- Msg{Rows: []batcher.Row{row(o, key, off), row(o, key, off+1)}, Owner: o}
			off += 2
		}
		for i := range 12 {
			time.Sleep(time.Millisecond)
			s.In() <- Msg{Rows: []batcher.Row{row(o, fmt.Sprintf("k%02d", i), off)}, Owner: o}
			off++
		}
		time.Sleep(20 * time.Millisecond) // every single-row batch is due, none overdue
		synctest.Wait()
		w.full <- struct{}{} // one full write ends: one slot below the half
		synctest.Wait()
		started := w.started()
		if started != 1 {
			t.Fatalf("%d partial requests in flight after one slot freed below the half, want 1", started)
		}
		// Overdue, the held requests take the free slots; then everything is written.
		time.Sleep(200 * time.Millisecond)
		synctest.Wait()
		release()
		time.Sleep(200 * time.Millisecond)
		synctest.Wait()
		if done := o.seen(&o.completed); len(done) != int(off) {
			t.Fatalf("%d rows completed, want %d", len(done), off)
		}
	})
}

// TestHeldRequestIsSentOnceOverdueWithNothingElseToWakeTheStage: a request held from a due take is sent
// once it is overdue even when nothing else happens (no write finishes, no message arrives, the batcher is
// empty). The timer was armed for it only on a pass that held back partial batches, never on the pass
// that held it, so such a request waited for a write to finish, for ever if the writes hung (found by
// review).
func TestHeldRequestIsSentOnceOverdueWithNothingElseToWakeTheStage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, w, _ := startSlotStage(t)
		o := newOwner(0)
		for i := range 3 { // three full writes hang: below half the slots
			key := fmt.Sprintf("busy%d", i)
			s.In() <- Msg{Rows: []batcher.Row{row(o, key, int64(2*i)), row(o, key, int64(2*i+1))}, Owner: o}
		}
		// One cohort of two single-row batches: the first request takes the fourth slot, the second is held.
		s.In() <- Msg{Rows: []batcher.Row{row(o, "a", 6), row(o, "b", 7)}, Owner: o}
		time.Sleep(20 * time.Millisecond)
		synctest.Wait()
		started := w.started()
		if started != 1 {
			t.Fatalf("%d partial requests in flight once due, want 1 (the other held)", started)
		}
		time.Sleep(200 * time.Millisecond) // past overdue; no write ends, no message comes
		synctest.Wait()
		started = w.started()
		if started != 2 {
			t.Fatalf("%d partial requests in flight 200 ms later, want 2: the held one waits with nothing to wake the stage", started)
		}
	})
}
