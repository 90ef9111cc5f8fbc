package mapper

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bucketsink/sink/config"
)

// setNow fixes the clock every topic of m reads for ttl_from event_time.
func setNow(m *Mapper, now time.Time) {
	for _, p := range m.byName {
		p.now = func() time.Time { return now }
	}
}

// TestEventTimeTTLExpiresRowsAtEventTimePlusTTL: with ttl_from event_time each row is bound the TTL
// left at the time of mapping, so it expires at its event time plus the ttl whenever it is written: a
// replay later writes a shorter TTL and the same expiry. An event in the future lives longer, up to
// Cassandra's 20-year limit; an event older than the ttl is refused with reason expired (which the
// pipeline skips and commits), on the scan and the fastjson path alike. ttl_from write keeps one TTL for every row.
func TestEventTimeTTLExpiresRowsAtEventTimePlusTTL(t *testing.T) {
	event := time.Date(2024, 1, 15, 14, 37, 22, 0, time.UTC)
	value := `{"device_id":"d","ts":"2024-01-15T14:37:22Z","temperature":1}`
	m := newMapper(t, func(tp *config.Topic) {
		tp.TTL = config.Duration(time.Hour)
		tp.TTLFrom = "event_time"
		tp.WriteTimestamp = "event_time"
	})
	cases := []struct {
		now  time.Time
		want int32 // bound TTL in seconds; 0 = expired
	}{
		{event.Add(10 * time.Minute), 3000},
		{event.Add(50*time.Minute + 400*time.Millisecond), 599}, // rounded down: never past event + ttl
		{event.Add(-10 * time.Minute), 4200},
		{event.Add(-30 * 365 * 24 * time.Hour), maxTTL},
		{event.Add(time.Hour - time.Second), 1},
		{event.Add(time.Hour - 500*time.Millisecond), 0},
		{event.Add(365 * 24 * time.Hour), 0},
	}
	for _, tc := range cases {
		setNow(m, tc.now)
		r := rec(value)
		checkScan(t, m, r)
		ex, err := m.Explain(r)
		if tc.want == 0 {
			var re *RecordError
			if !errors.As(err, &re) || re.Reason != ReasonExpired || !strings.Contains(err.Error(), "the row would be born expired") {
				t.Errorf("now %s: %v, want a RecordError with reason expired", tc.now.Format(time.RFC3339Nano), err)
			}
			continue
		}
		if err != nil {
			t.Errorf("now %s: %v", tc.now.Format(time.RFC3339Nano), err)
			continue
		}
		if got := ex.Bound[len(ex.Bound)-2].Value; got != tc.want || ex.TTL != time.Duration(tc.want)*time.Second {
			t.Errorf("now %s: TTL bound %v (explained %s), want %d", tc.now.Format(time.RFC3339Nano), got, ex.TTL, tc.want)
		}
		if tc.want != maxTTL {
			if expiry := tc.now.Truncate(time.Second).Add(time.Duration(tc.want) * time.Second); expiry.After(event.Add(time.Hour)) {
				t.Errorf("now %s: the row expires at %s, after event time + ttl", tc.now.Format(time.RFC3339Nano), expiry)
			}
		}
	}

	m = newMapper(t, func(tp *config.Topic) { tp.TTL = config.Duration(time.Hour) })
	setNow(m, event.Add(365*24*time.Hour))
	ex, err := m.Explain(rec(value))
	if err != nil || ex.Bound[len(ex.Bound)-2].Value != int32(3600) {
		t.Errorf("ttl_from write: %v, TTL bound %v, want 3600 whatever the event's age", err, ex.Bound[len(ex.Bound)-2].Value)
	}
}

// TestExpiredMessageSaysWhenTheTTLEnds guards the message of a record too old for its ttl: in the last
// second of the ttl it said the row had expired "-178ms398us80ns ago", and past it gave the age to the
// nanosecond.
func TestExpiredMessageSaysWhenTheTTLEnds(t *testing.T) {
	event := time.Date(2024, 1, 15, 14, 37, 22, 0, time.UTC)
	m := newMapper(t, func(tp *config.Topic) {
		tp.TTL = config.Duration(time.Hour)
		tp.TTLFrom = "event_time"
	})
	for _, tc := range []struct {
		after time.Duration // past event + ttl
		want  string
	}{
		{-178398080 * time.Nanosecond, "event time 2024-01-15T14:37:22Z plus ttl 1h ends in under a second, and a TTL counts whole seconds (0 would mean never)"},
		{300 * time.Millisecond, "event time 2024-01-15T14:37:22Z plus ttl 1h ended under a second ago"},
		{90*time.Minute + 1234567*time.Nanosecond, "event time 2024-01-15T14:37:22Z plus ttl 1h ended 1h30m ago"},
	} {
		setNow(m, event.Add(time.Hour+tc.after))
		_, err := m.Map(rec(`{"device_id":"d","ts":"2024-01-15T14:37:22Z","temperature":1}`))
		if err == nil || !strings.Contains(err.Error(), tc.want+"; the row would be born expired") {
			t.Errorf("%s past the ttl: %v, want %q", tc.after, err, tc.want)
		}
	}
}
