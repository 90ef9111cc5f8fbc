package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/cassandra"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/gen"
	"github.com/bucketsink/sink/reader/output"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
)

// Options configure one run of the harness.
type Options struct {
	Events     int // backlog size; default 1,000,000
	Entities   int // distinct devices; default 10,000
	Partitions int // partitions of each fresh topic; default 6
	// Quick tries a single ceiling setting and measures latency briefly: for smoke tests and a
	// first look, not for published numbers.
	Quick bool

	Brokers   []string // Kafka; default 127.0.0.1:9092
	Cassandra []string // default 127.0.0.1:9042
	Keyspace  string   // default "sinkbench"; created if missing
	// Prefix starts every topic, table and group name of the run; default "bench_<unix milliseconds>":
	// runs on a shared stack, one after the other or by several people, often start within one second.
	// It must be a valid CQL identifier start (letters, digits, underscores).
	Prefix string

	// SinkBinary is the sink executable run as `SinkBinary run --config F` and
	// `SinkBinary bench --discard-daemon --config F`. Default: this process's executable.
	SinkBinary string
	// HarnessBinary runs the harness's own client, `HarnessBinary bench --batch-client SPEC`, whatever
	// SinkBinary is (an older build may not have it). Default: this process's executable.
	HarnessBinary string
	// CommitInterval is writer.commit_interval of the daemons; default 250ms. A phase ends when the
	// committed offsets reach the end of the topic, so the interval bounds how late that is seen
	// (half of it on average), and it is most of the event-to-commit latency.
	CommitInterval time.Duration
	// LatencyFor is how long the fixed-rate phase produces; default 30s (5s with Quick).
	// Negative skips the phase.
	LatencyFor time.Duration
	// LatencyRate is the produce rate of the latency phase in events/s; 0 means half the sink's
	// measured backlog rate.
	LatencyRate float64
	// DaemonEnv are extra NAME=value variables for every daemon, e.g. SINK_WRITER__LINGER=50ms to
	// measure a setting other than the shipped default; they are recorded in the result.
	DaemonEnv []string
	// SettleMax bounds the wait for a quiet machine before each measured write phase (see settle);
	// default 30s (10s with Quick). Negative measures each phase right after the one before.
	SettleMax time.Duration
	// ProfileDir, when set, receives a CPU profile of the sink (sink.pprof) taken over its run, and
	// one of the steady phase's produce window (steady-<rate>.pprof).
	ProfileDir string
	// WorkDir holds configs and daemon logs; default a fresh temporary directory, removed after a
	// successful run and kept after a failed one.
	WorkDir string
	// KeepData keeps the run's tables and topics. By default each table is dropped as soon as its
	// phase is measured, and the topics when the run ends, failed or not: a run writes several
	// million rows, and tables left behind run after run fill Cassandra's heap until later runs
	// measure its garbage collector (see drop).
	KeepData bool
	// Progress receives progress lines while the run goes; nil discards them.
	Progress io.Writer
	// SteadyOnly runs the steady-rate phase alone, at LatencyRate (required): to compare binaries
	// (SinkBinary) side by side at one rate without the backlog phases.
	SteadyOnly bool
	// Curve runs the steady phase at each of these rates in turn (events/s, LatencyFor each), the
	// backlog phases and the 50-row client left out: Result.Curve, drawn as an SVG beside the result.
	Curve []float64
	// NoBatchClient skips the 50-row client after the steady phase (batchclient.go), which takes
	// about as long again as that phase.
	NoBatchClient bool
	// NoProbes sends no freshness probes in the steady phase and the 50-row client's (no freshness is
	// then reported): a run with and one without tell what the probes' reads cost Cassandra.
	NoProbes bool
	// CassandraPID is the Cassandra server process whose CPU the steady phase reads from /proc; 0 looks
	// for the one Cassandra process on this machine (none or several: its CPU is not measured).
	CassandraPID int
	// Codec, when avro, protobuf or json_schema, adds a phase after the sink's: the same events
	// produced in that format (their schema registered in Registry, a Confluent-compatible API's base
	// URL) and consumed by the sink, whose rows/s is compared with the JSON run's (Result.Codec).
	Codec    string
	Registry string
	// ReadOnly runs the read phase alone (readPhase): no topic, no daemon.
	ReadOnly bool
	// ReadRows is how many rows the read phase writes for its one device over 30 days; default
	// DefaultReadRows. Negative skips the read phase of a full run.
	ReadRows int
	// ReadRounds is how many times the read phase reads the device both ways; default DefaultReadRounds.
	ReadRounds int
	// ReadFormat is what the read phase's sink side does with each row: "" or "none" only reads it,
	// as the loop does (the like-for-like comparison); an output format (table, csv, json) also prints
	// it to nowhere as `sink query` does, so the figure is the command's.
	ReadFormat string
	// Entries, when 2, adds a phase after the sink's: the sink again over the same backlog with a
	// second entry reading the Kafka topic (the readings by site and hour), its rows/s per table and
	// CPU per record compared with the one-entry run's, and the ceiling's client writing the same rows
	// into both tables, for what the node gives a second table (Result.Entries). 0 or 1: no such phase.
	Entries int
	// Rollups, when positive, runs only the comparison of rollups (rollups.go): the backlog produced
	// once, a day back so every window of it is closed, then the sink over it without and with an
	// hourly and a daily rollup, this many pairs, alternating which of the two runs first
	// (Result.Rollups). No ceiling, pipeline, steady or read phase.
	Rollups int
}

// sampleEvery is how many events of the steady phase go per freshness probe: about 20 probes a
// second, each polled every 5 ms until readable; 0 (none) with NoProbes.
func (o *Options) sampleEvery(rate float64) int {
	if o.NoProbes {
		return 0
	}
	return max(1, int(rate/20))
}

