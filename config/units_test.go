package config

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"0", 0},
		{"90d", 90 * Day},
		{"1w", Week},
		{"2w3d", 17 * Day},
		{"36h", 36 * time.Hour},
		{"1d12h", 36 * time.Hour},
		{"1.5h", 90 * time.Minute},
		{"250ms", 250 * time.Millisecond},
		{"10us", 10 * time.Microsecond},
		{"10µs", 10 * time.Microsecond},
		{"-5s", -5 * time.Second},
		{" 30s ", 30 * time.Second},
	}
	for _, tc := range tests {
		got, err := ParseDuration(tc.in)
		if err != nil || got.Std() != tc.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", tc.in, got.Std(), err, tc.want)
		}
	}
	for _, bad := range []string{"", "90", "d", "5x", "1.2.3s", "-", "100000000w", "9223372036854775807s", "s5"} {
		if got, err := ParseDuration(bad); err == nil {
			t.Errorf("ParseDuration(%q) = %v, want an error", bad, got)
		}
	}
}

func TestDurationString(t *testing.T) {
	tests := map[time.Duration]string{
		0:                                      "0s",
		90 * Day:                               "90d",
		Week:                                   "7d",
		36 * time.Hour:                         "1d12h",
		90 * time.Second:                       "1m30s",
		250 * time.Millisecond:                 "250ms",
		1500 * time.Millisecond:                "1s500ms",
		-2 * time.Hour:                         "-2h",
		time.Hour + time.Nanosecond:            "1h1ns",
		time.Duration(math.MaxInt64):           "106751d23h47m16s854ms775us807ns",
		Day + time.Minute + 3*time.Microsecond: "1d1m3us",
	}
	for d, want := range tests {
		if got := Duration(d).String(); got != want {
			t.Errorf("Duration(%v).String() = %q, want %q", d, got, want)
		}
	}
}

func TestParseBytes(t *testing.T) {
	tests := []struct {
		in   string
		want int64
	}{
		{"0", 0},
		{"1048576", 1 << 20},
		{"64MiB", 64 << 20},
		{"32KiB", 32 << 10},
		{"100MB", 100_000_000},
		{"1GB", 1_000_000_000},
		{"1.5GB", 1_500_000_000},
		{"100 mb", 100_000_000},
		{"2TiB", 2 << 40},
		{"512B", 512},
	}
	for _, tc := range tests {
		got, err := ParseBytes(tc.in)
		if err != nil || int64(got) != tc.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "MB", "-1MB", "10 megabytes", "1.2.3MB", "9999999TiB", "99999999999999999999"} {
		if got, err := ParseBytes(bad); err == nil {
			t.Errorf("ParseBytes(%q) = %d, want an error", bad, got)
		}
	}
}

// Property: String is the inverse of the parser for every value, so a config printed by a tool
// (sink explain, sink plan --json) reads back identically.
func TestUnitsRoundTripProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 100_000 {
		var d Duration
		switch r.IntN(3) {
		case 0:
			d = Duration(r.Int64())
		case 1:
			d = Duration(r.Int64N(1000)) * Duration(Day)
		default:
			d = -Duration(r.Int64N(1 << 50))
		}
		back, err := ParseDuration(d.String())
		if err != nil || back != d {
			t.Fatalf("Duration %d: String %q parses to %d, %v", int64(d), d.String(), int64(back), err)
		}
		var b Bytes
		switch r.IntN(3) {
		case 0:
			b = Bytes(r.Int64())
		case 1:
			b = Bytes(r.Int64N(1<<20)) << (10 * r.IntN(4))
		default:
			b = Bytes(r.Int64N(1_000_000)) * 1_000_000
		}
		bb, err := ParseBytes(b.String())
		if err != nil || bb != b {
			t.Fatalf("Bytes %d: String %q parses to %d, %v", int64(b), b.String(), int64(bb), err)
		}
	}
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"90d", "1w2d", "1.5h", "250ms", "-3s", "0", "1e3s", "9223372036854775807ns"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err != nil {
			return
		}
		back, err := ParseDuration(d.String())
		if err != nil || back != d {
			t.Fatalf("ParseDuration(%q) = %d; its String %q parses to %d, %v", s, int64(d), d.String(), int64(back), err)
		}
	})
}

func FuzzParseBytes(f *testing.F) {
	for _, s := range []string{"64MiB", "100MB", "1.5GB", "0", "7", "9223372036854775807"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := ParseBytes(s)
		if err != nil {
			return
		}
		if b < 0 {
			t.Fatalf("ParseBytes(%q) = %d, negative", s, int64(b))
		}
		back, err := ParseBytes(b.String())
		if err != nil || back != b {
			t.Fatalf("ParseBytes(%q) = %d; its String %q parses to %d, %v", s, int64(b), b.String(), int64(back), err)
		}
	})
}
