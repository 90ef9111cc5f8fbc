package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"time"
)

// Handler serves /healthz, /readyz and /debug/partitions. The caller adds /metrics from its registry.
func (pl *Pipeline) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", pl.healthz)
	mux.HandleFunc("GET /readyz", pl.readyz)
	mux.HandleFunc("GET /debug/partitions", pl.debugPartitions)
	return mux
}

// wedgedAfter is how long the poll loop may go without a turn before /healthz fails. A turn can legitimately
// wait for a rebalance callback (a revoke flushing for up to shutdown_timeout, then committing), so the
// limit is generous: a restart is only the remedy for a loop that is truly stuck.
func (pl *Pipeline) wedgedAfter() time.Duration {
	return pl.sink.Kafka.RebalanceTimeout.Std() +
		pl.shutdownTimeout + commitTimeout + 30*time.Second
}

// Alive reports whether the poll loop is turning; an error says why not.
func (pl *Pipeline) Alive() error {
	last := time.Unix(0, pl.lastAlive.Load())
	if age := pl.now().Sub(last); age > pl.wedgedAfter() && !pl.stopping.Load() {
		return fmt.Errorf("the poll loop has not turned for %s", age.Round(time.Second))
	}
	return nil
}

// Ready reports whether the daemon can do work: group joined, Cassandra reachable, not shutting down.
// An error names the first reason it is not. A stuck partition does not make it unready: it heals by
// itself or waits for an operator, and neither is helped by Kubernetes holding a rollout or a drain on
// this pod; sink_stuck_partitions and its alert report it (deploy/helm/sink/README.md).
func (pl *Pipeline) Ready() error {
	switch {
	case pl.stopping.Load():
		return fmt.Errorf("shutting down")
	case !pl.joined.Load():
		return fmt.Errorf("not a member of the consumer group (joining, or rejoining after the group session was lost)")
	case !pl.cassOK.Load():
		return fmt.Errorf("cassandra does not answer")
	}
	return nil
}

func (pl *Pipeline) updateReady() {
	if pl.Ready() == nil {
		pl.metrics.Ready.Set(1)
	} else {
		pl.metrics.Ready.Set(0)
	}
}

func (pl *Pipeline) healthz(w http.ResponseWriter, _ *http.Request) {
	if err := pl.Alive(); err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ok")
}

func (pl *Pipeline) readyz(w http.ResponseWriter, _ *http.Request) {
	if err := pl.Ready(); err != nil {
		http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ready")
}

// debugPartitions serves the keys behind sink_largest_partition_{rows,bytes}: per topic, the largest
// Cassandra partitions whose bucket is still open.
func (pl *Pipeline) debugPartitions(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(pl.metrics.live.largest())
}

// pingTimeout bounds one readiness ping. The ping runs only when no write was acknowledged recently, so
// nothing of ours is queued ahead of it on the connection; a cluster that cannot answer a one-row local
// read in this time is not fit to write to either.
const pingTimeout = 2 * time.Second

// writeProof is how long an acknowledged write counts as proof that Cassandra answers, in ping intervals.
// A slow but progressing cluster acknowledges batches well within it, so readiness never depends on a ping
// that would queue behind the batches in flight on the same connections.
const writeProof = 3

// pingLoop decides every PingInterval whether Cassandra answers, for readiness, logging transitions
// only. A write acknowledged within writeProof intervals answers the question; otherwise a ping with its
// own pingTimeout does. The ping goes to the session directly: it never waits for a writer's in-flight
// slot.
func (pl *Pipeline) pingLoop(ctx context.Context) {
	t := time.NewTicker(pl.cfg.PingInterval)
	defer t.Stop()
	first := true
	for {
		var err error
		if last := pl.lastWritten.Load(); last == 0 ||
			pl.now().Sub(time.Unix(0, last)) >= writeProof*pl.cfg.PingInterval {
			pctx, cancel := context.WithTimeout(ctx, min(pingTimeout, pl.cfg.PingInterval))
			err = pl.cfg.Ping(pctx)
			cancel()
		}
		if ctx.Err() != nil {
			return
		}
		was := pl.cassOK.Swap(err == nil)
		switch {
		case err != nil && (was || first):
			pl.log.Error("cassandra does not answer; not ready", slog.Any("error", err))
		case err == nil && !was && !first:
			pl.log.Info("cassandra answers again")
		}
		first = false
		pl.updateReady()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
