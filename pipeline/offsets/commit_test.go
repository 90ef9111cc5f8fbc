package offsets

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func commitOf(topic string, partition int32, offset int64, code int16) (*kmsg.OffsetCommitRequest, *kmsg.OffsetCommitResponse) {
	req := kmsg.NewPtrOffsetCommitRequest()
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = partition, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := kmsg.NewPtrOffsetCommitResponse()
	st := kmsg.NewOffsetCommitResponseTopic()
	st.Topic = topic
	sp := kmsg.NewOffsetCommitResponseTopicPartition()
	sp.Partition, sp.ErrorCode = partition, code
	st.Partitions = append(st.Partitions, sp)
	resp.Topics = append(resp.Topics, st)
	return req, resp
}

// TestCommitClockTimesAMarkUntilTheCommitThatCarriesIt: the committed stage runs from a partition's
// first mark after its last commit until a successful commit of that offset or a later one; a failed
// commit, or one of an earlier offset, ends nothing.
func TestCommitClockTimesAMarkUntilTheCommitThatCarriesIt(t *testing.T) {
	now := time.Unix(1000, 0)
	var waits []time.Duration
	c := NewCommitClock(func() time.Time { return now }, func(d time.Duration) { waits = append(waits, d) })
	tp := TopicPartition{"t", 0}
	c.marked(tp, 10)
	now = now.Add(30 * time.Millisecond)
	c.marked(tp, 20) // a later mark before the commit: the wait still counts from the first
	now = now.Add(70 * time.Millisecond)
	c.committed(commitOf("t", 0, 5, 0)) // an older commit, in flight before the marks
	c.committed(commitOf("t", 0, 20, 25))
	if len(waits) != 0 {
		t.Fatalf("waits %v before the commit that carries the mark", waits)
	}
	c.committed(commitOf("t", 0, 20, 0))
	if len(waits) != 1 || waits[0] != 100*time.Millisecond {
		t.Fatalf("waits %v, want [100ms]", waits)
	}
	c.committed(commitOf("t", 0, 20, 0))
	if len(waits) != 1 {
		t.Fatalf("a second commit of the same offset counted again: %v", waits)
	}
	var nilClock *CommitClock
	nilClock.marked(tp, 1)
	nilClock.committed(commitOf("t", 0, 1, 0))
}

// TestCommitClockForgetsAPartitionGivenUp: a partition's mark left pending when it was given up (its last
// commit is the revoke's, which the clock never sees) must not time the first periodic commit of a later
// assignment of the same partition from before the revoke.
func TestCommitClockForgetsAPartitionGivenUp(t *testing.T) {
	now := time.Unix(1000, 0)
	var waits []time.Duration
	c := NewCommitClock(func() time.Time { return now }, func(d time.Duration) { waits = append(waits, d) })
	tp := TopicPartition{"t", 0}
	c.marked(tp, 10)
	c.Forget(tp) // revoked; CommitMarked commits offset 10 outside the periodic commits
	now = now.Add(time.Hour)
	c.marked(tp, 30) // assigned again an hour later
	now = now.Add(50 * time.Millisecond)
	c.committed(commitOf("t", 0, 30, 0))
	if len(waits) != 1 || waits[0] != 50*time.Millisecond {
		t.Fatalf("waits %v, want [50ms]: the wait of the new assignment's mark only", waits)
	}
	var nilClock *CommitClock
	nilClock.Forget(tp)
}
