// Package sizing is the arithmetic of `sink plan`: how many rows and bytes one Cassandra
// partition accumulates for a write rate, a row size and a bucket granularity, how that compares
// with the partition-size guidance, and which granularity (and, past the finest one, how many
// event buckets) to choose. It is pure: no I/O, no clock, safe for concurrent use.
//
// Sizes are decimal (1 MB = 10^6 bytes, as nodetool and the sizing literature report them), and
// the rate is per entity: rows per second written under one partition key without its bucket
// (one device, one tenant), because that is what fills one partition.
package sizing

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Decimal units.
const (
	KB = 1e3
	MB = 1e6
	GB = 1e9
)

// Day is the length of a UTC day in seconds.
const Day = 86400

// Granularity is a bucket width as sizing sees it: how long one bucket collects rows.
type Granularity struct {
	Name string // "1m", "1d", "week", "month"
	// Seconds is the average span; WorstSeconds the longest one (a 31-day month). They differ
	// only for calendar widths.
	Seconds      float64
	WorstSeconds float64
}

// Fixed returns the granularity of a fixed width of secs seconds.
func Fixed(name string, secs float64) Granularity {
	return Granularity{Name: name, Seconds: secs, WorstSeconds: secs}
}

// Candidate granularities `sink plan` tabulates, finest first. A month averages 30.44 days
// (365.2425 / 12) and lasts at most 31.
var (
	Minute     = Fixed("1m", 60)
	TenMinutes = Fixed("10m", 600)
	Hour       = Fixed("1h", 3600)
	DayG       = Fixed("1d", Day)
	Week       = Fixed("week", 7*Day)
	Month      = Granularity{Name: "month", Seconds: 365.2425 / 12 * Day, WorstSeconds: 31 * Day}
	Year       = Granularity{Name: "year", Seconds: 365.2425 * Day, WorstSeconds: 366 * Day}

	Candidates = []Granularity{Minute, TenMinutes, Hour, DayG, Week, Month}
)

// Guidance is what a partition should look like.
type Guidance struct {
	Min       float64 // bytes; below, per-partition overhead dominates ("too small")
	TargetMin float64 // bytes; the target range is [TargetMin, Max]
	Max       float64 // bytes; never above (the partition budget)
	MaxRows   float64 // rows; never above
}

// Default is the guidance of the time-series literature: aim for 10-100 MB, never over 100 MB
// or 100,000 rows, not under 1 MB.
var Default = Guidance{Min: 1 * MB, TargetMin: 10 * MB, Max: 100 * MB, MaxRows: 100_000}

// ForBudget scales Default to a different partition budget: the target is the decade below the
// budget and "too small" starts two decades below, as in the default; the row cap stays.
func ForBudget(budget float64) Guidance {
	if budget <= 0 {
		return Default
	}
	return Guidance{Min: budget / 100, TargetMin: budget / 10, Max: budget, MaxRows: Default.MaxRows}
}

// Mark is the size judgement of the seed sizing matrix: ✓ from Min to Max, ✗ above Max, and no
// mark below Min.
type Mark int

const (
	MarkNone Mark = iota // under Min
	MarkOK               // ✓
	MarkOver             // ✗
)

func (m Mark) String() string {
	switch m {
	case MarkOK:
		return "✓"
	case MarkOver:
		return "✗"
	}
	return ""
}

// Verdict is the overall judgement of one partition, size and rows together.
type Verdict int

const (
	TooSmall Verdict = iota + 1 // under Min: fine for Cassandra, wasteful for reads
	Small                       // Min to TargetMin: acceptable
	InTarget                    // TargetMin to Max and at most MaxRows
	TooBig                      // over Max or over MaxRows
)

func (v Verdict) String() string {
	switch v {
	case TooSmall:
		return "too small"
	case Small:
		return "acceptable (small)"
	case InTarget:
		return "in target"
	case TooBig:
		return "too big"
	}
	return "Verdict(" + strconv.Itoa(int(v)) + ")"
}

