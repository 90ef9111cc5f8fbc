package deadletter

import (
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ProducerBatchMaxBytes is the dead-letter producer's batch cap: franz-go fails a record larger
// than it before sending it.
const ProducerBatchMaxBytes = 16 << 20

// ProducerOptions adds to the shared client options (consumer.ClientOptions) what the dead-letter
// producer needs.
func ProducerOptions(common []kgo.Opt) []kgo.Opt {
	return append(append([]kgo.Opt{}, common...),
		// Idempotent (the default) with acks=all: a dead letter acknowledged is durable and written once
		// per attempt sequence.
		kgo.RequiredAcks(kgo.AllISRAcks()),
		// Without a delivery timeout a produce to an unreachable topic would hang silently; with one it
		// fails, is logged and counted, and is retried by the sender.
		kgo.RecordDeliveryTimeout(30*time.Second),
		kgo.ProducerLinger(0),
		kgo.ProducerBatchMaxBytes(ProducerBatchMaxBytes),
	)
}
