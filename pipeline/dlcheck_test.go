package pipeline

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bucketsink/sink/pipeline/deadletter"
)

// TestCheckDeadLetterTopicsNamesTheMissingTopic: the start-up check reports a dead-letter topic Kafka
// does not know, with the configured topic that names it, and accepts one that exists.
func TestCheckDeadLetterTopicsNamesTheMissingTopic(t *testing.T) {
	f := newFixture(t, 0, 0)
	cfg := f.config(nil)
	if err := deadletter.CheckDeadLetterTopics(t.Context(), cfg, nil); err != nil {
		t.Fatalf("existing dead-letter topic: %v", err)
	}
	tp := cfg.Topics["events"]
	tp.DeadLetterTopic = "events.dlq.typo"
	cfg.Topics["events"] = tp
	err := deadletter.CheckDeadLetterTopics(t.Context(), cfg, nil)
	var missing *deadletter.MissingDeadLetterTopicsError
	if !errors.As(err, &missing) || len(missing.Topics) != 1 || missing.Topics["events.dlq.typo"][0] != "events" ||
		!strings.Contains(err.Error(), `"events.dlq.typo" (dead_letter_topic of topics.events)`) {
		t.Errorf("missing dead-letter topic: %v", err)
	}
}

// TestCheckDeadLetterTopicsGoesOnWhenKafkaDoesNotAnswer: an unreachable Kafka is not a missing topic;
// the check gives up after its timeout and lets the daemon start (its clients retry by themselves).
func TestCheckDeadLetterTopicsGoesOnWhenKafkaDoesNotAnswer(t *testing.T) {
	cfg := (&fixture{addrs: []string{"127.0.0.1:1"}}).config(nil)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	if err := deadletter.CheckDeadLetterTopics(ctx, cfg, nil); err != nil {
		t.Errorf("unreachable Kafka: %v, want nil", err)
	}
}
