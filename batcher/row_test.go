package batcher

import (
	"math"
	"testing"
	"time"
)

// TestEventMicrosKeepsBoundariesAndSaturates: a row's event time is kept to the microsecond, rounded
// down also before 1970 (so a time in a bucket or split generation that starts on a whole second stays
// in it), and a time past what int64 microseconds can say is held at the end of the range, never
// wrapped to the other end.
func TestEventMicrosKeepsBoundariesAndSaturates(t *testing.T) {
	far := time.Date(300000, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   time.Time
		want int64
	}{
		{time.Date(2024, 1, 15, 14, 37, 22, 123456789, time.UTC), 1705329442123456},
		{time.Unix(-1, 500), -1_000_000},         // half a microsecond after -1 s: still in that second
		{time.Unix(-2, 999_999_999), -1_000_001}, // the last nanosecond before -1 s
		{time.Time{}, time.Time{}.UnixMicro()},   // year 1 is well inside the range
		{far, math.MaxInt64},
		{time.Date(-300000, 1, 1, 0, 0, 0, 0, time.UTC), math.MinInt64},
	} {
		if got := EventMicros(tc.in); got != tc.want {
			t.Errorf("EventMicros(%s) = %d, want %d", tc.in.Format(time.RFC3339Nano), got, tc.want)
		}
	}
	r := Row{EventMicros: EventMicros(time.Date(2024, 1, 15, 14, 37, 22, 123456789, time.UTC))}
	if got, want := r.EventTime(), time.Date(2024, 1, 15, 14, 37, 22, 123456000, time.UTC); !got.Equal(want) || got.Location() != time.UTC {
		t.Errorf("EventTime() = %v, want %v in UTC", got, want)
	}
}
