package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/bucketer"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/mapper"
)

// Mapper turns a record into a row; an error (a *mapper.RecordError) means the record is bad input and
// goes to the dead-letter topic. *mapper.Mapper implements it.
type Mapper interface {
	Map(rec mapper.Record) (batcher.Row, error)
}

// Config is what a Pipeline needs. Sink must have passed config.Validate (with defaults applied).
type Config struct {
	Sink    *config.Config
	Mapper  Mapper
	Writer  BatchWriter
	Metrics *Metrics
	Logger  *slog.Logger
	// Ping checks that Cassandra answers, for /readyz; it is called every PingInterval. Nil means
	// always reachable (tests with an in-memory writer).
	Ping         func(context.Context) error
	PingInterval time.Duration // default 5s
	// KafkaOptions are appended to the consumer's and the dead-letter producer's options (tests).
	KafkaOptions []kgo.Opt
	// Now is the clock of batching and metrics; default time.Now.
	Now func() time.Time
	// Splits is the routing table of hot-entity splits; required when a topic has split on.
	Splits SplitStore
}

// topicInfo is what the pipeline knows of one consumed Kafka topic.
type topicInfo struct {
	name            string // the key under topics: in the configuration
	deadLetterTopic string
	policy          *bucketer.Policy // for the close time of a row's bucket (largest open partitions)
	split           *splitTopic      // nil unless split is on (split.go)
}

// maxPollRecords bounds one poll. The poll loop only queues records, so this is about fairness between
// partitions and bookkeeping granularity, not processing time.
const maxPollRecords = 10_000

// Pipeline consumes the configured topics as one member of the consumer group and writes their rows to
// Cassandra at least once. Create it with New, serve its Handler, and call Run once.
type Pipeline struct {
	cfg      Config
	log      *slog.Logger
	metrics  *Metrics
	mapper   Mapper
	writer   BatchWriter
	now      func() time.Time
	topics   map[string]*topicInfo // by Kafka topic
	sink     *config.Config
	client   *kgo.Client // consumer group member; set in Run before any callback can fire
	producer *kgo.Client // dead letters
	writes   *writeStage

	// dlqLimits caches the max.message.bytes of the dead-letter topics.
	dlqLimits dlqLimits

	retryInitial, retryMax time.Duration
	shutdownTimeout        time.Duration

	mu     sync.Mutex // guards parts and budget; lock order: a partition's mu before this one
	parts  map[topicPartition]*partition
	budget *budget
	// budgetFreed wakes the poll loop when a release brings the bytes held back under the budget.
	budgetFreed chan struct{}
	// budgetFull mirrors budget.over() for the write stage, which picks batches by efficiency while it is
	// set (writeStage.run).
	budgetFull atomic.Bool
	stuck      map[topicPartition]bool

	joined    atomic.Bool
	stopping  atomic.Bool
	cassOK    atomic.Bool
	lastAlive atomic.Int64 // unix nanos of the poll loop's last turn
	running   atomic.Bool
}