func (o *Options) defaults() error {
	if o.Events == 0 {
		o.Events = 1_000_000
	}
	if o.Entities == 0 {
		o.Entities = 10_000
	}
	if o.Partitions == 0 {
		o.Partitions = 6
	}
	if len(o.Brokers) == 0 {
		o.Brokers = []string{"127.0.0.1:9092"}
	}
	if len(o.Cassandra) == 0 {
		o.Cassandra = []string{"127.0.0.1:9042"}
	}
	if o.Keyspace == "" {
		o.Keyspace = "sinkbench"
	}
	if o.Prefix == "" {
		o.Prefix = fmt.Sprintf("bench_%d", time.Now().UnixMilli())
	}
	if o.CommitInterval == 0 {
		o.CommitInterval = 250 * time.Millisecond
	}
	if o.LatencyFor == 0 {
		o.LatencyFor = 30 * time.Second
		if o.Quick {
			o.LatencyFor = 5 * time.Second
		}
	}
	if o.SettleMax == 0 {
		o.SettleMax = 30 * time.Second
		if o.Quick {
			o.SettleMax = 10 * time.Second
		}
	}
	if o.ReadRows == 0 {
		o.ReadRows = DefaultReadRows
	}
	if o.ReadRounds == 0 {
		o.ReadRounds = DefaultReadRounds
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.SinkBinary == "" || o.HarnessBinary == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("finding the sink binary (set SinkBinary and HarnessBinary): %w", err)
		}
		o.SinkBinary = cmp.Or(o.SinkBinary, exe)
		o.HarnessBinary = cmp.Or(o.HarnessBinary, exe)
	}
	var errs []error
	if o.Events < 1 {
		errs = append(errs, fmt.Errorf("events: %d, want at least 1", o.Events))
	}
	if o.Entities < 2 {
		errs = append(errs, fmt.Errorf("entities: %d, want at least 2 (the Zipf draw needs a range)", o.Entities))
	}
	if o.Partitions < 1 {
		errs = append(errs, fmt.Errorf("partitions: %d, want at least 1", o.Partitions))
	}
	if o.Entries < 0 || o.Entries > 2 {
		errs = append(errs, fmt.Errorf("entries: %d, want 1 or 2", o.Entries))
	}
	if o.ReadRows < readDays && (o.ReadOnly || o.ReadRows > 0) {
		errs = append(errs, fmt.Errorf("read rows: %d, want at least %d (one a day)", o.ReadRows, readDays))
	}
	if f := o.ReadFormat; f != "" && f != "none" && !slices.Contains(output.Formats, f) {
		errs = append(errs, fmt.Errorf("read format: %q, want none or one of %v", f, output.Formats))
	}
	if o.ReadRounds < 1 {
		errs = append(errs, fmt.Errorf("read rounds: %d, want at least 1", o.ReadRounds))
	}
	for _, r := range o.Curve {
		if !(r >= 1) || math.IsInf(r, 0) {
			errs = append(errs, fmt.Errorf("curve: rate %v, want at least 1 event/s", r))
		}
	}
	if len(o.Curve) > 0 && (o.ReadOnly || o.SteadyOnly) {
		errs = append(errs, errors.New("the curve runs steady phases alone: leave out --steady-only and --read-only"))
	}
	if len(o.Curve) > 0 && o.LatencyFor <= 0 {
		errs = append(errs, errors.New("the curve needs a length for each rate (--latency-for)"))
	}
	if o.Rollups < 0 {
		errs = append(errs, fmt.Errorf("rollups: %d pairs, want 0 or more", o.Rollups))
	}
	if o.Rollups > 0 && (o.ReadOnly || o.SteadyOnly || len(o.Curve) > 0 || (o.Codec != "" && o.Codec != gen.CodecJSON) || o.Entries == 2) {
		errs = append(errs, errors.New("the rollups comparison runs alone: leave out --read-only, --steady-only, --curve, --codec and --entries"))
	}
	if o.ReadOnly && o.SteadyOnly {
		errs = append(errs, errors.New("the read phase alone and the steady phase alone exclude each other"))
	}
	if o.Codec == gen.CodecJSON {
		o.Codec = "" // the JSON run is always made
	}
	if o.Codec != "" {
		if _, err := gen.Schema(o.Codec); err != nil {
			errs = append(errs, fmt.Errorf("codec: %w", err))
		}
		if o.Registry == "" {
			errs = append(errs, fmt.Errorf("codec %s needs the schema registry's URL", o.Codec))
		}
	}
	return errors.Join(errs...)
}

// Run executes every phase and returns the result. It leaves the topics and tables it made in
// place (names start with Options.Prefix) so a surprising number can be inspected afterwards.
func Run(ctx context.Context, o Options) (*Result, error) {
	if err := o.defaults(); err != nil {
		return nil, fmt.Errorf("bench options: %w", err)
	}
	ownDir := o.WorkDir == ""
	if ownDir {
		dir, err := os.MkdirTemp("", "sinkbench-")
		if err != nil {
			return nil, fmt.Errorf("creating the work directory: %w", err)
		}
		o.WorkDir = dir
	}
	h := &harness{o: o, p: newProgress(o.Progress)}
	defer h.p.stop()
	res, err := h.run(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w (configs and daemon logs are in %s)", err, o.WorkDir)
	}
	if ownDir {
		os.RemoveAll(o.WorkDir)
	}
	return res, nil
}

type harness struct {
	o     Options
	p     *progress
	adm   *kadm.Client
	admin *gocql.Session
	res   Result
	// The ceiling's winning setting, written again after the sink.
	bestSetting ceilingSetting
	consistency gocql.Consistency
	// What the run created and has not dropped yet (see drop and cleanup).
	tables, topics []string
	// live ends the steady phase's topic, table and group names: one of its own per curve point.
	live string
}

