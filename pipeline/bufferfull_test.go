package pipeline

import (
	"slices"
	"testing"

	"github.com/bucketsink/sink/pipeline/offsets"
)

// TestBufferFullFollowsTheBudget: with Config.BufferFull set, charging and releasing the budget tells
// it that the buffer is nearly empty, then full from a quarter of writer.max_buffered_bytes, then nearly
// empty again at an eighth, once per change: a fill that wanders between the two thresholds tells
// nothing. The collector's growth target follows what it is told; before, it stayed at the full
// buffer's whatever the fill, and a steady stream's heap sat at five times its live heap.
func TestBufferFullFollowsTheBudget(t *testing.T) {
	var told []bool
	pl := newUnstartedPipeline(t, "gcpercent", func(full bool) { told = append(told, full) })
	high := int64(pl.sink.Writer.MaxBufferedBytes)
	a := offsets.TopicPartition{Topic: testTopic, Partition: 0}
	b := offsets.TopicPartition{Topic: testTopic, Partition: 1}
	pl.charge(a, 1000) // a steady stream: a few rows held
	pl.release(a, 500)
	pl.charge(b, high/4) // a backlog: the buffer fills
	pl.charge(a, high)
	pl.release(a, high)          // a quarter held: stays
	pl.release(b, high/4-high/6) // between an eighth and a quarter: stays
	pl.charge(b, high/20)
	pl.release(b, high/6) // under an eighth
	pl.release(a, 500)
	if want := []bool{false, true, false}; !slices.Equal(told, want) {
		t.Errorf("told %v, want %v", told, want)
	}
}
