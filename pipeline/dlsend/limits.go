package dlsend

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bucketsink/sink/pipeline/deadletter"
)

// Limits of the dead-letter producer. franz-go fails a record larger than its batch cap
// (deadletter.ProducerBatchMaxBytes) before sending it; the broker refuses a batch larger than the
// topic's max.message.bytes. Until a topic's value is known, Kafka's default is assumed.
const (
	producerMaxBatchBytes  = deadletter.ProducerBatchMaxBytes
	defaultMaxMessageBytes = 1048588 // Kafka's message.max.bytes default
	describeTimeout        = 10 * time.Second
)

// Limits caches the effective max.message.bytes of each dead-letter topic, described once and again
// when the broker refuses a dead letter as too large. A topic that cannot be described (it does not
// exist yet, Kafka does not answer, or the sink may not describe its configs) is assumed to have Kafka's
// default, and described again at most every describeRetry, so that a sink without the right to
// describe configs does not ask (and warn) for every dead letter.
type Limits struct {
	mu sync.Mutex // a leaf: guards m alone
	m  map[string]dlqLimit
}

type dlqLimit struct {
	bytes int
	known bool      // described; otherwise bytes is the default, assumed since at
	at    time.Time // when the describe failed
}

// describeRetry is how long a failed describe stands before the topic is described again.
const describeRetry = time.Minute

// get returns how many bytes one record batch to topic may take; refresh describes the topic again.
func (l *Limits) get(ctx context.Context, producer *kgo.Client, log *slog.Logger, topic string, refresh bool) int {
	l.mu.Lock()
	c, ok := l.m[topic]
	l.mu.Unlock()
	if ok && !refresh && (c.known || time.Since(c.at) < describeRetry) {
		return min(c.bytes, producerMaxBatchBytes)
	}
	n, err := describeMaxMessageBytes(ctx, kadm.NewClient(producer), topic)
	switch {
	case err == nil:
		c = dlqLimit{bytes: n, known: true}
	case ctx.Err() != nil:
		return min(defaultMaxMessageBytes, producerMaxBatchBytes) // stopping: nothing learned
	default:
		log.Warn("describing the dead-letter topic's max.message.bytes failed; assuming Kafka's default",
			slog.String("dead_letter_topic", topic), slog.Int("max_message_bytes", defaultMaxMessageBytes),
			slog.Duration("described_again_in", describeRetry), slog.Any("error", err))
		c = dlqLimit{bytes: defaultMaxMessageBytes, at: time.Now()}
	}
	l.mu.Lock()
	if l.m == nil {
		l.m = make(map[string]dlqLimit)
	}
	l.m[topic] = c
	l.mu.Unlock()
	return min(c.bytes, producerMaxBatchBytes)
}

// describeMaxMessageBytes returns the topic's effective max.message.bytes.
func describeMaxMessageBytes(ctx context.Context, adm *kadm.Client, topic string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, describeTimeout)
	defer cancel()
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		return 0, err
	}
	rc, err := rcs.On(topic, nil)
	if err != nil {
		return 0, err
	}
	if rc.Err != nil {
		return 0, rc.Err
	}
	for _, c := range rc.Configs {
		if c.Key == "max.message.bytes" && c.Value != nil {
			n, err := strconv.Atoi(*c.Value)
			if err != nil || n <= 0 {
				return 0, fmt.Errorf("max.message.bytes of %s is %q", topic, *c.Value)
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("the configs of %s have no max.message.bytes", topic)
}

// Set records topic's max.message.bytes as n, as if described: the sender takes it until the broker
// refuses a dead letter as too large.
func (l *Limits) Set(topic string, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = make(map[string]dlqLimit)
	}
	l.m[topic] = dlqLimit{bytes: n, known: true}
}
