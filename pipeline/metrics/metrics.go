package metrics

import (
	"runtime"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

const namespace = "sink"

// The stages of sink_stage_seconds, in the order a record passes them.
const (
	StageMapped       = "mapped"
	StageBatched      = "batched"
	StageAcknowledged = "acknowledged"
	StageCommitted    = "committed"
)

// Metrics holds every metric the daemon exports (docs/DESIGN.md, "Metrics"). Make one per process with
// NewMetrics on a registry made in main: nothing here touches the global registry.
type Metrics struct {
	RecordsConsumed     *prometheus.CounterVec
	RecordsWritten      *prometheus.CounterVec
	RecordsDeadLettered *prometheus.CounterVec
	RecordsSkipped      *prometheus.CounterVec
	RecordsFailed       *prometheus.CounterVec
	// EntryRowsWritten and EntryDeadLetters are per entry (topics.<name>), for a Kafka topic that feeds
	// several tables: the rows each entry's table got, and the records each entry refused.
	EntryRowsWritten *prometheus.CounterVec
	EntryDeadLetters *prometheus.CounterVec
	BatchRows        prometheus.Histogram
	BatchBytes       prometheus.Histogram
	BatchPartitions  prometheus.Histogram
	// StageSeconds is how long records spend in each stage; see the Stage constants.
	StageSeconds      *prometheus.HistogramVec
	WriteDuration     *prometheus.HistogramVec
	WriteRetries      *prometheus.CounterVec
	WritesInFlight    prometheus.Gauge
	BufferedBytes     prometheus.Gauge
	OpenBatchRows     prometheus.Gauge
	PausedPartitions  prometheus.Gauge
	StuckPartitions   *prometheus.GaugeVec
	WriteStageRetries *prometheus.CounterVec
	// RegistryRetries counts fetches of a writer schema that failed because the schema registry did
	// not answer; the record's partition waits and retries.
	RegistryRetries *prometheus.CounterVec
	CommitDuration  prometheus.Histogram
	CommitFailures  prometheus.Counter
	ConsumerLag     *prometheus.GaugeVec
	PartitionBudget *prometheus.GaugeVec
	Ready           prometheus.Gauge
	BuildInfo       *prometheus.GaugeVec
	// DLTruncated counts dead letters sent cut to fit their topic (sink.truncated).
	DLTruncated *prometheus.CounterVec
	// Splits counts routing records this process wrote (hot-entity splits); OverBudget the open
	// partitions projected over budget with no split left to make (split.max_event_buckets reached).
	Splits     *prometheus.CounterVec
	OverBudget *prometheus.GaugeVec
	// The rollup workers (pipeline/rollup): windows due and not yet computed, the age of the oldest
	// of them, windows computed (when: on_time, or late: a record of an already due window came after
	// it), computations that failed (retried), and the raw partitions their reads touched.
	RollupPending       *prometheus.GaugeVec
	RollupOldestPending *prometheus.GaugeVec
	RollupWindows       *prometheus.CounterVec
	RollupFailed        *prometheus.CounterVec
	RollupReads         *prometheus.CounterVec

	live *liveCollector // event-time lag and largest open partitions, computed at scrape time
}

// NewMetrics creates the metrics and registers them on reg. It panics if a name is already registered
// there, like prometheus.MustRegister: that is a wiring bug, not a runtime condition.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		RecordsConsumed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "records_consumed_total",
			Help: "Records fetched from Kafka and handed to a partition worker.",
		}, []string{"topic"}),
		RecordsWritten: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "records_written_total",
			Help: "Rows Cassandra acknowledged: one per record, or one per table for a Kafka topic read by several entries (see sink_entry_rows_written_total).",
		}, []string{"topic"}),
		RecordsDeadLettered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "records_dead_lettered_total",
			Help: "Records written to the topic's dead-letter topic, by reason (decode, map, late, future, key, slice, write, panic); a record several entries refuse is one dead letter, of the first refusing entry's reason.",
		}, []string{"topic", "reason"}),
		RecordsSkipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "records_skipped_total",
			Help: "Good records an entry did not write and that were committed past, by reason (expired: under ttl_from event_time the row would be born expired; tombstone: on_tombstone skip; filtered: the entry's where does not take the record), one per entry that skips the record.",
		}, []string{"topic", "reason"}),
		RecordsFailed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "records_failed_total",
			Help: "Failed attempts to write or dead-letter a record; its partition stops advancing until one succeeds.",
		}, []string{"topic"}),
		EntryRowsWritten: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "entry_rows_written_total",
			Help: "Rows Cassandra acknowledged, by entry (topics.<name>): the rows of each table a Kafka topic feeds.",
		}, []string{"topic", "entry"}),
		EntryDeadLetters: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "entry_dead_letters_total",
			Help: "Records an entry (topics.<name>) refused, or whose row in its table Cassandra refused, by reason; a dead letter naming two entries counts once for each.",
		}, []string{"topic", "entry", "reason"}),
		BatchRows: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Name: "batch_rows",
			Help:    "Rows per Cassandra batch request (of one partition, or of several sharing a coordinator).",
			Buckets: []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000},
		}),
		BatchBytes: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Name: "batch_bytes",
			Help:    "Estimated encoded bytes per Cassandra batch.",
			Buckets: prometheus.ExponentialBuckets(256, 4, 8), // 256 B .. 4 MiB
		}),
		BatchPartitions: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Name: "batch_partitions",
			Help:    "Cassandra partitions per batch request: 1, or more when batches due together share a coordinator.",
			Buckets: []float64{1, 2, 3, 5, 10, 20, 50},
		}),
		StageSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "stage_seconds",
			Help: "Time spent reaching each stage, by stage: mapped (fetched until handed to the write stage, per hand-off), " +
				"batched (first row added until its batch leaves the batcher, per request), acknowledged (left the batcher " +
				"until Cassandra acknowledged, per request), committed (first acknowledgement marked until the commit " +
				"that carries it, per partition and commit).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16), // 0.5 ms .. ~16 s
		}, []string{"stage"}),
		WriteDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "write_duration_seconds",
			Help:    "Duration of one Cassandra batch attempt, by outcome (ok, retry, error).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2.5, 12), // 0.5 ms .. ~30 s
		}, []string{"outcome"}),
		WriteRetries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "write_retries_total",
			Help: "Cassandra batch attempts retried, by reason (timeout, unavailable, overloaded, other).",
		}, []string{"reason"}),
		WritesInFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "writes_in_flight",
			Help: "Cassandra batches being written now.",
		}),
		BufferedBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "buffered_bytes",
			Help: "Bytes of fetched records and their rows held in memory until written or dead-lettered.",
		}),
		OpenBatchRows: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "open_batch_rows",
			Help: "Rows in open batches, waiting for more rows of their Cassandra partition or for a free writer.",
		}),
		PausedPartitions: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "paused_partitions",
			Help: "Kafka partitions whose fetching is paused, for backpressure or because a record is stuck.",
		}),
		StuckPartitions: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "stuck_partitions",
			Help: "Kafka partitions that cannot advance past a record: a batch the write stage keeps retrying, a dead letter that cannot be produced, or a bad record with nowhere to go.",
		}, []string{"topic"}),
		WriteStageRetries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "write_stage_retries_total",
			Help: "Batches the writer gave back unwritten and the write stage sends again after a backoff, by reason (missing_table, exhausted, refused, unknown).",
		}, []string{"topic", "reason"}),
		RegistryRetries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "schema_registry_retries_total",
			Help: "Fetches of a writer schema that failed because the schema registry did not answer; the record's partition waits (stuck) and retries with backoff.",
		}, []string{"topic"}),
		CommitDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Name: "commit_duration_seconds",
			Help:    "Duration of synchronous offset commits (on revoke and shutdown).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 10),
		}),
		CommitFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "commit_failures_total",
			Help: "Offset commits that failed; the records after the last successful commit will be replayed.",
		}),
		ConsumerLag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "consumer_lag_records",
			Help: "Records between the partition's high watermark and the next offset to commit.",
		}, []string{"topic", "partition"}),
		PartitionBudget: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "partition_budget_bytes",
			Help: "The topic's partition size budget (topics.<name>.partition_budget; the smallest of its entries' when several read the Kafka topic).",
		}, []string{"topic"}),
		Ready: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "ready",
			Help: "1 when /readyz answers ready: group joined, Cassandra reachable, not stopping. A stuck partition does not count (see sink_stuck_partitions).",
		}),
		BuildInfo: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "build_info",
			Help: "Always 1; the labels carry the sink version and Go version.",
		}, []string{"version", "goversion"}),
		live: newLiveCollector(),
	}
	reg.MustRegister(
		m.RecordsConsumed, m.RecordsWritten, m.RecordsDeadLettered, m.RecordsSkipped, m.RecordsFailed,
		m.EntryRowsWritten, m.EntryDeadLetters,
		m.BatchRows, m.BatchBytes, m.BatchPartitions, m.StageSeconds, m.WriteDuration, m.WriteRetries, m.WritesInFlight,
		m.BufferedBytes, m.OpenBatchRows, m.PausedPartitions, m.StuckPartitions, m.WriteStageRetries, m.RegistryRetries,
		m.CommitDuration, m.CommitFailures,
		m.ConsumerLag, m.PartitionBudget, m.Ready, m.BuildInfo, m.live,
	)
	m.DLTruncated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "dead_letters_truncated_total",
		Help: "Dead letters sent truncated because they were larger than the dead-letter topic accepts.",
	}, []string{"topic"})
	reg.MustRegister(m.DLTruncated)
	m.RollupPending = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Name: "rollup_windows_pending",
		Help: "Rollup windows due (end plus grace passed) and not yet computed, per entry and Kafka partition.",
	}, []string{"entry", "partition"})
	m.RollupOldestPending = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Name: "rollup_oldest_pending_seconds",
		Help: "How long the oldest due rollup window has been due, per entry and Kafka partition; 0 when none is.",
	}, []string{"entry", "partition"})
	m.RollupWindows = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "rollup_windows_computed_total",
		Help: "Rollup windows computed and written; when=late for a window whose record came after it was due.",
	}, []string{"entry", "rollup", "when"})
	m.RollupFailed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "rollup_windows_failed_total",
		Help: "Rollup window computations that failed; the window stays pending and is computed again.",
	}, []string{"entry", "rollup"})
	m.RollupReads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "rollup_read_partitions_total",
		Help: "Partitions read to compute rollup windows (raw partitions, or a finer rollup's).",
	}, []string{"entry", "rollup"})
	reg.MustRegister(m.RollupPending, m.RollupOldestPending, m.RollupWindows, m.RollupFailed, m.RollupReads)
	m.Splits = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "partition_splits_total",
		Help: "Hot-entity splits decided by this process: routing records it wrote to sink_splits.",
	}, []string{"topic"})
	m.OverBudget = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Name: "partitions_over_budget",
		Help: "Open partitions projected past their budget by the end of their bucket with no split left (split.max_event_buckets reached).",
	}, []string{"topic"})
	reg.MustRegister(m.Splits, m.OverBudget)
	return m
}

