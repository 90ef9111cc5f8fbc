package pipeline

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestIntegrationRecreatedTopicIsConsumedWithoutRestart guards a topic deleted and created again under a
// running sink. franz-go keeps fetching the old topic ID and the broker answers UNKNOWN_TOPIC_ID for good;
// it used to take a restart to consume the new topic. Now the member gives up the old topic's partitions,
// purges it from its client and adds it back: the records produced to the new topic are written and
// committed (from its start: the group's offsets went with the old topic) by the same running member.
//
// Its dead-letter topic is deleted and created again with it: the dead-letter producer, which held the
// old ID as well, purges the topic on UNKNOWN_TOPIC_ID and the bad records of the new topic reach the
// new dead-letter topic.
func TestIntegrationRecreatedTopicIsConsumedWithoutRestart(t *testing.T) {
	s := newStack(t, 3, nil)
	recs := makeRecords(600, 50, 3)
	s.produce(recs[:300])
	m := s.start(nil)
	s.waitFor(2*time.Minute, "the first topic committed to its end", s.allCommitted)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := s.adm.DeleteTopics(ctx, s.topic, s.dlq); err != nil {
		t.Fatal(err)
	}
	s.waitFor(time.Minute, "the topics gone", func() bool {
		ts, err := s.adm.ListTopics(ctx)
		return err == nil && !slices.Contains(ts.Names(), s.topic) && !slices.Contains(ts.Names(), s.dlq)
	})
	if _, err := s.adm.CreateTopic(ctx, 1, 1, nil, s.dlq); err != nil {
		t.Fatal(err)
	}
	if _, err := s.adm.CreateTopic(ctx, 3, 1, nil, s.topic); err != nil {
		t.Fatal(err)
	}
	recreated := time.Now()
	s.cl.PurgeTopicsFromClient(s.topic) // the test's producer holds the old ID too
	s.recsMu.Lock()
	old := s.recs
	s.recs = nil
	clear(s.produced) // the new topic's offsets start again
	s.recsMu.Unlock()
	s.produce(recs[300:])
	s.waitFor(2*time.Minute, "the recreated topic committed to its end", s.allCommitted)
	t.Logf("recreated topic committed to its end %s after its creation", time.Since(recreated).Round(100*time.Millisecond))
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	s.checkDeadLetters(true) // the new topic's bad records, in the new dead-letter topic
	s.recs = append(old, s.recs...)
	s.checkPlacement() // every good record of both topics
}
