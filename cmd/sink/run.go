package main

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
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/bucketsink/sink/cassandra"
	"github.com/bucketsink/sink/codec/registry"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/internal/memlimit"
	"github.com/bucketsink/sink/internal/refusal"
	"github.com/bucketsink/sink/mapper"
	"github.com/bucketsink/sink/pipeline"
	"github.com/bucketsink/sink/pipeline/deadletter"
	"github.com/bucketsink/sink/pipeline/metrics"
	"github.com/bucketsink/sink/pipeline/rollup"
	"github.com/bucketsink/sink/pipeline/split"
	"github.com/bucketsink/sink/rollup/recompute"
	"github.com/bucketsink/sink/schema"
)

// Bounds of the shutdown steps after the pipeline's (pipeline.StopBound); see stopBound.
const (
	// sessionCloseTimeout bounds closing the Cassandra session. The driver's close waits on connections
	// that hold traffic without closing (a network partition) for about 20 s: past this it is abandoned.
	sessionCloseTimeout = 2 * time.Second
	// httpCloseTimeout bounds the HTTP server's shutdown: a scrape or probe in progress may finish.
	httpCloseTimeout = time.Second
	// stopSlack is what the watchdog allows above the sum of the bounds before it exits anyway.
	stopSlack = time.Second
)

// stopBound is the longest a stop may take from the first signal to the exit: the pipeline's steps
// (drain, final commit, leaving the group, write stage, Kafka clients), then the Cassandra session and the
// HTTP server, which close side by side. For writer.shutdown_timeout S it is S + 11 s, the watchdog
// allows S + 12 s, and the chart's terminationGracePeriodSeconds is S + 15 s (docs/PIPELINE.md, "Shutdown").
func stopBound(shutdownTimeout time.Duration) time.Duration {
	return pipeline.StopBound(shutdownTimeout) + max(sessionCloseTimeout, httpCloseTimeout)
}

// runUsage is the help of `sink run` above its flags.
const runUsage = "Usage: sink run --config FILE\n" +
	"\n" +
	"Runs the sink: consumes the configured topics as a member of kafka.group and writes\n" +
	"every record to its Cassandra partition, at least once. Serves /metrics, /healthz,\n" +
	"/readyz and the debug endpoints (/debug/pprof/, /debug/config, /debug/partitions;\n" +
	"metrics.debug turns them off) on metrics.address. SIGINT or SIGTERM stops it\n" +
	"gracefully (flush, commit, leave the group); a second signal exits at once.\n" +
	"Exit codes: 0 stopped cleanly, 1 runtime failure, 2 usage, 3 invalid config, 6 a server\n" +
	"refused the connection at start (login, certificate, TLS at one end only).\n" +
	"A dead_letter_topic that does not exist in Kafka at start-up is invalid config (3).\n"

// runRun is the daemon: consume the configured topics and write them to Cassandra until a signal.
//
// Stop order: the first SIGINT/SIGTERM cancels ctx (main's NotifyContext); readiness turns false at once,
// the pipeline stops fetching, flushes, waits for writes up to writer.shutdown_timeout, commits, leaves
// the group and closes its Kafka clients; then the Cassandra session and the HTTP server close. Every step
// has its own bound (stopBound); a watchdog exits with 1 if the whole stop overruns their sum anyway. A
// signal during start-up (still connecting) is a clean stop: exit 0. A second signal exits at once with 1.
func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("run", runUsage, stdout, stderr)
	path := fs.configFlag("the YAML config file (required)")
	if code, ok := fs.parse(args); !ok {
		return code
	}
	if code, ok := fs.require(requiredFlag{"config", *path}); !ok {
		return code
	}

	// Count signals ourselves for the second-signal hard exit; main's NotifyContext handles the first.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		<-sigs
		<-sigs
		fmt.Fprintln(stderr, "sink run: second signal; exiting without flushing")
		os.Exit(exitFailure)
	}()

	cfg, code := loadConfig(ctx, *path, stderr)
	if cfg == nil {
		return code
	}
	log := newLogger(cfg.Log, stderr)
	for _, w := range cfg.Warnings() {
		log.Warn("the config is valid but allows this; see sink validate", slog.String("key", w.Path), slog.String("warning", w.Problem))
	}
	gc := memlimit.Apply(cfg.Writer.MemoryLimit, os.LookupEnv, log)
	served := make(chan struct{})
	defer close(served)
	go watchStop(ctx, served, stopBound(cfg.Writer.ShutdownTimeout.Std())+stopSlack, log)
	if err := serve(ctx, cfg, log, gc); err != nil {
		if _, refused := errors.AsType[*refusal.Error](err); refused && ctx.Err() != nil {
			// A signal came while the start-up check still waited on the server: the stop was asked
			// for, so it is a clean stop, whatever the check saw of a connection closed under it.
			log.Info("stopped while connecting", slog.Any("cause", context.Cause(ctx)), slog.Any("check", err))
			return exitOK
		}
		log.Error("sink run failed", slog.Any("error", err))
		if _, ok := errors.AsType[*deadletter.MissingDeadLetterTopicsError](err); ok {
			return exitConfig
		}
		if _, ok := errors.AsType[*cassandra.SplitOffError](err); ok {
			return exitConfig
		}
		return failureCode(err)
	}
	return exitOK
}

