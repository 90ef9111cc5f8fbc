package offsets

import (
	"context"
	"errors"
	"log/slog"
	"sync"
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
	// Clock, when set, learns of every mark, to time its wait for the commit that carries it.
	Clock *CommitClock
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
	m.Clock.marked(tp, next)
	return next
}

// CommitClock times how long marked offsets wait for the periodic commit that carries them: from the
// first mark of a partition after its last commit until a commit of that offset or a later one succeeds.
// It is safe for concurrent use; a nil *CommitClock times nothing.
type CommitClock struct {
	now     func() time.Time
	observe func(time.Duration)
	mu      sync.Mutex
	pending map[TopicPartition]pendingMark
}

type pendingMark struct {
	offset int64
	at     time.Time
}

// NewCommitClock returns a clock that reports each wait to observe.
func NewCommitClock(now func() time.Time, observe func(time.Duration)) *CommitClock {
	return &CommitClock{now: now, observe: observe, pending: make(map[TopicPartition]pendingMark)}
}

func (c *CommitClock) marked(tp TopicPartition, offset int64) {
	if c == nil {
		return
	}
	c.mu.Lock()
	if _, ok := c.pending[tp]; !ok {
		c.pending[tp] = pendingMark{offset, c.now()}
	}
	c.mu.Unlock()
}

// Forget drops tp's pending mark: the partition was given up, and the commit that carries its last
// mark (the revoke's own) is not a periodic one. Kept, the mark would time the wait of a later
// assignment of tp from before it was given up.
func (c *CommitClock) Forget(tp TopicPartition) {
	if c == nil {
		return
	}
	c.mu.Lock()
	delete(c.pending, tp)
	c.mu.Unlock()
}

// committed reports the waits of the marks a successful OffsetCommit carried.
func (c *CommitClock) committed(req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse) {
	if c == nil || req == nil || resp == nil {
		return
	}
	ok := make(map[TopicPartition]bool)
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode == 0 {
				ok[TopicPartition{t.Topic, p.Partition}] = true
			}
		}
	}
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			tp := TopicPartition{t.Topic, p.Partition}
			if m, found := c.pending[tp]; found && ok[tp] && p.Offset >= m.offset {
				c.observe(now.Sub(m.at))
				delete(c.pending, tp)
			}
		}
	}
}

// CommitMarked commits every mark synchronously, within timeout; the revoke callback calls it, since a
// custom revoke callback must commit itself (DRIVER-NOTES R5.1).
func CommitMarked(ctx context.Context, cl Client, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return cl.CommitMarkedOffsets(ctx)
}

// ClientOptions makes the consumer commit only what was marked, every interval and when it leaves the
// group; failed periodic commits are counted in failures and logged, every OffsetCommit request
// (periodic and synchronous) is timed in duration, and clock (may be nil) learns of every periodic
// commit that succeeded.
func ClientOptions(interval time.Duration, duration prometheus.Observer, failures prometheus.Counter, clock *CommitClock, log *slog.Logger) []kgo.Opt {
	return []kgo.Opt{
		// Marks, not polls, drive commits: a mark is set only for the contiguous written watermark.
		kgo.AutoCommitMarks(),
		kgo.AutoCommitInterval(interval),
		kgo.AutoCommitCallback(func(_ *kgo.Client, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			// The next periodic commit retries with newer marks.
			if err != nil && !errors.Is(err, context.Canceled) {
				failures.Inc()
				log.Warn("periodic offset commit failed; retried at the next interval", slog.Any("error", err))
				return
			}
			if err == nil {
				clock.committed(req, resp)
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
