package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"
)

// Result is one run of the harness, as written to bench/results/*.json. Field names are the JSON
// keys; rates are per wall-clock second unless the name says CPU.
type Result struct {
	Date      time.Time `json:"date"`
	GitCommit string    `json:"git_commit"`
	GitDirty  bool      `json:"git_dirty"`
	Machine   Machine   `json:"machine"`
	Params    Params    `json:"params"`
	Produce   Produce   `json:"produce"`
	Ceiling   Ceiling   `json:"ceiling"`
	Sink      Process   `json:"sink"`
	Pipeline  Process   `json:"pipeline"`
	Latency   Latency   `json:"latency"`
	// Curve is the steady phase at each rate of Options.Curve, in the order run; the plot of it is
	// written beside the result (WriteJSON).
	Curve []Latency `json:"curve,omitempty"`
	// BatchClient is the steady phase's second ceiling (batchclient.go); nil when skipped.
	BatchClient *BatchClient `json:"batch_client,omitempty"`
	// Codec is the run of the same events in another format (Options.Codec); nil without one.
	Codec *CodecRun `json:"codec,omitempty"`
	// Entries is the run of the same backlog read by two entries (Options.Entries); nil without one.
	Entries *EntriesRun `json:"entries,omitempty"`
	// Rollups is the comparison of runs with and without rollups (Options.Rollups); nil without one.
	Rollups *RollupsRun `json:"rollups,omitempty"`
	// Read is the read phase (read.go); nil when skipped.
	Read    *ReadRun `json:"read,omitempty"`
	Targets []Target `json:"targets"`
	// Settles are the waits for a quiet machine before each measured write phase, in order.
	Settles []Settle `json:"settles,omitempty"`
}

// CodecRun is the sink over the backlog's events in a schema-registry format.
type CodecRun struct {
	Codec         string  `json:"codec"`
	AvgEventBytes float64 `json:"avg_event_bytes"`
	Sink          Process `json:"sink"`
	RatioToJSON   float64 `json:"ratio_to_json"` // its rows/s ÷ the JSON sink run's
}

// EntriesRun is the sink over the backlog with its Kafka topic read by several entries, one table each.
type EntriesRun struct {
	Entries int      `json:"entries"`
	Tables  []string `json:"tables"`
	Sink    Process  `json:"sink"` // per_s counts records: each gives one row to every table
	// PerTableRatio is the run's rows/s per table ÷ the one-entry sink run's rows/s, and
	// CPUPerRecordRatio its sink CPU per record ÷ the one-entry run's.
	PerTableRatio     float64 `json:"per_table_rows_ratio"`
	CPUPerRecordRatio float64 `json:"cpu_per_record_ratio"`

	// Ceiling is the ceiling's client writing each backlog record's row into every one of the tables,
	// at the setting the one-table ceiling found best in the same run; its rows_per_s counts the rows
	// of all the tables. Its ratios are set once the one-table ceiling's figure is known:
	// CeilingPerTableRatio is its rows/s per table ÷ the one-table ceiling's rows/s, what the node
	// gives a second table; SinkRatioToCeiling is the sink's rows/s in all tables ÷ this ceiling's,
	// to set beside the one-entry sink's ratio to the one-table ceiling (Sink.RatioToCeiling of the
	// Result), and SinkVsCeilingRatio the first ÷ the second: below 1, the sink loses more than the
	// node to the second table.
	Ceiling              CeilingTrial `json:"ceiling"`
	CeilingPerTable      float64      `json:"ceiling_rows_per_s_per_table"`
	CeilingPerTableRatio float64      `json:"ceiling_per_table_rows_ratio"`
	SinkRatioToCeiling   float64      `json:"sink_ratio_to_ceiling"`
	SinkVsCeilingRatio   float64      `json:"sink_ratio_to_ceiling_two_to_one"`
}

// compareEntries sets the ratios of the run of several entries to the ceilings, from the one-table
// ceiling's figure (the better of its runs before and after the sink, as the sink is judged by) and
// the one-entry sink's ratio to it.
func (r *Result) compareEntries() {
	e := r.Entries
	if e == nil {
		return
	}
	n := float64(e.Entries)
	e.CeilingPerTable = e.Ceiling.RowsPerS / n
	e.CeilingPerTableRatio = ratio(e.CeilingPerTable, r.Ceiling.RowsPerS)
	e.SinkRatioToCeiling = ratio(e.Sink.PerSec*n, e.Ceiling.RowsPerS)
	e.SinkVsCeilingRatio = ratio(e.SinkRatioToCeiling, r.Sink.RatioToCeiling)
}

// Settle is one wait for a quiet machine (harness.settle).
type Settle struct {
	Before    string  `json:"before"` // the phase that followed
	Seconds   float64 `json:"seconds"`
	CoresBusy float64 `json:"machine_cores_busy"` // over the last second of the wait
	Quiet     bool    `json:"quiet"`              // false: SettleMax passed first
}