// Input is the load of one entity.
type Input struct {
	Rate     float64 // rows per second per entity
	RowBytes float64 // average encoded bytes per row
}

// Estimate is the size of one partition under one granularity and event-bucket count.
type Estimate struct {
	Granularity  Granularity
	EventBuckets int // 1 = no split
	// Rows and Bytes over an average span; WorstRows and WorstBytes over the longest span,
	// which the judgements use (a partition must stay under budget in a 31-day month too).
	Rows, Bytes           float64
	WorstRows, WorstBytes float64
	Mark                  Mark    // size only, as the seed matrix marks it
	RowsOver              bool    // WorstRows > MaxRows
	Verdict               Verdict // size and rows together
}

// Estimate computes one partition's size. The rows of an entity spread evenly over its event
// buckets (a hash of a value that varies per row).
func (in Input) Estimate(g Granularity, eventBuckets int, gd Guidance) Estimate {
	if eventBuckets < 1 {
		eventBuckets = 1
	}
	n := float64(eventBuckets)
	e := Estimate{
		Granularity:  g,
		EventBuckets: eventBuckets,
		Rows:         in.Rate * g.Seconds / n,
		WorstRows:    in.Rate * g.WorstSeconds / n,
	}
	e.Bytes = e.Rows * in.RowBytes
	e.WorstBytes = e.WorstRows * in.RowBytes
	e.Mark = MarkOf(e.WorstBytes, gd)
	e.RowsOver = e.WorstRows > gd.MaxRows
	switch {
	case e.WorstBytes > gd.Max || e.RowsOver:
		e.Verdict = TooBig
	case e.WorstBytes >= gd.TargetMin:
		e.Verdict = InTarget
	case e.WorstBytes >= gd.Min:
		e.Verdict = Small
	default:
		e.Verdict = TooSmall
	}
	return e
}

// Latest estimates the partition of a latest-value table (no time bucket): one row per entity (per
// clustering value, when it has a non-time clustering), which each newer event overwrites, so the rate
// does not enter. One row is what such a partition is for, so a size under the target is acceptable
// (Small), never TooSmall; only a row over the budget is TooBig.
func (in Input) Latest(gd Guidance) Estimate {
	e := Estimate{Granularity: Granularity{Name: "none"}, EventBuckets: 1,
		Rows: 1, WorstRows: 1, Bytes: in.RowBytes, WorstBytes: in.RowBytes}
	e.Mark = MarkOf(e.WorstBytes, gd)
	switch {
	case e.WorstBytes > gd.Max:
		e.Verdict = TooBig
	case e.WorstBytes >= gd.TargetMin:
		e.Verdict = InTarget
	default:
		e.Verdict = Small
	}
	return e
}

// MarkOf judges a partition size the way the seed matrix does.
func MarkOf(bytes float64, gd Guidance) Mark {
	switch {
	case bytes > gd.Max:
		return MarkOver
	case bytes >= gd.Min:
		return MarkOK
	}
	return MarkNone
}

// Table estimates every granularity of gs without event buckets.
func (in Input) Table(gs []Granularity, gd Guidance) []Estimate {
	out := make([]Estimate, len(gs))
	for i, g := range gs {
		out[i] = in.Estimate(g, 1, gd)
	}
	return out
}

// EventBucketsNeeded is the smallest split that brings a partition of g within the budget on
// both bytes and rows.
func (in Input) EventBucketsNeeded(g Granularity, gd Guidance) int {
	e := in.Estimate(g, 1, gd)
	n := math.Max(math.Ceil(e.WorstBytes/gd.Max), math.Ceil(e.WorstRows/gd.MaxRows))
	if n < 1 || math.IsNaN(n) {
		return 1
	}
	if n > math.MaxInt32 {
		return math.MaxInt32
	}
	return int(n)
}