func (h *harness) run(ctx context.Context) (*Result, error) {
	o := h.o
	kcl, err := kgo.NewClient(kgo.SeedBrokers(o.Brokers...))
	if err != nil {
		return nil, fmt.Errorf("creating the Kafka admin client for %v: %w", o.Brokers, err)
	}
	defer kcl.Close()
	h.adm = kadm.NewClient(kcl)

	h.admin, err = ceilingSession(o.Cassandra, "", 1)
	if err != nil {
		return nil, err
	}
	defer h.admin.Close()
	defer h.cleanup() // before the clients close

	r := &h.res
	r.Date = time.Now().UTC()
	r.GitCommit, r.GitDirty = gitCommit()
	r.Machine = h.machine(ctx)
	r.Params = Params{
		Events: o.Events, Entities: o.Entities, Partitions: o.Partitions, Quick: o.Quick,
		Compression: compressionName, CommitInterval: o.CommitInterval.String(), DaemonEnv: o.DaemonEnv,
		SettleMax: o.SettleMax.String(), KeepData: o.KeepData, SteadyOnly: o.SteadyOnly, NoProbes: o.NoProbes, ReadOnly: o.ReadOnly,
		Curve: o.Curve, Rollups: o.Rollups,
	}
	if o.ReadOnly || (o.ReadRows > 0 && !o.SteadyOnly) {
		r.Params.ReadRows, r.Params.ReadRounds = o.ReadRows, o.ReadRounds
	}
	if self, err := os.Executable(); err == nil && o.SinkBinary != self {
		r.Params.SinkBinary = filepath.Base(o.SinkBinary)
	}
	if o.ReadOnly {
		h.p.logf("bench: the read phase alone, %d rows of one device over %d days; %d cores, %s, Cassandra %s",
			o.ReadRows, readDays, r.Machine.Cores, r.Machine.Go, r.Machine.Cassandra)
		if err := h.readPhase(ctx); err != nil {
			return nil, err
		}
		r.judge()
		return r, nil
	}
	h.p.logf("bench: %d events, %d entities, %d partitions; %d cores, %s, Kafka %s, Cassandra %s",
		o.Events, o.Entities, o.Partitions, r.Machine.Cores, r.Machine.Go, r.Machine.Kafka, r.Machine.Cassandra)

	if o.Rollups > 0 {
		if err := h.rollups(ctx); err != nil {
			return nil, err
		}
		r.judge()
		return r, nil
	}
	if len(o.Curve) > 0 {
		if err := h.curve(ctx); err != nil {
			return nil, err
		}
		return r, nil
	}
	if o.SteadyOnly {
		if o.LatencyRate <= 0 || o.LatencyFor <= 0 {
			return nil, errors.New("the steady phase alone needs a rate (--latency-rate) and a length")
		}
		if err := h.settle(ctx, "steady"); err != nil {
			return nil, err
		}
		if err := h.steady(ctx, o.LatencyRate); err != nil {
			return nil, err
		}
		return r, nil
	}

	// Phase 1: the backlog.
	topic := o.Prefix + "_backlog"
	records, end, err := h.produce(ctx, topic, backlogStart(o.Events))
	if err != nil {
		return nil, err
	}

	// The sink's config, loaded with its own loader: the ceiling uses the same policy, the same
	// consistency and, as its baseline setting, the same writer limits.
	base := setup{
		Brokers: o.Brokers, Hosts: o.Cassandra, Keyspace: o.Keyspace, Topic: topic,
		Table: o.Prefix + "_sink", Group: o.Prefix + "_sink", CommitInterval: o.CommitInterval,
	}
	if base.Metrics, err = freeAddr(); err != nil {
		return nil, err
	}
	sinkPath, sinkCfg, err := base.write(o.WorkDir, "sink", o.DaemonEnv)
	if err != nil {
		return nil, err
	}
	w := sinkCfg.Writer
	r.Params.BatchMaxRows, r.Params.BatchMaxBytes = w.BatchMaxRows, int64(w.BatchMaxBytes)
	r.Params.Linger, r.Params.MaxInFlight = w.Linger.Std().String(), w.MaxInFlight
	r.Params.MaxBuffered, r.Params.MemoryLimit = int64(w.MaxBufferedBytes), int64(w.MemoryLimit)
	r.Params.FetchMaxBytes = int64(sinkCfg.Kafka.FetchMaxBytes)

	// How fast this machine's cores are, before any phase loads Cassandra.
	if r.Machine.MapNanos, err = calibrate(sinkCfg, topic, records); err != nil {
		return nil, err
	}
	h.p.logf("bench: one core maps a backlog record in %.0f ns", r.Machine.MapNanos)

	// Phase 2: the ceiling.
	if err := h.ceiling(ctx, base, records, sinkCfg); err != nil {
		return nil, err
	}
	// Phase 3: the sink over the backlog.
	if err := h.createTable(ctx, sinkCfg); err != nil {
		return nil, err
	}
	if err := h.settle(ctx, "sink"); err != nil {
		return nil, err
	}
	// Profile lengths are guesses at each phase's duration, rounded down so the profile covers
	// steady work rather than the idle tail.
	var total int64
	for _, e := range end {
		total += e
	}
	sink, err := h.daemon(ctx, "sink", []string{"run", "--config", sinkPath}, base, end, o.ProfileDir,
		int(max(3, min(120, total/40_000))))
	if err != nil {
		return nil, err
	}
	sink.Table = base.Table
	h.drop(ctx, base.Table)

	// Phase 3b: the same events in another format, through the same sink.
	if o.Codec != "" {
		if err := h.codecRun(ctx, base, sink.PerSec); err != nil {
			return nil, err
		}
	}

	// Phase 3c: the same backlog read by two entries.
	if o.Entries == 2 {
		if err := h.entriesRun(ctx, base, records, end, sink); err != nil {
			return nil, err
		}
	}

	// The ceiling again, after the sink and the wait for a quiet machine, with the same setting:
	// Cassandra's state drifts (memtable flushes, compactions of the tables just written, other load on
	// the machine), and the sink is judged against the better of the two runs that bracket it, never
	// the worse.
	if err := h.settle(ctx, "ceiling_after"); err != nil {
		return nil, err
	}
	after, err := h.ceilingTrial(ctx, base, "ceiling_after", records, h.bestSetting, h.consistency)
	if err != nil {
		return nil, err
	}
	after.Final, after.After = true, true
	r.Ceiling.Trials = append(r.Ceiling.Trials, after)
	r.Ceiling.RowsPerS = max(r.Ceiling.Best.RowsPerS, after.RowsPerS)
	records = nil // the backlog copy is not needed any more; let the GC have it

	sink.RatioToCeiling = sink.PerSec / r.Ceiling.RowsPerS
	r.Sink = *sink
	r.compareEntries()

	// Phase 4: the pipeline alone, with the discarding writer, over the same backlog.
	// It writes nothing, but prepares the sink's INSERT on a table of its own, empty.
	pipe := base
	pipe.Group, pipe.Table = o.Prefix+"_pipeline", o.Prefix+"_pipeline"
	pipePath, _, err := h.freshTable(ctx, &pipe, "pipeline")
	if err != nil {
		return nil, err
	}
	if err := h.settle(ctx, "pipeline"); err != nil {
		return nil, err
	}
	pl, err := h.daemon(ctx, "pipeline", []string{"bench", "--discard-daemon", "--config", pipePath}, pipe, end, o.ProfileDir,
		int(max(2, min(60, total/250_000))))
	if err != nil {
		return nil, err
	}
	r.Pipeline = *pl

	// Phase 5: latency at half the sink's measured rate.
	if o.LatencyFor > 0 {
		rate := o.LatencyRate
		if rate == 0 {
			rate = sink.PerSec / 2
		}
		if err := h.settle(ctx, "latency"); err != nil {
			return nil, err
		}
		if err := h.steady(ctx, rate); err != nil {
			return nil, err
		}
	}

	// Phase 6: one dense device read back, by the sink's reader and by a driver loop.
	if o.ReadRows > 0 {
		if err := h.readPhase(ctx); err != nil {
			return nil, err
		}
	}

	r.judge()
	return r, nil
}

