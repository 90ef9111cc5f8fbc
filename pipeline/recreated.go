package pipeline

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A topic deleted and created again under the running sink keeps its name and gets a new topic ID.
// franz-go (v1.22.2) never moves a consumed topic to a new ID: its fetches go on with the old ID, and once
// the broker has answered UNKNOWN_TOPIC_ID several times in a row the error reaches the poll, for good. Its
// documented recovery is to purge the topic from the client and add it back, which followRecreated does
// once the cluster's metadata shows the name under a new ID. Until then (deleted, not created yet) it
// waits: the errors keep coming, and each is a new look, at most one a recreatedCheckEvery per topic.

// recreatedCheckEvery is the least time between two metadata looks at a topic whose fetches fail with
// UNKNOWN_TOPIC_ID.
const recreatedCheckEvery = 5 * time.Second

// unknownTopicIDs returns the consumed topics of a poll that failed with UNKNOWN_TOPIC_ID, with the topic
// ID they were fetched under (zero when the fetch did not say).
func (pl *Pipeline) unknownTopicIDs(fetches kgo.Fetches) map[string][16]byte {
	var out map[string][16]byte
	for _, f := range fetches {
		for _, t := range f.Topics {
			if pl.topics[t.Topic] == nil {
				continue
			}
			for _, p := range t.Partitions {
				if errors.Is(p.Err, kerr.UnknownTopicID) {
					if out == nil {
						out = make(map[string][16]byte)
					}
					out[t.Topic] = t.TopicID
				}
			}
		}
	}
	return out
}

// followRecreated consumes again the topics of gone that the cluster now holds under another ID: their
// partitions are given up without a commit (their offsets went with the old topic, and a mark made now
// could be committed by name onto the new one), the topic is purged from the client and added back. The
// group then assigns the new topic's partitions, which start from the group's offsets for it (none right
// after the deletion) or else from kafka.start_offset. Called from the poll loop after AllowRebalance.
func (pl *Pipeline) followRecreated(ctx context.Context, gone map[string][16]byte) {
	now := time.Now()
	for topic, oldID := range gone {
		if now.Sub(pl.recreatedChecked[topic]) < recreatedCheckEvery {
			continue
		}
		pl.recreatedChecked[topic] = now
		newID, ok := pl.topicID(ctx, topic)
		if !ok || newID == oldID {
			continue // not created again yet, or not to be told: look again at a later error
		}
		pl.log.Warn("topic was deleted and created again; consuming the new topic from the group's offsets for it, else from kafka.start_offset",
			slog.String("topic", topic))
		owned := map[string][]int32{}
		pl.mu.Lock()
		for tp := range pl.parts {
			if tp.Topic == topic {
				owned[topic] = append(owned[topic], tp.Partition)
			}
		}
		pl.mu.Unlock()
		pl.lose(owned, "partitions of the deleted topic given up")
		pl.client.PurgeTopicsFromClient(topic)
		pl.client.AddConsumeTopics(topic)
	}
}

// topicID asks the cluster for topic's ID; ok is false when the topic does not exist or the answer
// does not come within recreatedCheckEvery.
func (pl *Pipeline) topicID(ctx context.Context, topic string) (id [16]byte, ok bool) {
	ctx, cancel := context.WithTimeout(ctx, recreatedCheckEvery)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, pl.client)
	if err != nil {
		pl.log.Warn("looking up a topic that fails with UNKNOWN_TOPIC_ID failed; looking again at a later error",
			slog.String("topic", topic), slog.Any("error", err))
		return id, false
	}
	for _, t := range resp.Topics {
		if t.Topic != nil && *t.Topic == topic && t.ErrorCode == 0 && len(t.Partitions) > 0 {
			return t.TopicID, true
		}
	}
	return id, false
}
