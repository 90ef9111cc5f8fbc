package sizing

import (
	"math"
	"strings"
	"testing"
)

// The decision matrix of the time-bucketing seed (000): write rate per entity, row size, and
// the partition size of daily, hourly and 10-minute buckets with its mark. Plan must reproduce
// every cell exactly.
var seedMatrix = []struct {
	rate, rowBytes           float64
	daily, hourly, tenMinute string
}{
	{1, 100, "8.6 MB ✓", "360 KB", "60 KB"},
	{10, 100, "86 MB ✓", "3.6 MB ✓", "600 KB"},
	{100, 100, "860 MB ✗", "36 MB ✓", "6 MB ✓"},
	{1000, 100, "8.6 GB ✗", "360 MB ✗", "60 MB ✓"},
	{10000, 100, "86 GB ✗", "3.6 GB ✗", "600 MB ✗"},
	{1, 1000, "86 MB ✓", "3.6 MB ✓", "600 KB"},
	{10, 1000, "860 MB ✗", "36 MB ✓", "6 MB ✓"},
	{100, 1000, "8.6 GB ✗", "360 MB ✗", "60 MB ✓"},
}

func TestSeedMatrix(t *testing.T) {
	for _, row := range seedMatrix {
		in := Input{Rate: row.rate, RowBytes: row.rowBytes}
		for _, c := range []struct {
			g    Granularity
			want string
		}{{DayG, row.daily}, {Hour, row.hourly}, {TenMinutes, row.tenMinute}} {
			if got := Cell(in.Estimate(c.g, 1, Default)); got != c.want {
				t.Errorf("%g/s × %g B, %s: got %q, want %q", row.rate, row.rowBytes, c.g.Name, got, c.want)
			}
		}
	}
}

func TestFormatBytes(t *testing.T) {
	tests := map[float64]string{
		0:             "0 B",
		999:           "999 B",
		1000:          "1 KB",
		1049:          "1 KB",
		1050:          "1.1 KB",
		60_000:        "60 KB",
		999_999:       "1 MB",
		8_640_000:     "8.6 MB",
		86_400_000:    "86 MB",
		864_000_000:   "860 MB",
		6_000_000:     "6 MB",
		99_500_000:    "100 MB",
		2.6e9:         "2.6 GB",
		1.2e15:        "1.2 PB",
		3.4e18:        "3400 PB",
		-8_640_000:    "-8.6 MB",
		100_000_000:   "100 MB",
		100_000_001:   "100 MB",
		12_345_678_91: "1.2 GB",
	}
	for in, want := range tests {
		if got := FormatBytes(in); got != want {
			t.Errorf("FormatBytes(%g) = %q, want %q", in, got, want)
		}
	}
}

func TestFormatCount(t *testing.T) {
	tests := map[float64]string{0: "0", 999: "999", 1000: "1,000", 86400: "86,400", 2_630_016: "2,630,016", -1234: "-1,234", 0.4: "0"}
	for in, want := range tests {
		if got := FormatCount(in); got != want {
			t.Errorf("FormatCount(%g) = %q, want %q", in, got, want)
		}
	}
}

func TestVerdicts(t *testing.T) {
	tests := []struct {
		name     string
		in       Input
		g        Granularity
		n        int
		verdict  Verdict
		mark     Mark
		rowsOver bool
	}{
		{"1/s 100B daily: 8.6 MB, 86,400 rows", Input{1, 100}, DayG, 1, Small, MarkOK, false},
		// The matrix marks 86 MB ✓, but 864,000 rows break the 100,000-row guidance.
		{"10/s 100B daily: size ok, rows over", Input{10, 100}, DayG, 1, TooBig, MarkOK, true},
		{"10/s 1KB hourly", Input{10, 1000}, Hour, 1, InTarget, MarkOK, false},
		{"tiny", Input{1, 100}, Minute, 1, TooSmall, MarkNone, false},
		{"over bytes", Input{1000, 100}, Hour, 1, TooBig, MarkOver, true},
		{"split 8 ways", Input{1000, 1000}, TenMinutes, 8, InTarget, MarkOK, false},
		{"exactly the budget is within it", Input{100_000.0 / 600, 1000}, TenMinutes, 1, InTarget, MarkOK, false},
	}
	for _, tc := range tests {
		e := tc.in.Estimate(tc.g, tc.n, Default)
		if e.Verdict != tc.verdict || e.Mark != tc.mark || e.RowsOver != tc.rowsOver {
			t.Errorf("%s: verdict %v mark %q rowsOver %v; want %v %q %v (rows %g bytes %g)",
				tc.name, e.Verdict, e.Mark, e.RowsOver, tc.verdict, tc.mark, tc.rowsOver, e.WorstRows, e.WorstBytes)
		}
	}
}

// A month is judged on its longest (31-day) span.
func TestMonthWorstCase(t *testing.T) {
	in := Input{Rate: 0.03, RowBytes: 1000} // 0.03/s: 78,894 rows in an average month, 80,352 in 31 days
	e := in.Estimate(Month, 1, Default)
	if math.Abs(e.Rows-0.03*30.436875*Day) > 1e-6 || e.WorstRows != 0.03*31*Day {
		t.Fatalf("rows %g / worst %g", e.Rows, e.WorstRows)
	}
	if e.Verdict != InTarget {
		t.Errorf("verdict %v, want in target (80 MB over 31 days)", e.Verdict)
	}
	over := Input{Rate: 0.0375, RowBytes: 1000}.Estimate(Month, 1, Default) // 98.6 MB average, 100.4 MB in 31 days
	if over.Bytes > Default.Max || over.Verdict != TooBig {
		t.Errorf("average %g, verdict %v: a 31-day month over budget must be too big", over.Bytes, over.Verdict)
	}
}

