package main

import (
	"io"
	"log/slog"
	"math"
	"runtime/debug"
	"testing"

	"github.com/bucketsink/sink/config"
)

// TestApplyMemoryLimit: writer.memory_limit becomes the runtime's soft limit, unless GOMEMLIMIT is set
// (the runtime already applied it) or the key is 0.
func TestApplyMemoryLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	noEnv := func(string) (string, bool) { return "", false }

	debug.SetMemoryLimit(math.MaxInt64)
	applyMemoryLimit(192<<20, noEnv, log)
	if got := debug.SetMemoryLimit(-1); got != 192<<20 {
		t.Errorf("limit %d after writer.memory_limit 192MiB, want %d", got, 192<<20)
	}

	debug.SetMemoryLimit(math.MaxInt64)
	applyMemoryLimit(config.Bytes(192<<20), func(k string) (string, bool) { return "300MiB", k == "GOMEMLIMIT" }, log)
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("limit %d with GOMEMLIMIT set, want the runtime's own (%d)", got, int64(math.MaxInt64))
	}

	applyMemoryLimit(0, noEnv, log)
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("limit %d with writer.memory_limit 0, want the runtime's own (%d)", got, int64(math.MaxInt64))
	}
}
