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
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/bucketer"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/internal/backoff"
	"github.com/bucketsink/sink/internal/bounded"
	"github.com/bucketsink/sink/mapper"
	"github.com/bucketsink/sink/pipeline/budget"
	"github.com/bucketsink/sink/pipeline/consumer"
	"github.com/bucketsink/sink/pipeline/health"
	"github.com/bucketsink/sink/pipeline/metrics"
	"github.com/bucketsink/sink/pipeline/offsets"
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
	// Splits is the routing table of hot-entity splits; required when a topic has split on.
	Splits SplitStore
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
}

// entryInfo is what the pipeline knows of one entry (topics.<name>): one table fed by a Kafka topic.
type entryInfo struct {
	name   string
	table  string           // keyspace.table (a sliced table's base name), for dead letters
	policy *bucketer.Policy // for the close time of a row's bucket (largest open partitions)
	// stage is what the write stage knows of the entry: its name, whether it is sliced, and
	// bucket.missing_slice.
	stage writestage.Topic
	split *splitTopic // nil unless split is on (split.go)
}

// maxPollRecords bounds one poll. The poll loop only queues records, so this is about fairness between
// partitions and bookkeeping granularity, not processing time.
const maxPollRecords = 10_000

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
	lease       *sessionLease // the group session's lease for split topics' writes; nil without split topics

	// dlqLimits caches the max.message.bytes of the dead-letter topics.
	dlqLimits dlqLimits

	backoff         backoff.Policy // writer.retry_initial .. writer.retry_max
	shutdownTimeout time.Duration

	mu     sync.Mutex // guards parts and budget; lock order: a partition's mu before this one
	parts  map[offsets.TopicPartition]*partition
	budget *budget.Budget
	// budgetFreed wakes the poll loop when a release brings the bytes held back under the budget.
	budgetFreed chan struct{}
	// budgetFull mirrors budget.Budget.Over for the write stage, which picks batches by efficiency while it
	// is set (writestage.Stage.Run).
	budgetFull atomic.Bool
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
		stuck:            make(map[offsets.TopicPartition]bool),
		recreatedChecked: make(map[string]time.Time),
	}
	pl.backoff = backoff.Policy{Initial: w.RetryInitial.Std(), Max: w.RetryMax.Std()}
	budgets := make(map[string]int64) // by Kafka topic
	for _, name := range cfg.Sink.TopicNames() {
		t := cfg.Sink.Topics[name]
		kt := t.Topic
		policy, err := cfg.Sink.Policy(name)
		if err != nil {
			return nil, fmt.Errorf("pipeline: %w", err)
		}
		split, err := newSplitTopic(cfg, name, t, policy)
		if err != nil {
			return nil, err
		}
		_, sliced := policy.Sliced()
		e := &entryInfo{name: name, table: t.Keyspace + "." + t.Table, policy: policy, split: split,
			stage: writestage.Topic{Name: name, Sliced: sliced, MissingSlice: t.Bucket.MissingSlice}}
		pl.entries[name] = e
		ti := pl.topics[kt]
		if ti == nil {
			ti = &topicInfo{deadLetterTopic: t.DeadLetterTopic}
			pl.topics[kt] = ti
		}
		ti.entries = append(ti.entries, e)
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

// Run consumes until ctx is canceled, then shuts down gracefully within StopBound: it stops fetching,
// flushes, waits for in-flight writes and dead letters (up to writer.shutdown_timeout from the cancel),
// commits, leaves the group and closes its clients. It returns nil after a clean shutdown, or the fatal
// error that stopped it (a group authorization failure, for example).
func (pl *Pipeline) Run(ctx context.Context) error {
	if !pl.running.CompareAndSwap(false, true) {
		return errors.New("pipeline: Run called twice")
	}
	// writesCtx outlives ctx: in-flight writes must be able to finish during the graceful shutdown. It is
	// canceled once the shutdown is over (or abandoned).
	writesCtx, cancelWrites := context.WithCancel(context.Background())
	defer cancelWrites()

	consumerOpts, producerOpts, err := pl.kafkaOptions()
	if err != nil {
		return err
	}
	pl.producer, err = kgo.NewClient(producerOpts...)
	if err != nil {
		return fmt.Errorf("creating the dead-letter producer (kafka.brokers): %w", err)
	}
	if err := consumer.CheckBrokers(ctx, pl.producer, pl.sink.Kafka, pl.log); err != nil {
		pl.producer.Close()
		return err
	}
	cl, err := kgo.NewClient(consumerOpts...)
	if err != nil {
		pl.producer.Close()
		return fmt.Errorf("creating the consumer (kafka.brokers, kafka.group): %w", err)
	}
	pl.mu.Lock()
	pl.client = cl
	pl.mu.Unlock()

	w := pl.sink.Writer
	stageTopics := make(map[string]writestage.Topic, len(pl.entries))
	for name, e := range pl.entries {
		stageTopics[name] = e.stage
	}
	var fence func(context.Context, *batcher.Batch, []writestage.Owner) (context.Context, error)
	for _, e := range pl.entries {
		if e.split != nil {
			// A split entry's batches are sent only while the group session is known to be alive (lease.go).
			k := pl.sink.Kafka
			pl.lease = newSessionLease(cl, k.Group, k.SessionTimeout.Std(), k.RebalanceTimeout.Std(), pl.backoff, pl.log)
			fence = pl.fence
			break
		}
	}
	pl.writes = writestage.New(writesCtx, writestage.Config{
		Batcher: batcher.Config{
			MaxRows:  w.BatchMaxRows,
			MaxBytes: int(w.BatchMaxBytes),
			Linger:   w.Linger.Std(),
		},
		MaxInFlight: w.MaxInFlight,
		Writer:      pl.writer,
		Group:       pl.cfg.Group,
		JoinMax:     w.GroupMaxPartitions,
		Slices:      pl.cfg.Slices,
		Topics:      stageTopics,
		Metrics:     pl.metrics,
		Log:         pl.log,
		Now:         pl.now,
		Backoff:     pl.backoff,
		Stopping:    pl.Stopping,
		BudgetFull:  pl.budgetFull.Load,
		Written:     pl.observeWritten,
		WriteFailed: pl.health.WriteFailed,
		Fence:       fence,
	})
	go pl.writes.Run()

	pingCtx, stopPing := context.WithCancel(context.Background())
	var pingDone sync.WaitGroup
	if pl.cfg.Ping != nil {
		pingDone.Go(func() { pl.health.PingLoop(pingCtx) })
	}

	pl.log.Info("consuming", slog.String("group", pl.sink.Kafka.Group),
		slog.Any("topics", pl.kafkaTopics()))
	runErr := pl.pollLoop(ctx)

	// Shutdown, in order, each step bounded (StopBound). Readiness is already false (pollLoop set
	// stopping and the time the drain counts from).
	// 1. Leave the group: the leave runs OnPartitionsRevoked for every owned partition, which stops the
	//    workers, flushes, waits for in-flight work until shutdown_timeout after the cancel, marks and
	//    commits (finalCommitTimeout); then the LeaveGroup request (leaveTimeout).
	revokeOver := pl.leaveGroup()
	// 2. Anything still owned now (the leave could not run the revoke, e.g. the group was never joined)
	//    is given up without a commit.
	pl.mu.Lock()
	rest := make(map[string][]int32)
	for tp := range pl.parts {
		rest[tp.Topic] = append(rest[tp.Topic], tp.Partition)
	}
	pl.mu.Unlock()
	if len(rest) > 0 {
		pl.lose(rest, "client closed")
	}
	// 3. Every partition is given up, so whatever the write stage still holds or writes changes nothing:
	//    cancel it, then close it (no worker is left to send) and wait for its goroutines. A revoke that
	//    overran its bound may still flush into the stage, so then the stage is only canceled.
	cancelWrites()
	stopPing()
	if revokeOver {
		pl.writes.Close()
	}
	if !bounded.Within(stageStopTimeout, func() {
		if revokeOver {
			pl.writes.Wait()
		}
		pingDone.Wait()
	}) {
		pl.log.Warn("canceled writes or the readiness ping did not return in time; abandoned",
			slog.Duration("timeout", stageStopTimeout))
	}
	// 4. Close the consumer (its group is already left) and the dead-letter producer side by side.
	if !bounded.Within(clientCloseTimeout, func() {
		var wg sync.WaitGroup
		wg.Go(pl.client.Close)
		wg.Go(pl.producer.Close)
		wg.Wait()
	}) {
		pl.log.Warn("closing the Kafka clients did not finish in time; abandoned", slog.Duration("timeout", clientCloseTimeout))
	}
	pl.log.Info("stopped", slog.Duration("took", time.Since(pl.stopStart())))
	return runErr
}

// leaveGroup leaves the consumer group, which runs the final revoke (drain and commit), and sends
// LeaveGroup; it gives up at the cancel + shutdown_timeout + finalCommitTimeout + leaveTimeout. It
// reports whether the revoke is over (false only when it overran that deadline and still runs).
func (pl *Pipeline) leaveGroup() (revokeOver bool) {
	deadline := pl.stopStart().Add(pl.shutdownTimeout + finalCommitTimeout + leaveTimeout)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	// The client lets the leave through only between polls; pollLoop allowed the rebalance before it
	// returned.
	if err := pl.client.LeaveGroupContext(ctx); err != nil {
		pl.log.Warn("leaving the consumer group did not finish in time; the group notices after kafka.session_timeout",
			slog.Any("error", err))
	}
	return pl.revoking.Load() == 0
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

// pollLoop polls, queues each partition's records on its worker without blocking, and allows rebalances
// after every poll, until ctx ends or a fatal error.
func (pl *Pipeline) pollLoop(ctx context.Context) error {
	defer func() {
		pl.stoppedAt.Store(time.Now().UnixNano())
		pl.health.Stop()
	}()
	for {
		pl.health.Turned()
		if !pl.waitForBudget(ctx, 2*time.Second) {
			continue // still over: refresh the liveness timestamp and wait again
		}
		if ctx.Err() != nil {
			return nil
		}
		// A bounded wait keeps the liveness timestamp fresh on an idle topic.
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		fetches := pl.client.PollRecords(pctx, maxPollRecords)
		cancel()
		if ctx.Err() != nil {
			pl.client.AllowRebalance()
			return nil
		}
		var fatal error
		fetches.EachError(func(topic string, partition int32, err error) {
			var session *kgo.ErrGroupSession
			switch {
			case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
			case errors.Is(err, kgo.ErrClientClosed):
				fatal = err
			case isFatal(err):
				pl.log.Error("fatal consumer error; stopping", slog.String("topic", topic),
					slog.Int("partition", int(partition)), slog.Any("error", err))
				fatal = err
			case errors.As(err, &session) && pl.leftGroup("consumer group session lost; rejoining", err):
				// The group session ended (the client lost its partitions first): not ready until the
				// client joins again, which it keeps trying by itself.
			default:
				pl.log.Warn("fetch error; the client retries", slog.String("topic", topic),
					slog.Int("partition", int(partition)), slog.Any("error", err))
			}
		})
		fetches.EachPartition(pl.dispatch)
		pl.client.AllowRebalance()
		if gone := pl.unknownTopicIDs(fetches); gone != nil {
			pl.followRecreated(ctx, gone)
		}
		if fatal != nil {
			return fmt.Errorf("consuming (kafka.brokers %v, kafka.group %q): %w", pl.sink.Kafka.Brokers,
				pl.sink.Kafka.Group, fatal)
		}
	}
}

// isFatal reports errors that retrying cannot fix: the group or topics are not authorized, the group id
// is invalid, authentication failed. Anything else the client retries by itself.
func isFatal(err error) bool {
	for _, e := range []error{
		kerr.GroupAuthorizationFailed, kerr.TopicAuthorizationFailed, kerr.ClusterAuthorizationFailed,
		kerr.InvalidGroupID, kerr.SaslAuthenticationFailed, kerr.UnsupportedSaslMechanism,
		kerr.IllegalSaslState, kerr.InconsistentGroupProtocol, kerr.GroupMaxSizeReached,
	} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// dispatch queues one partition's fetched records on its worker and charges their bytes.
func (pl *Pipeline) dispatch(f kgo.FetchTopicPartition) {
	if len(f.Records) == 0 {
		return
	}
	tp := offsets.TopicPartition{Topic: f.Topic, Partition: f.Partition}
	pl.mu.Lock()
	p := pl.parts[tp]
	pl.mu.Unlock()
	if p == nil {
		// BlockRebalanceOnPoll gates assignment with polling, so this means a partition given up between
		// the fetch and now. Its records are not ours to process; the next owner starts from the commit.
		pl.log.Warn("records for a partition without a worker dropped; they will be consumed from the last commit",
			slog.String("topic", f.Topic), slog.Int("partition", int(f.Partition)),
			slog.Int64("offset", f.Records[0].Offset))
		return
	}
	var n int64
	for _, r := range f.Records {
		n += budget.RecordCost(r)
	}
	pl.metrics.RecordsConsumed.WithLabelValues(f.Topic).Add(float64(len(f.Records)))
	// Charged before the worker can see the records: it releases their cost once it has mapped them,
	// and a release that came first would leave the partition's share of the budget off by n.
	pl.charge(tp, n)
	p.queue.push(f.Records, pl.now())
	p.observeHighWatermark(f.HighWatermark)
}

// waitForBudget returns true at once while the bytes held are under writer.max_buffered_bytes; over it,
// it waits until a release brings them back under, ctx ends (true: the caller checks ctx), or max passes
// (false). Nothing is polled meanwhile, so no partition's fetched data is dropped (see budget), and the
// client lets rebalances through: BlockRebalanceOnPoll only holds them between a poll and AllowRebalance.
func (pl *Pipeline) waitForBudget(ctx context.Context, max time.Duration) bool {
	pl.mu.Lock()
	over := pl.budget.Over()
	pl.mu.Unlock()
	if !over {
		return true
	}
	t := time.NewTimer(max)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return true
		case <-pl.budgetFreed:
		case <-t.C:
			return false
		}
		pl.mu.Lock()
		over = pl.budget.Over()
		pl.mu.Unlock()
		if !over {
			return true
		}
	}
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

// budgetGauges updates sink_buffered_bytes and sink_paused_partitions. While the budget is full no
// assigned partition is being fetched, so all of them count as paused; otherwise the stuck ones do.
func (pl *Pipeline) budgetGauges() {
	pl.metrics.BufferedBytes.Set(float64(pl.budget.Total()))
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
// largest-open-partitions tally with a written batch.
func (pl *Pipeline) observeWritten(b *batcher.Batch) {
	newest := 0
	for i := range b.Rows {
		if b.Rows[i].EventMicros > b.Rows[newest].EventMicros {
			newest = i
		}
	}
	latest := b.Rows[newest].EventTime()
	pl.health.Written()
	topic := b.Target.Topic
	// A latest-value entry has no policy: its partitions, one row per entity overwritten by every event
	// and never closing, stay out of the largest open partitions (a tally of its writes would count
	// overwrites, not what a partition holds). Its event times still feed the event-time lag.
	var closes time.Time
	if e := pl.entries[b.Target.Entry]; e != nil && e.policy != nil {
		closes = e.policy.End(e.policy.Index(latest))
	}
	pl.metrics.ObserveWritten(topic, b.Target.Table, b.Key, int64(len(b.Rows)), int64(b.Bytes), latest, closes)
}
