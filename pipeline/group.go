package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/internal/refusal"
)

// commitTimeout bounds the synchronous commit of a revoke. The commit is one request to the group
// coordinator; if it cannot finish in this time the records since the last commit are replayed, which
// at-least-once allows. Validate requires kafka.rebalance_timeout to exceed it plus writer.shutdown_timeout.
const commitTimeout = config.RevokeCommitTimeout

// kafkaOptions builds the consumer's and the dead-letter producer's client options.
func (pl *Pipeline) kafkaOptions() (consumer, producer []kgo.Opt, err error) {
	k := pl.sink.Kafka
	w := pl.sink.Writer
	common := []kgo.Opt{
		kgo.SeedBrokers(k.Brokers...),
		kgo.ClientID(k.ClientID),
		kgo.WithLogger(kgoLogger{pl.log}),
		// In the common options, so that the re-read of a refused row's record (reread.go, with the
		// producer's options) sees the log as the group did.
		kgo.FetchIsolationLevel(isolationLevel(k.IsolationLevel)),
	}
	if k.TLS.Enabled {
		tc, err := k.TLS.ClientConfig("kafka.tls")
		if err != nil {
			return nil, nil, err
		}
		common = append(common, kgo.DialTLSConfig(tc))
	}
	if k.SASL.Mechanism != "" {
		m, err := saslMechanism(k.SASL)
		if err != nil {
			return nil, nil, err
		}
		common = append(common, kgo.SASL(m))
	}

	start := kgo.NewOffset().AtStart()
	if strings.EqualFold(k.StartOffset, "latest") {
		start = kgo.NewOffset().AtEnd()
	}
	fetchMax := int32(k.FetchMaxBytes)
	pools := &fetchPools{}
	consumer = append(append([]kgo.Opt{}, common...),
		kgo.ConsumerGroup(k.Group),
		kgo.ConsumeTopics(pl.kafkaTopics()...),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.ConsumeResetOffset(start),
		kgo.SessionTimeout(k.SessionTimeout.Std()),
		kgo.RebalanceTimeout(k.RebalanceTimeout.Std()),
		// Marks, not polls, drive commits: a mark is set only for the contiguous written watermark.
		kgo.AutoCommitMarks(),
		kgo.AutoCommitInterval(w.CommitInterval.Std()),
		kgo.AutoCommitCallback(pl.autoCommitted),
		// Callbacks never run while a poll's records are being queued, so a revoke cannot interleave
		// with dispatch; the poll loop never blocks, so rebalances are never held for long.
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsAssigned(pl.assigned),
		kgo.OnPartitionsRevoked(pl.revoked),
		kgo.OnPartitionsLost(pl.lost),
		// Record structs and decompressed batches are reused: the worker recycles each record once it is
		// mapped (pools.go).
		kgo.WithPools(pools), kgo.WithHooks(pools),
		// Fetch memory is bounded by FetchMaxBytes × MaxConcurrentFetches, on top of the byte budget of
		// the pipeline itself, and the concurrency is derived from both (docs/PIPELINE.md, "Backpressure
		// and memory").
		kgo.FetchMaxBytes(fetchMax),
		kgo.BrokerMaxReadBytes(max(fetchMax+(1<<20), 100<<20)),
		kgo.FetchMaxPartitionBytes(int32(k.FetchMaxPartitionBytes)),
		kgo.MaxConcurrentFetches(config.MaxConcurrentFetches(
			w.MaxBufferedBytes, config.Bytes(fetchMax))),
		kgo.FetchMaxWait(time.Second),
		kgo.WithHooks(commitHook{pl.metrics}),
	)
	producer = append(append([]kgo.Opt{}, common...),
		// Idempotent (the default) with acks=all: a dead letter acknowledged is durable and written once
		// per attempt sequence.
		kgo.RequiredAcks(kgo.AllISRAcks()),
		// Without a delivery timeout a produce to an unreachable topic would hang silently; with one it
		// fails, is logged and counted, and is retried by the sender.
		kgo.RecordDeliveryTimeout(30*time.Second),
		kgo.ProducerLinger(0),
		kgo.ProducerBatchMaxBytes(16<<20),
	)
	consumer = append(consumer, pl.cfg.KafkaOptions...)
	producer = append(producer, pl.cfg.KafkaOptions...)
	return consumer, producer, nil
}

