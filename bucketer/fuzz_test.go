package bucketer

import (
	"errors"
	"testing"
	"time"
)

// FuzzNew feeds arbitrary specs to the parser: it must never panic, must report problems as
// *FieldError naming a real field, and every policy it accepts must behave: buckets tile,
// consecutive buckets get different keys, and Value has the Go type CQLType promises.
func FuzzNew(f *testing.F) {
	seeds := []Spec{
		{Width: "1h"}, {Width: "10m", Key: "int"}, {Width: "1d", Key: "date"}, {Width: "week", Layout: "2006w01"},
		{Width: "month", Key: "int", Slice: "year"}, {Width: "year", Key: "number", Rolling: 5},
		{Width: "1h", Slice: "1d", EventBuckets: 4}, {Width: "7m"}, {Width: "1d", Layout: "Jan 2006"},
		{Width: "90m", Layout: "2006/01/02 15:04"}, {Width: "30s", Key: "timestamp"}, {Width: "2d", Slice: "month"},
		{Width: "", Key: "x", Layout: "01", Slice: "1w", EventBuckets: -1, Rolling: -1},
	}
	for _, s := range seeds {
		f.Add(s.Width, s.Key, s.Layout, s.Slice, s.EventBuckets, s.Rolling, int64(1705309632))
	}
	fields := map[string]bool{"width": true, "key": true, "layout": true, "slice": true, "event_buckets": true, "rolling": true}
	f.Fuzz(func(t *testing.T, width, key, layout, slice string, eb, rolling int, sec int64) {
		p, err := New(Spec{Width: width, Key: key, Layout: layout, Slice: slice, EventBuckets: eb, Rolling: rolling})
		if err != nil {
			errs := []error{err}
			if j, ok := err.(interface{ Unwrap() []error }); ok {
				errs = j.Unwrap()
			}
			for _, e := range errs {
				var fe *FieldError
				if !errors.As(e, &fe) || !fields[fe.Field] || fe.Err == nil || fe.Error() == "" {
					t.Fatalf("New error %q is not a *FieldError naming a spec field", e)
				}
			}
			return
		}
		at := time.Unix(clampUnix(sec), 0)
		i := p.Index(at)
		if p.Check(i) != nil || p.Check(i+1) != nil {
			return
		}
		if s, e := p.Start(i), p.End(i); at.Before(s) || !at.Before(e) || p.Index(e) != i+1 {
			t.Fatalf("%+v: %v not in bucket %d [%v, %v)", p, at, i, s, e)
		}
		if p.Text(i) == p.Text(i+1) {
			t.Fatalf("%+v: buckets %d and %d share the text key %q", p, i, i+1, p.Text(i))
		}
		if p.rolling == 0 && p.KeyInt(i) >= p.KeyInt(i+1) {
			t.Fatalf("%+v: integer keys do not increase: %d then %d", p, p.KeyInt(i), p.KeyInt(i+1))
		}
		switch v := p.Value(i); v.(type) {
		case string:
			if p.CQLType() != "text" {
				t.Fatalf("string value for CQL type %s", p.CQLType())
			}
		case time.Time:
			if ct := p.CQLType(); ct != "date" && ct != "timestamp" {
				t.Fatalf("time value for CQL type %s", ct)
			}
		case int32:
			if p.CQLType() != "int" {
				t.Fatalf("int32 value for CQL type %s", p.CQLType())
			}
		case int64:
			if p.CQLType() != "bigint" {
				t.Fatalf("int64 value for CQL type %s", p.CQLType())
			}
		default:
			t.Fatalf("Value is %T", v)
		}
		if w, ok := p.Sliced(); ok {
			s := p.SliceIndex(at)
			if p.SliceOfBucket(i) != s || p.SliceIndex(p.End(i).Add(-time.Nanosecond)) != s {
				t.Fatalf("%+v: bucket %d crosses %s slices", p, i, w)
			}
		}
	})
}

func clampUnix(sec int64) int64 { return max(MinTime.Unix(), min(MaxTime.Unix(), sec)) }

// FuzzKeys checks key computation for arbitrary instants and zones against the time package.
func FuzzKeys(f *testing.F) {
	for k, s := range []string{
		"2020-12-31T12:00:00Z", "2021-01-03T23:59:59Z", "2021-01-04T00:00:00Z", "2024-12-30T00:00:00Z",
		"2024-02-29T12:00:00Z", "1969-12-31T23:59:59Z", "9999-12-31T23:59:59Z", "0000-01-01T00:00:00Z",
	} {
		tm, _ := time.Parse(time.RFC3339, s)
		f.Add(uint8(k), tm.Unix(), uint32(999999999), int16(330))
	}
	policies := make([]*Policy, len(propertyWidths))
	for k, w := range propertyWidths {
		policies[k] = mustPolicy(f, Spec{Width: w})
	}
	f.Fuzz(func(t *testing.T, which uint8, sec int64, nsec uint32, offsetMinutes int16) {
		p := policies[int(which)%len(policies)]
		utc := time.Unix(clampUnix(sec), int64(nsec%1e9)).UTC()
		at := utc.In(time.FixedZone("z", int(offsetMinutes%(18*60))*60))
		i := p.Index(at)
		if i != p.Index(utc) {
			t.Fatalf("%s: zone changed the bucket of %v", p.Width(), at)
		}
		start := p.Start(i)
		if at.Before(start) || !at.Before(p.End(i)) {
			t.Fatalf("%s: %v not in bucket %d [%v, %v)", p.Width(), at, i, start, p.End(i))
		}
		if want := oracleStart(p.Width(), at); !start.Equal(want) {
			t.Fatalf("%s: start of %v = %v, time package says %v", p.Width(), at, start, want)
		}
		if p.Check(i) != nil {
			return
		}
		if got, want := p.Text(i), oracleText(p.Width(), start); got != want {
			t.Fatalf("%s: text of %v = %q, time package says %q", p.Width(), at, got, want)
		}
		if got, want := p.KeyInt(i), oracleInt(p.Width(), start); got != want {
			t.Fatalf("%s: int key of %v = %d, time package says %d", p.Width(), at, got, want)
		}
	})
}