// watchStop makes the stop bound a guarantee: if serve has not returned limit after the first signal, some
// step overran its own bound (a bug), and the process exits with 1 rather than be killed by the
// orchestrator with its state unknown.
func watchStop(ctx context.Context, served <-chan struct{}, limit time.Duration, log *slog.Logger) {
	select {
	case <-served:
		return
	case <-ctx.Done():
	}
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-served:
	case <-t.C:
		log.Error("shutdown overran its bound; exiting without finishing it", slog.Duration("bound", limit))
		os.Exit(exitFailure)
	}
}

func serve(ctx context.Context, cfg *config.Config, log *slog.Logger, gc *memlimit.Target) error {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics := metrics.NewMetrics(reg)
	metrics.SetBuildInfo(buildVersion())

	m, err := newMapper(cfg)
	if err != nil {
		return fmt.Errorf("compiling topics: %w", err)
	}
	if err := deadletter.CheckDeadLetterTopics(ctx, cfg, log); err != nil {
		return err
	}
	connectCtx, cancel := context.WithTimeout(ctx, time.Duration(cfg.Cassandra.ConnectTimeout)+30*time.Second)
	session, err := cassandra.Connect(connectCtx, cfg.Cassandra)
	cancel()
	if _, refused := errors.AsType[*refusal.Error](err); refused {
		return err // it names the server and the cause
	} else if err != nil {
		if ctx.Err() != nil {
			log.Info("stopped while connecting to Cassandra", slog.Any("cause", context.Cause(ctx)))
			return nil
		}
		return fmt.Errorf("connecting to cassandra (cassandra.hosts %v): %w", cfg.Cassandra.Hosts, err)
	}
	// Bounded, because a partitioned cluster would otherwise hold the exit for the driver's own timeouts.
	// Deferred for the early returns; after the pipeline stops it runs beside the HTTP server's stop, and
	// the deferred call waits for that one.
	closeSession := sync.OnceFunc(func() {
		if !session.CloseWithin(sessionCloseTimeout) {
			log.Warn("closing the Cassandra session did not finish in time; abandoned",
				slog.Duration("timeout", sessionCloseTimeout))
		}
	})
	defer closeSession()
	// A topic with split off over a table that splits wrote to would put a replay's rows in a second
	// place (and a reader that ignores the records would miss rows): refused before anything is read.
	if err := cassandra.CheckSplitsOff(ctx, session, cfg, nil); err != nil {
		if ctx.Err() != nil {
			log.Info("stopped while checking the routing tables", slog.Any("cause", context.Cause(ctx)))
			return nil
		}
		return err
	}
	// Values are bound pre-encoded for the configured column types: a table that disagrees would refuse
	// every row, so say which column at start. A missing table is not fatal here: a sliced topic's
	// missing slice is created on demand (or its records dead-lettered, bucket.missing_slice), and the
	// rows of any other missing table are retried with backoff, their partition stuck, until it exists.
	missing, err := cassandra.CheckSchema(ctx, session, cfg, nil, time.Now())
	if err != nil {
		if ctx.Err() != nil {
			log.Info("stopped while checking the tables", slog.Any("cause", context.Cause(ctx)))
			return nil
		}
		return fmt.Errorf("checking the tables against the config: %w", err)
	}
	for _, t := range missing {
		log.Warn("table does not exist; its rows wait, retried with backoff, until it is created (sink schema --apply) or, for a slice, as bucket.missing_slice says",
			slog.String("table", t))
	}
	w := cfg.Writer
	writer := cassandra.NewWriter(session, cassandra.WriterConfig{
		MaxInFlight:    w.MaxInFlight,
		RetryInitial:   w.RetryInitial.Std(),
		RetryMax:       w.RetryMax.Std(),
		RetryAttempts:  w.RetryAttempts,
		AttemptTimeout: cfg.Cassandra.Timeout.Std(),
		Group:          cassandra.GroupConfig{MaxPartitions: w.GroupMaxPartitions, MaxBytes: int(w.GroupMaxBytes)},
	}, metrics)

	// Readiness reads one partition of a table per keyspace and write consistency, at that consistency.
	tables, err := schema.Describe(cfg)
	if err != nil {
		return err
	}
	probes := cassandra.ProbeTargets(tables, func(topic string) string { return cfg.Topics[topic].Consistency })
	var rollups rollup.Store
	if rollupEntries, err := rollup.Entries(cfg); err != nil {
		return err
	} else if len(rollupEntries) > 0 {
		if rollups, err = recompute.NewStore(session, cfg); err != nil {
			return err
		}
	}
	pl, err := pipeline.New(pipeline.Config{
		Sink:       cfg,
		Mapper:     m,
		Writer:     writer,
		Group:      writer.Group,
		Metrics:    metrics,
		Logger:     log,
		Slices:     cassandra.NewSliceMaker(session, cfg),
		Splits:     split.StoreOf(cassandra.NewSplitStores(session, cfg.Cassandra)),
		Rollups:    rollups,
		Ping:       func(ctx context.Context) error { return session.Probe(ctx, probes) },
		BufferFull: gc.BufferFullFunc(),
	})
	if err != nil {
		return err
	}

	var srv *http.Server
	srvDone := make(chan error, 1)
	if addr := cfg.Metrics.Address; addr != "" {
		mux := metricsMux(cfg, reg, pl.Handler())
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("metrics.address %q: %w", addr, err)
		}
		srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() { srvDone <- srv.Serve(ln) }()
		log.Info("serving metrics and health", slog.String("address", ln.Addr().String()))
	}

	runErr := pl.Run(ctx)
	go closeSession()

	// The HTTP server outlives the pipeline so /readyz reports "shutting down" throughout the drain; it
	// stops while the session closes.
	if srv != nil {
		sctx, cancel := context.WithTimeout(context.Background(), httpCloseTimeout)
		if err := srv.Shutdown(sctx); err != nil {
			_ = srv.Close() // a probe or scrape still in progress after the bound
		}
		cancel()
		if err := <-srvDone; err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("metrics server", slog.Any("error", err))
		}
	}
	return runErr
}

