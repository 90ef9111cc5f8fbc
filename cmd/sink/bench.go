package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/bucketsink/sink/bench"
)

// benchUsage is the help of `sink bench` above its flags.
const benchUsage = "Usage: sink bench [--events N] [--entities N] [--quick] [flags]\n" +
	"\n" +
	"Runs the benchmark of the sink on a running Kafka and Cassandra (scripts/stack up): produces --events\n" +
	"sample events (default 1,000,000) to a fresh topic, then measures the direct-write ceiling, the\n" +
	"sink, the pipeline alone, peak RSS and event-to-commit latency; prints a table and writes a JSON\n" +
	"result. Progress goes to stderr.\n" +
	"\n" +
	"The steady-rate phase measures the sink, then a second ceiling at the same rate: the same events\n" +
	"written straight to Cassandra as UNLOGGED batches of 50 rows across partitions (a partial batch\n" +
	"after the sink's linger; 64 in flight, the sink's connections and consistency, token-unaware\n" +
	"round-robin routing), as a batching output unaware of partitions writes them. It reports rows per\n" +
	"request, CPU per row of the sink, of the client and of the Cassandra process, and freshness, side\n" +
	"by side as sink ÷ client ratios. --no-batch-client skips the client.\n" +
	"\n" +
	"The read phase writes one dense device over 30 daily buckets (--read-rows) straight to a fresh table,\n" +
	"then reads it back --read-rounds times both ways, alternating which goes first: the sink's reader as\n" +
	"`sink query` reads (its defaults, one page of every row, newest first), and a loop over the 30 days\n" +
	"with the driver alone, one query per day at its default 5,000-row pages. It reports wall time, requests\n" +
	"and Cassandra's CPU per row read, and sink ÷ loop per round; by default neither side prints a row\n" +
	"(--read-format table|csv|json makes the sink's side print them to nowhere, as the command would).\n" +
	"--read-only runs it alone (no Kafka topic,\n" +
	"no daemon); give --cassandra-pid when several Cassandra processes run here.\n" +
	"\n" +
	"--rollups N runs only the comparison of rollups: the backlog, a day back so every window of it is\n" +
	"closed, consumed N times without and N times with an hourly rollup of the raw rows and a daily one\n" +
	"made of the hourly rows, in alternated pairs; it reports rows/s with ÷ without per pair and, from the\n" +
	"daemon's metrics once every window is computed, each rollup's computations and Cassandra partition\n" +
	"reads per (device, window).\n"

