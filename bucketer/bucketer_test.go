package bucketer

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

func mustTime(t testing.TB, s string) time.Time {
	t.Helper()
	tm, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("parsing %q: %v", s, err)
	}
	return tm
}

func mustPolicy(t testing.TB, s Spec) *Policy {
	t.Helper()
	p, err := New(s)
	if err != nil {
		t.Fatalf("New(%+v): %v", s, err)
	}
	return p
}

// TestKeys pins the bucket, start and every key form for each unit at the dates the issue names:
// ISO week-year boundaries, a leap day, the last second before the epoch, the last second of
// year 9999, and inputs carrying non-UTC offsets.
func TestKeys(t *testing.T) {
	tests := []struct {
		width, at string
		index     int64
		start     string
		text      string
		keyInt    int64
	}{
		// ISO weeks: 2020 has 53 weeks; 2021-W01 starts Monday 2021-01-04; 2024-12-30 is in 2025-W01.
		{"week", "2020-12-31T12:00:00Z", 2661, "2020-12-28T00:00:00Z", "2020-W53", 202053},
		{"week", "2021-01-03T23:59:59Z", 2661, "2020-12-28T00:00:00Z", "2020-W53", 202053},
		{"week", "2021-01-04T00:00:00Z", 2662, "2021-01-04T00:00:00Z", "2021-W01", 202101},
		{"week", "2024-12-30T00:00:00Z", 2870, "2024-12-30T00:00:00Z", "2025-W01", 202501},
		{"week", "2024-02-29T10:00:00Z", 2826, "2024-02-26T00:00:00Z", "2024-W09", 202409},
		{"week", "1969-12-31T23:59:59Z", 0, "1969-12-29T00:00:00Z", "1970-W01", 197001},
		{"week", "1969-12-28T23:59:59Z", -1, "1969-12-22T00:00:00Z", "1969-W52", 196952},
		{"week", "9999-12-31T23:59:59Z", 418985, "9999-12-27T00:00:00Z", "9999-W52", 999952},
		// Leap day.
		{"1d", "2024-02-29T23:59:59Z", 19782, "2024-02-29T00:00:00Z", "2024-02-29", 20240229},
		{"1h", "2024-02-29T13:30:00Z", 474781, "2024-02-29T13:00:00Z", "2024-02-29-13", 2024022913},
		{"month", "2024-02-29T13:30:00Z", 649, "2024-02-01T00:00:00Z", "2024-02", 202402},
		{"year", "2024-02-29T13:30:00Z", 54, "2024-01-01T00:00:00Z", "2024", 2024},
		// The last second before the epoch is in bucket -1 of every width except week (1970-W01
		// starts on Monday 1969-12-29).
		{"1m", "1969-12-31T23:59:59Z", -1, "1969-12-31T23:59:00Z", "1969-12-31-23-59", 196912312359},
		{"10m", "1969-12-31T23:59:59Z", -1, "1969-12-31T23:50:00Z", "1969-12-31-23-50", 196912312350},
		{"1h", "1969-12-31T23:59:59Z", -1, "1969-12-31T23:00:00Z", "1969-12-31-23", 1969123123},
		{"6h", "1969-12-31T23:59:59Z", -1, "1969-12-31T18:00:00Z", "1969-12-31-18", 1969123118},
		{"1d", "1969-12-31T23:59:59Z", -1, "1969-12-31T00:00:00Z", "1969-12-31", 19691231},
		{"2d", "1969-12-31T23:59:59Z", -1, "1969-12-30T00:00:00Z", "1969-12-30", 19691230},
		{"month", "1969-12-31T23:59:59Z", -1, "1969-12-01T00:00:00Z", "1969-12", 196912},
		{"year", "1969-12-31T23:59:59Z", -1, "1969-01-01T00:00:00Z", "1969", 1969},
		{"30s", "1969-12-31T23:59:59Z", -1, "1969-12-31T23:59:30Z", "1969-12-31-23-59-30", 19691231235930},
		{"1d", "1970-01-01T00:00:00Z", 0, "1970-01-01T00:00:00Z", "1970-01-01", 19700101},
		// Year 9999.
		{"1m", "9999-12-31T23:59:59Z", 4223371679, "9999-12-31T23:59:00Z", "9999-12-31-23-59", 999912312359},
		{"1h", "9999-12-31T23:59:59Z", 70389527, "9999-12-31T23:00:00Z", "9999-12-31-23", 9999123123},
		{"1d", "9999-12-31T23:59:59.999999999Z", 2932896, "9999-12-31T00:00:00Z", "9999-12-31", 99991231},
		{"month", "9999-12-31T23:59:59Z", 96359, "9999-12-01T00:00:00Z", "9999-12", 999912},
		{"year", "9999-12-31T23:59:59Z", 8029, "9999-01-01T00:00:00Z", "9999", 9999},
		// Year 0000 (a leap year in the proleptic Gregorian calendar).
		{"1d", "0000-02-29T12:00:00Z", -719469, "0000-02-29T00:00:00Z", "0000-02-29", 229},
		// Offsets: the key is the UTC bucket, not the local wall clock.
		{"1h", "2024-01-15T14:37:12+05:30", 473697, "2024-01-15T09:00:00Z", "2024-01-15-09", 2024011509},
		{"1d", "2024-01-15T02:00:00+05:30", 19736, "2024-01-14T00:00:00Z", "2024-01-14", 20240114},
		{"1d", "2024-01-15T20:00:00-08:00", 19738, "2024-01-16T00:00:00Z", "2024-01-16", 20240116},
		{"month", "2024-01-31T20:00:00-08:00", 649, "2024-02-01T00:00:00Z", "2024-02", 202402},
		{"year", "2025-01-01T01:00:00+05:30", 54, "2024-01-01T00:00:00Z", "2024", 2024},
		{"week", "2021-01-04T03:00:00+05:30", 2661, "2020-12-28T00:00:00Z", "2020-W53", 202053},
		// Aliases and odd-but-valid widths.
		{"hour", "2024-01-15T09:07:12Z", 473697, "2024-01-15T09:00:00Z", "2024-01-15-09", 2024011509},
		{"90m", "2024-01-15T09:07:12Z", 315798, "2024-01-15T09:00:00Z", "2024-01-15-09-00", 202401150900},
		{"90m", "2024-01-15T08:59:59Z", 315797, "2024-01-15T07:30:00Z", "2024-01-15-07-30", 202401150730},
		{"7d", "2024-01-15T09:07:12Z", 2819, "2024-01-11T00:00:00Z", "2024-01-11", 20240111},
	}
	for _, tc := range tests {
		t.Run(tc.width+"/"+tc.at, func(t *testing.T) {
			p := mustPolicy(t, Spec{Width: tc.width})
			at := mustTime(t, tc.at)
			i := p.Index(at)
			if i != tc.index {
				t.Fatalf("Index = %d, want %d", i, tc.index)
			}
			if got, want := p.Start(i), mustTime(t, tc.start); !got.Equal(want) || got.Location() != time.UTC {
				t.Errorf("Start = %v, want %v in UTC", got, want)
			}
			if got := p.Text(i); got != tc.text {
				t.Errorf("Text = %q, want %q", got, tc.text)
			}
			if got := p.KeyInt(i); got != tc.keyInt {
				t.Errorf("KeyInt = %d, want %d", got, tc.keyInt)
			}
			if err := p.Check(i); err != nil {
				t.Errorf("Check: %v", err)
			}
		})
	}
}

