package mapper

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	jsonc "github.com/bucketsink/sink/codec/json"
	"github.com/bucketsink/sink/config"
)

// rfc3339Cases are the boundaries of the grammar jsonc.ParseRFC3339 accepts and of the range the mapper
// writes. want is the instant in UTC (RFC3339Nano), "" when the text is refused; inRange says
// whether the mapper writes that instant (years 0000 to 9999 once in UTC).
var rfc3339Cases = []struct {
	in, want string
	inRange  bool
}{
	{"2024-01-15T14:37:22Z", "2024-01-15T14:37:22Z", true},
	{"2024-01-15t14:37:22z", "2024-01-15T14:37:22Z", true}, // RFC 3339 5.6: T and Z may be lower case
	{"2024-01-15t14:37:22Z", "2024-01-15T14:37:22Z", true},
	{"2024-01-15T14:37:22z", "2024-01-15T14:37:22Z", true},
	{"2024-01-15T14:37:22.123Z", "2024-01-15T14:37:22.123Z", true},
	{"2024-01-15T16:37:22.123456789+02:00", "2024-01-15T14:37:22.123456789Z", true},
	{"2024-01-15T14:37:22.1234567891Z", "2024-01-15T14:37:22.123456789Z", true}, // past the ninth digit: dropped
	{"2024-01-15T14:37:22,5Z", "2024-01-15T14:37:22.5Z", true},                  // ISO 8601's comma
	{"2024-01-15T14:37:22+23:59", "2024-01-14T14:38:22Z", true},
	{"2024-01-15T14:37:22-23:59", "2024-01-16T14:36:22Z", true},
	{"2024-01-15T14:37:22-00:00", "2024-01-15T14:37:22Z", true},
	{"2024-01-15T14:37:22+24:00", "", false}, // offset hours are 00-23
	{"2024-01-15T14:37:22-24:00", "", false},
	{"2024-01-15T14:37:22+00:60", "", false}, // offset minutes are 00-59
	{"2024-01-15T23:59:59Z", "2024-01-15T23:59:59Z", true},
	{"2024-01-15T24:00:00Z", "", false},
	{"2024-01-15T23:60:00Z", "", false},
	{"2024-01-15T23:59:60Z", "", false}, // a leap second: no such instant in Go or CQL
	{"2024-02-29T00:00:00Z", "2024-02-29T00:00:00Z", true},
	{"2023-02-29T00:00:00Z", "", false},
	{"1900-02-29T00:00:00Z", "", false},
	{"2000-02-29T00:00:00Z", "2000-02-29T00:00:00Z", true},
	{"2024-04-31T00:00:00Z", "", false},
	{"2024-00-10T00:00:00Z", "", false},
	{"2024-01-00T00:00:00Z", "", false},
	{"0000-01-01T00:00:00Z", "0000-01-01T00:00:00Z", true}, // the first instant of the range
	{"0001-01-01T00:00:00Z", "0001-01-01T00:00:00Z", true}, // the zero time.Time, an instant like any other
	{"0001-01-01T00:00:00.000000001Z", "0001-01-01T00:00:00.000000001Z", true},
	{"9999-12-31T23:59:59.999999999Z", "9999-12-31T23:59:59.999999999Z", true}, // the last instant of the range
	{"9999-12-31T23:59:59.999999999-00:01", "10000-01-01T00:00:59.999999999Z", false},
	{"0000-01-01T00:00:00+00:01", "-0001-12-31T23:59:00Z", false},
	{"2024-01-15T14:37:22.Z", "", false},
	{"2024-01-15T14:37:22+0200", "", false},
	{"2024-01-15T14:37:22+02", "", false},
	{"2024-01-15 14:37:22Z", "", false},
	{"2024-01-15T14:37:22", "", false}, // no offset: the instant is unknown
	{"+024-01-15T14:37:22Z", "", false},
	{"2024-1-15T14:37:22Z", "", false},
	{"2024-01-15T14:37:22Zjunk", "", false},
	{"", "", false},
}