// runBench measures the sink end to end against the raw Cassandra ceiling (package bench). It also
// serves as the discard daemon the harness runs for its pipeline-only phase: the same binary, so
// that phase measures exactly the code `sink run` executes, minus the Cassandra writes.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("bench", benchUsage, stdout, stderr)
	var (
		events     = fs.Int("events", 1_000_000, "backlog size in events")
		entities   = fs.Int("entities", 10_000, "distinct devices (Zipf-skewed)")
		partitions = fs.Int("partitions", 6, "partitions of each fresh topic")
		quick      = fs.Bool("quick", false, "one ceiling setting and a short latency phase: a first look, not for publishing")
		brokers    = fs.String("brokers", "127.0.0.1:9092", "Kafka bootstrap brokers, comma separated")
		hosts      = fs.String("cassandra", "127.0.0.1:9042", "Cassandra hosts, comma separated")
		keyspace   = fs.String("keyspace", "sinkbench", "keyspace of the bench tables (created if missing)")
		results    = fs.String("results", "bench/results", "directory for the JSON result (empty: do not write)")
		profile    = fs.String("profile", "", "directory for a CPU profile of the sink taken from its /debug/pprof")
		commitIvl  = fs.Duration("commit-interval", 250*time.Millisecond, "writer.commit_interval of the daemons; it bounds how late the end of a phase is seen")
		latencyFor = fs.Duration("latency-for", 0, "length of the fixed-rate latency phase (default 30s, 5s with --quick; negative skips it)")
		latRate    = fs.Float64("latency-rate", 0, "events/s of the latency phase (default: half the sink's measured rate)")
		settleMax  = fs.Duration("settle-max", 0, "longest wait for a quiet machine before each measured phase (default 30s, 10s with --quick; negative: no wait)")
		keepData   = fs.Bool("keep-data", false, "keep the run's tables and topics (default: each table is dropped once its phase is measured, the topics at the end)")
		sinkBin    = fs.String("sink-binary", "", "sink executable to measure (default: this one)")
		curve      = fs.String("curve", "", "steady phases alone at each of these rates (events/s, comma separated), --latency-for each: CPU per row of the sink and of Cassandra, rows per request and freshness, drawn as an SVG beside the JSON result")
		plot       = fs.String("plot", "", "draw the curves of the --plot-results files (written by --curve runs) into this SVG, one line per file, and exit")
		plotFiles  = fs.String("plot-results", "", "with --plot: the curve result files, comma separated")
		plotNames  = fs.String("plot-names", "", "with --plot: the lines' names, comma separated, in the order of the files (default: the file names)")
		steadyOnly = fs.Bool("steady-only", false, "run only the steady-rate phase, at --latency-rate for --latency-for: to compare binaries (--sink-binary) side by side")
		noClient   = fs.Bool("no-batch-client", false, "skip the 50-row multi-partition client after the steady phase (it takes as long again)")
		noProbes   = fs.Bool("no-probes", false, "send no freshness probes in the steady phase (no freshness reported): to measure what their reads cost Cassandra")
		client     = fs.String("batch-client", "", "internal: run the harness's 50-row client from this spec file")
		cassPID    = fs.Int("cassandra-pid", 0, "the Cassandra server process whose CPU the steady and read phases read (default: the only Cassandra process on this machine)")
		daemonEnv  = fs.String("daemon-env", "", "config overrides for the daemons, comma separated, e.g. SINK_WRITER__LINGER=50ms (recorded in the result)")
		discard    = fs.Bool("discard-daemon", false, "internal: run the pipeline with a discarding writer (the harness's pipeline-only phase)")
		cfgPath    = fs.String("config", "", "internal, with --discard-daemon: the daemon config")
		codecName  = fs.String("codec", "json", "also run the sink over the same events in avro, protobuf or json_schema, and compare its rows/s with JSON's")
		entries    = fs.Int("entries", 1, "2: also run the sink over the same backlog with a second entry reading its topic (readings by site and hour), compare rows/s per table and CPU per record with one entry's, and write the same rows directly into both tables at the ceiling's best setting (what the node gives a second table)")
		readOnly   = fs.Bool("read-only", false, "run only the read phase: one dense device read by the sink's reader and by a driver loop")
		readRows   = fs.Int("read-rows", bench.DefaultReadRows, "rows of the read phase's device over 30 days (negative: skip the phase)")
		readRounds = fs.Int("read-rounds", bench.DefaultReadRounds, "rounds of the read phase, each reading the device both ways")
		readFormat = fs.String("read-format", "none", "what the read phase's sink side does with each row: none (reads it, as the loop does) or a format of sink query (table, csv, json) it also prints to nowhere")
		rollups    = fs.Int("rollups", 0, "run only the rollups comparison: the sink over one backlog (a day back, every window closed) without and with an hourly and a daily rollup, this many alternated pairs; rows/s with ÷ without per pair, and each rollup's computations and Cassandra partition reads per window")
		registry   = fs.String("registry", "http://127.0.0.1:8081/apis/ccompat/v7", "with --codec: the schema registry's base URL")
	)
	if code, ok := fs.parse(args); !ok {
		return code
	}
	if *plot != "" {
		files := splitList(*plotFiles)
		if len(files) == 0 {
			fmt.Fprintln(stderr, "sink bench: --plot needs the curve result files (--plot-results A.json,B.json)")
			return exitUsage
		}
		if err := bench.PlotCurves(*plot, files, splitList(*plotNames)); err != nil {
			fmt.Fprintf(stderr, "sink bench: %v\n", err)
			return exitFailure
		}
		fmt.Fprintf(stdout, "plot written to %s\n", *plot)
		return exitOK
	}
	rates, err := parseRates(*curve)
	if err != nil {
		fmt.Fprintf(stderr, "sink bench: --curve: %v\n", err)
		return exitUsage
	}
	if *client != "" {
		if err := bench.RunBatchClient(ctx, *client, os.Stdin, stdout); err != nil {
			fmt.Fprintf(stderr, "sink bench: %v\n", err)
			return exitFailure
		}
		return exitOK
	}
	if *discard {
		if *cfgPath == "" {
			fmt.Fprintln(stderr, "sink bench: --discard-daemon needs --config")
			return exitUsage
		}
		if err := bench.RunDiscardDaemon(ctx, *cfgPath, stderr); err != nil {
			fmt.Fprintf(stderr, "sink bench: %v\n", err)
			return exitFailure
		}
		return exitOK
	}

	res, err := bench.Run(ctx, bench.Options{
		Events: *events, Entities: *entities, Partitions: *partitions, Quick: *quick,
		Brokers: splitList(*brokers), Cassandra: splitList(*hosts), Keyspace: *keyspace,
		SinkBinary: *sinkBin, CommitInterval: *commitIvl, LatencyFor: *latencyFor, LatencyRate: *latRate,
		DaemonEnv: splitList(*daemonEnv), ProfileDir: *profile, Progress: stderr, SettleMax: *settleMax,
		KeepData: *keepData, SteadyOnly: *steadyOnly, Curve: rates, CassandraPID: *cassPID, NoBatchClient: *noClient, NoProbes: *noProbes,
		Codec: *codecName, Registry: *registry, Entries: *entries, Rollups: *rollups,
		ReadOnly: *readOnly, ReadRows: *readRows, ReadRounds: *readRounds, ReadFormat: *readFormat,
	})
	if err != nil {
		fmt.Fprintf(stderr, "sink bench: %v\n", err)
		return exitFailure
	}
	fmt.Fprintln(stdout)
	res.PrintTable(stdout)
	if *results != "" {
		path, err := res.WriteJSON(*results)
		if err != nil {
			fmt.Fprintf(stderr, "sink bench: %v\n", err)
			return exitFailure
		}
		fmt.Fprintf(stdout, "\nresult written to %s\n", path)
	}
	return exitOK
}

// parseRates reads --curve's comma-separated rates; none for an empty flag.
func parseRates(s string) ([]float64, error) {
	var out []float64
	for _, x := range splitList(s) {
		v, err := strconv.ParseFloat(x, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a rate in events/s", x)
		}
		out = append(out, v)
	}
	return out, nil
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}