// TestValueAndCQLType checks every key type's bound value and column type.
func TestValueAndCQLType(t *testing.T) {
	at := mustTime(t, "2024-01-15T14:37:12+05:30")
	hourStart := mustTime(t, "2024-01-15T09:00:00Z")
	dayStart := mustTime(t, "2024-01-15T00:00:00Z")
	tests := []struct {
		spec    Spec
		cqlType string
		value   any
	}{
		{Spec{Width: "1h"}, "text", "2024-01-15-09"},
		{Spec{Width: "1h", Key: "text", Layout: "2006/01/02T15"}, "text", "2024/01/15T09"},
		{Spec{Width: "week", Layout: "2006w01"}, "text", "2024w03"},
		{Spec{Width: "1h", Key: "timestamp"}, "timestamp", hourStart},
		{Spec{Width: "1d", Key: "date"}, "date", dayStart},
		{Spec{Width: "1d", Key: "timestamp"}, "timestamp", dayStart},
		{Spec{Width: "1h", Key: "int"}, "bigint", int64(2024011509)},
		{Spec{Width: "1d", Key: "int"}, "int", int32(20240115)},
		{Spec{Width: "week", Key: "int"}, "int", int32(202403)},
		{Spec{Width: "month", Key: "int"}, "int", int32(202401)},
		{Spec{Width: "year", Key: "int"}, "int", int32(2024)},
		{Spec{Width: "1h", Key: "number"}, "bigint", int64(473697)},
		{Spec{Width: "1d", Key: "number"}, "bigint", int64(19737)},
		{Spec{Width: "1h", Key: "number", Rolling: 24}, "bigint", int64(473697 % 24)},
		{Spec{Width: "1h", Key: "int", Rolling: 24}, "int", int32(473697 % 24)},
	}
	for _, tc := range tests {
		t.Run(tc.spec.Width+"/"+tc.spec.Key+"/"+tc.spec.Layout, func(t *testing.T) {
			p := mustPolicy(t, tc.spec)
			if got := p.CQLType(); got != tc.cqlType {
				t.Errorf("CQLType = %q, want %q", got, tc.cqlType)
			}
			got := p.Value(p.Index(at))
			if tm, ok := got.(time.Time); ok {
				want, _ := tc.value.(time.Time)
				if !tm.Equal(want) || tm.Location() != time.UTC {
					t.Errorf("Value = %v, want %v in UTC", tm, want)
				}
				return
			}
			if got != tc.value {
				t.Errorf("Value = %#v, want %#v", got, tc.value)
			}
		})
	}
}

