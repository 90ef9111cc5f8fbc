package routing

import (
	"math/rand/v2"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestRateOfNeedsASecond(t *testing.T) {
	for _, c := range []struct {
		rows, bytes int64
		span        time.Duration
		want        Rate
	}{
		{100, 1000, 999 * time.Millisecond, Rate{}},
		{100, 1000, time.Second, Rate{100, 1000}},
		{100, 1000, 4 * time.Second, Rate{25, 250}},
		{0, 0, time.Minute, Rate{}},
	} {
		if got := RateOf(c.rows, c.bytes, c.span); got != c.want {
			t.Errorf("RateOf(%d, %d, %v) = %v; want %v", c.rows, c.bytes, c.span, got, c.want)
		}
	}
	if got := (Rate{10, 5}).Max(Rate{3, 50}); got != (Rate{10, 50}) {
		t.Errorf("Max takes each half apart: %v", got)
	}
}

// TestSizeHoldsTheRestOfTheBucket guards against a generation decided late in a bucket being sized
// for less than the rest of it: no later decision is guaranteed under churn, so its partitions
// must hold every row until the bucket ends.
func TestSizeHoldsTheRestOfTheBucket(t *testing.T) {
	end := t0.Add(time.Minute)
	b := Budget{Rows: 2000}
	for _, c := range []struct {
		name     string
		rate     Rate
		from     time.Time
		room     int
		wantK    int
		wantOver bool
	}{
		// 1,000 rows/s for 60 s is 60,000 rows: 60 partitions of 1,000 (half the budget).
		{"a whole bucket", Rate{Rows: 1000}, t0, 64, 60, false},
		// The same rate 10 s before the end: 10,000 rows, 10 partitions.
		{"late in the bucket", Rate{Rows: 1000}, end.Add(-10 * time.Second), 64, 10, false},
		// A slow entity still gets 2: one more partition is not worth a record.
		{"at least two", Rate{Rows: 10}, t0, 64, 2, false},
		// Capped by room: 60 needed, 30 allowed, 2,000 rows each: at the budget, not over it.
		{"capped at the budget", Rate{Rows: 1000}, t0, 30, 30, false},
		{"capped past the budget", Rate{Rows: 1000}, t0, 20, 20, true},
		{"no room", Rate{Rows: 1000}, t0, 1, 0, true},
		{"no room, no rate", Rate{}, t0, 1, 0, false},
		{"after the end", Rate{Rows: 1000}, end.Add(time.Second), 64, 2, false},
		// The byte half binds as the row half does.
		{"bytes", Rate{Rows: 1, Bytes: 10_000}, t0, 64, 12, false},
	} {
		bb := b
		if c.name == "bytes" {
			bb.Bytes = 100_000
		}
		k, over := Size(c.rate, c.from, end, bb, c.room)
		if k != c.wantK || over != c.wantOver {
			t.Errorf("%s: Size = %d, %v; want %d, %v", c.name, k, over, c.wantK, c.wantOver)
		}
	}
}

// TestSizePropertyEveryPartitionHoldsItsShareUntilTheBucketEnds: whatever the rate and the instant,
// a generation that Size does not report over holds rate × the rest of the bucket within the
// budget per partition, and within half of it whenever room did not cap it.
func TestSizePropertyEveryPartitionHoldsItsShareUntilTheBucketEnds(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20_000 {
		span := time.Duration(1+rng.IntN(3600)) * time.Second
		from := t0.Add(time.Duration(rng.Int64N(int64(span))))
		end := t0.Add(span)
		b := Budget{Rows: 1 + rng.Int64N(100_000), Bytes: rng.Int64N(2) * (1 + rng.Int64N(1<<30))}
		r := Rate{Rows: rng.Float64() * 5000, Bytes: rng.Float64() * 5e6}
		room := rng.IntN(128)
		k, over := Size(r, from, end, b, room)
		if room < 2 {
			if k != 0 {
				t.Fatalf("room %d: k = %d", room, k)
			}
			continue
		}
		if k < 2 || k > room {
			t.Fatalf("k = %d outside [2, %d]", k, room)
		}
		per := r.Rows * end.Sub(from).Seconds() / float64(k)
		if !over && per > float64(b.Rows)*(1+1e-9) {
			t.Fatalf("not over but %v rows per partition, budget %d (rate %v, k %d)", per, b.Rows, r, k)
		}
		if over && Holds(r, end.Sub(from), b, k) {
			t.Fatalf("reported over but holds")
		}
		if need := Need(r, end.Sub(from), b); need <= room && per > float64(b.Rows)/2*(1+1e-9) {
			t.Fatalf("uncapped (need %d, room %d) but %v rows per partition > half of %d", need, room, per, b.Rows)
		}
	}
}

// TestCarryStartsTheNextBucketSplit: an entity that split in a bucket starts the next one split,
// from the bucket's start, sized for the whole bucket at the rate it wrote the one before, after
// generation 0's event buckets; an entity whose rate fits generation 0 carries nothing.
func TestCarryStartsTheNextBucketSplit(t *testing.T) {
	start, end := t0.Add(time.Minute), t0.Add(2*time.Minute)
	b := Budget{Rows: 2000}
	for _, c := range []struct {
		name      string
		rate      Rate
		base, max int
		want      Generation
		wantCarry bool
	}{
		{"hot", Rate{Rows: 1000}, 1, 64, Generation{N: 1, From: start, First: 1, Buckets: 60}, true},
		{"hot, four configured", Rate{Rows: 1000}, 4, 64, Generation{N: 1, From: start, First: 4, Buckets: 60}, true},
		{"capped", Rate{Rows: 1000}, 4, 32, Generation{N: 1, From: start, First: 4, Buckets: 28}, true},
		{"fits generation 0", Rate{Rows: 16}, 1, 64, Generation{}, false},                                    // 960 rows
		{"fits four configured", Rate{Rows: 60}, 4, 64, Generation{}, false},                                 // 3,600 rows, 900 each
		{"just past half", Rate{Rows: 17}, 1, 64, Generation{N: 1, From: start, First: 1, Buckets: 2}, true}, // 1,020 rows
		{"no room", Rate{Rows: 1000}, 63, 64, Generation{}, false},
	} {
		g, ok := Carry(c.rate, start, end, b, c.base, c.max)
		if ok != c.wantCarry || g.N != c.want.N || !g.From.Equal(c.want.From) || g.First != c.want.First || g.Buckets != c.want.Buckets {
			t.Errorf("%s: Carry = %+v, %v; want %+v, %v", c.name, g, ok, c.want, c.wantCarry)
		}
		if ok && g.End() > c.max {
			t.Errorf("%s: ends at %d past max %d", c.name, g.End(), c.max)
		}
	}
}