// SetBuildInfo sets sink_build_info for this binary's version.
func (m *Metrics) SetBuildInfo(version string) {
	m.BuildInfo.WithLabelValues(version, runtime.Version()).Set(1)
}

// MetricNames lists the name of every metric the daemon exports, sorted. Histograms are listed by their
// base name (the _bucket, _sum and _count series derive from it).
func MetricNames() []string {
	names := []string{
		"sink_records_consumed_total",
		"sink_records_written_total",
		"sink_records_dead_lettered_total",
		"sink_records_skipped_total",
		"sink_records_failed_total",
		"sink_entry_rows_written_total",
		"sink_entry_dead_letters_total",
		"sink_batch_rows",
		"sink_batch_bytes",
		"sink_batch_partitions",
		"sink_stage_seconds",
		"sink_write_duration_seconds",
		"sink_write_retries_total",
		"sink_writes_in_flight",
		"sink_buffered_bytes",
		"sink_open_batch_rows",
		"sink_paused_partitions",
		"sink_stuck_partitions",
		"sink_write_stage_retries_total",
		"sink_schema_registry_retries_total",
		"sink_commit_duration_seconds",
		"sink_commit_failures_total",
		"sink_consumer_lag_records",
		"sink_event_time_lag_seconds",
		"sink_largest_partition_rows",
		"sink_largest_partition_bytes",
		"sink_partition_budget_bytes",
		"sink_ready",
		"sink_build_info",
		"sink_dead_letters_truncated_total",
		"sink_partition_splits_total",
		"sink_partitions_over_budget",
		"sink_rollup_windows_pending",
		"sink_rollup_oldest_pending_seconds",
		"sink_rollup_windows_computed_total",
		"sink_rollup_windows_failed_total",
		"sink_rollup_read_partitions_total",
	}
	sort.Strings(names)
	return names
}

