package mapper

import (
	"testing"
	"time"

	"github.com/bucketsink/sink/config"
)

// writeTSOf maps r and returns its write timestamp as bound.
func writeTSOf(t *testing.T, m *Mapper, r Record) int64 {
	t.Helper()
	ex, err := m.Explain(r)
	if err != nil {
		t.Fatal(err)
	}
	return ex.WriteTimestamp
}

// TestOffsetWriteTimestampLaterRecordAlwaysWins: with write_timestamp offset, of two records of one
// partition the later one always has the higher write timestamp (and so its version of a row wins),
// across multiples of 1000 where the kafka tiebreak wraps, and whatever the Kafka timestamps say; a
// replay binds the same timestamp.
func TestOffsetWriteTimestampLaterRecordAlwaysWins(t *testing.T) {
	m := newMapper(t, func(tp *config.Topic) { tp.WriteTimestamp = "offset" })
	const value = `{"device_id":"d","ts":"2024-01-15T14:37:22Z","temperature":1}`
	prev := int64(-1)
	for _, off := range []int64{0, 1, 998, 999, 1000, 1001, 1999, 2000, 123_456_999, 123_457_000} {
		r := rec(value)
		r.Offset = off
		// The same millisecond for every record, and a clock that goes backwards at the wrap.
		r.Timestamp = kafkaTS
		if off%1000 == 0 {
			r.Timestamp = kafkaTS.Add(-time.Second)
		}
		ts := writeTSOf(t, m, r)
		if ts <= prev {
			t.Errorf("offset %d: write timestamp %d, not above the previous record's %d", off, ts, prev)
		}
		if again := writeTSOf(t, m, r); again != ts {
			t.Errorf("offset %d: a replay binds %d, the first pass %d", off, again, ts)
		}
		prev = ts
	}

	// The kafka default keeps its documented wrap: offset 2000 loses to 1999 in the same millisecond.
	m = newMapper(t, func(tp *config.Topic) { tp.WriteTimestamp = "kafka" })
	a, b := rec(value), rec(value)
	a.Offset, b.Offset = 1999, 2000
	if writeTSOf(t, m, b) >= writeTSOf(t, m, a) {
		t.Errorf("kafka: offset 2000 no longer loses to 1999 in one millisecond; update the docs of write_timestamp")
	}
}
