// Package pipeline is `sink run`'s core: it runs the Kafka consumer group and moves every record to
// Cassandra at least once. It owns the lifecycle of each assigned partition and wires the parts, each in
// a package of its own:
//
//   - offsets: which offsets are done and what may be committed; commit.go is where offsets reach Kafka.
//   - budget: what buffered records and rows cost, and the byte budget that stops polling.
//   - consumer: the Kafka clients' options, the start-up broker check, the fetch and hand-off pools, and
//     the queue of each partition's fetched records.
//   - writestage: the batcher goroutine, its slot policy, the writers, and the retries of batches
//     given back.
//   - deadletter: building, sizing and checking dead letters, and re-reading refused rows' records.
//   - dlsend: the per-partition dead-letter sender goroutine, which tells its partition
//     (dlsend.Partition) what became of each dead letter.
//   - split: hot-entity split routing, through the split.Worker a partition implements, and the
//     group session's lease under which a split entry's batches are written.
//   - metrics: every exported metric, and the largest open partitions.
//   - health: /healthz, /readyz, sink_ready and the Cassandra readiness ping.
//
// What stays here: New and the budget wiring (pipeline.go), Run and the poll loop (run.go), the
// rebalance callbacks (group.go, with offsetrestart.go and recreated.go), and one partition's
// assignment (partition.go) with its worker (worker.go), which own the partition's lock and lifecycle.
// No subpackage imports this one: they reach a partition through the interfaces it implements
// (writestage.Owner, dlsend.Partition, split.Worker).
//
// Concurrency: one poll-loop goroutine (Run) queues records and never blocks on a worker; franz-go runs
// the rebalance callbacks between polls. Each assigned partition has one worker goroutine and one
// dead-letter sender goroutine, both owned by the callbacks, which stop and wait for them. The write
// stage has one goroutine owning the batcher and writer goroutines up to writer.max_in_flight. A
// partition's mutex guards its tracker and marks; the Pipeline's mutex guards the owned partitions and
// the budget; the lock order (a partition's before the Pipeline's, every other lock a leaf) is written
// where partition.mu is declared. Handler, Alive, Ready and Stopping are safe to call from any
// goroutine; Run is called once.
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/bucketer"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/internal/backoff"
	"github.com/bucketsink/sink/mapper"
	"github.com/bucketsink/sink/pipeline/budget"
	"github.com/bucketsink/sink/pipeline/dlsend"
	"github.com/bucketsink/sink/pipeline/health"
	"github.com/bucketsink/sink/pipeline/metrics"
	"github.com/bucketsink/sink/pipeline/offsets"
	"github.com/bucketsink/sink/pipeline/rollup"
	"github.com/bucketsink/sink/pipeline/split"
	"github.com/bucketsink/sink/pipeline/writestage"
)

// Mapper turns a record into a row for every entry that reads its Kafka topic. MapAll appends one
// mapper.Mapped per entry: a row, or a *mapper.RecordError when the entry refuses the record (bad
// input: dead-lettered) or skips it (a skip reason). An error MapAll returns wraps a
// *codec.UnavailableError: the schema registry did not answer, the record waits and is mapped again.
// MapEntry maps the record for one entry alone (a split's routing changed that entry's row). ctx bounds
// a registry fetch. *mapper.Mapper implements it.
type Mapper interface {
	MapAll(ctx context.Context, rec mapper.Record, out []mapper.Mapped) ([]mapper.Mapped, error)
	MapEntry(ctx context.Context, entry string, rec mapper.Record) (batcher.Row, error)
}