func TestRollingKeyNeverNegative(t *testing.T) {
	p := mustPolicy(t, Spec{Width: "1h", Key: "number", Rolling: 24})
	for _, tc := range []struct{ i, want int64 }{{-1, 23}, {-24, 0}, {-25, 23}, {0, 0}, {23, 23}, {24, 0}, {473697, 9}} {
		if got := p.RollingKey(tc.i); got != tc.want {
			t.Errorf("RollingKey(%d) = %d, want %d", tc.i, got, tc.want)
		}
	}
}

// TestLocalZoneIrrelevant guards against any use of time.Local: keys computed with the machine
// zone set to India (+05:30) or to a zone west of UTC must equal those computed under UTC.
func TestLocalZoneIrrelevant(t *testing.T) {
	specs := []Spec{
		{Width: "1h"}, {Width: "10m", Key: "int"}, {Width: "1d", Key: "date"}, {Width: "week"},
		{Width: "month", Key: "int"}, {Width: "year"}, {Width: "1h", Slice: "1d"},
	}
	instants := []string{
		"2024-01-15T23:45:00Z", "2020-12-31T20:00:00Z", "2024-02-29T19:00:00Z", "1969-12-31T23:59:59Z",
		"2024-12-29T22:00:00Z", "2024-01-31T22:00:00-08:00",
	}
	type result struct {
		index  int64
		text   string
		keyInt int64
		start  time.Time
		slice  string
	}
	compute := func() []result {
		var out []result
		for _, s := range specs {
			p := mustPolicy(t, s)
			for _, at := range instants {
				tm := mustTime(t, at)
				for _, in := range []time.Time{tm, tm.Local(), tm.In(time.FixedZone("x", -8*3600))} {
					i := p.Index(in)
					out = append(out, result{i, p.Text(i), p.KeyInt(i), p.Start(i), p.SliceSuffix(in)})
				}
			}
		}
		return out
	}
	saved := time.Local
	t.Cleanup(func() { time.Local = saved })
	time.Local = time.UTC
	want := compute()
	for _, zone := range []*time.Location{time.FixedZone("IST", 5*3600+1800), time.FixedZone("PST", -8*3600)} {
		time.Local = zone
		got := compute()
		for k := range want {
			if got[k] != want[k] {
				t.Fatalf("time.Local = %s: result %d = %+v, want %+v", zone, k, got[k], want[k])
			}
		}
	}
	if kolkata, err := time.LoadLocation("Asia/Kolkata"); err == nil {
		time.Local = kolkata
		got := compute()
		for k := range want {
			if got[k] != want[k] {
				t.Fatalf("time.Local = Asia/Kolkata: result %d = %+v, want %+v", k, got[k], want[k])
			}
		}
	}
}

