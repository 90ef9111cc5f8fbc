package dlsend

import (
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestUndescribableDeadLetterTopicIsNotDescribedForEveryDeadLetter: when the dead-letter topic's configs
// cannot be described (here it does not exist; in production, often a missing DescribeConfigs ACL),
// Kafka's default max.message.bytes is assumed and the describe is not repeated for every dead letter
// until describeRetry has passed; a refusal as too large still describes again at once.
func TestUndescribableDeadLetterTopicIsNotDescribedForEveryDeadLetter(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var describes atomic.Int32
	c.ControlKey(kmsg.DescribeConfigs.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		describes.Add(1)
		return nil, nil, false
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var limits Limits
	log := slog.New(slog.DiscardHandler)
	for range 5 {
		if got := limits.get(t.Context(), cl, log, "missing.dlq", false); got != defaultMaxMessageBytes {
			t.Fatalf("limit %d, want Kafka's default %d", got, defaultMaxMessageBytes)
		}
	}
	if n := describes.Load(); n != 1 {
		t.Errorf("%d describes for 5 dead letters, want 1", n)
	}
	limits.get(t.Context(), cl, log, "missing.dlq", true)
	if n := describes.Load(); n != 2 {
		t.Errorf("%d describes after a refresh, want 2", n)
	}
}