// Machine names what the numbers were measured on.
type Machine struct {
	Cores     int    `json:"cores"`
	CPUModel  string `json:"cpu_model,omitempty"`
	OS        string `json:"os"`
	Go        string `json:"go"`
	Java      string `json:"java"`
	Kafka     string `json:"kafka"`
	Cassandra string `json:"cassandra"`
	// MapNanos is how long one core of the machine took to map one backlog record, fastest of five
	// 200 ms rounds before the ceiling (calibrate.go): for comparing machines, used in no target.
	// Absent from results before it was added.
	MapNanos float64 `json:"map_ns_per_record,omitempty"`
}

// Params are the inputs of the run.
type Params struct {
	Events         int      `json:"events"`
	Entities       int      `json:"entities"`
	Partitions     int      `json:"partitions"`
	Quick          bool     `json:"quick"`
	Compression    string   `json:"compression"`
	BatchMaxRows   int      `json:"batch_max_rows"`
	BatchMaxBytes  int64    `json:"batch_max_bytes"`
	Linger         string   `json:"linger"`
	MaxInFlight    int      `json:"max_in_flight"`
	MaxBuffered    int64    `json:"max_buffered_bytes"`
	MemoryLimit    int64    `json:"memory_limit"`
	FetchMaxBytes  int64    `json:"fetch_max_bytes"`
	CommitInterval string   `json:"commit_interval"`
	GOMAXPROCS     int      `json:"sink_gomaxprocs,omitempty"`
	LatencyFor     string   `json:"latency_duration"`
	LatencyRate    float64  `json:"latency_rate"`          // events/s asked of the producer; 0 when latency was not measured
	DaemonEnv      []string `json:"daemon_env,omitempty"`  // config overrides given to the daemons
	SettleMax      string   `json:"settle_max,omitempty"`  // longest wait for a quiet machine before a phase
	KeepData       bool     `json:"keep_data,omitempty"`   // tables and topics kept (runs before this field kept them all; see Options.KeepData)
	SteadyOnly     bool     `json:"steady_only,omitempty"` // the steady-rate phase alone (Options.SteadyOnly)
	NoProbes       bool     `json:"no_probes,omitempty"`   // no freshness probes (Options.NoProbes)
	ReadOnly       bool     `json:"read_only,omitempty"`   // the read phase alone (Options.ReadOnly)
	Rollups        int      `json:"rollups,omitempty"`     // pairs of the rollups comparison (Options.Rollups)
	// Curve are the rates of a curve run (Options.Curve).
	Curve      []float64 `json:"curve,omitempty"`
	ReadRows   int       `json:"read_rows,omitempty"`   // rows of the read phase's device; 0 when skipped
	ReadRounds int       `json:"read_rounds,omitempty"` // rounds of the read phase
	SinkBinary string    `json:"sink_binary,omitempty"` // the executable measured, when not the harness's own
}

// Produce is phase 1: loading the backlog.
type Produce struct {
	Topic          string  `json:"topic"`
	Events         int     `json:"events"`
	Bytes          int64   `json:"bytes"`
	AvgEventBytes  float64 `json:"avg_event_bytes"`
	Seconds        float64 `json:"seconds"`
	EventsPerSec   float64 `json:"events_per_s"`
	DistinctCassPK int     `json:"distinct_partitions"` // Cassandra partitions the rows fall in
}

// Ceiling is phase 2: the direct writer, every setting tried and the best.
type Ceiling struct {
	Trials []CeilingTrial `json:"trials"`
	Best   CeilingTrial   `json:"best"` // the final run before the sink
	// RowsPerS is the better of the final runs before and after the sink: what the sink is judged by.
	RowsPerS  float64 `json:"rows_per_s"`
	MapSecond float64 `json:"map_seconds"` // mapping the records to rows, outside the timed part
}

// CeilingTrial is one direct-writer setting and what it achieved.
type CeilingTrial struct {
	Writer      string  `json:"writer"` // "gocql": batches straight on the driver; "sink": the sink's cassandra.Writer
	Table       string  `json:"table"`
	BatchRows   int     `json:"batch_rows"`
	Concurrency int     `json:"concurrency"`
	NumConns    int     `json:"num_conns"`
	Rows        int     `json:"rows"`
	Batches     int     `json:"batches"`
	Seconds     float64 `json:"seconds"`
	RowsPerS    float64 `json:"rows_per_s"`
	// CPUPerMillion is the writer's own CPU (the harness process) per million rows.
	CPUPerMillion float64 `json:"cpu_seconds_per_million"`
	CoresBusy     float64 `json:"machine_cores_busy"` // whole machine, Cassandra included
	Final         bool    `json:"final"`              // a run over every row with the best setting
	After         bool    `json:"after_sink"`         // the final setting run again right after the sink
}