// produce creates topic and produces the backlog to it, its first event at start, and records the
// phase in the result. It returns the records and the end offset of each partition.
func (h *harness) produce(ctx context.Context, topic string, start time.Time) ([]record, map[int32]int64, error) {
	o := h.o
	if err := createTopic(ctx, h.adm, topic, o.Partitions); err != nil {
		return nil, nil, err
	}
	h.topics = append(h.topics, topic)
	var produced atomic.Int64
	h.p.phase("produce", int64(o.Events), "events", &produced)
	t0 := time.Now()
	records, bytes, err := produceBacklog(ctx, o.Brokers, topic, o.Events, o.Entities, start, &produced, nil)
	if err != nil {
		return nil, nil, err
	}
	el := time.Since(t0)
	h.p.done()
	h.res.Produce = Produce{
		Topic: topic, Events: len(records), Bytes: bytes, AvgEventBytes: float64(bytes) / float64(len(records)),
		Seconds: el.Seconds(), EventsPerSec: float64(len(records)) / el.Seconds(),
	}
	end := make(map[int32]int64)
	for _, rec := range records {
		end[rec.Partition] = max(end[rec.Partition], rec.Offset+1)
	}
	return records, end, nil
}

// codecRun produces the backlog's events again in o.Codec and measures the sink over them, against
// jsonPerSec, the JSON run's rows/s.
func (h *harness) codecRun(ctx context.Context, base setup, jsonPerSec float64) error {
	o := h.o
	cl, err := sr.NewClient(sr.URLs(o.Registry))
	if err != nil {
		return fmt.Errorf("schema registry %s: %w", o.Registry, err)
	}
	st := base
	st.Topic, st.Table, st.Group = o.Prefix+"_backlog_"+o.Codec, o.Prefix+"_sink_"+o.Codec, o.Prefix+"_sink_"+o.Codec
	st.Codec, st.Registry = o.Codec, o.Registry
	if st.Metrics, err = freeAddr(); err != nil {
		return err
	}
	enc, err := gen.Register(ctx, cl, o.Codec, st.Topic+"-value")
	if err != nil {
		return err
	}
	if err := createTopic(ctx, h.adm, st.Topic, o.Partitions); err != nil {
		return err
	}
	h.topics = append(h.topics, st.Topic)
	var produced atomic.Int64
	h.p.phase("produce "+o.Codec, int64(o.Events), "events", &produced)
	records, bytes, err := produceBacklog(ctx, o.Brokers, st.Topic, o.Events, o.Entities, backlogStart(o.Events), &produced, enc)
	if err != nil {
		return err
	}
	h.p.done()
	end := make(map[int32]int64)
	var total int64
	for _, rec := range records {
		end[rec.Partition] = max(end[rec.Partition], rec.Offset+1)
	}
	for _, e := range end {
		total += e
	}
	path, cfg, err := st.write(o.WorkDir, "sink_"+o.Codec, o.DaemonEnv)
	if err != nil {
		return err
	}
	if err := h.createTable(ctx, cfg); err != nil {
		return err
	}
	if err := h.settle(ctx, "sink_"+o.Codec); err != nil {
		return err
	}
	p, err := h.daemon(ctx, "sink_"+o.Codec, []string{"run", "--config", path}, st, end, "", int(max(3, min(120, total/40_000))))
	if err != nil {
		return err
	}
	p.Table = st.Table
	h.drop(ctx, st.Table)
	h.res.Codec = &CodecRun{Codec: o.Codec, AvgEventBytes: float64(bytes) / float64(len(records)), Sink: *p, RatioToJSON: p.PerSec / jsonPerSec}
	return nil
}

// entriesRun runs the sink over the backlog again with the config of two entries on its Kafka topic
// (a fresh group, fresh tables) and compares it with one, the one-entry run: every record gives a row
// to each table, so the run's records/s is its rows/s per table. Then the ceiling's client writes the
// records' rows into a fresh pair of tables of the same two entries, at the setting the one-table
// ceiling found best (no search of its own): what the node takes with a second table. Its ratios need
// the one-table ceiling's final figure, known only after the run's last ceiling (Result.compareEntries).
func (h *harness) entriesRun(ctx context.Context, base setup, records []record, end map[int32]int64, one *Process) error {
	o := h.o
	st := base
	st.Table, st.SiteTable, st.Group = o.Prefix+"_sink_e2", o.Prefix+"_sink_e2_site", o.Prefix+"_sink_e2"
	path, _, err := h.freshTable(ctx, &st, "sink_entries2")
	if err != nil {
		return err
	}
	if err := h.settle(ctx, "sink_entries2"); err != nil {
		return err
	}
	var total int64
	for _, e := range end {
		total += e
	}
	p, err := h.daemon(ctx, "sink_entries2", []string{"run", "--config", path}, st, end, "", int(max(3, min(120, total/40_000))))
	if err != nil {
		return err
	}
	p.Table = st.Table + "," + st.SiteTable
	h.drop(ctx, st.Table)
	h.drop(ctx, st.SiteTable)
	if err := h.settle(ctx, "ceiling_entries2"); err != nil {
		return err
	}
	c, err := h.ceilingTrial(ctx, st, "ceiling_entries2", records, h.bestSetting, h.consistency)
	if err != nil {
		return err
	}
	c.Final = true
	h.res.Entries = &EntriesRun{Entries: 2, Tables: []string{st.Table, st.SiteTable}, Sink: *p,
		PerTableRatio: p.PerSec / one.PerSec, CPUPerRecordRatio: p.CPUPerMillion / one.CPUPerMillion, Ceiling: c}
	return nil
}

