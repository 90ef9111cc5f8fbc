package memlimit

import (
	"io"
	"log/slog"
	"math"
	"runtime/debug"
	"testing"

	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/pipeline/budget"
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
	// What it returns moves the target: the pipeline's, following its buffer.
	if set == nil {
		t.Fatal("no growth target setter returned although Apply set the target")
	}
	set(budget.GCPercentSteady)
	if got := debug.SetGCPercent(100); got != budget.GCPercentSteady {
		t.Errorf("GOGC %d after the setter was given %d", got, budget.GCPercentSteady)
	}

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