// Process is phase 3 or 4: the daemon as a subprocess, from ready to committed at the end.
type Process struct {
	Table          string  `json:"table,omitempty"`
	Group          string  `json:"group"`
	Events         int     `json:"events"`
	Written        int64   `json:"rows_written"` // from the daemon's own counter; 0 if unavailable
	DeadLettered   int64   `json:"dead_lettered"`
	Seconds        float64 `json:"seconds"`
	PerSec         float64 `json:"per_s"`
	RatioToCeiling float64 `json:"ratio_to_ceiling,omitempty"`
	CPUSeconds     float64 `json:"cpu_seconds"`
	PerCPUSecond   float64 `json:"per_cpu_second"`
	CPUPerMillion  float64 `json:"cpu_seconds_per_million"`
	PeakRSSBytes   int64   `json:"peak_rss_bytes"`
	MeanBatchRows  float64 `json:"mean_batch_rows"` // from sink_batch_rows; 0 if unavailable
	// BatchRowsPerRecord is the rows of every batch sent (sink_batch_rows_sum, the sink's own rows such as
	// rollup markers included, a retried batch counted again) per record of the backlog.
	BatchRowsPerRecord float64 `json:"batch_rows_per_record,omitempty"`
	// Means of gauges sampled every 500 ms while the phase ran: rows waiting in open batches, bytes
	// held against writer.max_buffered_bytes, Cassandra batches in flight.
	MeanOpenBatchRows  float64 `json:"mean_open_batch_rows"`
	MeanBufferedBytes  float64 `json:"mean_buffered_bytes"`
	MeanWritesInFlight float64 `json:"mean_writes_in_flight"`
	CoresBusy          float64 `json:"machine_cores_busy"` // whole machine, Kafka and Cassandra included
	StartupSeconds     float64 `json:"startup_seconds"`    // process start to ready, outside the timed part
	Profile            string  `json:"cpu_profile,omitempty"`
	// Rollups is what each rollup of a run with rollups cost (rollups.go), and RollupDrainSeconds how
	// long after the last commit its last window was computed; empty without rollups.
	Rollups            []RollupCost `json:"rollups,omitempty"`
	RollupDrainSeconds float64      `json:"rollup_drain_seconds,omitempty"`
}

// Latency is phase 5, the steady rate: event-to-commit delay at a fixed produce rate, freshness read
// from Cassandra, and what each row costs the sink and Cassandra.
type Latency struct {
	Rate float64 `json:"rate"`
	// AchievedRate is what the producer managed; below Rate when the machine could not keep up.
	AchievedRate float64 `json:"achieved_rate"`
	Events       int     `json:"events"`
	Covered      int     `json:"covered"`
	Seconds      float64 `json:"seconds"`
	P50Millis    float64 `json:"p50_ms"`
	P99Millis    float64 `json:"p99_ms"`
	MaxMillis    float64 `json:"max_ms"`
	// What the rows cost over the phase (the daemon's start-up excluded): rows per request and
	// partitions per request from the daemon's histograms (0: not exported by that binary); the
	// sink's and Cassandra's user+system CPU per row, from /proc (Cassandra's: 0 with a note when the
	// process could not be told apart).
	RowsPerRequest           float64 `json:"rows_per_request"`
	PartitionsPerRequest     float64 `json:"partitions_per_request,omitempty"`
	SinkCPUMicrosPerRow      float64 `json:"sink_cpu_us_per_row"`
	CassandraCPUMicrosPerRow float64 `json:"cassandra_cpu_us_per_row"`
	CassandraPID             int     `json:"cassandra_pid,omitempty"`
	CassandraCPUNote         string  `json:"cassandra_cpu_note,omitempty"`
	CassandraNet
	Freshness
	// Stages: sink_stage_seconds over the phase (absent for a binary without it).
	Stages []StageLatency `json:"stages,omitempty"`
	// Profile is the CPU profile of the sink over the produce window (Options.ProfileDir).
	Profile string `json:"cpu_profile,omitempty"`
	// PeakRSSBytes is the sink's VmHWM once every row is committed: start-up and the phase.
	PeakRSSBytes int64 `json:"peak_rss_bytes,omitempty"`
}

// Freshness is produce → row readable through the reader, for about 20 sampled events a second.
type Freshness struct {
	FreshSamples   int     `json:"fresh_samples"`
	FreshMissing   int     `json:"fresh_missing"`
	FreshP50Millis float64 `json:"fresh_p50_ms"`
	FreshP99Millis float64 `json:"fresh_p99_ms"`
	FreshMaxMillis float64 `json:"fresh_max_ms"`
	// ProbeReads is how many reads the poller sent Cassandra for the samples, seen or not.
	ProbeReads int `json:"probe_reads"`
}

// CassandraIdle is Cassandra's own work measured just before a steady run (steady.go, measureIdle):
// its CPU in cores with nothing sent to it, and then with only the freshness poller polling one probe
// that never becomes readable, which prices a probe read (of an empty table: a probe read during the
// run finds its partition in the memtable and may cost more).
type CassandraIdle struct {
	IdleSeconds      float64 `json:"idle_seconds"`
	IdleCores        float64 `json:"idle_cores"`
	ProbeCores       float64 `json:"probe_cores"`
	ProbeWindowReads int     `json:"probe_window_reads"`
	ProbeReadMicros  float64 `json:"probe_read_us"`
}

