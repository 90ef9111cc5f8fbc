package bucketer

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestCivilFastMatchesSlow compares the 32-bit calendar conversion with the general one on
// every day from year -1000 to 12000 and at its own range limits.
func TestCivilFastMatchesSlow(t *testing.T) {
	lo, hi := daysFromCivil(-1000, 1, 1), daysFromCivil(12000, 1, 1)
	check := func(z int64) {
		y, m, d := civilFromDays(z)
		ys, ms, ds := civilFromDaysSlow(z)
		if y != ys || m != ms || d != ds {
			t.Fatalf("day %d: fast %d-%d-%d, slow %d-%d-%d", z, y, m, d, ys, ms, ds)
		}
		if back := daysFromCivil(y, m, d); back != z {
			t.Fatalf("day %d -> %d-%d-%d -> day %d", z, y, m, d, back)
		}
	}
	for z := lo; z <= hi; z++ {
		check(z)
	}
	for _, z := range []int64{-neriShift - 1, -neriShift, -neriShift + 1, neriMax - 1, neriMax, neriMax + 1} {
		check(z)
	}
	r := rand.New(rand.NewPCG(7, 8))
	for n := 0; n < 100000; n++ {
		check(r.Int64N(2*neriMax) - neriMax)
	}
}

// TestCivilMatchesTime checks the day arithmetic against the time package for every day of
// years 0000-9999.
func TestCivilMatchesTime(t *testing.T) {
	day := time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)
	z := daysFromCivil(0, 1, 1)
	if want := day.Unix() / secondsPerDay; z != want {
		t.Fatalf("daysFromCivil(0, 1, 1) = %d, want %d", z, want)
	}
	for ; day.Year() < 10000; day, z = day.AddDate(0, 0, 1), z+1 {
		y, m, d := civilFromDays(z)
		if y != int64(day.Year()) || m != int(day.Month()) || d != day.Day() {
			t.Fatalf("day %d = %d-%02d-%02d, time package says %s", z, y, m, d, day.Format(time.DateOnly))
		}
	}
}
