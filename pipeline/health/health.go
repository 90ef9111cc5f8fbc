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
	// Ping asks Cassandra whether a write could succeed now at the consistency the sink writes with (a
	// read at that consistency: cassandra.Session.Probe); nil means always. PingInterval is how often
	// PingLoop decides; PingTimeout bounds one ping (cassandra.timeout: a slow answer is still an answer).
	Ping         func(context.Context) error
	PingInterval time.Duration
	PingTimeout  time.Duration
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
	// lastFailed is when a batch last came back unwritten after its retries ran out (unix nanos): within
	// writeProof intervals of it, acknowledged writes prove nothing and the probe decides.
	lastFailed atomic.Int64
	// probeErr is the last failed probe's error, for Ready's message.
	probeErr atomic.Pointer[string]
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

// WriteFailed records that a batch came back unwritten after its retries ran out on errors of the cluster
// (timeouts, unavailable replicas, overload). For writeProof intervals after it, acknowledged writes prove
// nothing: every PingLoop turn asks the probe at the write consistency, which tells a cluster that cannot
// take writes (not ready) from one partition's trouble (still ready: a stuck partition is an alert). A
// table's own trouble (missing, refusing a row) is not reported here.
func (s *State) WriteFailed(error) { s.lastFailed.Store(s.cfg.Now().UnixNano()) }

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

// Ready reports whether the daemon can do work: group joined, not shutting down, and its partitions able to
// make progress at the configured consistency: the writes are acknowledged, or, while none was lately, the
// probe at that consistency answers. An error names the first reason it is not. A stuck partition does not make it unready: it heals by
// itself or waits for an operator, and neither is helped by Kubernetes holding a rollout or a drain on
// this pod; sink_stuck_partitions and its alert report it (deploy/helm/sink/README.md).
func (s *State) Ready() error {
	switch {
	case s.stopping.Load():
		return fmt.Errorf("shutting down")
	case !s.joined.Load():
		return fmt.Errorf("not a member of the consumer group (joining, or rejoining after the group session was lost)")
	case !s.cassOK.Load():
		msg := ""
		if p := s.probeErr.Load(); p != nil {
			msg = ": " + *p
		}
		return fmt.Errorf("cassandra cannot take a write at the configured consistency (the readiness probe fails%s)", msg)
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

// defaultPingTimeout bounds one readiness ping when Config.PingTimeout is not set. The ping runs only when
// no write was acknowledged recently, so nothing of ours is queued ahead of it on the connection.
const defaultPingTimeout = 12 * time.Second

// writeProof is how long an acknowledged write counts as proof that Cassandra answers, in ping intervals.
// A slow but progressing cluster acknowledges batches well within it, so readiness never depends on a ping
// that would queue behind the batches in flight on the same connections.
const writeProof = 3

// PingLoop decides every PingInterval whether Cassandra could take a write, for readiness, logging
// transitions only. A write acknowledged within writeProof intervals, with no batch failed since, answers the
// question; otherwise (idle, or writes failing) a ping at the write consistency bounded by PingTimeout does,
// however slowly it is answered within that time. The ping goes to the session directly: it never waits for
// a writer's in-flight slot.
func (s *State) PingLoop(ctx context.Context) {
	t := time.NewTicker(s.cfg.PingInterval)
	defer t.Stop()
	first := true
	for {
		var err error
		now, proof := s.cfg.Now(), writeProof*s.cfg.PingInterval
		if last, failed := s.lastWritten.Load(), s.lastFailed.Load(); last == 0 || now.Sub(time.Unix(0, last)) >= proof ||
			failed != 0 && now.Sub(time.Unix(0, failed)) < proof {
			timeout := s.cfg.PingTimeout
			if timeout <= 0 {
				timeout = defaultPingTimeout
			}
			pctx, cancel := context.WithTimeout(ctx, timeout)
			err = s.cfg.Ping(pctx)
			cancel()
		}
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			msg := err.Error()
			s.probeErr.Store(&msg)
		}
		was := s.cassOK.Swap(err == nil)
		switch {
		case err != nil && (was || first):
			s.cfg.Log.Error("the readiness probe at the write consistency fails; not ready", slog.Any("error", err))
		case err == nil && !was && !first:
			s.cfg.Log.Info("the readiness probe at the write consistency answers again")
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