// CassandraNet is a steady run's Cassandra CPU per row net of the idle background (netOfIdle), and how
// many reads its freshness probes made; absent when Cassandra's CPU is not measured. What the probes
// cost a busy node is not priced here: a read polled alone wakes an idle node and costs it far more
// than one among a run's writes (CassandraIdle.ProbeReadMicros is that price); a run with --no-probes
// beside one with them tells.
type CassandraNet struct {
	Idle                        *CassandraIdle `json:"cassandra_idle,omitempty"`
	CassandraNetCPUMicrosPerRow float64        `json:"cassandra_cpu_us_per_row_net_of_idle,omitempty"`
	ProbeReadsPerSecond         float64        `json:"probe_reads_per_s,omitempty"`
}

// setNet fills n from Cassandra's raw CPU per row over window, rows, and the run's probe reads.
func (n *CassandraNet) setNet(idle *CassandraIdle, perRow float64, rows int64, window time.Duration, probeReads int) {
	if idle == nil || window <= 0 {
		return
	}
	n.Idle = idle
	n.CassandraNetCPUMicrosPerRow = netOfIdle(perRow, rows, window, idle.IdleCores)
	n.ProbeReadsPerSecond = float64(probeReads) / window.Seconds()
}

// printNet is the net-of-idle line of a steady run whose raw line is labelled who.
func (n CassandraNet) printNet(tw io.Writer, who string, samples int, secs float64) {
	if n.Idle == nil {
		return
	}
	i := n.Idle
	fmt.Fprintf(tw, "%s: Cassandra net of idle\t%.1f µs per row\tidle %.3f cores over %.0f s before the run, taken out over the run; probes %.1f sampled/s, %.0f reads/s in the run; one probe polled alone before it: %.3f cores, %.0f reads/s (%.0f µs a read above idle)\n",
		who, n.CassandraNetCPUMicrosPerRow, i.IdleCores, i.IdleSeconds, float64(samples)/secs, n.ProbeReadsPerSecond,
		i.ProbeCores, float64(i.ProbeWindowReads)/i.IdleSeconds, i.ProbeReadMicros)
}

// BatchClient is the 50-row client over the steady phase: the same events at the same rate written
// straight to Cassandra as UNLOGGED batches of BatchRows rows across partitions, with its settings,
// measured as the sink is, and the sink's figures of the same run divided by its own.
type BatchClient struct {
	Rate         float64 `json:"rate"`
	AchievedRate float64 `json:"achieved_rate"`
	Rows         int     `json:"rows"`
	Requests     int     `json:"requests"`
	Seconds      float64 `json:"seconds"`
	// Its settings: rows per batch, the period after which a partial batch goes (the sink's linger),
	// requests in flight, connections, routing and consistency.
	BatchRows   int    `json:"batch_rows"`
	Period      string `json:"period"`
	InFlight    int    `json:"in_flight"`
	NumConns    int    `json:"num_conns"`
	Routing     string `json:"routing"`
	Consistency string `json:"consistency"`

	RowsPerRequest           float64 `json:"rows_per_request"`
	PartitionsPerRequest     float64 `json:"partitions_per_request"`
	CPUMicrosPerRow          float64 `json:"cpu_us_per_row"` // its own process: mapping, batching, writing
	CassandraCPUMicrosPerRow float64 `json:"cassandra_cpu_us_per_row"`
	CassandraPID             int     `json:"cassandra_pid,omitempty"`
	CassandraCPUNote         string  `json:"cassandra_cpu_note,omitempty"`
	CassandraNet
	Freshness

	// The sink's steady figure ÷ the client's, in the same run; 0 when either side was not measured.
	SinkRowsPerRequestRatio float64 `json:"sink_rows_per_request_ratio"`
	SinkCPURatio            float64 `json:"sink_cpu_per_row_ratio"`
	CassandraCPURatio       float64 `json:"cassandra_cpu_per_row_ratio"`
	// CassandraNetCPURatio is CassandraCPURatio with each side net of its own idle window.
	CassandraNetCPURatio float64 `json:"cassandra_cpu_per_row_net_of_idle_ratio,omitempty"`
	FreshP99Ratio        float64 `json:"fresh_p99_ratio"`
}