func TestParseWidth(t *testing.T) {
	good := map[string]Width{
		"1s": {Fixed, 1}, "30s": {Fixed, 30}, "1m": {Fixed, 60}, "minute": {Fixed, 60}, "10m": {Fixed, 600},
		"90m": {Fixed, 5400}, "1h": {Fixed, 3600}, "hour": {Fixed, 3600}, " 6H ": {Fixed, 21600},
		"12h": {Fixed, 43200}, "24h": {Fixed, 86400}, "1d": {Fixed, 86400}, "day": {Fixed, 86400},
		"2d": {Fixed, 172800}, "48h": {Fixed, 172800}, "7d": {Fixed, 604800}, "week": {Week, 0},
		"Month": {Month, 0}, "year": {Year, 0}, "1h30m": {Fixed, 5400},
	}
	for in, want := range good {
		got, err := ParseWidth(in)
		if err != nil || got != want {
			t.Errorf("ParseWidth(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	bad := map[string]string{
		"":          "empty",
		"7m":        `"7m" does not divide a day and is not whole days; use one of 1s, 2s, 3s`,
		"25h":       "does not divide a day",
		"36h":       "does not divide a day",
		"500ms":     "not a whole number of seconds",
		"0s":        "not positive",
		"-1h":       "not positive",
		"0d":        "not positive",
		"1w":        "use week for ISO weeks",
		"fortnight": "is not a width",
		"99999d":    "too wide",
		"1.5d":      "is not a width",
	}
	for in, want := range bad {
		_, err := ParseWidth(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseWidth(%q) error = %v, want it to contain %q", in, err, want)
		}
	}
}

// TestWidthStringRoundTrip: what String prints, ParseWidth reads back.
func TestWidthStringRoundTrip(t *testing.T) {
	for _, in := range []string{"30s", "10m", "90m", "1h", "6h", "1d", "2d", "week", "month", "year"} {
		w, err := ParseWidth(in)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseWidth(w.String())
		if err != nil || back != w {
			t.Errorf("%q: String %q parses to %v, %v", in, w.String(), back, err)
		}
	}
}

// TestNewErrors checks that each invalid spec names its field and says what would be right, and
// that several problems are all reported.
func TestNewErrors(t *testing.T) {
	tests := []struct {
		spec  Spec
		field string
		want  string
	}{
		{Spec{Width: "7m"}, "width", "does not divide a day"},
		{Spec{Width: "1h", Key: "uuid"}, "key", "use text, date, timestamp, int or number"},
		{Spec{Width: "1h", Key: "date"}, "key", "date needs a width of a day or more"},
		{Spec{Width: "1d", Key: "int", Layout: "2006"}, "layout", "only applies to key text"},
		{Spec{Width: "1d", Layout: "2006-01"}, "layout", "lacks the day (02)"},
		{Spec{Width: "1h", Layout: "2006-01-02"}, "layout", "lacks the hour (15)"},
		{Spec{Width: "1d", Layout: "Jan 02 2006"}, "layout", `unsupported element at "Jan 02 2..."`},
		{Spec{Width: "1d", Layout: "06-01-02"}, "layout", "unsupported element"},
		{Spec{Width: "1d", Layout: "2006-01-_2"}, "layout", "unsupported element"},
		{Spec{Width: "week", Layout: "2006-01-02"}, "layout", "only 2006 (ISO week-year) and 01 (ISO week)"},
		{Spec{Width: "week", Layout: "W01"}, "layout", "lacks the year"},
		{Spec{Width: "1h", EventBuckets: -2}, "event_buckets", "negative"},
		{Spec{Width: "1h", EventBuckets: MaxEventBuckets + 1}, "event_buckets", "more than 1024"},
		{Spec{Width: "1h", Rolling: -1}, "rolling", "negative"},
		{Spec{Width: "1h", Rolling: 24}, "rolling", "needs key int or number, not text"},
		{Spec{Width: "1h", Key: "timestamp", Rolling: 24}, "rolling", "needs key int or number"},
		{Spec{Width: "1h", Slice: "90m"}, "slice", "whole hours"},
		{Spec{Width: "1h", Slice: "30m"}, "slice", "whole hours"},
		{Spec{Width: "4h", Slice: "6h"}, "slice", "not a whole multiple of the bucket width 4h"},
		{Spec{Width: "week", Slice: "7d"}, "slice", "cannot hold week buckets"},
		{Spec{Width: "month", Slice: "30d"}, "slice", "cannot hold month buckets"},
		{Spec{Width: "2d", Slice: "month"}, "slice", "straddle months"},
		{Spec{Width: "7d", Slice: "week"}, "slice", "week slices hold"},
		{Spec{Width: "week", Slice: "month"}, "slice", "month slices hold"},
		{Spec{Width: "week", Slice: "year"}, "slice", "straddle years"},
		{Spec{Width: "year", Slice: "month"}, "slice", "month slices hold"},
		{Spec{Width: "1d", Slice: "7m"}, "slice", "does not divide a day"},
	}
	for _, tc := range tests {
		t.Run(tc.field+"/"+tc.want, func(t *testing.T) {
			_, err := New(tc.spec)
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("New(%+v) = %v, want a *FieldError", tc.spec, err)
			}
			if fe.Field != tc.field || !strings.Contains(fe.Err.Error(), tc.want) {
				t.Errorf("New(%+v) = %v, want field %s and %q", tc.spec, err, tc.field, tc.want)
			}
		})
	}

	_, err := New(Spec{Width: "7m", Key: "uuid", EventBuckets: -1, Rolling: -1})
	fields := map[string]bool{}
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var fe *FieldError
		if errors.As(e, &fe) {
			fields[fe.Field] = true
		}
	}
	for _, f := range []string{"width", "key", "event_buckets", "rolling"} {
		if !fields[f] {
			t.Errorf("joined error %v lacks field %s", err, f)
		}
	}
}