// Recommendation is the granularity plan proposes.
type Recommendation struct {
	Choice Estimate
	// Fits is false when even the finest candidate is too big without event buckets; Choice
	// then carries the event buckets needed, and Options the same for other granularities.
	Fits bool
	// Reason says why Choice was picked, for the operator.
	Reason  string
	Options []Estimate
}

// Recommend picks, among candidates (finest first):
//  1. the coarsest in target (TargetMin..Max bytes, at most MaxRows rows): fewest partitions
//     per read of a time range;
//  2. else the coarsest that is small but acceptable (Min..TargetMin), the closest to the target;
//  3. else the coarsest that is not too big (all are under Min: a low-volume entity);
//  4. else, when even the finest is too big, the finest with the event buckets it needs (rounded
//     up to a power of two for headroom; Options lists the minimum per granularity): finer
//     time buckets need fewer event buckets for the same partition size, so each read of a
//     time bucket fans out to fewer partitions, while the number of partitions a longer range
//     touches is the same at any granularity.
func (in Input) Recommend(candidates []Granularity, gd Guidance) Recommendation {
	if len(candidates) == 0 {
		return Recommendation{Reason: "no candidate widths"}
	}
	table := in.Table(candidates, gd)
	for _, want := range []Verdict{InTarget, Small, TooSmall} {
		for i := len(table) - 1; i >= 0; i-- {
			if table[i].Verdict == want {
				return Recommendation{Choice: table[i], Fits: true, Reason: reason(want, table[i], gd)}
			}
		}
	}
	r := Recommendation{}
	for _, g := range candidates {
		if g.WorstSeconds != g.Seconds || g.Seconds > Day {
			continue // event buckets over calendar widths would be judged on the 31-day month; keep to fixed ones
		}
		if n := in.EventBucketsNeeded(g, gd); n <= MaxEventBuckets {
			r.Options = append(r.Options, in.Estimate(g, n, gd))
		}
	}
	if len(r.Options) == 0 {
		// The choice stays within the cap, so nothing plan prints is a policy validate refuses.
		n := in.EventBucketsNeeded(candidates[0], gd)
		r.Choice = in.Estimate(candidates[0], MaxEventBuckets, gd)
		r.Reason = fmt.Sprintf("even %s buckets would need %d event buckets, more than %d; reduce the rate per entity (a finer entity id) or the row size",
			candidates[0].Name, n, MaxEventBuckets)
		return r
	}
	// The needed count puts the average partition at the budget; hashing never spreads rows
	// perfectly evenly, so round up to the next power of two for headroom (6 needed → 8, each
	// partition at 75% of the budget) while staying within the cap.
	first := r.Options[0]
	n := min(nextPow2(first.EventBuckets), MaxEventBuckets)
	r.Choice = in.Estimate(first.Granularity, n, gd)
	r.Reason = fmt.Sprintf("even %s buckets exceed %s or %s rows; %d event buckets are needed, %d leave headroom for uneven hashing",
		first.Granularity.Name, FormatBytes(gd.Max), FormatCount(gd.MaxRows), first.EventBuckets, n)
	return r
}

// Narrower looks, when even the finest candidate needs more than MaxEventBuckets event buckets, at
// narrower widths (finest first): the coarsest whose need is within the cap is recommended, rounded up
// to a power of two for headroom as Recommend does, with its minimum as the one option. ok is false when
// none of them fits either.
func (in Input) Narrower(finer []Granularity, gd Guidance, finest Granularity) (r Recommendation, ok bool) {
	for i := len(finer) - 1; i >= 0; i-- {
		g := finer[i]
		n := in.EventBucketsNeeded(g, gd)
		if n > MaxEventBuckets {
			continue
		}
		k := min(nextPow2(n), MaxEventBuckets)
		r.Choice = in.Estimate(g, k, gd)
		r.Options = []Estimate{in.Estimate(g, n, gd)}
		r.Reason = fmt.Sprintf("even %s buckets would need %d event buckets, more than the %d a policy accepts; at %s buckets %d are needed, %d leave headroom for uneven hashing",
			finest.Name, in.EventBucketsNeeded(finest, gd), MaxEventBuckets, g.Name, n, k)
		return r, true
	}
	return r, false
}

