package pipeline

import (
	"context"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// offsetCheckTimeout bounds the look at committed and end offsets at assignment. It delays the first
// fetch of the newly assigned partitions of write_timestamp: offset topics by as long, at most; a
// check that does not finish in time is given up with a log line, nothing else depends on it.
const offsetCheckTimeout = 5 * time.Second

// checkOffsetRestart warns, once per partition at its assignment, when the group's committed offset is
// above the partition's end offset in a topic with write_timestamp: offset. The partition's offsets went
// back under the group (a log truncated by an unclean leader election, a topic replaced while the group's
// offsets were kept or set by hand): the consumer resets to kafka.start_offset, and every row the new
// records write carries a write timestamp (its offset) below the rows older records wrote for the same
// keys, so it loses to them until its offsets pass theirs (README, "Which version of a row wins").
// A plain delete and create of the topic is not seen here: Kafka deletes the group's committed offsets
// with the topic. Nothing is changed: the warning names the partition and both offsets so that an
// operator can decide (another write_timestamp, or deleting the old rows).
func (pl *Pipeline) checkOffsetRestart(ctx context.Context, cl *kgo.Client, assigned map[string][]int32) {
	var topics []string
	for topic := range assigned {
		if info := pl.topics[topic]; info != nil && info.offsetEntry != "" && len(assigned[topic]) > 0 {
			topics = append(topics, topic)
		}
	}
	if len(topics) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, offsetCheckTimeout)
	defer cancel()
	adm := kadm.NewClient(cl)
	committed, err := adm.FetchOffsetsForTopics(ctx, pl.sink.Kafka.Group, topics...)
	if err == nil {
		err = committed.Error()
	}
	var ends kadm.ListedOffsets
	if err == nil {
		ends, err = adm.ListEndOffsets(ctx, topics...)
	}
	if err != nil {
		pl.log.Warn("could not compare committed offsets with end offsets at assignment (write_timestamp: offset); offsets that went back would go unnoticed",
			slog.Any("topics", topics), slog.Any("error", err))
		return
	}
	for _, topic := range topics {
		for _, part := range assigned[topic] {
			c, ok := committed.Lookup(topic, part)
			if !ok || c.Err != nil || c.At < 0 {
				continue // nothing committed yet
			}
			end, ok := ends.Lookup(topic, part)
			if !ok || end.Err != nil || c.At <= end.Offset {
				continue
			}
			pl.log.Warn("committed offset is above the partition's end offset: the partition's offsets went back (log truncated, or topic replaced); with write_timestamp: offset its new rows lose to the old rows of the same keys until its offsets pass the old ones",
				slog.String("topic", topic), slog.Int("partition", int(part)),
				slog.Int64("committed", c.At), slog.Int64("end_offset", end.Offset),
				slog.String("topic_config", pl.topics[topic].offsetEntry))
		}
	}
}