// liveCollector exports the metrics whose value depends on the time of the scrape: event-time lag grows
// while nothing is written, and the largest open partitions drop out when their bucket closes.
type liveCollector struct {
	lagDesc, rowsDesc, bytesDesc *prometheus.Desc

	mu        sync.Mutex
	now       func() time.Time
	topN      int
	lastEvent map[string]time.Time // per topic: event time of the last written record
	open      *openPartitions
}

func newLiveCollector() *liveCollector {
	return &liveCollector{
		lagDesc: prometheus.NewDesc(namespace+"_event_time_lag_seconds",
			"Now minus the newest event time written to Cassandra, per topic; an event time in the future counts as the time it was written.", []string{"topic"}, nil),
		rowsDesc: prometheus.NewDesc(namespace+"_largest_partition_rows",
			"Rows written to the Nth largest Cassandra partition whose time bucket is still open (keys on /debug/partitions).",
			[]string{"topic", "rank"}, nil),
		bytesDesc: prometheus.NewDesc(namespace+"_largest_partition_bytes",
			"Estimated bytes written to the Nth largest Cassandra partition whose time bucket is still open (keys on /debug/partitions).",
			[]string{"topic", "rank"}, nil),
		now:       time.Now,
		topN:      10,
		lastEvent: make(map[string]time.Time),
		open:      newOpenPartitions(10000),
	}
}

