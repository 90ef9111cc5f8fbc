package cassandra

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/internal/bounded"
	"github.com/bucketsink/sink/internal/refusal"
)

// Session is a connected Cassandra session configured for the sink: token-aware and DC-aware routing
// with shuffled replicas, no driver retry policy (the Writer retries), TLS and password auth from
// config. It is safe for concurrent use.
type Session struct {
	gs     *gocql.Session
	cons   gocql.Consistency         // cassandra.consistency
	policy gocql.HostSelectionPolicy // the session's token-aware policy, asked for replicas (Replicas)

	// stmts caches what the writer needs to know about each INSERT, by keyspace + statement.
	mu    sync.Mutex
	stmts map[stmtKey]*stmtInfo

	replicaSets replicaSets // what Group found out of policy, remembered a while

	closeOnce sync.Once
}

// maxStmts bounds the statement cache, like the driver's own prepared-statement LRU (1000).
const maxStmts = 1000

type stmtKey struct{ keyspace, stmt string }

// stmtInfo is the prepared shape of one INSERT.
type stmtInfo struct {
	binds int // number of bind markers
}

// Connect opens a session to the cluster c describes. It fails fast on configuration it cannot use
// (an unknown consistency, unreadable TLS files) and when no host answers within the connect timeout,
// or when ctx ends first.
func Connect(ctx context.Context, c config.Cassandra) (*Session, error) {
	cluster, cons, err := newCluster(c)
	if err != nil {
		return nil, err
	}
	s, err := connectCluster(ctx, cluster, cons)
	if err != nil {
		if cause := refusalCause(err, c.TLS.Enabled); cause != "" {
			// The refusal names the hosts already; keep the driver's own words as the detail.
			return nil, &refusal.Error{Server: "cassandra", Addrs: c.Hosts, Cause: cause, Err: errors.Unwrap(err)}
		}
	}
	return s, err
}

// refusalCause names what in the configuration keeps the cluster from accepting the session, or returns ""
// for other failures (no host answers, a timeout). gocql flattens the causes into text, so this reads the
// messages of the driver and of Cassandra's authenticator.
func refusalCause(err error, tlsEnabled bool) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "and/or password are incorrect"):
		// Cassandra answers the same for an unknown role and a wrong password.
		return "authentication failed: wrong cassandra.auth.username or password, or no such role"
	case strings.Contains(msg, "authentication required"):
		return "the cluster requires a login: set cassandra.auth.username and a password"
	}
	if cause := refusal.Cause(err, "cassandra.tls"); cause != "" {
		return cause
	}
	if !tlsEnabled && (strings.Contains(msg, "connection reset by peer") || strings.Contains(msg, "EOF")) &&
		strings.Contains(msg, "unable to discover protocol version") {
		return "the server closed the connection at the first request, as a TLS-only port does with a plaintext " +
			"client: set cassandra.tls.enabled: true if the cluster requires TLS"
	}
	return ""
}

// connectCluster creates the driver session. gocql takes no context, so the creation runs aside;
// when ctx ends first the session, if it still comes up, is closed as soon as it does.
func connectCluster(ctx context.Context, cluster *gocql.ClusterConfig, cons gocql.Consistency) (*Session, error) {
	type result struct {
		s   *gocql.Session
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := cluster.CreateSession()
		done <- result{s, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return nil, fmt.Errorf("connecting to cassandra.hosts %v: %w", cluster.Hosts, r.err)
		}
		return &Session{gs: r.s, cons: cons, policy: cluster.PoolConfig.HostSelectionPolicy, stmts: make(map[stmtKey]*stmtInfo)}, nil
	case <-ctx.Done():
		go func() {
			if r := <-done; r.s != nil {
				r.s.Close()
			}
		}()
		return nil, fmt.Errorf("connecting to cassandra.hosts %v: %w", cluster.Hosts, context.Cause(ctx))
	}
}

