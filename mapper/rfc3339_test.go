package mapper

import (
	"testing"
	"time"
)

var rfc3339Seeds = []string{
	"2024-01-15T14:37:22.123Z",
	"2024-01-15T14:37:22Z",
	"2024-01-15T16:37:22.123456789+02:00",
	"2024-01-15T14:37:22.1234567891Z", // ten fraction digits: time.Parse's call
	"2024-01-15T14:37:22,123Z",        // comma before the fraction: time.Parse's call
	"2024-01-15t14:37:22z",
	"2024-02-29T00:00:00Z",
	"2023-02-29T00:00:00Z",
	"1900-02-29T00:00:00Z",
	"2000-02-29T00:00:00Z",
	"2024-04-31T00:00:00Z",
	"2024-01-15T24:00:00Z",
	"2024-01-15T23:59:60Z",
	"2024-01-15T14:37:22+24:00",
	"2024-01-15T14:37:22-23:59",
	"0000-01-01T00:00:00Z",
	"0000-03-01T00:00:00+01:00",
	"9999-12-31T23:59:59.999999999-23:59",
	"1969-12-31T23:59:59.5Z",
	"1600-02-29T12:00:00Z",
	"2024-01-15T14:37:22.Z",
	"2024-01-15T14:37:22+0200",
	"2024-01-15 14:37:22Z",
	"+024-01-15T14:37:22Z",
	"2024-1-15T14:37:22Z",
	"",
}

// TestParseRFC3339MatchesTimeParse guards the invariant the fast path rests on: for every input
// parseRFC3339 returns exactly what time.Parse(time.RFC3339, s).UTC() returns, error or not.
func TestParseRFC3339MatchesTimeParse(t *testing.T) {
	for _, s := range rfc3339Seeds {
		checkRFC3339(t, s)
	}
	// Every day of a leap year and of a common year, at both ends of the day.
	for _, year := range []int{1, 1970, 2023, 2024, 9999} {
		for d := time.Date(year, 1, 1, 0, 0, 0, 0, time.UTC); d.Year() == year; d = d.AddDate(0, 0, 1) {
			checkRFC3339(t, d.Format("2006-01-02T15:04:05Z"))
			checkRFC3339(t, d.Add(24*time.Hour-time.Nanosecond).Format("2006-01-02T15:04:05.999999999-07:00"))
		}
	}
}

func FuzzParseRFC3339(f *testing.F) {
	for _, s := range rfc3339Seeds {
		f.Add(s)
	}
	f.Fuzz(checkRFC3339)
}

func checkRFC3339(t *testing.T, s string) {
	t.Helper()
	got, gotErr := parseRFC3339(s)
	want, wantErr := time.Parse(time.RFC3339, s)
	if (gotErr == nil) != (wantErr == nil) {
		t.Fatalf("%q: error %v, time.Parse says %v", s, gotErr, wantErr)
	}
	if wantErr != nil {
		return
	}
	// == compares the representation (wall, ext, location), not only the instant: the bound
	// value and all derived from it must be indistinguishable from time.Parse's.
	if want = want.UTC(); got != want {
		t.Fatalf("%q: %#v, time.Parse says %#v", s, got, want)
	}
}

func BenchmarkParseRFC3339(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parseRFC3339("2024-01-15T14:37:22.123Z"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTimeParseRFC3339(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		t, err := time.Parse(time.RFC3339, "2024-01-15T14:37:22.123Z")
		if err != nil {
			b.Fatal(err)
		}
		_ = t.UTC()
	}
}