// compareBatchClient sets the client's ratios from the sink's steady figures of the same run.
func (r *Result) compareBatchClient() {
	c := r.BatchClient
	if c == nil {
		return
	}
	l := r.Latency
	c.SinkRowsPerRequestRatio = ratio(l.RowsPerRequest, c.RowsPerRequest)
	c.SinkCPURatio = ratio(l.SinkCPUMicrosPerRow, c.CPUMicrosPerRow)
	c.CassandraCPURatio = ratio(l.CassandraCPUMicrosPerRow, c.CassandraCPUMicrosPerRow)
	c.CassandraNetCPURatio = ratio(l.CassandraNetCPUMicrosPerRow, c.CassandraNetCPUMicrosPerRow)
	c.FreshP99Ratio = ratio(l.FreshP99Millis, c.FreshP99Millis)
}

// Target is one goal of the issue and whether this run met it.
type Target struct {
	Name     string  `json:"name"`
	Want     string  `json:"want"`
	Measured float64 `json:"measured"`
	Met      bool    `json:"met"`
}

func (r *Result) judge() {
	const mib = 1 << 20
	defer r.judgeRead()
	if r.Params.ReadOnly {
		return
	}
	if ru := r.Rollups; ru != nil {
		r.Targets = []Target{{Name: "sink rows/s with an hourly and a daily rollup ÷ without (median of pairs)", Want: "≥ 0.8",
			Measured: ru.Ratio.Median, Met: ru.Ratio.Median >= 0.8}}
		return
	}
	r.Targets = []Target{
		{Name: "sink rows/s ÷ ceiling rows/s", Want: "≥ 0.9", Measured: r.Sink.RatioToCeiling, Met: r.Sink.RatioToCeiling >= 0.9},
		{Name: "pipeline-only events per CPU-second", Want: "≥ 500000", Measured: r.Pipeline.PerCPUSecond, Met: r.Pipeline.PerCPUSecond >= 500000},
		{Name: "sink peak RSS (MiB)", Want: "≤ 256", Measured: float64(r.Sink.PeakRSSBytes) / mib, Met: r.Sink.PeakRSSBytes > 0 && r.Sink.PeakRSSBytes <= 256*mib},
	}
	if c := r.Codec; c != nil {
		r.Targets = append(r.Targets, Target{Name: "sink rows/s in " + c.Codec + " ÷ in JSON", Want: "≥ 0.9", Measured: c.RatioToJSON, Met: c.RatioToJSON >= 0.9})
	}
	if e := r.Entries; e != nil {
		r.Targets = append(r.Targets,
			Target{Name: "sink rows/s per table, two entries ÷ one", Want: "≥ 0.8", Measured: e.PerTableRatio, Met: e.PerTableRatio >= 0.8},
			Target{Name: "sink CPU per record, two entries ÷ one", Want: "≤ 1.6", Measured: e.CPUPerRecordRatio, Met: e.CPUPerRecordRatio > 0 && e.CPUPerRecordRatio <= 1.6})
	}
}

// judgeRead adds the read phase's targets (issue 25): the sink's reader faster than the driver loop, and
// Cassandra's CPU per row no higher than for the loop, each as the median of the rounds' ratios.
func (r *Result) judgeRead() {
	rd := r.Read
	if rd == nil {
		return
	}
	w, c := rd.WallRatio.Median, rd.CassandraCPURatio.Median
	r.Targets = append(r.Targets,
		Target{Name: "read wall time, sink ÷ driver loop (median)", Want: "< 1", Measured: w, Met: w > 0 && w < 1},
		Target{Name: "read Cassandra CPU per row, sink ÷ driver loop (median)", Want: "≤ 1", Measured: c, Met: c > 0 && c <= 1})
}

// Finite reports whether the ratios of the run are computed: finite and positive.
func (r *Result) Finite() error {
	for name, v := range map[string]float64{
		"ceiling rows/s":                 r.Ceiling.RowsPerS,
		"sink rows/s":                    r.Sink.PerSec,
		"sink ratio to ceiling":          r.Sink.RatioToCeiling,
		"pipeline events/s":              r.Pipeline.PerSec,
		"pipeline events per CPU-second": r.Pipeline.PerCPUSecond,
		"sink CPU seconds per million":   r.Sink.CPUPerMillion,
	} {
		if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
			return fmt.Errorf("%s is %v, want a finite positive number", name, v)
		}
	}
	return nil
}

// WriteJSON writes the result into dir as <date>-<events>.json and returns the path.
func (r *Result) WriteJSON(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("creating results directory %s: %w", dir, err)
	}
	kind := "full"
	switch {
	case len(r.Curve) > 0:
		kind = "curve"
	case r.Params.SteadyOnly:
		kind = "steady"
	case r.Params.ReadOnly:
		kind = "read"
	case r.Params.Rollups > 0:
		kind = "rollups"
	case r.Params.Quick:
		kind = "quick"
	}
	events := r.Params.Events
	switch {
	case r.Params.SteadyOnly:
		events = r.Latency.Events
	case r.Params.ReadOnly:
		events = r.Params.ReadRows
	case len(r.Curve) > 0:
		events = 0
		for _, p := range r.Curve {
			events += p.Events
		}
	}
	name := fmt.Sprintf("%s-%s-%d.json", r.Date.UTC().Format("20060102T150405Z"), kind, events)
	path := filepath.Join(dir, name)
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encoding result: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return "", fmt.Errorf("writing result %s: %w", path, err)
	}
	if len(r.Curve) > 0 {
		name := "this build"
		if r.Params.SinkBinary != "" {
			name = r.Params.SinkBinary
		}
		title := fmt.Sprintf("steady rates, %s (%s)", name, r.Date.UTC().Format("2006-01-02 15:04 UTC"))
		if err := writeSVGFile(svgPath(path), title, []CurveSeries{{Name: name, Points: r.Curve}}); err != nil {
			return "", err
		}
	}
	return path, nil
}