// New checks cfg and prepares a pipeline; it opens no connection.
func New(cfg Config) (*Pipeline, error) {
	if cfg.Sink == nil || cfg.Mapper == nil || cfg.Writer == nil || cfg.Metrics == nil {
		return nil, errors.New("pipeline: Sink, Mapper, Writer and Metrics are required")
	}
	if len(cfg.Sink.Topics) == 0 {
		return nil, errors.New("pipeline: topics: no topic configured")
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
		cfg:             cfg,
		log:             cfg.Logger,
		metrics:         cfg.Metrics,
		mapper:          cfg.Mapper,
		writer:          cfg.Writer,
		now:             cfg.Now,
		sink:            cfg.Sink,
		topics:          make(map[string]*topicInfo),
		retryInitial:    orDefault(w.RetryInitial.Std(), config.DefaultRetryInitial.Std()),
		retryMax:        orDefault(w.RetryMax.Std(), config.DefaultRetryMax.Std()),
		shutdownTimeout: orDefault(w.ShutdownTimeout.Std(), config.DefaultShutdownTimeout.Std()),
		parts:           make(map[topicPartition]*partition),
		budget:          newBudget(int64(orDefault(w.MaxBufferedBytes, config.DefaultMaxBufferedBytes))),
		budgetFreed:     make(chan struct{}, 1),
		stuck:           make(map[topicPartition]bool),
	}
	for _, name := range cfg.Sink.TopicNames() {
		t := cfg.Sink.Topics[name]
		kt := t.Topic
		if kt == "" {
			kt = name
		}
		policy, err := cfg.Sink.Policy(name)
		if err != nil {
			return nil, fmt.Errorf("pipeline: %w", err)
		}
		split, err := newSplitTopic(cfg, name, t, policy)
		if err != nil {
			return nil, err
		}
		pl.topics[kt] = &topicInfo{name: name, deadLetterTopic: t.DeadLetterTopic, policy: policy, split: split}
		budget := orDefault(t.PartitionBudget, config.DefaultPartitionBudget)
		pl.metrics.PartitionBudget.WithLabelValues(kt).Set(float64(budget))
	}
	pl.metrics.live.configure(orDefault(w.TopPartitions, config.DefaultTopPartitions), cfg.Now)
	pl.cassOK.Store(cfg.Ping == nil)
	pl.lastAlive.Store(cfg.Now().UnixNano())
	return pl, nil
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Run consumes until ctx is canceled, then shuts down gracefully: it stops fetching, flushes, waits for
// in-flight writes and dead letters (up to writer.shutdown_timeout), commits and leaves the group. It
// returns nil after a clean shutdown, or the fatal error that stopped it (a group authorization failure,
// for example).
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
	defer pl.producer.Close()
	pl.client, err = kgo.NewClient(consumerOpts...)
	if err != nil {
		return fmt.Errorf("creating the consumer (kafka.brokers, kafka.group): %w", err)
	}

	w := pl.sink.Writer
	pl.writes = newWriteStage(pl, writesCtx, batcher.Config{
		MaxRows:  w.BatchMaxRows,
		MaxBytes: int(w.BatchMaxBytes),
		Linger:   w.Linger.Std(),
	}, orDefault(w.MaxInFlight, config.DefaultMaxInFlight))
	go pl.writes.run()

	pingCtx, stopPing := context.WithCancel(context.Background())
	var pingDone sync.WaitGroup
	if pl.cfg.Ping != nil {
		pingDone.Go(func() { pl.pingLoop(pingCtx) })
	}

	pl.log.Info("consuming", slog.String("group", orDefault(pl.sink.Kafka.Group, config.DefaultGroup)),
		slog.Any("topics", pl.kafkaTopics()))
	runErr := pl.pollLoop(ctx)

	// Shutdown, in order. Readiness is already false (pollLoop set stopping).
	// 1. Leave the group: Close runs OnPartitionsRevoked for every owned partition, which stops the workers,
	//    flushes, waits for in-flight work up to shutdown_timeout, marks and commits.
	pl.client.Close()
	// 2. Anything still owned now (Close could not run the revoke, e.g. the group was never joined) is
	//    given up without a commit.
	pl.mu.Lock()
	rest := make(map[string][]int32)
	for tp := range pl.parts {
		rest[tp.topic] = append(rest[tp.topic], tp.partition)
	}
	pl.mu.Unlock()
	if len(rest) > 0 {
		pl.lose(rest, "client closed")
	}
	// 3. Every partition is given up, so whatever the write stage still holds or writes changes nothing:
	//    cancel it, then close it (no worker is left to send) and wait for its goroutines.
	cancelWrites()
	close(pl.writes.in)
	<-pl.writes.done
	pl.writes.wg.Wait()
	stopPing()
	pingDone.Wait()
	pl.log.Info("stopped")
	return runErr
}

