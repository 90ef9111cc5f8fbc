package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"sync"
	"sync/atomic"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/cassandra"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/internal/memlimit"
	"github.com/bucketsink/sink/packed"
	"github.com/bucketsink/sink/pipeline"
	"github.com/bucketsink/sink/pipeline/metrics"
)

// discardWriter stands in for the Cassandra writer in the pipeline-only phase. It does the part of
// a write that costs the sink CPU before any byte leaves the process, marshaling every bound value
// against its column's type exactly as the driver would, and then drops the batch. What remains
// for the real writer is framing, the network and the server.
type discardWriter struct {
	driver *gocql.Session
	// types caches the bind-marker types of each INSERT. The pipeline hands every row of a table
	// the same *batcher.Target, so the pointer is the key.
	mu    sync.Mutex
	types map[*batcher.Target][]gocql.TypeInfo

	rows  atomic.Int64
	bytes atomic.Int64 // marshaled bytes, so the work cannot be optimised away
	// binders unpack packed rows, as the Cassandra writer's do.
	binders sync.Pool
}

func newDiscardWriter(driver *gocql.Session) *discardWriter {
	w := &discardWriter{driver: driver, types: make(map[*batcher.Target][]gocql.TypeInfo)}
	w.binders.New = func() any { return new(packed.Binder) }
	return w
}

// bindTypes returns the types of the statement's bind markers, preparing it once on the server:
// the same metadata the driver marshals against when it executes the statement.
func (w *discardWriter) bindTypes(ctx context.Context, t *batcher.Target) ([]gocql.TypeInfo, error) {
	w.mu.Lock()
	ts, ok := w.types[t]
	w.mu.Unlock()
	if ok {
		return ts, nil
	}
	meta, err := w.driver.StatementMetadata(ctx, t.Insert, t.Keyspace)
	if err != nil {
		return nil, fmt.Errorf("preparing the insert of %s.%s: %w", t.Keyspace, t.Table, err)
	}
	ts = make([]gocql.TypeInfo, len(meta.BindColumns))
	for i, c := range meta.BindColumns {
		ts[i] = c.TypeInfo
	}
	w.mu.Lock()
	w.types[t] = ts
	w.mu.Unlock()
	return ts, nil
}

// Write marshals every value of every row and discards the result. A value that does not marshal
// is reported as a failed row, as Cassandra's refusal would be.
func (w *discardWriter) Write(ctx context.Context, b *batcher.Batch) ([]cassandra.RowFailure, error) {
	if b == nil || len(b.Rows) == 0 {
		return nil, nil
	}
	ts, err := w.bindTypes(ctx, b.Target)
	if err != nil {
		return nil, err
	}
	var failed []cassandra.RowFailure
	bd := w.binders.Get().(*packed.Binder)
	defer func() { bd.Reset(); w.binders.Put(bd) }()
	bd.Reserve(len(b.Rows) * len(ts)) // as the cassandra writer: a row with another count fails below
	var n int64
	for i := range b.Rows {
		r := &b.Rows[i]
		args := bd.Args(r.Packed)
		if len(args) != len(ts) {
			failed = append(failed, cassandra.RowFailure{Row: *r, Err: fmt.Errorf("the row has %d values, the insert of %s.%s binds %d",
				len(args), b.Target.Keyspace, b.Target.Table, len(ts))})
			continue
		}
		for i, v := range args {
			out, err := gocql.Marshal(ts[i], v)
			if err != nil {
				failed = append(failed, cassandra.RowFailure{Row: *r, Err: fmt.Errorf("marshaling column %d of %s.%s: %w", i, b.Target.Keyspace, b.Target.Table, err)})
				break
			}
			n += int64(len(out))
		}
	}
	w.rows.Add(int64(len(b.Rows)))
	w.bytes.Add(n)
	return failed, nil
}

// RunDiscardDaemon runs the pipeline of the config at path with a discardWriter in place of the
// Cassandra writer, until ctx ends: the daemon of the harness's pipeline-only phase. It wires the
// pipeline as `sink run` does (same mapper, metrics, health endpoints), connects to Cassandra only
// to learn the column types of each INSERT, and also serves /debug/pprof on metrics.address.
func RunDiscardDaemon(ctx context.Context, path string, stderr io.Writer) error {
	cfg, err := config.Load(path, os.Environ())
	if err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	// The same memory settings `sink run` applies (writer.memory_limit unless GOMEMLIMIT is set), so
	// the collector works as hard here as in the daemon being compared.
	gc := memlimit.Apply(cfg.Writer.MemoryLimit, os.LookupEnv, log)
	reg := prometheus.NewRegistry()
	metrics := metrics.NewMetrics(reg)
	m, err := newMapper(cfg)
	if err != nil {
		return fmt.Errorf("compiling topics: %w", err)
	}
	session, err := cassandra.Connect(ctx, cfg.Cassandra)
	if err != nil {
		return err
	}
	defer session.Close()
	pl, err := pipeline.New(pipeline.Config{
		Sink: cfg, Mapper: m, Writer: newDiscardWriter(session.Driver()), Metrics: metrics, Logger: log,
		BufferFull: gc.BufferFullFunc(),
	})
	if err != nil {
		return err
	}
	if cfg.Metrics.Address == "" {
		return fmt.Errorf("metrics.address: the discard daemon needs it; the harness polls /readyz there")
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.Handle("/", pl.Handler())
	ln, err := net.Listen("tcp", cfg.Metrics.Address)
	if err != nil {
		return fmt.Errorf("metrics.address %q: %w", cfg.Metrics.Address, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	srvDone := make(chan error, 1)
	go func() { srvDone <- srv.Serve(ln) }()

	runErr := pl.Run(ctx)

	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	if err := <-srvDone; err != nil && !errors.Is(err, http.ErrServerClosed) && runErr == nil {
		runErr = fmt.Errorf("serving metrics: %w", err)
	}
	return runErr
}