// Config is what a Pipeline needs. Sink must have passed config.Validate (with defaults applied).
type Config struct {
	Sink   *config.Config
	Mapper Mapper
	Writer BatchWriter
	// Group joins batches due together that may share a request (*cassandra.Writer.Group); nil sends
	// every partition's batch alone.
	Group   func([]*batcher.Batch) []*batcher.Batch
	Metrics *metrics.Metrics
	Logger  *slog.Logger
	// Ping asks whether Cassandra could take a write at the configured consistency, for /readyz
	// (cassandra.Session.Probe); it is called every PingInterval unless a write was acknowledged within
	// the last three intervals or writes are failing, with cassandra.timeout as its timeout. Nil means
	// always (tests with an in-memory writer).
	Ping         func(context.Context) error
	PingInterval time.Duration // default 5s
	// KafkaOptions are appended to the consumer's and the dead-letter producer's options (tests).
	KafkaOptions []kgo.Opt
	// Now is the clock of batching and metrics; default time.Now.
	Now func() time.Time
	// Slices creates a missing slice table for topics with bucket.missing_slice: create
	// (*cassandra.SliceMaker). Nil: such rows wait, retried with backoff, until the table exists.
	Slices SliceMaker
	// Splits is the routing table of hot-entity splits (split.StoreOf); required when a topic has split on.
	Splits split.Store
	// Rollups is the rollups' pending table and recomputation (rollup.StoreOf); required when an entry
	// has rollups.
	Rollups rollup.Store
	// BufferFull is told, under the pipeline's lock, when the buffer becomes full or nearly empty
	// (budget.Full of the bytes held against writer.max_buffered_bytes): the collector's growth target
	// follows it (memlimit.Target.BufferFull). Nil: nothing is told (an operator's GOGC, no memory limit,
	// tests).
	BufferFull func(full bool)
}

// BatchWriter writes one single-partition batch (*cassandra.Writer, or a test double); see
// writestage.BatchWriter.
type BatchWriter = writestage.BatchWriter

// SliceMaker creates a missing slice table (*cassandra.SliceMaker); see writestage.SliceMaker.
type SliceMaker = writestage.SliceMaker

// topicInfo is what the pipeline knows of one consumed Kafka topic.
type topicInfo struct {
	deadLetterTopic string       // the same for every entry of the topic (config.Validate)
	entries         []*entryInfo // the entries reading the topic, by name
	// offsetEntry is an entry whose write_timestamp is offset, so a partition whose offsets go back
	// writes rows that lose to older ones (offsetrestart.go); "" when none.
	offsetEntry string
	// rollups: an entry of the topic has rollups, so a row may carry markers; without, a record's
	// rows skip the look-up of their entry.
	rollups bool
}

// entryInfo is what the pipeline knows of one entry (topics.<name>): one table fed by a Kafka topic.
type entryInfo struct {
	name   string
	table  string           // keyspace.table (a sliced table's base name), for dead letters
	policy *bucketer.Policy // for the close time of a row's bucket (largest open partitions)
	// stage is what the write stage knows of the entry: its name, whether it is sliced, and
	// bucket.missing_slice.
	stage writestage.Topic
	split *split.Topic // nil unless split is on (package split)
	// rollup is the entry's rollups (package pipeline/rollup): each raw row adds its markers to its
	// record; nil without rollups.
	rollup *rollup.Entry
}

// Pipeline consumes the configured topics as one member of the consumer group and writes their rows to
// Cassandra at least once. Create it with New, serve its Handler, and call Run once.
type Pipeline struct {
	cfg     Config
	log     *slog.Logger
	metrics *metrics.Metrics
	mapper  Mapper
	writer  BatchWriter
	now     func() time.Time
	topics  map[string]*topicInfo // by Kafka topic
	entries map[string]*entryInfo // by entry name (topics.<name>)
	sink    *config.Config
	// client is the consumer group member, set in Run under mu. The group starts inside kgo.NewClient, so
	// a rebalance callback can run before it is set: callbacks use it only for pauses, which the poll loop
	// makes after it is set.
	client   *kgo.Client
	producer *kgo.Client // dead letters
	// commitClock times marks until their commit (sink_stage_seconds{stage="committed"}); mapped is the
	// stage before it that the workers observe.
	commitClock *offsets.CommitClock
	mapped      prometheus.Observer
	writes      *writestage.Stage
	lease       *split.Lease // the group session's lease for split topics' writes; nil without split topics

	// dlqLimits caches the max.message.bytes of the dead-letter topics; deadLetters is what every
	// partition's dead-letter sender shares, set in Run once the producer exists.
	dlqLimits   dlsend.Limits
	deadLetters dlsend.Config

	backoff         backoff.Policy // writer.retry_initial .. writer.retry_max
	shutdownTimeout time.Duration

	// mu guards parts, budget and stuck. Lock order: a partition's mu before this one, the Kafka
	// client's after it (pauses); see partition.mu for the whole order.
	mu     sync.Mutex
	parts  map[offsets.TopicPartition]*partition
	budget *budget.Budget
	// budgetFreed wakes the poll loop when a release brings the bytes held back under the budget.
	budgetFreed chan struct{}
	// budgetFull mirrors budget.Budget.Over for the write stage, which picks batches by efficiency while it
	// is set (writestage's slot policy).
	budgetFull atomic.Bool
	// bufferFull is what cfg.BufferFull was last told (budget.Full); true until then, as the growth
	// target starts at the full buffer's.
	bufferFull bool
	stuck      map[offsets.TopicPartition]bool

	// health is liveness and readiness: the poll loop's turns, group membership, Cassandra's answers,
	// shutdown.
	health  *health.State
	running atomic.Bool
	// stoppedAt is when shutdown began (unix nanos); revoking counts the revoke callbacks running.
	stoppedAt atomic.Int64
	revoking  atomic.Int32
	// recreatedChecked is when the poll loop last looked whether a topic failing with UNKNOWN_TOPIC_ID
	// was created again (recreated.go); the poll loop's alone.
	recreatedChecked map[string]time.Time
}

