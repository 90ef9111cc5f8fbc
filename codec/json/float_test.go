package json

import (
	"math"
	"strconv"
	"testing"
)

var floatSeeds = []string{
	"21.5", "40.2", "3.71", "0", "-0", "0.0", "-0.0", "1", "-1", "0.1", "0.3", "123456789.123456789",
	"9007199254740992", "9007199254740993", "9007199254740993.0", "1e22", "1e23", "1e-22", "1e-23",
	"1.5e-3", "-2.5e-3", "4.35e+2", "1E5", "1e400", "1e-400", "2.2250738585072014e-308",
	"1.7976931348623157e308", "00012.5", "1234567890123456789", "12345678901234567890",
	"0.00000000000000000000001", "1e0000", "1e00001", "3.4028235e38", "3.4028236e38",
	"1.", ".5", "-", "", "1e", "1e+", "--1", "1x",
}

// TestParseFloatMatchesStrconv guards the fast path: for every JSON number text parseFloat
// returns the same bits and the same error-ness as strconv.ParseFloat.
func TestParseFloatMatchesStrconv(t *testing.T) {
	for _, s := range floatSeeds {
		checkFloat(t, s)
	}
}

func FuzzParseFloat(f *testing.F) {
	for _, s := range floatSeeds {
		f.Add(s)
	}
	f.Fuzz(checkFloat)
}

func checkFloat(t *testing.T, s string) {
	t.Helper()
	if !IsNumber(s) {
		return // floatOf parses only what isNumber accepted
	}
	got, gotErr := ParseFloat(s)
	want, wantErr := strconv.ParseFloat(s, 64)
	if math.Float64bits(got) != math.Float64bits(want) || (gotErr == nil) != (wantErr == nil) {
		t.Fatalf("%q: %v (%x), %v; strconv gives %v (%x), %v", s, got, math.Float64bits(got), gotErr,
			want, math.Float64bits(want), wantErr)
	}
}

func BenchmarkParseFloat(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseFloat("40.2"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStrconvParseFloat(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := strconv.ParseFloat("40.2", 64); err != nil {
			b.Fatal(err)
		}
	}
}
