package bucketer

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

// propertyWidths covers every precision and both sides of the "divides a day / whole days" rule.
var propertyWidths = []string{"1s", "30s", "1m", "7m30s", "10m", "90m", "1h", "6h", "12h", "1d", "2d", "7d", "week", "month", "year"}

// randomInstant returns an instant in the supported range, half of the time close to an
// interesting boundary (the epoch, a year end, a month end) where off-by-one errors live.
func randomInstant(r *rand.Rand) time.Time {
	lo, hi := MinTime.Unix(), MaxTime.Unix()
	var sec int64
	switch r.IntN(4) {
	case 0: // anywhere in years 0000-9999
		sec = lo + r.Int64N(hi-lo+1)
	case 1: // within a few days of the epoch
		sec = r.Int64N(10*secondsPerDay) - 5*secondsPerDay
	case 2: // within a day of a random new year
		y := r.IntN(10000)
		sec = time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC).Unix() + r.Int64N(2*secondsPerDay) - secondsPerDay
	default: // within a day of a random month end
		y, m := r.IntN(10000), time.Month(1+r.IntN(12))
		sec = time.Date(y, m+1, 1, 0, 0, 0, 0, time.UTC).Unix() + r.Int64N(2*secondsPerDay) - secondsPerDay
	}
	sec = max(lo, min(hi, sec))
	t := time.Unix(sec, r.Int64N(1e9)).UTC()
	// Present it in a random zone: the result must not depend on it.
	return t.In(time.FixedZone("z", (r.IntN(27*4)-12*4)*900))
}

// oracleStart computes the bucket start with the time package alone, independently of the
// integer calendar code under test.
func oracleStart(w Width, t time.Time) time.Time {
	u := t.UTC()
	switch w.Unit {
	case Week:
		d := time.Date(u.Year(), u.Month(), u.Day(), 0, 0, 0, 0, time.UTC)
		return d.AddDate(0, 0, -((int(d.Weekday()) + 6) % 7))
	case Month:
		return time.Date(u.Year(), u.Month(), 1, 0, 0, 0, 0, time.UTC)
	case Year:
		return time.Date(u.Year(), 1, 1, 0, 0, 0, 0, time.UTC)
	}
	if w.Seconds <= secondsPerDay {
		// Truncate aligns to year 1; for widths dividing a day that is also epoch alignment.
		return u.Truncate(time.Duration(w.Seconds) * time.Second)
	}
	// Truncate counts from 0001-01-01, which is 719162 days before the epoch; shift by the
	// remainder so that multi-day buckets count from the epoch instead.
	width := time.Duration(w.Seconds) * time.Second
	shift := time.Duration(719162%(w.Seconds/secondsPerDay)) * 24 * time.Hour
	return u.Add(-shift).Truncate(width).Add(shift)
}

// oracleText renders the default text key with Go's own formatter (or ISOWeek for weeks).
func oracleText(w Width, start time.Time) string {
	if w.Unit == Week {
		y, wk := start.ISOWeek()
		return fmt.Sprintf("%04d-W%02d", y, wk)
	}
	return start.Format(defaultLayout(w.precision()))
}

func oracleInt(w Width, start time.Time) int64 {
	var s string
	switch w.precision() {
	case precWeek:
		y, wk := start.ISOWeek()
		s = fmt.Sprintf("%04d%02d", y, wk)
	case precYear:
		s = start.Format("2006")
	case precMonth:
		s = start.Format("200601")
	case precDay:
		s = start.Format("20060102")
	case precHour:
		s = start.Format("2006010215")
	case precMinute:
		s = start.Format("200601021504")
	default:
		s = start.Format("20060102150405")
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		panic(err)
	}
	return v
}

// TestPropertyBuckets: for random t, Start(Index(t)) <= t < End(Index(t)), buckets tile time
// (the next bucket starts where this one ends, and the instant before a start belongs to the
// previous bucket), and start, text and integer key agree with the time package.
func TestPropertyBuckets(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, ws := range propertyWidths {
		p := mustPolicy(t, Spec{Width: ws})
		for n := 0; n < 20000; n++ {
			at := randomInstant(r)
			i := p.Index(at)
			start, end := p.Start(i), p.End(i)
			if at.Before(start) || !at.Before(end) {
				t.Fatalf("%s: %v is not in bucket %d [%v, %v)", ws, at, i, start, end)
			}
			if p.Index(start) != i || p.Index(end) != i+1 || p.Index(start.Add(-time.Nanosecond)) != i-1 {
				t.Fatalf("%s: buckets around %d do not tile: Index(start)=%d Index(end)=%d Index(start-1ns)=%d",
					ws, i, p.Index(start), p.Index(end), p.Index(start.Add(-time.Nanosecond)))
			}
			if got := p.End(i - 1); !got.Equal(start) {
				t.Fatalf("%s: End(%d) = %v, Start(%d) = %v: gap or overlap", ws, i-1, got, i, start)
			}
			if want := oracleStart(p.Width(), at); !start.Equal(want) {
				t.Fatalf("%s: Start(Index(%v)) = %v, time package says %v", ws, at, start, want)
			}
			if p.Check(i) != nil {
				continue // the week of 0000-01-01 starts in year -1; keys there are outside the contract
			}
			if got, want := p.Text(i), oracleText(p.Width(), start); got != want {
				t.Fatalf("%s: Text = %q, time package says %q (t=%v)", ws, got, want, at)
			}
			if got, want := p.KeyInt(i), oracleInt(p.Width(), start); got != want {
				t.Fatalf("%s: KeyInt = %d, time package says %d (t=%v)", ws, got, want, at)
			}
		}
	}
}

