// Package memlimit applies writer.memory_limit to the Go runtime, the same way for `sink run` and for the
// benchmark's pipeline-only daemon.
package memlimit

import (
	"log/slog"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"sync"

	"github.com/bucketsink/sink/config"
)

// GCPercent is the collector's growth target (GOGC) while a memory limit is set. Under load the limit
// is what starts a collection: the heap may grow to the limit before the collector runs, instead of to
// twice the live heap, so a sink whose live heap is well under the limit collects several times less
// often for the same garbage (each cycle costs about the live heap, whatever the garbage). Idle, the live
// heap is small and this still keeps the process small. The target then follows the pipeline's buffer
// (Target, policy.go): this one while the buffer is full, while it is nearly empty the one that holds the
// heap under SteadyHeap.
const GCPercent = 400

// Apply sets the runtime's soft memory limit to limit and, with it, the collector's growth target to
// GCPercent. What the operator set wins: GOMEMLIMIT (which the runtime has already applied) leaves both
// alone, GOGC leaves the growth target alone, and a limit of 0 leaves the runtime's own settings.
//
// It returns the Target that moves the growth target from then on (its BufferFull is
// pipeline.Config.BufferFull) when Apply set it, and nil when the target is the operator's or the
// runtime's own, which nothing may move.
func Apply(limit config.Bytes, getenv func(string) (string, bool), log *slog.Logger) *Target {
	if env, ok := getenv("GOMEMLIMIT"); ok {
		log.Info("GOMEMLIMIT is set; writer.memory_limit not applied", slog.String("gomemlimit", env),
			slog.String("memory_limit", limit.String()))
		return nil
	}
	if limit <= 0 {
		return nil
	}
	debug.SetMemoryLimit(int64(limit))
	if _, ok := getenv("GOGC"); ok {
		log.Info("Go memory limit set", slog.String("memory_limit", limit.String()), slog.String("gogc", "operator's GOGC"))
		return nil
	}
	debug.SetGCPercent(GCPercent)
	t := newTarget(func(p int) { debug.SetGCPercent(p) })
	afterEachCollection(t.collected)
	log.Info("Go memory limit set", slog.String("memory_limit", limit.String()),
		slog.String("gogc", strconv.Itoa(GCPercent)+" while the buffer is full, down to "+
			strconv.Itoa(GCPercentFloor)+" to hold the heap under "+config.Bytes(SteadyHeap).String()+" while it is nearly empty"))
	return t
}

// Target moves the collector's growth target with the pipeline's buffer (GCTargetFor): told when the
// buffer becomes full or nearly empty (BufferFull), it reads the live heap after each collection.
// Safe for concurrent use.
type Target struct {
	set func(percent int) // debug.SetGCPercent, or a test's

	mu      sync.Mutex
	full    bool
	live    uint64
	percent int
	sample  []metrics.Sample
}

func newTarget(set func(int)) *Target {
	return &Target{set: set, full: true, percent: GCPercent, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
}

// BufferFull is told whether the buffer counts as full (budget.Full); the pipeline calls it when that
// changes.
func (t *Target) BufferFull(full bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.full = full
	t.apply()
}

// BufferFullFunc is t.BufferFull, or nil for a nil Target (Apply moved no growth target): what
// pipeline.Config.BufferFull takes.
func (t *Target) BufferFullFunc() func(full bool) {
	if t == nil {
		return nil
	}
	return t.BufferFull
}

// collected reads the live heap the last collection left.
func (t *Target) collected() {
	t.mu.Lock()
	defer t.mu.Unlock()
	metrics.Read(t.sample)
	if v := t.sample[0].Value; v.Kind() == metrics.KindUint64 {
		t.live = v.Uint64()
	}
	t.apply()
}

// apply sets the growth target the policy asks, when it changed; t.mu is held.
func (t *Target) apply() {
	if p := GCTargetFor(t.full, t.live); p != t.percent {
		t.set(p)
		t.percent = p
	}
}

// afterEachCollection calls f, on the runtime's cleanup goroutine, after every collection from now on
// for the life of the process: each time an unreachable sentinel's cleanup runs, it allocates the next.
func afterEachCollection(f func()) {
	type sentinel struct {
		_ *sentinel // pointers, and more than the tiny allocator's 16 bytes: an object of its own
		_ [24]byte
	}
	var arm func()
	arm = func() {
		runtime.AddCleanup(&sentinel{}, func(struct{}) {
			f()
			arm()
		}, struct{}{})
	}
	arm()
}