func TestRecommend(t *testing.T) {
	tests := []struct {
		name   string
		in     Input
		choice string
		n      int
		fits   bool
	}{
		// 8.6 MB daily (small but acceptable); weekly would be 60 MB but 604,800 rows.
		{"1/s 100B", Input{1, 100}, "1d", 1, true},
		{"10/s 100B: rows rule out daily", Input{10, 100}, "1h", 1, true},
		// Hourly is 36 MB but 360,000 rows: 10 minutes (6 MB, 60,000 rows) is the coarsest that fits.
		{"100/s 100B", Input{100, 100}, "10m", 1, true},
		{"1000/s 100B", Input{1000, 100}, "1m", 1, true},
		{"10/s 1KB", Input{10, 1000}, "1h", 1, true},
		{"1/s 1KB", Input{1, 1000}, "1d", 1, true},
		{"one reading a minute", Input{1.0 / 60, 200}, "month", 1, true},
		{"one a day: all too small, coarsest", Input{1.0 / Day, 100}, "month", 1, true},
		// 10000/s × 1 KB: one minute is 600 MB and 600,000 rows.
		// 6 needed; 8 for headroom.
		{"10000/s 1KB", Input{10000, 1000}, "1m", 8, false},
		// 100,000/s × 10 B: 6 MB a minute but 6,000,000 rows.
		{"rows decide the split", Input{100_000, 10}, "1m", 64, false},
	}
	for _, tc := range tests {
		r := tc.in.Recommend(Candidates, Default)
		if r.Choice.Granularity.Name != tc.choice || r.Choice.EventBuckets != tc.n || r.Fits != tc.fits {
			t.Errorf("%s: got %s × %d (fits %v: %s), want %s × %d (fits %v)", tc.name,
				r.Choice.Granularity.Name, r.Choice.EventBuckets, r.Fits, r.Reason, tc.choice, tc.n, tc.fits)
		}
		if !r.Fits {
			if r.Choice.Verdict == TooBig {
				t.Errorf("%s: the event-bucket choice is still too big: %+v", tc.name, r.Choice)
			}
			for _, o := range r.Options {
				if o.EventBuckets > MaxEventBuckets || o.Verdict == TooBig {
					t.Errorf("%s: option %s × %d is beyond the cap or too big", tc.name, o.Granularity.Name, o.EventBuckets)
				}
			}
			if len(r.Options) == 0 || r.Options[0].Granularity != Minute {
				t.Errorf("%s: options %v, want the minute first", tc.name, r.Options)
			}
		}
	}
}

// Beyond the cap no candidate policy exists; the recommendation says so, and its choice still stays
// within the cap (it used to carry the uncapped count, which validate refuses).
func TestRecommendBeyondCap(t *testing.T) {
	r := Input{Rate: 1e7, RowBytes: 1000}.Recommend(Candidates, Default) // 600 GB a minute
	if r.Fits || len(r.Options) != 0 || r.Choice.EventBuckets > MaxEventBuckets {
		t.Errorf("got fits %v, %d options, %d event buckets; want no fit, no options, at most %d", r.Fits, len(r.Options), r.Choice.EventBuckets, MaxEventBuckets)
	}
	if !strings.Contains(r.Reason, "would need 6000 event buckets, more than 1024") {
		t.Errorf("reason %q", r.Reason)
	}
}

func TestEventBucketsNeeded(t *testing.T) {
	in := Input{Rate: 1000, RowBytes: 1000}
	for _, tc := range []struct {
		g    Granularity
		want int
	}{{Minute, 1}, {TenMinutes, 6}, {Hour, 36}, {DayG, 864}} {
		if got := in.EventBucketsNeeded(tc.g, Default); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.g.Name, got, tc.want)
		}
	}
}

// Property: the recommended choice never has more event buckets than the cap, is never too big unless
// no candidate fits within the cap (no options), and event buckets are proposed only when no
// granularity fits without them.
func TestRecommendProperty(t *testing.T) {
	for _, rate := range []float64{1e-6, 0.001, 0.1, 1, 3, 7, 10, 33, 100, 999, 1e4, 1e5, 1e6} {
		for _, rb := range []float64{1, 10, 100, 512, 1000, 4096, 65536} {
			r := Input{rate, rb}.Recommend(Candidates, Default)
			if r.Choice.EventBuckets > MaxEventBuckets {
				t.Errorf("rate %g row %g: recommended %d event buckets, more than %d", rate, rb, r.Choice.EventBuckets, MaxEventBuckets)
			}
			if r.Choice.Verdict == TooBig && (r.Fits || len(r.Options) > 0) {
				t.Errorf("rate %g row %g: recommended %s × %d is too big", rate, rb, r.Choice.Granularity.Name, r.Choice.EventBuckets)
			}
			if !r.Fits && r.Choice.EventBuckets < 2 {
				t.Errorf("rate %g row %g: no fit but %d event buckets", rate, rb, r.Choice.EventBuckets)
			}
		}
	}
}