// PrintTable writes the human summary of the run.
func (r *Result) PrintTable(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	m := r.Machine
	fmt.Fprintf(tw, "machine\t%d cores, %s, %s, Java %s, Kafka %s, Cassandra %s\n", m.Cores, m.OS, m.Go, m.Java, m.Kafka, m.Cassandra)
	if m.MapNanos > 0 {
		fmt.Fprintf(tw, "core speed\t%.0f ns to map one backlog record on one core (for comparing machines; no target uses it)\n", m.MapNanos)
	}
	fmt.Fprintf(tw, "commit\t%s%s, %s\n", r.GitCommit, map[bool]string{true: " (dirty)"}[r.GitDirty], r.Date.UTC().Format(time.RFC3339))
	switch {
	case r.Params.ReadOnly:
		fmt.Fprintf(tw, "input\t%d rows of one device over %d days, written straight to Cassandra\n", r.Params.ReadRows, readDays)
	case r.Params.SteadyOnly:
		fmt.Fprintf(tw, "input\t%d events at a steady rate over %d entities, %d partitions, %s; sink %s\n",
			r.Latency.Events, r.Params.Entities, r.Params.Partitions, r.Params.Compression, r.Params.SinkBinary)
	default:
		fmt.Fprintf(tw, "input\t%d events (%.0f B avg) over %d entities, %d partitions, %s\n",
			r.Produce.Events, r.Produce.AvgEventBytes, r.Params.Entities, r.Params.Partitions, r.Params.Compression)
	}
	fmt.Fprintln(tw, "\t\t")
	fmt.Fprintln(tw, "phase\tresult\tdetail")
	switch {
	case r.Rollups != nil:
		r.printRollups(tw)
	case !r.Params.SteadyOnly && !r.Params.ReadOnly:
		r.printBacklog(tw)
	}
	r.printSteady(tw)
	r.printCurve(tw)
	r.printRead(tw)
	if len(r.Settles) > 0 {
		var waits []string
		for _, st := range r.Settles {
			w := fmt.Sprintf("%s %.1f s", st.Before, st.Seconds)
			if !st.Quiet {
				w += fmt.Sprintf(" (still %.2f cores busy)", st.CoresBusy)
			}
			waits = append(waits, w)
		}
		fmt.Fprintf(tw, "settle\tquiet machine before each phase\t%s\n", strings.Join(waits, ", "))
	}
	fmt.Fprintln(tw, "\t\t")
	for _, t := range r.Targets {
		mark := "MISSED"
		if t.Met {
			mark = "met"
		}
		fmt.Fprintf(tw, "target\t%s %s\t%s: %s\n", t.Name, t.Want, mark, num(t.Measured))
	}
	tw.Flush()
}