// configure sets how many partitions are ranked (writer.top_partitions: 0 exports none) and the clock;
// called once before the pipeline starts.
func (c *liveCollector) configure(topN int, now func() time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.topN = max(topN, 0)
	c.open.max = max(c.open.max, 100*c.topN)
	if now != nil {
		c.now = now
	}
}

// written records one written batch: rows rows and bytes bytes into (table, key), whose bucket closes at
// closes, the latest event time among them being eventTime. An event time later than now counts as now:
// a producer whose clock runs ahead has still just been written, and one future-dated record must not
// hold the lag below zero, where no lag alert can fire, until the clock reaches its time.
func (c *liveCollector) written(topic, table string, parts []WrittenPartition) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	var eventTime time.Time
	for i := range parts {
		if parts[i].EventTime.After(eventTime) {
			eventTime = parts[i].EventTime
		}
		if !parts[i].Closes.IsZero() {
			c.open.add(topic, table, parts[i].Key, parts[i].Rows, parts[i].Bytes, parts[i].Closes, now)
		}
	}
	if eventTime = minTime(eventTime, now); eventTime.After(c.lastEvent[topic]) {
		c.lastEvent[topic] = eventTime
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// largest returns the ranked open partitions per topic, for /debug/partitions.
func (c *liveCollector) largest() map[string][]PartitionStat {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	out := make(map[string][]PartitionStat, len(c.open.topics))
	for topic := range c.open.topics {
		out[topic] = c.open.top(topic, c.topN, now)
	}
	return out
}

func (c *liveCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.lagDesc
	ch <- c.rowsDesc
	ch <- c.bytesDesc
}

func (c *liveCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	for topic, t := range c.lastEvent {
		// Never negative, also when the clock steps back.
		ch <- prometheus.MustNewConstMetric(c.lagDesc, prometheus.GaugeValue, max(now.Sub(t), 0).Seconds(), topic)
	}
	for topic := range c.open.topics {
		for _, s := range c.open.top(topic, c.topN, now) {
			rank := strconv.Itoa(s.Rank)
			ch <- prometheus.MustNewConstMetric(c.rowsDesc, prometheus.GaugeValue, float64(s.Rows), topic, rank)
			ch <- prometheus.MustNewConstMetric(c.bytesDesc, prometheus.GaugeValue, float64(s.Bytes), topic, rank)
		}
	}
}

// OnBatch implements cassandra.Observer: one write attempt of rows rows and bytes bytes took d.
func (m *Metrics) OnBatch(_, _ int, d time.Duration, outcome string) {
	m.WriteDuration.WithLabelValues(outcome).Observe(d.Seconds())
}

// OnRetry implements cassandra.Observer.
func (m *Metrics) OnRetry(reason string) { m.WriteRetries.WithLabelValues(reason).Inc() }

// InFlight implements cassandra.Observer.
func (m *Metrics) InFlight(delta int) { m.WritesInFlight.Add(float64(delta)) }

// ConfigureLive sets how many of the largest open partitions each topic exports (writer.top_partitions)
// and the clock of the scrape-time metrics.
func (m *Metrics) ConfigureLive(topN int, now func() time.Time) { m.live.configure(topN, now) }

// WrittenPartition is what one partition of a written request adds to the event-time lag and the
// largest open partitions: its rows and bytes, the latest event time among its rows and when that
// event's bucket closes. A zero (or past) Closes feeds the event-time lag only: a latest-value table has
// no bucket to close.
type WrittenPartition struct {
	Key               string // the routing key (batcher.Row.Key); copied if kept
	Rows, Bytes       int64
	EventTime, Closes time.Time
}

// ObserveWritten feeds the event-time lag and the largest open partitions with a written request: the
// partitions of table it held, parts, which it does not keep. A request is observed at once, under one
// lock and one reading of the clock, however many partitions it joins.
func (m *Metrics) ObserveWritten(topic, table string, parts []WrittenPartition) {
	m.live.written(topic, table, parts)
}

// Largest returns the largest open partitions of every topic, for /debug/partitions.
func (m *Metrics) Largest() map[string][]PartitionStat { return m.live.largest() }
