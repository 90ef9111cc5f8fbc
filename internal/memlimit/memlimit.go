// Package memlimit applies writer.memory_limit to the Go runtime, the same way for `sink run` and for the
// benchmark's pipeline-only daemon.
package memlimit

import (
	"log/slog"
	"runtime/debug"
	"strconv"

	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/pipeline/budget"
)

// GCPercent is the collector's growth target (GOGC) while a memory limit is set. Under load the limit
// is what starts a collection: the heap may grow to the limit before the collector runs, instead of to
// twice the live heap, so a sink whose live heap is well under the limit collects several times less
// often for the same garbage (each cycle costs about the live heap, whatever the garbage). Idle, the live
// heap is small and this still keeps the process small. The pipeline then moves the target with its
// buffer's fill (budget.GCPercent): this one while the buffer is full, a lower one while it is nearly empty.
const GCPercent = budget.GCPercentFull

// Apply sets the runtime's soft memory limit to limit and, with it, the collector's growth target to
// GCPercent. What the operator set wins: GOMEMLIMIT (which the runtime has already applied) leaves both
// alone, GOGC leaves the growth target alone, and a limit of 0 leaves the runtime's own settings.
//
// It returns what sets the growth target from then on (pipeline.Config.GCPercent) when Apply set it, and
// nil when the target is the operator's or the runtime's own, which nothing may move.
func Apply(limit config.Bytes, getenv func(string) (string, bool), log *slog.Logger) (setGCPercent func(int)) {
	if env, ok := getenv("GOMEMLIMIT"); ok {
		log.Info("GOMEMLIMIT is set; writer.memory_limit not applied", slog.String("gomemlimit", env),
			slog.String("memory_limit", limit.String()))
		return nil
	}
	if limit <= 0 {
		return nil
	}
	debug.SetMemoryLimit(int64(limit))
	gogc := "operator's GOGC"
	if _, ok := getenv("GOGC"); !ok {
		debug.SetGCPercent(GCPercent)
		gogc = strconv.Itoa(GCPercent) + ", " + strconv.Itoa(budget.GCPercentSteady) + " while the buffer is nearly empty"
		setGCPercent = func(p int) { debug.SetGCPercent(p) }
	}
	log.Info("Go memory limit set", slog.String("memory_limit", limit.String()), slog.String("gogc", gogc))
	return setGCPercent
}