// metricsMux routes the metrics port: /metrics from reg, the debug endpoints, and the rest
// (/healthz, /readyz, /debug/partitions) to the pipeline's handler. metrics.debug false answers 404
// for every /debug/ path, the pipeline's /debug/partitions too.
func metricsMux(cfg *config.Config, reg *prometheus.Registry, pipeline http.Handler) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.Handle("/", pipeline)
	if !cfg.Metrics.Debug {
		mux.Handle("/debug/", http.NotFoundHandler())
		return mux
	}
	// Profiles on the metrics port, as Prometheus serves them: `make bench` takes the sink's CPU
	// profile here, and an operator can do the same on a live daemon.
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.Handle("/debug/config", configHandler(cfg))
	return mux
}

// readableDuration writes a duration attribute (retry_in, timeout, took) as Go writes a duration,
// "1.5s", where the JSON handler would write bare nanoseconds (1500000000), which a reader has to count.
func readableDuration(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		return slog.String(a.Key, a.Value.Duration().String())
	}
	return a
}

// newLogger builds the slog logger of log.level and log.format.
func newLogger(c config.Log, w io.Writer) *slog.Logger {
	var level slog.Level
	switch strings.ToLower(c.Level) {
	case "debug":
		level = slog.LevelDebug
	case "warn":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	default:
		level = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: readableDuration}
	if strings.EqualFold(c.Format, "text") {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// newMapper compiles cfg's topics into a mapper reading writer schemas from the client of cfg's
// schema_registry block, when it names one (the mapper builds no network client of its own).
func newMapper(cfg *config.Config) (*mapper.Mapper, error) {
	reg, err := registry.ForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return mapper.New(cfg, mapper.WithRegistry(reg))
}