// freshTable readies st for a phase: a free metrics address, its config written as <name>.yaml and loaded
// with the daemons' overrides (setup.write), and its tables created. It returns the config's path and
// the config.
func (h *harness) freshTable(ctx context.Context, st *setup, name string) (string, *config.Config, error) {
	var err error
	if st.Metrics, err = freeAddr(); err != nil {
		return "", nil, err
	}
	path, cfg, err := st.write(h.o.WorkDir, name, h.o.DaemonEnv)
	if err != nil {
		return "", nil, err
	}
	if err := h.createTable(ctx, cfg); err != nil {
		return "", nil, err
	}
	return path, cfg, nil
}

// createTable applies the schema `sink schema` would print for every entry of the bench config: the
// keyspace if missing, and the tables.
func (h *harness) createTable(ctx context.Context, cfg *config.Config) error {
	ddl, err := cassandra.Schema(cfg, nil, time.Now())
	if err != nil {
		return fmt.Errorf("generating the schema of the bench config: %w", err)
	}
	for _, tp := range cfg.Topics { // before the DDL: a half-made table is dropped too
		h.tables = append(h.tables, tp.Table)
		for _, r := range tp.Rollups {
			h.tables = append(h.tables, r.Table)
		}
		if len(tp.Rollups) > 0 && !slices.Contains(h.tables, cassandra.PendingTable) {
			h.tables = append(h.tables, cassandra.PendingTable)
		}
	}
	for _, stmt := range ddl {
		if err := h.admin.Query(stmt).ExecContext(ctx); err != nil {
			return fmt.Errorf("applying %q: %w", firstLine(stmt), err)
		}
	}
	return nil
}

// drop removes a table of the run once its phase is measured (unless KeepData), so that every
// phase writes to a Cassandra that holds none of the earlier phases' rows. Kept, the tables of a
// full run (about 3.4 million rows) and of the runs before it stay in memtables and caches: after
// four runs on a 2-core machine with the stack's 1 GiB heap, Cassandra's old generation stayed
// full, it spent seconds per minute in old-generation collections, and a run failed on write
// timeouts. auto_snapshot is off in the stack, so a drop writes nothing. A drop that fails is
// reported and left to cleanup: the phase is measured, and leftovers cost later runs, not this one.
func (h *harness) drop(ctx context.Context, table string) {
	if h.o.KeepData {
		return
	}
	stmt := fmt.Sprintf("DROP TABLE IF EXISTS %s.%s", h.o.Keyspace, table)
	if err := h.admin.Query(stmt).ExecContext(ctx); err != nil {
		h.p.logf("bench: dropping the measured table %s.%s: %v (drop it by hand if it stays)", h.o.Keyspace, table, err)
		return
	}
	h.tables = slices.DeleteFunc(h.tables, func(t string) bool { return t == table })
}

