package deadletter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/pipeline/consumer"
)

// MissingDeadLetterTopicsError is the error of CheckDeadLetterTopics when Kafka says a configured
// dead_letter_topic does not exist.
type MissingDeadLetterTopicsError struct {
	// Topics maps each missing dead-letter topic to the configured topics (keys under topics:) that
	// name it.
	Topics map[string][]string
}

func (e *MissingDeadLetterTopicsError) Error() string {
	var parts []string
	for _, dlq := range slices.Sorted(maps.Keys(e.Topics)) {
		parts = append(parts, fmt.Sprintf("%q (dead_letter_topic of topics.%s)", dlq, strings.Join(e.Topics[dlq], ", topics.")))
	}
	return "dead-letter topic does not exist in Kafka: " + strings.Join(parts, "; ") +
		"; create it (the sink never creates topics) or correct the name"
}

// checkTimeout bounds the start-up check: a Kafka that does not answer is not the check's to wait for
// (the consumer retries by itself), and `sink run` must not hang before it serves health.
const checkTimeout = 15 * time.Second

// CheckDeadLetterTopics asks Kafka whether every configured dead_letter_topic exists, before `sink run`
// starts consuming. It returns a *MissingDeadLetterTopicsError naming each topic Kafka reports as
// unknown: the first bad record of such a topic could not be dead-lettered, and a typo in a name is
// best found at deploy time rather than at the first bad record. It returns nil when every topic exists,
// and also when Kafka cannot answer within the check's timeout or the sink may not describe a topic (a
// warning is logged): then the dead-letter sender's retries cover it at run time. opts are added to the
// client's options (tests).
func CheckDeadLetterTopics(ctx context.Context, cfg *config.Config, log *slog.Logger, opts ...kgo.Opt) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	named := make(map[string][]string) // dead-letter topic → configured topics naming it
	for _, name := range cfg.TopicNames() {
		if dlq := cfg.Topics[name].DeadLetterTopic; dlq != "" {
			named[dlq] = append(named[dlq], name)
		}
	}
	if len(named) == 0 {
		return nil
	}
	common, err := consumer.ClientOptions(cfg.Kafka, log)
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(append(ProducerOptions(common), opts...)...)
	if err != nil {
		return fmt.Errorf("creating a Kafka client to check the dead-letter topics (kafka.brokers): %w", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	topics := slices.Sorted(maps.Keys(named))
	details, err := kadm.NewClient(cl).ListTopics(ctx, topics...)
	if err != nil {
		log.Warn("could not check that the dead-letter topics exist; going on (a missing one stops its partitions at their first bad record until it exists)",
			slog.Any("dead_letter_topics", topics), slog.Any("error", err))
		return nil
	}
	missing := make(map[string][]string)
	for _, dlq := range topics {
		d, ok := details[dlq]
		switch {
		case !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition):
			missing[dlq] = named[dlq]
		case d.Err != nil:
			log.Warn("could not check that a dead-letter topic exists; going on",
				slog.String("dead_letter_topic", dlq), slog.Any("error", d.Err))
		}
	}
	if len(missing) > 0 {
		return &MissingDeadLetterTopicsError{Topics: missing}
	}
	return nil
}
