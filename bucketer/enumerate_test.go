package bucketer

import (
	"strings"
	"testing"
	"time"
)

func TestEnumerateExamples(t *testing.T) {
	p := mustPolicy(t, Spec{Width: "1h", Slice: "1d", EventBuckets: 2})
	at := func(s string) time.Time { return mustTime(t, s) }
	h := func(s string) int64 { return p.Index(at(s)) }
	tests := []struct {
		name     string
		from, to string
		want     []Partition
	}{
		{
			name: "ascending across midnight, to on a bucket start is excluded",
			from: "2024-01-15T22:30:00Z", to: "2024-01-16T01:00:00Z",
			want: []Partition{
				{"20240115", h("2024-01-15T22:00:00Z"), 0}, {"20240115", h("2024-01-15T22:00:00Z"), 1},
				{"20240115", h("2024-01-15T23:00:00Z"), 0}, {"20240115", h("2024-01-15T23:00:00Z"), 1},
				{"20240116", h("2024-01-16T00:00:00Z"), 0}, {"20240116", h("2024-01-16T00:00:00Z"), 1},
			},
		},
		{
			name: "descending covers the same instants newest first, from included",
			from: "2024-01-16T01:00:00Z", to: "2024-01-15T22:30:00Z",
			want: []Partition{
				{"20240116", h("2024-01-16T01:00:00Z"), 0}, {"20240116", h("2024-01-16T01:00:00Z"), 1},
				{"20240116", h("2024-01-16T00:00:00Z"), 0}, {"20240116", h("2024-01-16T00:00:00Z"), 1},
				{"20240115", h("2024-01-15T23:00:00Z"), 0}, {"20240115", h("2024-01-15T23:00:00Z"), 1},
				{"20240115", h("2024-01-15T22:00:00Z"), 0}, {"20240115", h("2024-01-15T22:00:00Z"), 1},
			},
		},
		{
			name: "descending with to on a bucket end excludes that bucket",
			from: "2024-01-15T23:10:00Z", to: "2024-01-15T22:59:59.999999999Z",
			want: []Partition{
				{"20240115", h("2024-01-15T23:00:00Z"), 0}, {"20240115", h("2024-01-15T23:00:00Z"), 1},
			},
		},
		{
			name: "one instant inside one bucket",
			from: "2024-01-15T10:00:00Z", to: "2024-01-15T10:00:00.000000001Z",
			want: []Partition{{"20240115", h("2024-01-15T10:00:00Z"), 0}, {"20240115", h("2024-01-15T10:00:00Z"), 1}},
		},
		{
			name: "empty range",
			from: "2024-01-15T10:00:00Z", to: "2024-01-15T10:00:00Z",
			want: nil,
		},
		{
			name: "offsets do not matter",
			from: "2024-01-15T15:30:00+05:30", to: "2024-01-15T02:30:00-08:00",
			want: []Partition{
				{"20240115", h("2024-01-15T10:00:00Z"), 0}, {"20240115", h("2024-01-15T10:00:00Z"), 1},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := p.Enumerate(at(tc.from), at(tc.to), 100)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d partitions %+v, want %d %+v", len(got), got, len(tc.want), tc.want)
			}
			for k := range got {
				if got[k] != tc.want[k] {
					t.Errorf("partition %d = %+v, want %+v", k, got[k], tc.want[k])
				}
			}
		})
	}
}

func TestEnumerateErrors(t *testing.T) {
	day := mustTime(t, "2024-01-15T00:00:00Z")
	tests := []struct {
		name     string
		spec     Spec
		from, to time.Time
		max      int
		want     string
	}{
		{"over the limit", Spec{Width: "1h", EventBuckets: 4}, day, day.Add(24 * time.Hour), 95,
			"24 buckets × 4 event buckets is more than the limit of 95 partitions"},
		{"over the limit descending", Spec{Width: "1h"}, day.Add(24 * time.Hour), day, 23, "more than the limit of 23"},
		{"limit not positive", Spec{Width: "1h"}, day, day.Add(time.Hour), 0, "limit 0 is not positive"},
		{"rolling range wraps", Spec{Width: "1h", Key: "number", Rolling: 12}, day, day.Add(13 * time.Hour), 1000,
			"spans 13 buckets but rolling keeps only 12"},
		{"beyond year 9999", Spec{Width: "1d"}, MaxTime.Add(-time.Hour), MaxTime.Add(48 * time.Hour), 1000,
			"outside the supported years 0000-9999"},
		{"huge range does not overflow", Spec{Width: "1s", EventBuckets: 1024}, MinTime, MaxTime, 1 << 62,
			"is more than the limit of 1048576 partitions"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := mustPolicy(t, tc.spec)
			got, err := p.Enumerate(tc.from, tc.to, tc.max)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Enumerate = %d partitions, %v; want error containing %q", len(got), err, tc.want)
			}
			if got != nil {
				t.Errorf("Enumerate returned %d partitions with its error; want none (no silent cut)", len(got))
			}
		})
	}
	// Exactly at the limit is fine.
	p := mustPolicy(t, Spec{Width: "1h", EventBuckets: 4})
	if got, err := p.Enumerate(day, day.Add(24*time.Hour), 96); err != nil || len(got) != 96 {
		t.Errorf("Enumerate at the limit = %d, %v; want 96 partitions", len(got), err)
	}
	// The ends of the supported range are usable.
	y := mustPolicy(t, Spec{Width: "year"})
	if got, err := y.Enumerate(MaxTime, MinTime, 20000); err != nil || len(got) != 10000 || got[0].Index != 8029 {
		t.Errorf("all years descending = %d partitions, %v", len(got), err)
	}
}