// TestPropertySlices: every bucket lies in exactly one slice, and the slice of an instant is
// the slice of its bucket.
func TestPropertySlices(t *testing.T) {
	pairs := [][2]string{
		{"10m", "1h"}, {"1h", "1d"}, {"1h", "6h"}, {"1d", "7d"}, {"2d", "4d"}, {"1h", "week"}, {"1d", "week"},
		{"week", "week"}, {"1h", "month"}, {"1d", "month"}, {"month", "month"}, {"1d", "year"}, {"month", "year"},
		{"year", "year"},
	}
	r := rand.New(rand.NewPCG(3, 4))
	for _, pr := range pairs {
		p := mustPolicy(t, Spec{Width: pr[0], Slice: pr[1]})
		for n := 0; n < 5000; n++ {
			at := randomInstant(r)
			i := p.Index(at)
			s := p.SliceIndex(at)
			if p.SliceOfBucket(i) != s || p.SliceIndex(p.Start(i)) != s || p.SliceIndex(p.End(i).Add(-time.Nanosecond)) != s {
				t.Fatalf("%s in %s: bucket %d of %v crosses slices", pr[0], pr[1], i, at)
			}
			if ss := p.SliceStart(s); ss.After(p.Start(i)) {
				t.Fatalf("%s in %s: slice %d starts at %v after bucket start %v", pr[0], pr[1], s, ss, p.Start(i))
			}
		}
	}
}

// TestPropertyEnumerate: a range enumeration holds the partition of every instant in the range,
// holds only buckets that share an instant with the range, and runs in the asked direction.
func TestPropertyEnumerate(t *testing.T) {
	specs := []Spec{
		{Width: "1h"}, {Width: "10m", EventBuckets: 3}, {Width: "1d", Slice: "week"},
		{Width: "1h", Slice: "1d", EventBuckets: 2}, {Width: "week"}, {Width: "month", Slice: "year"}, {Width: "year"},
	}
	r := rand.New(rand.NewPCG(5, 6))
	for _, s := range specs {
		p := mustPolicy(t, s)
		span := p.End(0).Sub(p.Start(0)) * 40
		for n := 0; n < 500; n++ {
			from := randomInstant(r)
			to := from.Add(time.Duration(r.Int64N(int64(2*span))) - span)
			if r.IntN(10) == 0 {
				to = p.Start(p.Index(from) + int64(r.IntN(5)) - 2) // land exactly on boundaries too
			}
			parts, err := p.Enumerate(from, to, 1000)
			if err != nil {
				if p.Check(p.Index(from)) != nil || p.Check(p.Index(to)) != nil {
					continue
				}
				t.Fatalf("%+v: Enumerate(%v, %v): %v", s, from, to, err)
			}
			asc := from.Before(to)
			lo, hi := from, to // the instants are [lo, hi) ascending, (hi, lo] descending
			in := func(x time.Time) bool {
				if asc {
					return !x.Before(lo) && x.Before(hi)
				}
				return !x.After(lo) && x.After(hi)
			}
			eb := p.EventBuckets()
			if from.Equal(to) {
				if len(parts) != 0 {
					t.Fatalf("%+v: empty range gave %d partitions", s, len(parts))
				}
				continue
			}
			if len(parts)%eb != 0 {
				t.Fatalf("%+v: %d partitions is not a multiple of %d event buckets", s, len(parts), eb)
			}
			set := map[Partition]bool{}
			for k, pt := range parts {
				if set[pt] {
					t.Fatalf("%+v: duplicate partition %+v", s, pt)
				}
				set[pt] = true
				if pt.EventBucket != k%eb {
					t.Fatalf("%+v: partition %d has event bucket %d, want %d", s, k, pt.EventBucket, k%eb)
				}
				if k >= eb {
					prev := parts[k-eb].Index
					if asc && pt.Index != prev+1 || !asc && pt.Index != prev-1 {
						t.Fatalf("%+v: bucket %d follows %d going %s", s, pt.Index, prev, map[bool]string{true: "up", false: "down"}[asc])
					}
				}
				// Nothing outside: the bucket shares at least one instant with the range.
				bs, be := p.Start(pt.Index), p.End(pt.Index).Add(-time.Nanosecond)
				var overlaps bool
				if asc {
					overlaps = bs.Before(hi) && !be.Before(lo)
				} else {
					overlaps = !bs.After(lo) && be.After(hi)
				}
				if !overlaps {
					t.Fatalf("%+v: bucket %d [%v, %v] is outside the range from %v to %v", s, pt.Index, bs, be, from, to)
				}
				if want := string(p.AppendSliceSuffix(nil, p.SliceOfBucket(pt.Index))); pt.Slice != want {
					t.Fatalf("%+v: partition %+v has slice %q, want %q", s, pt, pt.Slice, want)
				}
			}
			// Everything inside: random instants of the range, plus both ends.
			probes := []time.Time{from}
			if asc {
				probes = append(probes, to.Add(-time.Nanosecond))
			} else {
				probes = append(probes, to.Add(time.Nanosecond))
			}
			for k := 0; k < 20; k++ {
				probes = append(probes, from.Add(time.Duration(r.Float64()*float64(to.Sub(from)))))
			}
			for _, x := range probes {
				if !in(x) {
					continue
				}
				for e := 0; e < eb; e++ {
					want := Partition{Slice: p.SliceSuffix(x), Index: p.Index(x), EventBucket: e}
					if !set[want] {
						t.Fatalf("%+v: Enumerate(%v, %v) lacks %+v holding %v", s, from, to, want, x)
					}
				}
			}
		}
	}
}