// cleanup drops what the run created and still holds, whether it succeeded or not (unless
// KeepData): the remaining tables and the topics. A failed run keeps its configs and daemon logs
// in WorkDir; its data would only burden the next run. What cannot be removed is reported, and
// the run's result stands.
func (h *harness) cleanup() {
	if h.o.KeepData {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, t := range slices.Clone(h.tables) {
		h.drop(ctx, t)
	}
	if len(h.topics) == 0 {
		return
	}
	resps, err := h.adm.DeleteTopics(ctx, h.topics...)
	if err == nil {
		err = resps.Error()
	}
	if err != nil {
		h.p.logf("bench: deleting the run's topics %v: %v (delete them by hand)", h.topics, err)
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// ceiling maps the backlog records once per trial (outside the timed part) into a fresh table and
// writes them directly with each setting of the grid, then repeats the best setting over every
// row if the trials used a sample.
func (h *harness) ceiling(ctx context.Context, base setup, records []record, sinkCfg *config.Config) error {
	o := h.o
	w := sinkCfg.Writer
	grid := ceilingGrid(o.Quick, w.BatchMaxRows, int(w.BatchMaxBytes), w.MaxInFlight, sinkCfg.Cassandra.NumConns)
	consistency, err := gocql.ParseConsistencyWrapper(sinkCfg.Topics[topicName].Consistency)
	if err != nil {
		return fmt.Errorf("topics.%s.consistency: %w", topicName, err)
	}
	// Trials run on a sample so a grid of settings fits in minutes; the winner then writes every
	// row, and that final run is the ceiling. With Quick there is one setting and no sample.
	sample := len(records)
	if len(grid) > 1 {
		sample = min(len(records), max(200_000, len(records)/5))
	}
	// A first untimed pass warms Cassandra's JIT and memtables, which would otherwise make whichever
	// setting runs first look worst.
	if !o.Quick {
		if _, err := h.ceilingTrial(ctx, base, "warmup", records[:sample], grid[0], consistency); err != nil {
			return err
		}
	}
	var (
		best        CeilingTrial
		bestSetting ceilingSetting
	)
	if len(grid) == 1 {
		// The one setting writes every row: it is the ceiling.
		if err := h.settle(ctx, "ceiling"); err != nil {
			return err
		}
	}
	for i, s := range grid {
		t, err := h.ceilingTrial(ctx, base, fmt.Sprintf("ceiling%d", i), records[:sample], s, consistency)
		if err != nil {
			return err
		}
		t.Final = len(grid) == 1
		h.res.Ceiling.Trials = append(h.res.Ceiling.Trials, t)
		if t.RowsPerS > best.RowsPerS {
			best, bestSetting = t, s
		}
	}
	if len(grid) > 1 {
		s := bestSetting
		if err := h.settle(ctx, "ceiling"); err != nil {
			return err
		}
		t, err := h.ceilingTrial(ctx, base, "ceiling", records, s, consistency)
		if err != nil {
			return err
		}
		t.Final = true
		h.res.Ceiling.Trials = append(h.res.Ceiling.Trials, t)
		best = t
	}
	h.res.Ceiling.Best = best
	h.res.Ceiling.RowsPerS = best.RowsPerS
	h.bestSetting, h.consistency = bestSetting, consistency
	return nil
}

// ceilingTrial writes records with setting s into a fresh table named after the trial; when base is a
// setup of two entries (its SiteTable set), into a fresh pair of tables, each record's row in each.
func (h *harness) ceilingTrial(ctx context.Context, base setup, name string, records []record, s ceilingSetting, consistency gocql.Consistency) (CeilingTrial, error) {
	st := base
	st.Table = h.o.Prefix + "_" + name
	tables := []string{st.Table}
	if base.SiteTable != "" {
		st.SiteTable = st.Table + "_site"
		tables = append(tables, st.SiteTable)
	}
	_, cfg, err := st.write(h.o.WorkDir, name, h.o.DaemonEnv)
	if err != nil {
		return CeilingTrial{}, err
	}
	if err := h.createTable(ctx, cfg); err != nil {
		return CeilingTrial{}, err
	}
	mapStart := time.Now()
	rows, err := ceilingRows(ctx, cfg, base.Topic, records)
	if err != nil {
		return CeilingTrial{}, err
	}
	if len(tables) == 1 {
		h.res.Ceiling.MapSecond = time.Since(mapStart).Seconds()
	}
	batches := groupRows(rows, s)

	var write func(context.Context, *batcher.Batch) error
	switch s.Writer {
	case writerSink:
		cc := cfg.Cassandra
		cc.NumConns = s.NumConns
		sess, err := cassandra.Connect(ctx, cc)
		if err != nil {
			return CeilingTrial{}, err
		}
		defer sess.Close()
		w := cfg.Writer
		write = sinkWrite(cassandra.NewWriter(sess, cassandra.WriterConfig{
			MaxInFlight: s.Concurrency, RetryInitial: w.RetryInitial.Std(), RetryMax: w.RetryMax.Std(), RetryAttempts: 5,
		}, nil))
	default:
		sess, err := ceilingSession(h.o.Cassandra, h.o.Keyspace, s.NumConns)
		if err != nil {
			return CeilingTrial{}, err
		}
		defer sess.Close()
		write = func(ctx context.Context, b *batcher.Batch) error { return execBatch(ctx, sess, b, consistency) }
	}
	var done atomic.Int64
	h.p.phase(name+" ("+s.String()+")", int64(len(rows)), "rows", &done)
	cpu0, err := readCPU(os.Getpid())
	if err != nil {
		return CeilingTrial{}, err
	}
	m0, err := readMachine()
	if err != nil {
		return CeilingTrial{}, err
	}
	el, err := writeCeiling(ctx, write, batches, s.Concurrency, &done)
	h.p.done()
	if err != nil {
		return CeilingTrial{}, err
	}
	cpu1, err := readCPU(os.Getpid())
	if err != nil {
		return CeilingTrial{}, err
	}
	m1, err := readMachine()
	if err != nil {
		return CeilingTrial{}, err
	}
	for _, t := range tables {
		h.drop(ctx, t)
	}
	return CeilingTrial{
		Writer: s.Writer, Table: strings.Join(tables, ","), BatchRows: s.BatchRows, Concurrency: s.Concurrency, NumConns: s.NumConns,
		Rows: len(rows), Batches: len(batches), Seconds: el.Seconds(), RowsPerS: float64(len(rows)) / el.Seconds(),
		CPUPerMillion: (cpu1.CPU - cpu0.CPU).Seconds() / float64(len(rows)) * 1e6,
		CoresBusy:     coresBusy(m0, m1),
	}, nil
}

// daemon runs one daemon over the backlog: from ready until every partition's committed offset
// reaches its end. CPU and peak RSS come from /proc of the daemon alone.
func (h *harness) daemon(ctx context.Context, name string, args []string, st setup, end map[int32]int64, profileDir string, profileSecs int) (*Process, error) {
	var total int64
	for _, e := range end {
		total += e
	}
	d, err := startDaemon(name, h.o.SinkBinary, args, st.Metrics, h.o.WorkDir, h.o.DaemonEnv)
	if err != nil {
		return nil, err
	}
	defer d.stop(time.Minute)
	if err := d.waitReady(ctx, 2*time.Minute); err != nil {
		return nil, err
	}
	ready := time.Now()
	cpu0, err := readCPU(d.pid())
	if err != nil {
		return nil, err
	}
	m0, err := readMachine()
	if err != nil {
		return nil, err
	}

	var prof chan error
	if profileDir != "" {
		prof = make(chan error, 1)
		go func() { prof <- fetchProfile(ctx, d.metrics, filepath.Join(profileDir, name+".pprof"), profileSecs) }()
	}

	var done atomic.Int64
	h.p.phase(name, total, "events", &done)
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	var (
		finish   time.Time
		last     int64 = -1
		progress       = time.Now()
		ticks    int
	)
	gauges := newGaugeMeans("sink_open_batch_rows", "sink_buffered_bytes", "sink_writes_in_flight")
	for finish.IsZero() {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-d.exited:
			return nil, d.failure()
		case <-tick.C:
		}
		if ticks++; ticks%20 == 0 { // every 500 ms
			gauges.sample(ctx, d)
		}
		got, err := committed(ctx, h.adm, st.Group, st.Topic)
		if err != nil {
			return nil, err
		}
		n, all := allCommitted(got, end)
		done.Store(n)
		now := time.Now()
		if all {
			finish = now
		}
		// A daemon that stops committing (a halted partition, a write that keeps failing) would
		// otherwise hold the run forever; its log says why.
		if n != last {
			last, progress = n, now
		} else if now.Sub(progress) > stallAfter {
			return nil, fmt.Errorf("%s committed nothing new for %v (%d of %d); last lines of %s:\n%s",
				name, stallAfter, n, total, d.logPath, tail(d.logPath, 20))
		}
	}
	h.p.done()
	cpu1, err := readCPU(d.pid())
	if err != nil {
		return nil, err
	}
	rss, err := readPeakRSS(d.pid())
	if err != nil {
		return nil, err
	}
	m1, err := readMachine()
	if err != nil {
		return nil, err
	}
	p := &Process{Group: st.Group, Events: int(total), PeakRSSBytes: rss, StartupSeconds: ready.Sub(d.started).Seconds(),
		CoresBusy: coresBusy(m0, m1)}
	if sum, ok, err := d.metricSum(ctx, "sink_batch_rows_sum"); err == nil && ok {
		if n, ok, err := d.metricSum(ctx, "sink_batch_rows_count"); err == nil && ok && n > 0 {
			p.MeanBatchRows = sum / n
		}
		p.BatchRowsPerRecord = sum / float64(total)
	}
	p.MeanOpenBatchRows, p.MeanBufferedBytes, p.MeanWritesInFlight = gauges.mean(0), gauges.mean(1), gauges.mean(2)
	if v, ok, err := d.metricSum(ctx, "sink_records_written_total"); err == nil && ok {
		p.Written = int64(v)
	}
	if v, ok, err := d.metricSum(ctx, "sink_records_dead_lettered_total"); err == nil && ok {
		p.DeadLettered = int64(v)
	}
	el := finish.Sub(ready)
	cpu := (cpu1.CPU - cpu0.CPU).Seconds()
	p.Seconds = el.Seconds()
	p.PerSec = float64(total) / el.Seconds()
	p.CPUSeconds = cpu
	if cpu > 0 {
		p.PerCPUSecond = float64(total) / cpu
	}
	p.CPUPerMillion = cpu / float64(total) * 1e6
	if st.HourlyTable != "" {
		if err := h.drainRollups(ctx, d, p, finish); err != nil {
			return nil, err
		}
	}
	if prof != nil {
		if err := <-prof; err != nil {
			h.p.logf("%s: no CPU profile: %v", name, err)
		} else {
			p.Profile = filepath.Join(profileDir, name+".pprof")
		}
	}
	if err := d.stop(time.Minute); err != nil {
		return nil, err
	}
	h.p.logf("%s: %s events/s, %.2f CPU-s per million, peak RSS %.0f MiB", name, num(p.PerSec), p.CPUPerMillion, float64(rss)/(1<<20))
	return p, nil
}

// stallAfter is how long a daemon may go without committing anything new before the run fails.
const stallAfter = 2 * time.Minute

// A machine is quiet when fewer than settleBusy cores are busy over settleWindow: Kafka and Cassandra
// idle take a few hundredths of a core.
const (
	settleBusy   = 0.3
	settleWindow = time.Second
)

// settle waits, before the measured phase named before, until the machine is quiet or Options.SettleMax
// passes, and records the wait in the result. For seconds after a phase that wrote a million rows,
// Cassandra flushes and compacts them; a phase measured at once shares the cores, caches and memory
// bandwidth with that work, and which phase comes right after which is an accident of the harness's
// order. Every write phase waits the same way, so the ratio still compares like with like.
func (h *harness) settle(ctx context.Context, before string) error {
	if h.o.SettleMax < 0 {
		return nil
	}
	start := time.Now()
	st := Settle{Before: before}
	for {
		m0, err := readMachine()
		if err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(settleWindow):
		}
		m1, err := readMachine()
		if err != nil {
			return err
		}
		st.CoresBusy = coresBusy(m0, m1)
		st.Quiet = st.CoresBusy < settleBusy
		if st.Quiet || time.Since(start) >= h.o.SettleMax {
			break
		}
	}
	st.Seconds = time.Since(start).Seconds()
	h.res.Settles = append(h.res.Settles, st)
	state := "quiet"
	if !st.Quiet {
		state = "not quiet; measuring anyway"
	}
	h.p.logf("settle before %s: %.1f s, %.2f cores busy at the end (%s)", before, st.Seconds, st.CoresBusy, state)
	return nil
}

// fetchProfile takes a CPU profile of the daemon from its /debug/pprof endpoint for secs seconds.
// The caller guesses the length from the backlog; a profile that outlasts the run only adds idle
// time, which pprof shows apart.
func fetchProfile(ctx context.Context, addr, path string, secs int) error {
	url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, secs)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("fetching %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("fetching %s: %s", url, resp.Status)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return fmt.Errorf("saving %s: %w", path, err)
	}
	return f.Close()
}

