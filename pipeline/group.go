package pipeline

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bucketsink/sink/pipeline/consumer"
	"github.com/bucketsink/sink/pipeline/deadletter"
	"github.com/bucketsink/sink/pipeline/offsets"
)

// kafkaOptions builds the consumer's and the dead-letter producer's client options.
func (pl *Pipeline) kafkaOptions() (consumerOpts, producerOpts []kgo.Opt, err error) {
	common, err := consumer.ClientOptions(pl.sink.Kafka, pl.log)
	if err != nil {
		return nil, nil, err
	}
	consumerOpts = append(append(append([]kgo.Opt{}, common...),
		consumer.GroupOptions(pl.sink.Kafka, pl.sink.Writer, pl.kafkaTopics(),
			consumer.Rebalance{Assigned: pl.assigned, Revoked: pl.revoked, Lost: pl.lost})...),
		offsets.ClientOptions(pl.sink.Writer.CommitInterval.Std(), pl.metrics.CommitDuration, pl.metrics.CommitFailures, pl.commitClock, pl.log)...)
	producerOpts = deadletter.ProducerOptions(common)
	consumerOpts = append(consumerOpts, pl.cfg.KafkaOptions...)
	producerOpts = append(producerOpts, pl.cfg.KafkaOptions...)
	return consumerOpts, producerOpts, nil
}

// assigned starts a worker for every newly assigned partition, then looks for offsets that start again
// (offsetrestart.go).
func (pl *Pipeline) assigned(ctx context.Context, cl *kgo.Client, assigned map[string][]int32) {
	pl.mu.Lock()
	for topic, parts := range assigned {
		info := pl.topics[topic]
		if info == nil {
			continue
		}
		for _, part := range parts {
			tp := offsets.TopicPartition{Topic: topic, Partition: part}
			if pl.parts[tp] != nil {
				continue
			}
			p := newPartition(pl, tp, info)
			p.client = cl
			pl.parts[tp] = p
			p.start()
		}
		pl.log.Info("partitions assigned", slog.String("topic", topic), slog.Any("partitions", parts))
	}
	pl.mu.Unlock()
	pl.health.Join()
	pl.checkOffsetRestart(ctx, cl, assigned)
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
	if pl.Stopping() {
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
		pl.writes.Flush(deadline)
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
	if err := offsets.CommitMarked(ctx, cl, commitWithin); err != nil {
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
	if !pl.health.Left() {
		return false
	}
	attrs := []any{}
	if err != nil {
		attrs = append(attrs, slog.Any("error", err))
	}
	pl.log.Warn(msg+"; not ready until the group is joined again", attrs...)
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
			tp := offsets.TopicPartition{Topic: topic, Partition: part}
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
		wasPaused, underAgain := pl.budget.Forget(p.tp)
		if wasPaused {
			// Pauses outlive assignments in the client; clear it so a later assignment fetches.
			pl.client.ResumeFetchPartitions(map[string][]int32{p.tp.Topic: {p.tp.Partition}})
		}
		if underAgain {
			pl.budgetFree()
		}
		delete(pl.stuck, p.tp)
		pl.commitClock.Forget(p.tp)
		pl.stuckGauge(p.tp.Topic)
		pl.metrics.ConsumerLag.DeleteLabelValues(p.tp.Topic, strconv.Itoa(int(p.tp.Partition)))
	}
	pl.budgetGauges()
	pl.mu.Unlock()
	pl.health.Update()
}