// printBacklog writes the lines of the backlog phases: produce, ceiling, sink, pipeline alone.
func (r *Result) printBacklog(tw io.Writer) {
	fmt.Fprintf(tw, "produce\t%s events/s\t%.1f s\n", num(r.Produce.EventsPerSec), r.Produce.Seconds)
	for _, t := range r.Ceiling.Trials {
		label := "ceiling trial"
		switch {
		case t.After:
			label = "ceiling after"
		case t.Final:
			label = "ceiling"
		}
		fmt.Fprintf(tw, "%s\t%s rows/s\t%s writer, %d rows/batch, %d in flight, %d conns; %d rows in %d batches, %.1f s; %.2f CPU-s per million; machine %.2f cores busy\n",
			label, num(t.RowsPerS), t.Writer, t.BatchRows, t.Concurrency, t.NumConns, t.Rows, t.Batches, t.Seconds, t.CPUPerMillion, t.CoresBusy)
	}
	s := r.Sink
	fmt.Fprintf(tw, "sink\t%s rows/s\t%.3f × ceiling (the better of before and after); %.1f s; %.2f CPU-s per million; peak RSS %.0f MiB; %.1f rows per batch; machine %.2f cores busy\n",
		num(s.PerSec), s.RatioToCeiling, s.Seconds, s.CPUPerMillion, float64(s.PeakRSSBytes)/(1<<20), s.MeanBatchRows, s.CoresBusy)
	fmt.Fprintf(tw, "\t\ton average %.0f rows in open batches, %.1f MiB held against the budget, %.1f writes in flight\n",
		s.MeanOpenBatchRows, s.MeanBufferedBytes/(1<<20), s.MeanWritesInFlight)
	if c := r.Codec; c != nil {
		fmt.Fprintf(tw, "sink in %s\t%s rows/s\t%.3f × the JSON run; the same events, %.0f B avg; %.1f s; %.2f CPU-s per million; peak RSS %.0f MiB\n",
			c.Codec, num(c.Sink.PerSec), c.RatioToJSON, c.AvgEventBytes, c.Sink.Seconds, c.Sink.CPUPerMillion, float64(c.Sink.PeakRSSBytes)/(1<<20))
	}
	if e := r.Entries; e != nil {
		fmt.Fprintf(tw, "sink, %d entries	%s rows/s per table	%.3f × the one-entry run; CPU per record %.3f × (%.2f CPU-s per million records); %.1f s; peak RSS %.0f MiB\n",
			e.Entries, num(e.Sink.PerSec), e.PerTableRatio, e.CPUPerRecordRatio, e.Sink.CPUPerMillion, e.Sink.Seconds, float64(e.Sink.PeakRSSBytes)/(1<<20))
		c := e.Ceiling
		fmt.Fprintf(tw, "ceiling, %d tables\t%s rows/s in all\t%s rows/s per table, %.3f × the one-table ceiling (per table, two ÷ one: what the node gives a second table); %s writer, %d rows/batch, %d in flight, %d conns (the one-table ceiling's best); %d rows in %d batches, %.1f s; machine %.2f cores busy\n",
			e.Entries, num(c.RowsPerS), num(e.CeilingPerTable), e.CeilingPerTableRatio, c.Writer, c.BatchRows, c.Concurrency, c.NumConns, c.Rows, c.Batches, c.Seconds, c.CoresBusy)
		fmt.Fprintf(tw, "sink ÷ ceiling, %d tables\t%.3f in all\tone table: %.3f; two ÷ one %.3f (below 1: the sink loses more to the second table than the node does)\n",
			e.Entries, e.SinkRatioToCeiling, r.Sink.RatioToCeiling, e.SinkVsCeilingRatio)
	}
	p := r.Pipeline
	fmt.Fprintf(tw, "pipeline only\t%s events/s\t%s events per CPU-second; %.1f s; peak RSS %.0f MiB; %.1f rows per batch\n",
		num(p.PerSec), num(p.PerCPUSecond), p.Seconds, float64(p.PeakRSSBytes)/(1<<20), p.MeanBatchRows)
}

// printSteady writes the lines of the steady-rate phase.
func (r *Result) printSteady(tw io.Writer) {
	if l := r.Latency; l.Events > 0 {
		fmt.Fprintf(tw, "steady: committed\tp50 %.0f ms, p99 %.0f ms\tat %s events/s asked, %s produced, for %.0f s (%d events, commit interval %s)\n",
			l.P50Millis, l.P99Millis, num(l.Rate), num(l.AchievedRate), l.Seconds, l.Events, r.Params.CommitInterval)
		if r.Params.NoProbes {
			fmt.Fprintf(tw, "steady: readable\tnot measured\tno freshness probes (--no-probes)\n")
		} else {
			fmt.Fprintf(tw, "steady: readable\tp50 %.0f ms, p99 %.0f ms\tmax %.0f ms; %d sampled events read back, %d never seen\n",
				l.FreshP50Millis, l.FreshP99Millis, l.FreshMaxMillis, l.FreshSamples, l.FreshMissing)
		}
		cass := fmt.Sprintf("%.1f µs", l.CassandraCPUMicrosPerRow)
		if l.CassandraCPUNote != "" {
			cass = "not measured (" + l.CassandraCPUNote + ")"
		}
		fmt.Fprintf(tw, "steady: cost\t%.1f rows per request\t%.2f partitions per request; CPU per row: sink %.1f µs, Cassandra %s; the sink's peak RSS %.0f MiB\n",
			l.RowsPerRequest, l.PartitionsPerRequest, l.SinkCPUMicrosPerRow, cass, float64(l.PeakRSSBytes)/(1<<20))
		l.printNet(tw, "steady", l.FreshSamples+l.FreshMissing, l.Seconds)
		for _, st := range l.Stages {
			fmt.Fprintf(tw, "steady: stage %s\tp50 %.1f ms, p99 %.1f ms\t%d observations\n", st.Stage, st.P50Millis, st.P99Millis, st.Count)
		}
	}
	if c := r.BatchClient; c != nil {
		fmt.Fprintf(tw, "50-row client\t%.1f rows per request\t%.2f partitions per request; UNLOGGED, %d rows or %s, %d in flight, %d conns, %s, %s; %s events/s asked, %s sent, %d rows\n",
			c.RowsPerRequest, c.PartitionsPerRequest, c.BatchRows, c.Period, c.InFlight, c.NumConns, c.Routing, c.Consistency, num(c.Rate), num(c.AchievedRate), c.Rows)
		cass := fmt.Sprintf("%.1f µs", c.CassandraCPUMicrosPerRow)
		if c.CassandraCPUNote != "" {
			cass = "not measured (" + c.CassandraCPUNote + ")"
		}
		fmt.Fprintf(tw, "50-row client: cost\tCPU per row %.1f µs\tCassandra %s; readable p50 %.0f ms, p99 %.0f ms, max %.0f ms (%d sampled, %d never seen)\n",
			c.CPUMicrosPerRow, cass, c.FreshP50Millis, c.FreshP99Millis, c.FreshMaxMillis, c.FreshSamples, c.FreshMissing)
		c.printNet(tw, "50-row client", c.FreshSamples+c.FreshMissing, c.Seconds)
		ratio := func(v float64) string {
			if v == 0 {
				return "not measured"
			}
			return fmt.Sprintf("%.2f", v)
		}
		fmt.Fprintf(tw, "sink ÷ 50-row client\tCassandra CPU per row %s\trows per request %s; own CPU per row %s; readable p99 %s\n",
			ratio(c.CassandraCPURatio), ratio(c.SinkRowsPerRequestRatio), ratio(c.SinkCPURatio), ratio(c.FreshP99Ratio))
		if c.CassandraNetCPURatio != 0 {
			fmt.Fprintf(tw, "sink ÷ 50-row client, net of idle	Cassandra CPU per row %s	each side less its own idle window\n", ratio(c.CassandraNetCPURatio))
		}
	}
}