// steady measures the sink at rate (latency), then the 50-row client at the same rate unless
// NoBatchClient.
func (h *harness) steady(ctx context.Context, rate float64) error {
	if err := h.latency(ctx, rate); err != nil {
		return err
	}
	if h.o.NoBatchClient {
		return nil
	}
	return h.batchClient(ctx, rate)
}

// latency runs the sink on a fresh, empty topic, produces to it at rate for LatencyFor, and pairs
// each record's produce time with the first committed offset observed past it.
func (h *harness) latency(ctx context.Context, rate float64) error {
	o := h.o
	if rate < 1 || math.IsNaN(rate) || math.IsInf(rate, 0) {
		return fmt.Errorf("latency phase: rate %v derived from the sink is not usable", rate)
	}
	st := setup{
		Brokers: o.Brokers, Hosts: o.Cassandra, Keyspace: o.Keyspace, Topic: o.Prefix + "_live" + h.live,
		Table: o.Prefix + "_live" + h.live, Group: o.Prefix + "_live" + h.live, CommitInterval: o.CommitInterval,
	}
	var err error
	if st.Metrics, err = freeAddr(); err != nil {
		return err
	}
	if err := createTopic(ctx, h.adm, st.Topic, o.Partitions); err != nil {
		return err
	}
	h.topics = append(h.topics, st.Topic)
	path, cfg, err := st.write(o.WorkDir, "live", o.DaemonEnv)
	if err != nil {
		return err
	}
	if err := h.createTable(ctx, cfg); err != nil {
		return err
	}
	d, err := startDaemon("live", o.SinkBinary, []string{"run", "--config", path}, st.Metrics, o.WorkDir, o.DaemonEnv)
	if err != nil {
		return err
	}
	defer d.stop(time.Minute)
	if err := d.waitReady(ctx, 2*time.Minute); err != nil {
		return err
	}

	idle, err := h.idle(ctx, "steady", cfg)
	if err != nil {
		return err
	}
	// What the phase costs: the sink's and Cassandra's CPU and the daemon's counters, from here to the
	// last commit.
	l := &h.res.Latency
	metricsBefore, err := d.scrape(ctx)
	if err != nil {
		return err
	}
	meter, err := startCPUMeter(d.pid(), o.CassandraPID)
	if err != nil {
		return err
	}
	if l.CassandraCPUNote = meter.cassNote; meter.cassNote != "" {
		h.p.logf("steady: Cassandra's CPU is not measured: %s", meter.cassNote)
	}
	probes, freshWait, err := h.startFreshness(ctx, cfg)
	if err != nil {
		return err
	}
	// The profile covers the produce window only: what a row costs at this rate, not the drain after.
	var prof chan error
	profPath := ""
	if o.ProfileDir != "" {
		profPath = filepath.Join(o.ProfileDir, fmt.Sprintf("steady-%.0f.pprof", rate))
		prof = make(chan error, 1)
		secs := max(1, int(o.LatencyFor.Seconds()))
		go func() { prof <- fetchProfile(ctx, d.metrics, profPath, secs) }()
	}

	log := newProduceLog()
	var seen []commitSeen
	var produced atomic.Int64
	total := int64(rate * o.LatencyFor.Seconds())
	h.p.phase(fmt.Sprintf("latency at %s events/s", num(rate)), total, "events", &produced)
	prodErr := make(chan error, 1)
	var (
		sent    int
		sending time.Duration
	)
	go func() {
		var err error
		sent, sending, err = producePaced(ctx, o.Brokers, st.Topic, o.Entities, rate, o.LatencyFor, log, &produced,
			probes, o.sampleEvery(rate))
		prodErr <- err
	}()

	// Poll committed offsets until the producer is done and every partition has committed its end.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var (
		end      map[int32]int64
		lastSeen = make(map[int32]int64)
		progress = time.Now()
	)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-d.exited:
			return d.failure()
		case err := <-prodErr:
			if err != nil {
				return err
			}
			if end, err = endOffsets(ctx, h.adm, st.Topic); err != nil {
				return err
			}
			prodErr = nil
		case <-tick.C:
		}
		got, err := committed(ctx, h.adm, st.Group, st.Topic)
		if err != nil {
			return err
		}
		now := time.Now()
		for p, off := range got {
			if prev, ok := lastSeen[p]; !ok || off != prev {
				seen = append(seen, commitSeen{Partition: p, Offset: off, At: now})
				lastSeen[p] = off
				progress = now
			}
		}
		if end != nil {
			if _, all := allCommitted(got, end); all {
				break
			}
			if now.Sub(progress) > stallAfter {
				return fmt.Errorf("latency phase: group %s committed nothing new on topic %s for %v; last lines of %s:\n%s",
					st.Group, st.Topic, stallAfter, d.logPath, tail(d.logPath, 20))
			}
		}
	}
	h.p.done()
	var cassWindow time.Duration
	if l.SinkCPUMicrosPerRow, l.CassandraCPUMicrosPerRow, cassWindow, err = meter.perRow(produced.Load()); err != nil {
		return err
	}
	l.CassandraPID = meter.cassPID
	if l.PeakRSSBytes, err = readPeakRSS(d.pid()); err != nil {
		return err
	}
	metricsAfter, err := d.scrape(ctx)
	if err != nil {
		return err
	}
	l.RowsPerRequest = meanOf(metricsBefore, metricsAfter, "sink_batch_rows")
	l.PartitionsPerRequest = meanOf(metricsBefore, metricsAfter, "sink_batch_partitions")
	l.Stages = stageLatencies(metricsBefore, metricsAfter)
	if l.Freshness, err = freshWait(); err != nil {
		return err
	}
	l.setNet(idle, l.CassandraCPUMicrosPerRow, produced.Load(), cassWindow, l.ProbeReads)
	if prof != nil {
		if err := <-prof; err != nil {
			h.p.logf("steady: no CPU profile: %v", err)
		} else {
			l.Profile = profPath
		}
	}
	if err := d.stop(time.Minute); err != nil {
		return err
	}
	lat := commitLatencies(log.parts, seen)
	l.Rate, l.Events, l.Covered, l.Seconds = rate, sent, len(lat), o.LatencyFor.Seconds()
	l.AchievedRate = float64(sent) / sending.Seconds()
	l.P50Millis = float64(percentile(lat, 0.50)) / 1e6
	l.P99Millis = float64(percentile(lat, 0.99)) / 1e6
	l.MaxMillis = float64(percentile(lat, 1)) / 1e6
	h.res.Params.LatencyRate, h.res.Params.LatencyFor = rate, o.LatencyFor.String()
	if len(lat) != sent {
		return fmt.Errorf("latency phase: %d records produced but %d seen committed", sent, len(lat))
	}
	h.p.logf("steady: commit p50 %.0f ms, p99 %.0f ms; readable p50 %.0f ms, p99 %.0f ms; %.1f rows per request at %s events/s",
		l.P50Millis, l.P99Millis, l.FreshP50Millis, l.FreshP99Millis, l.RowsPerRequest, num(rate))
	return nil
}