// MaxEventBuckets is the most event buckets plan proposes; it equals bucketer.MaxEventBuckets,
// the most a policy accepts (every read of a time bucket fans out to all of them).
const MaxEventBuckets = 1024

func nextPow2(n int) int {
	p := 1
	for p < n {
		p <<= 1
	}
	return p
}

func reason(v Verdict, e Estimate, gd Guidance) string {
	switch v {
	case InTarget:
		return fmt.Sprintf("the coarsest bucket within %s-%s and %s rows", FormatBytes(gd.TargetMin), FormatBytes(gd.Max), FormatCount(gd.MaxRows))
	case Small:
		return fmt.Sprintf("no bucket reaches the %s-%s target within %s rows; this is the coarsest above %s",
			FormatBytes(gd.TargetMin), FormatBytes(gd.Max), FormatCount(gd.MaxRows), FormatBytes(gd.Min))
	}
	return fmt.Sprintf("partitions stay under %s even at %s; the coarsest candidate keeps reads to the fewest partitions", FormatBytes(gd.Min), e.Granularity.Name)
}

// FormatBytes renders a size the way the seed matrix does: decimal units, two significant
// digits, no trailing ".0": 8,640,000 → "8.6 MB", 864,000,000 → "860 MB", 6,000,000 → "6 MB",
// 60,000 → "60 KB". Under 1 KB it prints whole bytes.
func FormatBytes(b float64) string {
	if math.IsNaN(b) || math.IsInf(b, 0) {
		return fmt.Sprint(b)
	}
	if b < 0 {
		return "-" + FormatBytes(-b)
	}
	if b < KB {
		return strconv.FormatFloat(math.Round(b), 'f', -1, 64) + " B"
	}
	r := roundSig(b, 2)
	units := []struct {
		name string
		v    float64
	}{{"PB", 1e15}, {"TB", 1e12}, {"GB", GB}, {"MB", MB}, {"KB", KB}}
	for i, u := range units {
		if r >= u.v || i == len(units)-1 {
			v := r / u.v
			if v >= 1000 && i == 0 {
				return strconv.FormatFloat(math.Round(v), 'f', -1, 64) + " " + u.name
			}
			s := strconv.FormatFloat(v, 'f', 1, 64)
			if v >= 10 {
				s = strconv.FormatFloat(math.Round(v), 'f', 0, 64)
			}
			return strings.TrimSuffix(s, ".0") + " " + u.name
		}
	}
	panic("unreachable")
}

// roundSig rounds x > 0 to n significant digits.
func roundSig(x float64, n int) float64 {
	if x == 0 {
		return 0
	}
	p := math.Pow(10, float64(n)-math.Ceil(math.Log10(x)))
	r := math.Round(x*p) / p
	return r
}

// FormatCount renders a count with thousands separators, rounded to a whole number:
// 86400 → "86,400".
func FormatCount(n float64) string {
	if math.IsNaN(n) || math.IsInf(n, 0) || math.Abs(n) >= 1e18 {
		return strconv.FormatFloat(n, 'g', 3, 64)
	}
	v := int64(math.Round(n))
	neg := v < 0
	if neg {
		v = -v
	}
	s := strconv.FormatInt(v, 10)
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Cell renders an estimate as a cell of the seed matrix: the average size and its mark,
// e.g. "8.6 MB ✓", "360 KB", "860 MB ✗".
func Cell(e Estimate) string {
	s := FormatBytes(e.Bytes)
	if m := e.Mark.String(); m != "" {
		s += " " + m
	}
	return s
}