// New checks cfg and prepares a pipeline; it opens no connection. cfg.Sink is used as config.Load (or
// ApplyDefaults) left it: every default is applied there and nowhere else, so an explicit zero such as
// writer.top_partitions: 0 keeps its meaning here.
func New(cfg Config) (*Pipeline, error) {
	if cfg.Sink == nil || cfg.Mapper == nil || cfg.Writer == nil || cfg.Metrics == nil {
		return nil, errors.New("pipeline: Sink, Mapper, Writer and Metrics are required")
	}
	if len(cfg.Sink.Topics) == 0 {
		return nil, errors.New("pipeline: topics: no topic configured")
	}
	if err := cfg.Sink.DefaultsApplied(); err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.PingInterval <= 0 {
		cfg.PingInterval = 5 * time.Second
	}
	w := cfg.Sink.Writer
	pl := &Pipeline{
		cfg:     cfg,
		log:     cfg.Logger,
		metrics: cfg.Metrics,
		mapper:  cfg.Mapper,
		writer:  cfg.Writer,
		now:     cfg.Now,
		sink:    cfg.Sink,
		topics:  make(map[string]*topicInfo),
		entries: make(map[string]*entryInfo),
		mapped:  cfg.Metrics.StageSeconds.WithLabelValues(metrics.StageMapped),
		commitClock: offsets.NewCommitClock(cfg.Now, func(d time.Duration) {
			cfg.Metrics.StageSeconds.WithLabelValues(metrics.StageCommitted).Observe(d.Seconds())
		}),
		shutdownTimeout:  w.ShutdownTimeout.Std(),
		parts:            make(map[offsets.TopicPartition]*partition),
		budget:           budget.New(int64(w.MaxBufferedBytes)),
		budgetFreed:      make(chan struct{}, 1),
		bufferFull:       true,
		stuck:            make(map[offsets.TopicPartition]bool),
		recreatedChecked: make(map[string]time.Time),
	}
	pl.backoff = backoff.Policy{Initial: w.RetryInitial.Std(), Max: w.RetryMax.Std()}
	budgets := make(map[string]int64) // by Kafka topic
	rollups, err := rollup.Entries(cfg.Sink)
	if err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	if len(rollups) > 0 && cfg.Rollups == nil {
		return nil, errors.New("pipeline: entries have rollups but Config.Rollups is nil")
	}
	for _, name := range cfg.Sink.TopicNames() {
		t := cfg.Sink.Topics[name]
		kt := t.Topic
		policy, err := cfg.Sink.Policy(name)
		if err != nil {
			return nil, fmt.Errorf("pipeline: %w", err)
		}
		sm, _ := cfg.Mapper.(split.Mapper) // the real mapper has routes; a split topic needs them
		sp, err := split.NewTopic(cfg.Sink, name, policy, sm, cfg.Splits, cfg.Metrics)
		if err != nil {
			return nil, err
		}
		_, sliced := policy.Sliced()
		e := &entryInfo{name: name, table: t.Keyspace + "." + t.Table, policy: policy, split: sp,
			stage: writestage.Topic{Name: name, Sliced: sliced, MissingSlice: t.Bucket.MissingSlice}}
		e.rollup = rollups[name]
		pl.entries[name] = e
		ti := pl.topics[kt]
		if ti == nil {
			ti = &topicInfo{deadLetterTopic: t.DeadLetterTopic}
			pl.topics[kt] = ti
		}
		ti.entries = append(ti.entries, e)
		ti.rollups = ti.rollups || e.rollup != nil
		if t.WriteTimestamp == config.WriteTimestampOffset && ti.offsetEntry == "" {
			ti.offsetEntry = name
		}
		// A topic read by several entries shows the smallest of their budgets: sink_largest_partition_bytes
		// of the topic is held against it.
		if _, ok := budgets[kt]; !ok || int64(t.PartitionBudget) < budgets[kt] {
			budgets[kt] = int64(t.PartitionBudget)
		}
	}
	for kt, b := range budgets {
		pl.metrics.PartitionBudget.WithLabelValues(kt).Set(float64(b))
	}
	pl.metrics.ConfigureLive(w.TopPartitions, cfg.Now)
	var largest func() any
	if cfg.Sink.Metrics.DebugPartitions {
		largest = func() any { return cfg.Metrics.Largest() }
	}
	pl.health = health.New(health.Config{
		// A turn of the poll loop can wait for a revoke: its drain (shutdown_timeout) and commit.
		WedgedAfter:  cfg.Sink.Kafka.RebalanceTimeout.Std() + pl.shutdownTimeout + commitTimeout + 30*time.Second,
		Ping:         cfg.Ping,
		PingInterval: cfg.PingInterval,
		PingTimeout:  cfg.Sink.Cassandra.Timeout.Std(),
		Now:          cfg.Now,
		Log:          cfg.Logger,
		Ready:        cfg.Metrics.Ready,
		Largest:      largest,
	})
	return pl, nil
}