// isolationLevel is kafka.isolation_level as franz-go's option; read_committed unless the key says
// read_uncommitted.
func isolationLevel(s string) kgo.IsolationLevel {
	if strings.EqualFold(s, config.IsolationReadUncommitted) {
		return kgo.ReadUncommitted()
	}
	return kgo.ReadCommitted()
}

// assigned starts a worker for every newly assigned partition.
func (pl *Pipeline) assigned(_ context.Context, _ *kgo.Client, assigned map[string][]int32) {
	pl.mu.Lock()
	for topic, parts := range assigned {
		info := pl.topics[topic]
		if info == nil {
			continue
		}
		for _, part := range parts {
			tp := topicPartition{topic, part}
			if pl.parts[tp] != nil {
				continue
			}
			p := newPartition(pl, tp, info)
			pl.parts[tp] = p
			p.start()
		}
		pl.log.Info("partitions assigned", slog.String("topic", topic), slog.Any("partitions", parts))
	}
	pl.mu.Unlock()
	pl.joined.Store(true)
	pl.updateReady()
}

// revoked gives up partitions cleanly: stop their workers, flush the batcher, wait for their in-flight
// writes and dead letters (at most writer.shutdown_timeout; on timeout the rest is abandoned unmarked),
// set revoked so no late acknowledgement marks again, and commit the marked watermarks synchronously. A
// custom revoke callback must commit itself (DRIVER-NOTES R5.1). It also runs on Close.
//
// On shutdown the wait ends shutdown_timeout after the cancel, not after this call, and the commit has
// finalCommitTimeout: both are steps of StopBound.
func (pl *Pipeline) revoked(ctx context.Context, cl *kgo.Client, revoked map[string][]int32) {
	pl.revoking.Add(1)
	defer pl.revoking.Add(-1)
	start := time.Now()
	drainBy, commitWithin := start.Add(pl.shutdownTimeout), commitTimeout
	if pl.stopping.Load() {
		drainBy, commitWithin = pl.stopStart().Add(pl.shutdownTimeout), finalCommitTimeout
	}
	parts := pl.take(revoked)
	if len(parts) > 0 {
		deadline, cancel := context.WithDeadline(ctx, drainBy)
		var wg sync.WaitGroup
		for _, p := range parts {
			wg.Go(p.stop)
		}
		wg.Wait()
		// The workers are stopped, so every row of these partitions is in the stage's channel or batcher;
		// the flush request queues behind them.
		pl.writes.flush(deadline)
		for _, p := range parts {
			select {
			case <-p.drained:
			case <-deadline.Done():
				n, first := p.undone()
				p.log.Warn("revoke: in-flight work did not finish within writer.shutdown_timeout; abandoned without commit, it will be replayed",
					slog.Int64("offset", first), slog.Int("records", n), slog.Duration("timeout", pl.shutdownTimeout))
			}
		}
		cancel()
		pl.giveUp(parts)
	}
	// Commit even when nothing was revoked now: this callback ends every group session, and the marks of
	// all owned partitions are worth committing before the session changes.
	cctx, cancel := context.WithTimeout(ctx, commitWithin)
	defer cancel()
	if err := cl.CommitMarkedOffsets(cctx); err != nil {
		pl.metrics.CommitFailures.Inc()
		pl.log.Error("committing offsets on revoke failed; records since the last commit will be replayed",
			slog.Any("error", err))
		return
	}
	if len(parts) > 0 {
		pl.log.Info("partitions revoked and committed", slog.Any("partitions", revoked),
			slog.Duration("took", time.Since(start)))
	}
}

