package cassandra

import (
	"fmt"
	"testing"
	"time"

	"github.com/bucketsink/sink/bucketer"
)

// TestIntegrationReadRange writes one entity's readings over three days into daily buckets with
// two event buckets (rows spread over both), and a gap of empty days, then reads ranges back in
// both directions across buckets, with paging, a limit and the empty-bucket cap.
func TestIntegrationReadRange(t *testing.T) {
	f := setup(t)
	pol, err := bucketer.New(bucketer.Spec{Width: "1d", Key: "text", EventBuckets: 2})
	if err != nil {
		t.Fatal(err)
	}
	f.exec(t, fmt.Sprintf(`CREATE TABLE %s.daily (id text, bucket text, event_bucket int, ts timestamp, value int,
		PRIMARY KEY ((id, bucket, event_bucket), ts)) WITH CLUSTERING ORDER BY (ts DESC)`, f.ks))

	// Days 0, 1, 2 hold 30 readings each, one every 47 minutes from 00:10; day 10 holds 1.
	day0 := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	var want []time.Time
	for d := range 3 {
		for i := range 30 {
			want = append(want, day0.AddDate(0, 0, d).Add(10*time.Minute+time.Duration(i)*47*time.Minute))
		}
	}
	want = append(want, day0.AddDate(0, 0, 10).Add(time.Hour))
	for i, ts := range want {
		f.exec(t, fmt.Sprintf("INSERT INTO %s.daily (id, bucket, event_bucket, ts, value) VALUES (?, ?, ?, ?, ?)", f.ks),
			"e1", pol.Text(pol.Index(ts)), i%2, ts, i)
	}

	query := func(from, to time.Time) func(bucketer.Partition, bool) (string, []any) {
		lo, hi := from, to
		if lo.After(hi) {
			lo, hi = hi, lo
		}
		return func(p bucketer.Partition, desc bool) (string, []any) {
			order := "ASC"
			if desc {
				order = "DESC"
			}
			return fmt.Sprintf("SELECT ts, value FROM %s.daily WHERE id = ? AND bucket = ? AND event_bucket = ? AND ts >= ? AND ts < ? ORDER BY ts %s",
				f.ks, order), []any{"e1", pol.Text(p.Index), p.EventBucket, lo, hi}
		}
	}
	read := func(spec ReadSpec) []time.Time {
		t.Helper()
		var got []time.Time
		err := f.s.ReadRange(t.Context(), spec, func(p bucketer.Partition, row map[string]any) error {
			got = append(got, row["ts"].(time.Time))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	same := func(got, want []time.Time) bool {
		if len(got) != len(want) {
			return false
		}
		for i := range got {
			if !got[i].Equal(want[i]) {
				return false
			}
		}
		return true
	}

	from, to := day0, day0.AddDate(0, 0, 11)
	got := read(ReadSpec{Policy: pol, From: from, To: to, Query: query(from, to), TimeColumn: "ts", PageSize: 7})
	if !same(got, want) {
		t.Fatalf("ascending read: %d rows %v..., want %d", len(got), got[:min(3, len(got))], len(want))
	}

	rev := make([]time.Time, len(want))
	for i := range want {
		rev[len(want)-1-i] = want[i]
	}
	got = read(ReadSpec{Policy: pol, From: to, To: from, Query: query(to, from), TimeColumn: "ts", PageSize: 7})
	if !same(got, rev) {
		t.Fatalf("descending read: %d rows, want %d newest first", len(got), len(rev))
	}

	// Newest 5 starting from day 2's end: a limit inside one bucket.
	end := day0.AddDate(0, 0, 3)
	got = read(ReadSpec{Policy: pol, From: end, To: from, Query: query(end, from), TimeColumn: "ts", Limit: 5})
	if !same(got, rev[1:6]) {
		t.Fatalf("limited read: %v, want %v", got, rev[1:6])
	}

	// Reading up from day 3 meets 7 empty days before day 10: a cap of 5 stops there.
	day3 := day0.AddDate(0, 0, 3)
	got = read(ReadSpec{Policy: pol, From: day3, To: to, Query: query(day3, to), TimeColumn: "ts", MaxEmpty: 5})
	if len(got) != 0 {
		t.Fatalf("empty-bucket cap: read %d rows, want none", len(got))
	}
	got = read(ReadSpec{Policy: pol, From: day3, To: to, Query: query(day3, to), TimeColumn: "ts", MaxEmpty: 8})
	if !same(got, want[90:]) {
		t.Fatalf("empty-bucket cap 8: %v, want %v", got, want[90:])
	}
}