// Bounds of the shutdown steps that follow the drain. With the drain's writer.shutdown_timeout they make
// StopBound, which the chart's terminationGracePeriodSeconds covers with a margin (docs/PIPELINE.md,
// "Shutdown"). None of them can extend another: a step that overruns is abandoned, not waited for.
const (
	// commitTimeout bounds the synchronous commit of a revoke. The commit is one request to the group
	// coordinator; if it cannot finish in this time the records since the last commit are replayed,
	// which at-least-once allows. Validate requires kafka.rebalance_timeout to exceed it plus
	// writer.shutdown_timeout.
	commitTimeout = config.RevokeCommitTimeout
	// finalCommitTimeout bounds the commit of the last revoke. It is shorter than commitTimeout (a revoke
	// during a rebalance) because the process is about to exit; one commit takes milliseconds when Kafka
	// answers, and when it does not the records since the last periodic commit are replayed.
	finalCommitTimeout = 4 * time.Second
	// leaveTimeout bounds the LeaveGroup request. Unsent, the group notices after kafka.session_timeout.
	leaveTimeout = 2 * time.Second
	// stageStopTimeout bounds the wait for the write stage once its leftover writes are canceled.
	stageStopTimeout = time.Second
	// clientCloseTimeout bounds closing the consumer and the dead-letter producer (closed side by side).
	clientCloseTimeout = 2 * time.Second
)

// StopBound is the longest Run takes to return once ctx is canceled: the drain (shutdownTimeout, the
// validated writer.shutdown_timeout), the final commit, leaving the group, stopping the write stage and
// closing the Kafka clients.
func StopBound(shutdownTimeout time.Duration) time.Duration {
	return shutdownTimeout +
		finalCommitTimeout + leaveTimeout + stageStopTimeout + clientCloseTimeout
}

// stopStart is when shutdown began (the cancel of Run's ctx); the drain is measured from it.
func (pl *Pipeline) stopStart() time.Time { return time.Unix(0, pl.stoppedAt.Load()) }

// Stopping reports whether shutdown has begun.
func (pl *Pipeline) Stopping() bool { return pl.health.Stopping() }

// badRecordError is the error attribute of the log line of a bad record. A mapping error names the column,
// field and reason without the record's value; with log.quote_values it shows the value (mapper.Quoted).
func (pl *Pipeline) badRecordError(err error) slog.Attr {
	if pl.sink.Log.QuoteValues {
		return slog.String("error", mapper.Quoted(err))
	}
	return slog.Any("error", err)
}

// Handler serves /healthz, /readyz and /debug/partitions (unless metrics.debug_partitions is false). The
// caller adds /metrics from its registry.
func (pl *Pipeline) Handler() http.Handler { return pl.health.Handler() }

// Alive reports whether the poll loop is turning; an error says why not.
func (pl *Pipeline) Alive() error { return pl.health.Alive() }

// Ready reports whether the daemon can do work: group joined, Cassandra reachable, not shutting down.
// An error names the first reason it is not (package health).
func (pl *Pipeline) Ready() error { return pl.health.Ready() }

func (pl *Pipeline) kafkaTopics() []string {
	ts := make([]string, 0, len(pl.topics))
	for t := range pl.topics {
		ts = append(ts, t)
	}
	return ts
}