// lost gives up partitions that are already someone else's: stop the workers, set revoked first so that
// nothing marks, and commit nothing.
//
// Lost partitions mean the group session ended (the coordinator fenced the member, or heartbeats failed
// through a Kafka outage): the member is out of the group until the client rejoins by itself, and not
// ready meanwhile. The next assignment (OnPartitionsAssigned runs on every join, even with nothing new)
// makes it ready again.
func (pl *Pipeline) lost(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
	pl.leftGroup("consumer group session lost; rejoining", nil)
	pl.lose(lost, "partitions lost")
}

// leftGroup turns readiness false until the next assignment, logging the transition; it reports whether
// the member was joined until now.
func (pl *Pipeline) leftGroup(msg string, err error) bool {
	if !pl.joined.Swap(false) {
		return false
	}
	attrs := []any{}
	if err != nil {
		attrs = append(attrs, slog.Any("error", err))
	}
	pl.log.Warn(msg+"; not ready until the group is joined again", attrs...)
	pl.updateReady()
	return true
}

func (pl *Pipeline) lose(lost map[string][]int32, why string) {
	parts := pl.take(lost)
	for _, p := range parts {
		p.mu.Lock()
		p.revoked = true
		p.mu.Unlock()
	}
	var wg sync.WaitGroup
	for _, p := range parts {
		wg.Go(p.stop)
	}
	wg.Wait()
	pl.giveUp(parts)
	if len(parts) > 0 {
		pl.log.Warn(why+"; nothing committed for them", slog.Any("partitions", lost))
	}
}

// take removes the listed partitions from the owned set and returns them.
func (pl *Pipeline) take(m map[string][]int32) []*partition {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	var out []*partition
	for topic, parts := range m {
		for _, part := range parts {
			tp := topicPartition{topic, part}
			if p := pl.parts[tp]; p != nil {
				out = append(out, p)
				delete(pl.parts, tp)
			}
		}
	}
	return out
}

// giveUp finishes partitions that are no longer ours: no marks from now on, dead-letter senders stopped,
// bytes and pauses forgotten, gauges removed.
func (pl *Pipeline) giveUp(parts []*partition) {
	for _, p := range parts {
		p.giveUp()
	}
	pl.mu.Lock()
	for _, p := range parts {
		wasPaused, underAgain := pl.budget.forget(p.tp)
		if wasPaused {
			// Pauses outlive assignments in the client; clear it so a later assignment fetches.
			pl.client.ResumeFetchPartitions(map[string][]int32{p.tp.topic: {p.tp.partition}})
		}
		if underAgain {
			pl.budgetFree()
		}
		delete(pl.stuck, p.tp)
		pl.stuckGauge(p.tp.topic)
		pl.metrics.ConsumerLag.DeleteLabelValues(p.tp.topic, strconv.Itoa(int(p.tp.partition)))
	}
	pl.budgetGauges()
	pl.mu.Unlock()
	pl.updateReady()
}

// autoCommitted counts failed periodic commits; the next one retries with newer marks.
func (pl *Pipeline) autoCommitted(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, _ *kmsg.OffsetCommitResponse, err error) {
	if err != nil && !errors.Is(err, context.Canceled) {
		pl.metrics.CommitFailures.Inc()
		pl.log.Warn("periodic offset commit failed; retried at the next interval", slog.Any("error", err))
	}
}

// brokerCheckTimeout bounds the start-up check of the brokers.
const brokerCheckTimeout = 30 * time.Second

