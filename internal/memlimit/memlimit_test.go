package memlimit

import (
	"io"
	"log/slog"
	"math"
	"runtime"
	"runtime/debug"
	"slices"
	"testing"
	"time"

	"github.com/bucketsink/sink/config"
)

// TestApply: writer.memory_limit becomes the runtime's soft limit and raises GOGC, unless GOMEMLIMIT is
// set (the runtime already applied it) or the key is 0; an operator's GOGC is kept.
func TestApply(t *testing.T) {
	limitBefore := debug.SetMemoryLimit(-1)
	gcBefore := debug.SetGCPercent(100)
	t.Cleanup(func() {
		debug.SetMemoryLimit(limitBefore)
		debug.SetGCPercent(gcBefore)
	})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	env := func(vars map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	}
	reset := func() {
		debug.SetMemoryLimit(math.MaxInt64)
		debug.SetGCPercent(100)
	}

	reset()
	set := Apply(192<<20, env(nil), log)
	if got := debug.SetMemoryLimit(-1); got != 192<<20 {
		t.Errorf("limit %d after writer.memory_limit 192MiB, want %d", got, 192<<20)
	}
	if got := debug.SetGCPercent(100); got != GCPercent {
		t.Errorf("GOGC %d with a memory limit, want %d", got, GCPercent)
	}
	// What it returns moves the target with the pipeline's buffer: nearly empty, it holds the heap
	// under the steady goal for the live heap of the last collection.
	if set == nil {
		t.Fatal("no Target returned although Apply set the growth target")
	}
	debug.SetGCPercent(GCPercent) // the check above changed it
	set.BufferFull(false)
	ballast := make([]byte, 30<<20) // a live heap of about 30 MiB: a target well under the full one
	runtime.GC()
	runtime.GC() // the cleanup of the first collection's sentinel runs after it; the second's waits
	var want int
	for range 100 { // the runtime's cleanup goroutine runs the watcher soon after
		set.mu.Lock()
		live := set.live
		set.mu.Unlock()
		if live > 0 {
			want = GCTargetFor(false, live)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if want == 0 {
		t.Fatal("no live heap read after two collections")
	}
	if got := debug.SetGCPercent(100); got != want || want >= GCPercent {
		t.Errorf("GOGC %d with the buffer nearly empty, want %d (below %d)", got, want, GCPercent)
	}
	runtime.KeepAlive(ballast)
	set.BufferFull(true) // as it started: its watcher, which lives on, has nothing to change

	reset()
	if Apply(192<<20, env(map[string]string{"GOGC": "50"}), log) != nil {
		t.Error("a growth target setter returned with the operator's GOGC set: nothing may move it")
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC %d with the operator's GOGC set, want it left alone (100 here)", got)
	}

	reset()
	if Apply(config.Bytes(192<<20), env(map[string]string{"GOMEMLIMIT": "300MiB"}), log) != nil {
		t.Error("a growth target setter returned with GOMEMLIMIT set")
	}
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("limit %d with GOMEMLIMIT set, want the runtime's own (%d)", got, int64(math.MaxInt64))
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC %d with GOMEMLIMIT set, want it left alone", got)
	}

	reset()
	if Apply(0, env(nil), log) != nil {
		t.Error("a growth target setter returned with writer.memory_limit 0")
	}
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("limit %d with writer.memory_limit 0, want the runtime's own (%d)", got, int64(math.MaxInt64))
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC %d with writer.memory_limit 0, want it left alone", got)
	}
}

// TestTargetFollowsTheBufferAndTheLiveHeap: a Target sets the full buffer's target while the buffer is
// full, the one that holds the heap at the steady goal once it is nearly empty, a new one as the live heap
// moves, and nothing when nothing changed.
func TestTargetFollowsTheBufferAndTheLiveHeap(t *testing.T) {
	var set []int
	tg := newTarget(func(p int) { set = append(set, p) })
	live := func(n uint64) { tg.mu.Lock(); tg.live = n; tg.apply(); tg.mu.Unlock() }
	live(18 << 20)       // full: stays at the full target, nothing set
	tg.BufferFull(false) // 72 MiB over 18: 300
	live(24 << 20)       // 200
	live(24 << 20)       // unchanged: nothing set
	tg.BufferFull(true)  // 400
	live(30 << 20)       // full: nothing set
	tg.BufferFull(false) // 140
	want := []int{300, 200, GCPercent, 140}
	if !slices.Equal(set, want) {
		t.Errorf("targets set %v, want %v", set, want)
	}
	if f := (*Target)(nil).BufferFullFunc(); f != nil {
		t.Error("a nil Target gives a BufferFull to call")
	}
}
