package offsets

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TopicPartition names one Kafka partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// Client is the part of *kgo.Client that takes offsets.
type Client interface {
	MarkCommitOffsets(map[string]map[int32]kgo.EpochOffset)
	CommitMarkedOffsets(context.Context) error
}

// Marker marks one partition's watermark for commit. Its zero value is ready; its map is reused, since
// franz-go copies the marks out of it.
type Marker struct {
	mark map[string]map[int32]kgo.EpochOffset
}

// Mark hands t's watermark for tp to cl, which commits it at the next periodic or revoke commit, and
// returns it. The caller holds the lock that guards t and has checked that tp is still its own: a mark
// made after a revoke would commit for a partition another member now owns (DRIVER-NOTES R5.2-2).
func (m *Marker) Mark(cl Client, tp TopicPartition, t *Tracker) (next int64) {
	next, epoch, _ := t.Watermark()
	if m.mark == nil {
		m.mark = map[string]map[int32]kgo.EpochOffset{tp.Topic: {}}
	}
	m.mark[tp.Topic][tp.Partition] = kgo.EpochOffset{Epoch: epoch, Offset: next}
	cl.MarkCommitOffsets(m.mark)
	return next
}

// CommitMarked commits every mark synchronously, within timeout; the revoke callback calls it, since a
// custom revoke callback must commit itself (DRIVER-NOTES R5.1).
func CommitMarked(ctx context.Context, cl Client, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return cl.CommitMarkedOffsets(ctx)
}

// ClientOptions makes the consumer commit only what was marked, every interval and when it leaves the
// group; failed periodic commits are counted in failures and logged, and every OffsetCommit request
// (periodic and synchronous) is timed in duration.
func ClientOptions(interval time.Duration, duration prometheus.Observer, failures prometheus.Counter, log *slog.Logger) []kgo.Opt {
	return []kgo.Opt{
		// Marks, not polls, drive commits: a mark is set only for the contiguous written watermark.
		kgo.AutoCommitMarks(),
		kgo.AutoCommitInterval(interval),
		kgo.AutoCommitCallback(func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, _ *kmsg.OffsetCommitResponse, err error) {
			// The next periodic commit retries with newer marks.
			if err != nil && !errors.Is(err, context.Canceled) {
				failures.Inc()
				log.Warn("periodic offset commit failed; retried at the next interval", slog.Any("error", err))
			}
		}),
		kgo.WithHooks(commitHook{duration}),
	}
}

// commitHook times every OffsetCommit request, periodic and synchronous alike.
type commitHook struct{ duration prometheus.Observer }

var _ kgo.HookBrokerE2E = commitHook{}

func (h commitHook) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	if key != (&kmsg.OffsetCommitRequest{}).Key() {
		return
	}
	h.duration.Observe(e2e.DurationE2E().Seconds())
}