// newCluster turns the configuration into a driver configuration and the default write consistency.
func newCluster(c config.Cassandra) (*gocql.ClusterConfig, gocql.Consistency, error) {
	if len(c.Hosts) == 0 {
		return nil, 0, errors.New("cassandra.hosts: at least one host or host:port is required")
	}
	name := c.Consistency
	if name == "" {
		name = config.DefaultConsistency // a hand-built config (defaults.go)
	}
	cons, err := parseConsistency(name)
	if err != nil {
		return nil, 0, fmt.Errorf("cassandra.consistency: %w", err)
	}

	cluster := gocql.NewCluster(c.Hosts...)
	cluster.Consistency = cons
	cluster.Timeout = orDefault(time.Duration(c.Timeout), defaultTimeout)
	cluster.ConnectTimeout = orDefault(time.Duration(c.ConnectTimeout), defaultConnectTimeout)
	cluster.NumConns = defaultNumConns
	if c.NumConns > 0 {
		cluster.NumConns = c.NumConns
	}
	cluster.ProtoVersion = c.ProtocolVersion // 0 negotiates

	// No driver retries: a driver policy would retry inside one ExecContext, invisible to our
	// metrics and backoff, and DowngradingConsistencyRetryPolicy even reports some write timeouts
	// as success. The Writer retries in its own loop.
	cluster.RetryPolicy = nil

	// No client timestamp: gocql stamps every request with this machine's clock by default, which
	// turns write_timestamp server into "client". The deterministic modes bind USING TIMESTAMP,
	// which wins over a default timestamp anyway; server means the coordinator's clock.
	cluster.DefaultTimestamp = false

	// No session keyspace: `sink schema` connects before its keyspaces exist, and a session keyspace
	// that does not exist fails the connection. Each batch names its keyspace instead
	// (Batch.SetKeyspace), which is what the token-aware policy looks replicas up by.
	fallback := gocql.RoundRobinHostPolicy()
	if c.LocalDC != "" {
		fallback = gocql.DCAwareRoundRobinPolicy(c.LocalDC)
	}
	// The fallback is wrapped so that Replicas can ask the token-aware policy for a partition's replicas
	// alone (see replicaFallback).
	cluster.PoolConfig.HostSelectionPolicy = gocql.TokenAwareHostPolicy(replicaFallback{fallback}, gocql.ShuffleReplicas())

	// Each request writes its frame itself. The driver's default hands every frame to a goroutine of the
	// connection that waits 200 µs for more frames to write with one syscall: per request a channel
	// hand-off, a timer and two more goroutine wake-ups. The sink's requests are few and large (at a
	// steady 15,000 rows/s about a thousand a second over several connections), so that wait seldom
	// found a second frame; its wake-ups were a tenth of the sink's CPU at steady rates.
	cluster.WriteCoalesceWaitTime = 0

	// Come back quickly after an outage: the driver's default re-dials a down host once a minute,
	// which would hold every partition for up to a minute after Cassandra is back.
	cluster.ReconnectInterval = 5 * time.Second
	cluster.ReconnectionPolicy = &gocql.ExponentialReconnectionPolicy{
		MaxRetries: 8, InitialInterval: 200 * time.Millisecond, MaxInterval: 5 * time.Second,
	}

	if c.Auth.Username != "" {
		cluster.Authenticator = gocql.PasswordAuthenticator{
			Username: c.Auth.Username,
			Password: string(c.Auth.Password),
		}
	}
	if c.TLS.Enabled {
		tc, err := c.TLS.ClientConfig("cassandra.tls")
		if err != nil {
			return nil, 0, err
		}
		cluster.SslOpts = &gocql.SslOptions{Config: tc, EnableHostVerification: !c.TLS.InsecureSkipVerify}
	}
	return cluster, cons, nil
}

func parseConsistency(s string) (gocql.Consistency, error) {
	c, err := gocql.ParseConsistencyWrapper(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a consistency level; want e.g. LOCAL_QUORUM, QUORUM, LOCAL_ONE, ONE, ALL", s)
	}
	if c == gocql.Serial || c == gocql.LocalSerial {
		return 0, fmt.Errorf("%q is only for the serial phase of lightweight transactions; want e.g. LOCAL_QUORUM", s)
	}
	return c, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Driver returns the underlying gocql session, for schema statements and reads.
func (s *Session) Driver() *gocql.Session { return s.gs }

// Consistency returns the default write consistency (cassandra.consistency).
func (s *Session) Consistency() gocql.Consistency { return s.cons }

// Close closes the session; it is safe to call more than once.
func (s *Session) Close() {
	s.closeOnce.Do(s.gs.Close)
}

// CloseWithin closes the session but waits at most d; it reports whether the close finished. The driver's
// close can wait a long time on connections that hold traffic without closing (a network partition: ~20 s
// on its control connection), which must not hold up a shutdown with a deadline. An unfinished close goes
// on in the background; the process exits without it.
func (s *Session) CloseWithin(d time.Duration) bool {
	return bounded.Within(d, s.Close)
}

// statement returns the prepared shape of an INSERT, preparing it on first use. A failure is
// returned as the driver reported it, so the caller can classify it; it is not cached.
// cachedStatement returns what statement found out about stmt in keyspace, if it is cached.
func (s *Session) cachedStatement(keyspace, stmt string) (*stmtInfo, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	info, ok := s.stmts[stmtKey{keyspace, stmt}]
	return info, ok
}

func (s *Session) statement(ctx context.Context, keyspace, stmt string) (*stmtInfo, error) {
	if info, ok := s.cachedStatement(keyspace, stmt); ok {
		return info, nil
	}
	k := stmtKey{keyspace, stmt}
	meta, err := s.gs.StatementMetadata(ctx, stmt, keyspace)
	if err != nil {
		return nil, err
	}
	info := &stmtInfo{binds: len(meta.BindColumns)}
	s.mu.Lock()
	if len(s.stmts) >= maxStmts {
		// Sliced topics get a new table, hence a new INSERT, every slice; starting over keeps the
		// cache bounded at the cost of one re-prepare per live statement.
		clear(s.stmts)
	}
	s.stmts[k] = info
	s.mu.Unlock()
	return info, nil
}