func TestValidSlices(t *testing.T) {
	at := mustTime(t, "2024-01-15T09:07:12Z")
	tests := []struct {
		width, slice, suffix string
	}{
		{"1h", "1d", "20240115"},
		{"10m", "1d", "20240115"},
		{"10m", "1h", "2024011509"},
		{"1h", "6h", "2024011506"},
		{"1h", "1h", "2024011509"},
		{"1d", "7d", "20240111"},
		{"2d", "4d", "20240114"},
		{"1h", "week", "2024w03"},
		{"1d", "week", "2024w03"},
		{"week", "week", "2024w03"},
		{"1h", "month", "202401"},
		{"1d", "month", "202401"},
		{"month", "month", "202401"},
		{"1h", "year", "2024"},
		{"month", "year", "2024"},
		{"year", "year", "2024"},
	}
	for _, tc := range tests {
		t.Run(tc.width+"/"+tc.slice, func(t *testing.T) {
			p := mustPolicy(t, Spec{Width: tc.width, Slice: tc.slice})
			if got := p.SliceSuffix(at); got != tc.suffix {
				t.Errorf("SliceSuffix = %q, want %q", got, tc.suffix)
			}
			if got := string(p.AppendSliceSuffix(nil, p.SliceOfBucket(p.Index(at)))); got != tc.suffix {
				t.Errorf("suffix of the bucket's slice = %q, want %q", got, tc.suffix)
			}
		})
	}
	// Week slices at the ISO week-year boundary.
	p := mustPolicy(t, Spec{Width: "1d", Slice: "week"})
	if got := p.SliceSuffix(mustTime(t, "2024-12-30T00:00:00Z")); got != "2025w01" {
		t.Errorf("slice of 2024-12-30 = %q, want 2025w01", got)
	}
	if got := p.SliceSuffix(mustTime(t, "2021-01-03T00:00:00Z")); got != "2020w53" {
		t.Errorf("slice of 2021-01-03 = %q, want 2020w53", got)
	}
	if got := mustPolicy(t, Spec{Width: "1h"}).SliceSuffix(at); got != "" {
		t.Errorf("unsliced SliceSuffix = %q, want empty", got)
	}
}

// TestWidthErrorListsEveryAcceptedWidth: the "use one of" list of a refused width names exactly the
// fixed widths up to a day that ParseWidth accepts (it used to leave out 45m, 90m and every sub-minute
// width), in the form ParseWidth reads back.
func TestWidthErrorListsEveryAcceptedWidth(t *testing.T) {
	_, err := ParseWidth("7m")
	if err == nil {
		t.Fatal("7m accepted")
	}
	_, list, ok := strings.Cut(err.Error(), "use one of ")
	if !ok {
		t.Fatalf("no list in %q", err)
	}
	listed := map[int64]bool{}
	for _, item := range strings.Split(list, ", ") {
		w, err := ParseWidth(item)
		if err != nil {
			continue // "whole days up to ...", "week, month or year"
		}
		if w.Unit == Fixed && w.Seconds <= secondsPerDay {
			listed[w.Seconds] = true
		}
	}
	for secs := int64(1); secs <= secondsPerDay; secs++ {
		_, err := ParseWidth(strconv.FormatInt(secs, 10) + "s")
		if accepted := err == nil; accepted != listed[secs] {
			t.Errorf("%ds: accepted %v, listed %v", secs, accepted, listed[secs])
		}
	}
	for _, want := range []string{"whole days up to 10000d", "week, month or year"} {
		if !strings.Contains(list, want) {
			t.Errorf("the list does not mention %q: %s", want, list)
		}
	}
}