// TestRFC3339Boundaries: the grammar's boundaries (offset hours 00-23, lower-case t and z, years
// 0000 to 9999 with the zero time.Time among them), through jsonc.ParseRFC3339 and through the mapper's
// two paths, the single-pass scan and the fastjson reference, for an event time and for a
// timestamp column. Both paths must agree (checkScan) and write the instant the table says.
func TestRFC3339Boundaries(t *testing.T) {
	m := newMapper(t, func(tp *config.Topic) {
		tp.Columns = append(tp.Columns, config.Column{Name: "tsv", Type: "timestamp", Field: "tsv"})
	})
	for _, tc := range rfc3339Cases {
		got, err := jsonc.ParseRFC3339(tc.in)
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("%q: parsed as %s, want refused", tc.in, got.Format(time.RFC3339Nano))
		case tc.want != "" && err != nil:
			t.Errorf("%q: %v, want %s", tc.in, err, tc.want)
		case tc.want != "" && got.Format(time.RFC3339Nano) != tc.want:
			t.Errorf("%q: %s, want %s", tc.in, got.Format(time.RFC3339Nano), tc.want)
		}
		if tc.want != "" && inTimeRange(got) != tc.inRange {
			t.Errorf("%q: inTimeRange %v, want %v", tc.in, inTimeRange(got), tc.inRange)
		}

		// As the event time, then as a timestamp column.
		for _, value := range []string{
			`{"device_id":"d","ts":"` + tc.in + `","temperature":1}`,
			`{"device_id":"d","ts":"2024-01-15T14:37:22Z","temperature":1,"tsv":"` + tc.in + `"}`,
		} {
			r := rec(value)
			checkScan(t, m, r)
			row, err := m.Map(r)
			if !tc.inRange {
				var re *RecordError
				if !errors.As(err, &re) || re.Reason != ReasonMap {
					t.Errorf("%s: %v, want a map error", value, err)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s: %v", value, err)
				continue
			}
			if strings.Contains(value, `"tsv"`) {
				if v := GoValue(Values(row)[6]).(time.Time); !v.Equal(got.Truncate(time.Millisecond)) {
					t.Errorf("%s: column tsv %s, want %s", value, v.UTC().Format(time.RFC3339Nano), tc.want)
				}
			} else if !row.EventTime().Equal(got.Truncate(time.Microsecond)) {
				t.Errorf("%s: event time %s, want %s", value, row.EventTime().Format(time.RFC3339Nano), tc.want)
			}
		}
	}
}

// TestParseRFC3339AgreesWithTimeParse: wherever jsonc.ParseRFC3339 accepts a text, time.Parse accepts it
// too (upper-cased, as it wants T and Z) and gives the same value; where it refuses one time.Parse
// takes, the text has an offset outside the RFC's 00-23 hours or 00-59 minutes.
func TestParseRFC3339AgreesWithTimeParse(t *testing.T) {
	for _, tc := range rfc3339Cases {
		checkRFC3339(t, tc.in)
	}
	// Every day of a leap year and of a common year, at both ends of the day.
	for _, year := range []int{0, 1, 1970, 2023, 2024, 9999} {
		for d := time.Date(year, 1, 1, 0, 0, 0, 0, time.UTC); d.Year() == year; d = d.AddDate(0, 0, 1) {
			checkRFC3339(t, d.Format("2006-01-02T15:04:05Z"))
			checkRFC3339(t, d.Add(24*time.Hour-time.Nanosecond).Format("2006-01-02T15:04:05.999999999-07:00"))
		}
	}
}

func FuzzParseRFC3339(f *testing.F) {
	for _, tc := range rfc3339Cases {
		f.Add(tc.in)
	}
	f.Fuzz(checkRFC3339)
}

func checkRFC3339(t *testing.T, s string) {
	t.Helper()
	got, gotErr := jsonc.ParseRFC3339(s)
	upper := s
	if len(s) > 10 {
		upper = strings.ToUpper(s)
	}
	want, wantErr := time.Parse(time.RFC3339, upper)
	if gotErr != nil {
		if wantErr == nil && !badOffset(s) {
			t.Fatalf("%q: refused (%v), time.Parse takes it and its offset is within the RFC's range", s, gotErr)
		}
		return
	}
	if wantErr != nil {
		t.Fatalf("%q: parsed as %s, time.Parse says %v", s, got.Format(time.RFC3339Nano), wantErr)
	}
	// == compares the representation (wall, ext, location), not only the instant: the bound
	// value and all derived from it must be indistinguishable from time.Parse's.
	if want = want.UTC(); got != want {
		t.Fatalf("%q: %#v, time.Parse says %#v", s, got, want)
	}
}

// badOffset reports whether s ends in a numeric offset outside hours 00-23 or minutes 00-59.
func badOffset(s string) bool {
	if len(s) < 6 || s[len(s)-3] != ':' || (s[len(s)-6] != '+' && s[len(s)-6] != '-') {
		return false
	}
	h, err1 := strconv.Atoi(s[len(s)-5 : len(s)-3])
	m, err2 := strconv.Atoi(s[len(s)-2:])
	return err1 == nil && err2 == nil && (h > 23 || m > 59)
}

func BenchmarkParseRFC3339(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := jsonc.ParseRFC3339("2024-01-15T14:37:22.123Z"); err != nil {
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