// Stopping reports whether shutdown has begun.
func (pl *Pipeline) Stopping() bool { return pl.stopping.Load() }

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
		pl.stopping.Store(true)
		pl.updateReady()
	}()
	for {
		pl.lastAlive.Store(pl.now().UnixNano())
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
			switch {
			case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
			case errors.Is(err, kgo.ErrClientClosed):
				fatal = err
			case isFatal(err):
				pl.log.Error("fatal consumer error; stopping", slog.String("topic", topic),
					slog.Int("partition", int(partition)), slog.Any("error", err))
				fatal = err
			default:
				pl.log.Warn("fetch error; the client retries", slog.String("topic", topic),
					slog.Int("partition", int(partition)), slog.Any("error", err))
			}
		})
		if !fetches.Empty() {
			pl.joined.Store(true)
			pl.updateReady()
		}
		fetches.EachPartition(pl.dispatch)
		pl.client.AllowRebalance()
		if fatal != nil {
			return fmt.Errorf("consuming (kafka.brokers %v, kafka.group %q): %w", pl.sink.Kafka.Brokers,
				orDefault(pl.sink.Kafka.Group, config.DefaultGroup), fatal)
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
	tp := topicPartition{f.Topic, f.Partition}
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
		n += recordCost(r)
	}
	pl.metrics.RecordsConsumed.WithLabelValues(f.Topic).Add(float64(len(f.Records)))
	p.queue.push(f.Records)
	pl.charge(tp, n)
	p.observeHighWatermark(f.HighWatermark)
}

// waitForBudget returns true at once while the bytes held are under writer.max_buffered_bytes; over it,
// it waits until a release brings them back under, ctx ends (true: the caller checks ctx), or max passes
// (false). Nothing is polled meanwhile, so no partition's fetched data is dropped (see budget), and the
// client lets rebalances through: BlockRebalanceOnPoll only holds them between a poll and AllowRebalance.
func (pl *Pipeline) waitForBudget(ctx context.Context, max time.Duration) bool {
	pl.mu.Lock()
	over := pl.budget.over()
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
		over = pl.budget.over()
		pl.mu.Unlock()
		if !over {
			return true
		}
	}
}

// charge adds bytes held for tp; at the budget, the poll loop stops polling until enough is released.
func (pl *Pipeline) charge(tp topicPartition, n int64) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	pl.budget.charge(tp, n)
	pl.budgetGauges()
}

// release returns bytes held for tp, waking the poll loop when the total falls back under the budget.
func (pl *Pipeline) release(tp topicPartition, n int64) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.budget.release(tp, n) {
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
	pl.metrics.BufferedBytes.Set(float64(pl.budget.total))
	over := pl.budget.over()
	pl.budgetFull.Store(over)
	paused := pl.budget.stuckCount()
	if over {
		paused = len(pl.parts)
	}
	pl.metrics.PausedPartitions.Set(float64(paused))
}

// partitionStuck pauses a partition that cannot advance (so its queue and tracker stop growing) and
// flips readiness; it undoes both when the partition recovers.
func (pl *Pipeline) partitionStuck(tp topicPartition, stuck bool) {
	pl.mu.Lock()
	pause, resume := pl.budget.setStuck(tp, stuck)
	if pause {
		pl.client.PauseFetchPartitions(map[string][]int32{tp.topic: {tp.partition}})
	}
	if resume {
		pl.client.ResumeFetchPartitions(map[string][]int32{tp.topic: {tp.partition}})
	}
	if stuck {
		pl.stuck[tp] = true
	} else {
		delete(pl.stuck, tp)
	}
	pl.budgetGauges()
	pl.mu.Unlock()
	pl.updateReady()
}

// observeWritten feeds the event-time lag and the largest-open-partitions tally with a written batch.
func (pl *Pipeline) observeWritten(b *batcher.Batch) {
	var latest time.Time
	for i := range b.Rows {
		if t := b.Rows[i].EventTime; t.After(latest) {
			latest = t
		}
	}
	topic := b.Rows[0].Source.Topic
	var closes time.Time
	if ti := pl.topics[topic]; ti != nil && ti.policy != nil && !latest.IsZero() {
		closes = ti.policy.End(ti.policy.Index(latest))
	}
	pl.metrics.live.written(topic, b.Target.Table, b.Key, int64(len(b.Rows)), int64(b.Bytes), latest, closes)
}

// jitter spreads retries: a uniformly random duration in [d/2, d).
func jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2)
}