// printCurve writes a line per point of a curve run.
func (r *Result) printCurve(tw io.Writer) {
	for _, l := range r.Curve {
		fresh := "readable not measured (--no-probes)"
		if l.FreshSamples > 0 {
			fresh = fmt.Sprintf("readable p50 %.0f ms, p99 %.0f ms", l.FreshP50Millis, l.FreshP99Millis)
		}
		fmt.Fprintf(tw, "curve %s events/s	%.1f rows per request	%s produced; CPU per row: sink %.1f µs, Cassandra %.1f µs (net of idle %.1f); %s; committed p99 %.0f ms\n",
			num(l.Rate), l.RowsPerRequest, num(l.AchievedRate), l.SinkCPUMicrosPerRow, l.CassandraCPUMicrosPerRow, l.CassandraNetCPUMicrosPerRow, fresh, l.P99Millis)
	}
}

// printRead writes the lines of the read phase: each round's two reads, then the ratios.
func (r *Result) printRead(tw io.Writer) {
	rd := r.Read
	if rd == nil {
		return
	}
	cass := func(v float64) string {
		if rd.CassandraCPUNote != "" {
			return "Cassandra CPU not measured (" + rd.CassandraCPUNote + ")"
		}
		return fmt.Sprintf("Cassandra %.2f µs per row", v)
	}
	printed := "rows read, not printed (as the loop's)"
	if rd.SinkFormat != "none" {
		printed = "rows printed as " + rd.SinkFormat + " to nowhere"
	}
	fmt.Fprintf(tw, "read\t%d rows, %d daily buckets\tone device, newest first; sink: page %d, fetch %d, parallelism %d, read-ahead %d, %s; loop: one query per day, page %d; load average %.1f to %.1f\n",
		rd.Rows, rd.Days, rd.PageSize, rd.FetchSize, rd.Parallelism, rd.ReadAhead, printed, rd.LoopPageSize, rd.LoadAverage[0], rd.LoadAverage[1])
	for i, rr := range rd.Rounds {
		first := "loop first"
		if rr.SinkFirst {
			first = "sink first"
		}
		fmt.Fprintf(tw, "read round %d\tsink ÷ loop: wall %.2f, Cassandra CPU per row %.2f\t%s; sink %.3f s, %d requests, %s, client %.2f µs; loop %.3f s, %d requests, %s, client %.2f µs\n",
			i+1, rr.WallRatio, rr.CassandraCPURatio, first, rr.Sink.Seconds, rr.Sink.Requests, cass(rr.Sink.CassandraCPUMicrosPerRow), rr.Sink.ClientCPUMicrosPerRow,
			rr.Loop.Seconds, rr.Loop.Requests, cass(rr.Loop.CassandraCPUMicrosPerRow), rr.Loop.ClientCPUMicrosPerRow)
	}
	w, c := rd.WallRatio, rd.CassandraCPURatio
	fmt.Fprintf(tw, "read: sink ÷ loop\twall %.2f (%.2f to %.2f)\tCassandra CPU per row %.2f (%.2f to %.2f); medians and ranges of %d rounds\n",
		w.Median, w.Min, w.Max, c.Median, c.Min, c.Max, len(rd.Rounds))
}

// num formats a rate with thousands separators, or three significant decimals below 10.
func num(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Sprint(v)
	}
	if math.Abs(v) < 10 {
		return fmt.Sprintf("%.3f", v)
	}
	s := fmt.Sprintf("%.0f", v)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
