package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/internal/bounded"
	"github.com/bucketsink/sink/pipeline/budget"
	"github.com/bucketsink/sink/pipeline/consumer"
	"github.com/bucketsink/sink/pipeline/dlsend"
	"github.com/bucketsink/sink/pipeline/offsets"
	"github.com/bucketsink/sink/pipeline/split"
	"github.com/bucketsink/sink/pipeline/writestage"
)

// maxPollRecords bounds one poll. The poll loop only queues records, so this is about fairness between
// partitions and bookkeeping granularity, not processing time.
const maxPollRecords = 10_000

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
	pl.deadLetters = dlsend.Config{
		Producer: pl.producer, Limits: &pl.dlqLimits, Backoff: pl.backoff, Metrics: pl.metrics,
		ErrorAttr: pl.badRecordError,
		RereadOptions: func() ([]kgo.Opt, error) {
			_, opts, err := pl.kafkaOptions()
			return opts, err
		},
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
			// A split entry's batches are sent only while the group session is known to be alive (split.Lease).
			k := pl.sink.Kafka
			pl.lease = split.NewLease(cl, k.Group, k.SessionTimeout.Std(), k.RebalanceTimeout.Std(), pl.backoff, pl.log)
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

// fence is the write stage's Fence: a batch with a row of an entry with split on is sent only under
// the session lease; any other batch as the stage would.
func (pl *Pipeline) fence(ctx context.Context, b *batcher.Batch, owners []writestage.Owner) (context.Context, error) {
	if e := pl.entries[b.Target.Entry]; e != nil && e.split != nil { // a batch is of one Target
		return pl.lease.Hold(ctx, owners)
	}
	return ctx, nil
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
	p.queue.Push(f.Records, pl.now())
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