// idle measures Cassandra's background and a probe read's cost (measureIdle) before the steady run
// named before, whose table cfg describes; nil when Cassandra's process is not known (its CPU is then
// not measured at all).
func (h *harness) idle(ctx context.Context, before string, cfg *config.Config) (*CassandraIdle, error) {
	pid, err := cassandraPID(h.o.CassandraPID)
	if err != nil {
		return nil, nil
	}
	idle, err := h.measureIdle(ctx, pid, cfg)
	if err != nil {
		return nil, fmt.Errorf("measuring Cassandra's idle CPU before %s: %w", before, err)
	}
	h.p.logf("idle before %s: Cassandra %.3f cores with nothing sent; %.3f cores while one probe was polled (%d reads, about %.0f µs each)",
		before, idle.IdleCores, idle.ProbeCores, idle.ProbeWindowReads, idle.ProbeReadMicros)
	return &idle, nil
}

// machine collects what the numbers were measured on. A version that cannot be read is reported
// as "unknown" rather than failing the run.
func (h *harness) machine(ctx context.Context) Machine {
	m := Machine{Cores: runtime.NumCPU(), OS: runtime.GOOS + "/" + runtime.GOARCH, Go: runtime.Version(),
		Java: javaVersion(ctx), Kafka: "unknown", Cassandra: "unknown", CPUModel: cpuModel()}
	if v, err := h.adm.ApiVersions(ctx); err == nil {
		v.Each(func(b kadm.BrokerApiVersions) {
			if b.Err == nil {
				m.Kafka = b.VersionGuess()
			}
		})
	}
	var rel string
	if err := h.admin.Query("SELECT release_version FROM system.local").ScanContext(ctx, &rel); err == nil {
		m.Cassandra = rel
	}
	return m
}