// charge adds bytes held for tp; at the budget, the poll loop stops polling until enough is released.
func (pl *Pipeline) charge(tp offsets.TopicPartition, n int64) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	pl.budget.Charge(tp, n)
	pl.budgetGauges()
}

// release returns bytes held for tp, waking the poll loop when the total falls back under the budget.
func (pl *Pipeline) release(tp offsets.TopicPartition, n int64) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.budget.Release(tp, n) {
		pl.budgetFree()
	}
	pl.budgetGauges()
}

// budgetFree wakes a poll loop waiting for the budget.
func (pl *Pipeline) budgetFree() {
	select {
	case pl.budgetFreed <- struct{}{}:
	default:
	}
}

// budgetGauges updates sink_buffered_bytes and sink_paused_partitions, and tells Config.BufferFull
// when the buffer becomes full or nearly empty. While the budget is full no assigned partition is
// being fetched, so all of them count as paused; otherwise the stuck ones do.
func (pl *Pipeline) budgetGauges() {
	pl.metrics.BufferedBytes.Set(float64(pl.budget.Total()))
	if pl.cfg.BufferFull != nil {
		if full := budget.Full(pl.budget.Total(), int64(pl.sink.Writer.MaxBufferedBytes), pl.bufferFull); full != pl.bufferFull {
			pl.bufferFull = full
			pl.cfg.BufferFull(full)
		}
	}
	over := pl.budget.Over()
	pl.budgetFull.Store(over)
	paused := pl.budget.StuckCount()
	if over {
		paused = len(pl.parts)
	}
	pl.metrics.PausedPartitions.Set(float64(paused))
}

// partitionStuck pauses a partition that cannot advance (so its queue and tracker stop growing) and
// counts it in sink_stuck_partitions; it undoes both when the partition recovers.
func (pl *Pipeline) partitionStuck(tp offsets.TopicPartition, stuck bool) {
	pl.mu.Lock()
	pause, resume := pl.budget.SetStuck(tp, stuck)
	if pause {
		pl.client.PauseFetchPartitions(map[string][]int32{tp.Topic: {tp.Partition}})
	}
	if resume {
		pl.client.ResumeFetchPartitions(map[string][]int32{tp.Topic: {tp.Partition}})
	}
	if stuck {
		pl.stuck[tp] = true
	} else {
		delete(pl.stuck, tp)
	}
	pl.stuckGauge(tp.Topic)
	pl.budgetGauges()
	pl.mu.Unlock()
}

// stuckGauge sets sink_stuck_partitions of topic from pl.stuck; the caller holds pl.mu.
func (pl *Pipeline) stuckGauge(topic string) {
	n := 0
	for tp := range pl.stuck {
		if tp.Topic == topic {
			n++
		}
	}
	pl.metrics.StuckPartitions.WithLabelValues(topic).Set(float64(n))
}

// observeWritten records that Cassandra answers (for readiness) and feeds the event-time lag and the
// largest-open-partitions tally with a written request, each of its partitions in turn.
func (pl *Pipeline) observeWritten(b *batcher.Batch) {
	pl.health.Written()
	// A latest-value entry has no policy: its partitions, one row per entity overwritten by every event
	// and never closing, stay out of the largest open partitions (a tally of its writes would count
	// overwrites, not what a partition holds). Its event times still feed the event-time lag.
	e := pl.entries[b.Target.Entry]
	// A request joins up to writer.group_max_partitions partitions: room for the default's on the stack.
	var buf [16]metrics.WrittenPartition
	parts := buf[:0]
	for i := 0; i < len(b.Rows); {
		n := len(b.Rows) - i
		if b.Partitions > 1 {
			n = batcher.PartitionLen(b.Rows[i:])
		}
		rows := b.Rows[i : i+n]
		newest, bytes := 0, int64(0)
		for j := range rows {
			if rows[j].EventMicros > rows[newest].EventMicros {
				newest = j
			}
			bytes += int64(rows[j].Size)
		}
		p := metrics.WrittenPartition{Key: rows[0].Key, Rows: int64(n), Bytes: bytes, EventTime: rows[newest].EventTime()}
		if e != nil && e.policy != nil {
			p.Closes = e.policy.End(e.policy.Index(p.EventTime))
		}
		parts = append(parts, p)
		i += n
	}
	pl.metrics.ObserveWritten(b.Target.Topic, b.Target.Table, parts)
}
