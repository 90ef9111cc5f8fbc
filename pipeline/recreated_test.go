package pipeline

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bucketsink/sink/batcher"
)

// TestRecreatedTopicIsFollowedWithoutRestart is the fast companion of
// TestIntegrationRecreatedTopicIsConsumedWithoutRestart: kfake, like Kafka 3.1 and later, answers the old
// topic ID UNKNOWN_TOPIC_ID once the topic is deleted and created again, and the running member consumes
// the new topic's records without a restart.
func TestRecreatedTopicIsFollowedWithoutRestart(t *testing.T) {
	f := newFixture(t, 50, 0)
	w := newMemWriter()
	m := f.start(f.config(nil), w)
	f.waitFor(20*time.Second, "every partition committed to its end", f.allCommitted)

	ctx := context.Background()
	if _, err := f.adm.DeleteTopics(ctx, testTopic); err != nil {
		t.Fatal(err)
	}
	if _, err := f.adm.CreateTopic(ctx, testParts, 1, nil, testTopic); err != nil {
		t.Fatal(err)
	}
	f.admCl.PurgeTopicsFromClient(testTopic)
	var recs []*kgo.Record
	for p := range int32(testParts) {
		for i := range 20 {
			recs = append(recs, &kgo.Record{Topic: testTopic, Partition: p,
				Key: []byte(fmt.Sprintf("new-%d-%d", p, i)), Value: []byte(`{"n":1}`)})
		}
		f.end[p] = 20
	}
	if err := f.admCl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	f.waitFor(30*time.Second, "the new topic committed to its end", f.allCommitted)
	// The old topic had 50 records per partition: rows past 20 are the old topic's, rows below the new one's.
	for p := range int32(testParts) {
		if n := w.writes(batcher.Source{Topic: testTopic, Partition: p, Offset: 0}); n != 2 {
			t.Errorf("partition %d offset 0 written %d times, want twice (old topic, new topic)", p, n)
		}
	}
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
}
