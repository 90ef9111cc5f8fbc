package health

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Config is what the health state needs from the pipeline.
type Config struct {
	// WedgedAfter is how long the poll loop may go without a turn before /healthz fails. A turn can
	// legitimately wait for a rebalance callback (a revoke flushing for up to shutdown_timeout, then
	// committing), so the limit is generous: a restart is only the remedy for a loop that is truly stuck.
	WedgedAfter time.Duration
	// Ping checks that Cassandra answers; nil means always reachable. PingInterval is how often PingLoop
	// decides.
	Ping         func(context.Context) error
	PingInterval time.Duration
	Now          func() time.Time
	Log          *slog.Logger
	Ready        prometheus.Gauge // sink_ready
	// Largest lists the largest open partitions for /debug/partitions; nil does not serve that path
	// (metrics.debug_partitions false: it shows entity ids on a port without authentication).
	Largest func() any
}

// State is the daemon's liveness and readiness. Create it with New.
type State struct {
	cfg Config
	// joined is true from an assignment until the group session ends without a rejoin (partitions lost,
	// a group error): a member that lost its group does no work, so it is not ready.
	joined    atomic.Bool
	stopping  atomic.Bool
	cassOK    atomic.Bool
	lastAlive atomic.Int64 // unix nanos of the poll loop's last turn
	// lastWritten is when Cassandra last acknowledged a batch (unix nanos, cfg.Now): proof of
	// reachability that needs no ping (PingLoop).
	lastWritten atomic.Int64
}

// New returns the state of a pipeline that has not joined its group yet, whose poll loop turned now.
func New(cfg Config) *State {
	s := &State{cfg: cfg}
	s.cassOK.Store(cfg.Ping == nil)
	s.lastAlive.Store(cfg.Now().UnixNano())
	return s
}

// Turned records a turn of the poll loop.
func (s *State) Turned() { s.lastAlive.Store(s.cfg.Now().UnixNano()) }

// Written records that Cassandra acknowledged a batch just now.
func (s *State) Written() { s.lastWritten.Store(s.cfg.Now().UnixNano()) }

// Joined reports whether the member is in its consumer group.
func (s *State) Joined() bool { return s.joined.Load() }

// Join records an assignment: the member is in its group.
func (s *State) Join() {
	s.joined.Store(true)
	s.Update()
}

// Left records that the group session ended; it reports whether the member was joined until now.
func (s *State) Left() bool {
	if !s.joined.Swap(false) {
		return false
	}
	s.Update()
	return true
}

// Stop records that shutdown began.
func (s *State) Stop() {
	s.stopping.Store(true)
	s.Update()
}

// Stopping reports whether shutdown has begun.
func (s *State) Stopping() bool { return s.stopping.Load() }

// Handler serves /healthz, /readyz and, with a Largest, /debug/partitions. The caller adds /metrics
// from its registry.
func (s *State) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /readyz", s.readyz)
	if s.cfg.Largest != nil {
		mux.HandleFunc("GET /debug/partitions", s.debugPartitions)
	}
	return mux
}

// Alive reports whether the poll loop is turning; an error says why not.
func (s *State) Alive() error {
	last := time.Unix(0, s.lastAlive.Load())
	if age := s.cfg.Now().Sub(last); age > s.cfg.WedgedAfter && !s.stopping.Load() {
		return fmt.Errorf("the poll loop has not turned for %s", age.Round(time.Second))
	}
	return nil
}

// Ready reports whether the daemon can do work: group joined, Cassandra reachable, not shutting down.
// An error names the first reason it is not. A stuck partition does not make it unready: it heals by
// itself or waits for an operator, and neither is helped by Kubernetes holding a rollout or a drain on
// this pod; sink_stuck_partitions and its alert report it (deploy/helm/sink/README.md).
func (s *State) Ready() error {
	switch {
	case s.stopping.Load():
		return fmt.Errorf("shutting down")
	case !s.joined.Load():
		return fmt.Errorf("not a member of the consumer group (joining, or rejoining after the group session was lost)")
	case !s.cassOK.Load():
		return fmt.Errorf("cassandra does not answer")
	}
	return nil
}

// Update sets sink_ready from Ready.
func (s *State) Update() {
	if s.Ready() == nil {
		s.cfg.Ready.Set(1)
	} else {
		s.cfg.Ready.Set(0)
	}
}

func (s *State) healthz(w http.ResponseWriter, _ *http.Request) {
	if err := s.Alive(); err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ok")
}

func (s *State) readyz(w http.ResponseWriter, _ *http.Request) {
	if err := s.Ready(); err != nil {
		http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ready")
}

// debugPartitions serves the keys behind sink_largest_partition_{rows,bytes}: per topic, the largest
// Cassandra partitions whose bucket is still open.
func (s *State) debugPartitions(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(s.cfg.Largest())
}

// pingTimeout bounds one readiness ping. The ping runs only when no write was acknowledged recently, so
// nothing of ours is queued ahead of it on the connection; a cluster that cannot answer a one-row local
// read in this time is not fit to write to either.
const pingTimeout = 2 * time.Second

// writeProof is how long an acknowledged write counts as proof that Cassandra answers, in ping intervals.
// A slow but progressing cluster acknowledges batches well within it, so readiness never depends on a ping
// that would queue behind the batches in flight on the same connections.
const writeProof = 3

// PingLoop decides every PingInterval whether Cassandra answers, for readiness, logging transitions
// only. A write acknowledged within writeProof intervals answers the question; otherwise a ping with its
// own pingTimeout does. The ping goes to the session directly: it never waits for a writer's in-flight
// slot.
func (s *State) PingLoop(ctx context.Context) {
	t := time.NewTicker(s.cfg.PingInterval)
	defer t.Stop()
	first := true
	for {
		var err error
		if last := s.lastWritten.Load(); last == 0 ||
			s.cfg.Now().Sub(time.Unix(0, last)) >= writeProof*s.cfg.PingInterval {
			pctx, cancel := context.WithTimeout(ctx, min(pingTimeout, s.cfg.PingInterval))
			err = s.cfg.Ping(pctx)
			cancel()
		}
		if ctx.Err() != nil {
			return
		}
		was := s.cassOK.Swap(err == nil)
		switch {
		case err != nil && (was || first):
			s.cfg.Log.Error("cassandra does not answer; not ready", slog.Any("error", err))
		case err == nil && !was && !first:
			s.cfg.Log.Info("cassandra answers again")
		}
		first = false
		s.Update()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