// checkBrokers asks the brokers for their API versions once, through cl's TLS and SASL settings, so a
// configuration that can never connect (a refused login, a certificate not trusted or for another name,
// TLS at one end only) stops the sink at start with a *refusal.Error naming the cause. Brokers that do not
// answer at all are not an error here: the client keeps retrying them, as it does later in the run.
func (pl *Pipeline) checkBrokers(ctx context.Context, cl *kgo.Client) error {
	ctx, cancel := context.WithTimeout(ctx, brokerCheckTimeout)
	defer cancel()
	err := cl.Ping(ctx)
	if err == nil || ctx.Err() != nil {
		return nil
	}
	k := pl.sink.Kafka
	if cause := kafkaRefusal(err, k); cause != "" {
		return &refusal.Error{Server: "kafka", Addrs: k.Brokers, Cause: cause, Err: err}
	}
	pl.log.Warn("no broker answered the start-up check; the client keeps retrying",
		slog.Any("brokers", k.Brokers), slog.Any("error", err))
	return nil
}

// kafkaRefusal names the configuration cause of a failed connection to the brokers, or returns "" for
// failures that may pass (a broker down, a timeout).
func kafkaRefusal(err error, k config.Kafka) string {
	var eof *kgo.ErrFirstReadEOF
	switch {
	case errors.Is(err, kerr.SaslAuthenticationFailed):
		return fmt.Sprintf("authentication failed: wrong kafka.sasl.username or password, or the user has no %s credentials", k.SASL.Mechanism)
	case errors.Is(err, kerr.UnsupportedSaslMechanism):
		return fmt.Sprintf("the listener does not enable SASL mechanism %s (kafka.sasl.mechanism)", k.SASL.Mechanism)
	case strings.Contains(err.Error(), "appear to be a tls alert record"):
		return "the listener speaks TLS and the client does not: set kafka.tls.enabled: true or dial its plaintext port"
	case errors.As(err, &eof):
		if k.TLS.Enabled {
			return "the broker closed the connection at once, as a plaintext listener does with a TLS client: set kafka.tls.enabled: false or dial its TLS port"
		}
		return "the broker closed the connection at once: the listener may require TLS (kafka.tls.enabled) or SASL (kafka.sasl)"
	}
	return refusal.Cause(err, "kafka.tls")
}

func saslMechanism(s config.SASL) (sasl.Mechanism, error) {
	pass := s.Password.Reveal()
	switch strings.ToUpper(s.Mechanism) {
	case "PLAIN":
		return plain.Auth{User: s.Username, Pass: pass}.AsMechanism(), nil
	case "SCRAM-SHA-256":
		return scram.Auth{User: s.Username, Pass: pass}.AsSha256Mechanism(), nil
	case "SCRAM-SHA-512":
		return scram.Auth{User: s.Username, Pass: pass}.AsSha512Mechanism(), nil
	}
	return nil, fmt.Errorf("kafka.sasl.mechanism: %q is not supported; use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", s.Mechanism)
}

// kgoLogger routes the client's log lines to slog, one level down: the client is chatty at info about
// routine group events.
type kgoLogger struct{ l *slog.Logger }

func (k kgoLogger) Level() kgo.LogLevel {
	switch {
	case k.l.Enabled(context.Background(), slog.LevelDebug):
		return kgo.LogLevelInfo
	case k.l.Enabled(context.Background(), slog.LevelInfo):
		return kgo.LogLevelWarn
	}
	return kgo.LogLevelError
}

func (k kgoLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	lvl := slog.LevelDebug
	switch level {
	case kgo.LogLevelError:
		lvl = slog.LevelError
	case kgo.LogLevelWarn:
		lvl = slog.LevelWarn
	}
	k.l.Log(context.Background(), lvl, "kafka: "+msg, keyvals...)
}

// commitHook times every OffsetCommit request, periodic and synchronous alike.
type commitHook struct{ m *Metrics }

var _ kgo.HookBrokerE2E = commitHook{}

func (h commitHook) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	if key != (&kmsg.OffsetCommitRequest{}).Key() {
		return
	}
	h.m.CommitDuration.Observe(e2e.DurationE2E().Seconds())
}
