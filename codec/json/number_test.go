package json

import (
	"math"
	"math/big"
	"testing"
	"time"

	"github.com/bucketsink/sink/codec"
)

var integralSeeds = []string{
	"0", "-0", "0.0", "-0.0", "0e5", "42", "-7", "12.0", "1e3", "1.0e3", "12e0", "1E+2", "-1.50e1",
	"1234567890123456789.0", "1234567890123456789.000", "123456789012345678.9e1", "1.234567890123456789e18",
	"9223372036854775807.0", "9223372036854775808.0", "-9223372036854775808.0", "-9223372036854775809.0",
	"9.223372036854775807e18", "9.223372036854775808e18", "-9.223372036854775808e18",
	"1.5", "-1.5", "5e-1", "0.5e1", "0.05e1", "1e-400", "1e400", "1.5e400", "00012.000", "0.000123e6",
	"10000000000000000000000e-4", "12345678901234567890.5", "1e1000000000000000000000",
	"1e-1000000000000000000000",
}

// exactly is big.Rat's exact reading of a number's text; it refuses exponents beyond an int32.
func exactly(s string) (*big.Rat, bool) { return new(big.Rat).SetString(s) }

// integralOracle is what ParseIntegral must say, from the exact value of r.
func integralOracle(r *big.Rat) (int64, IntStatus) {
	if !r.IsInt() {
		return 0, IntFraction
	}
	n := r.Num()
	if !n.IsInt64() {
		return 0, IntRange
	}
	return n.Int64(), IntOK
}

func checkIntegral(t *testing.T, s string) {
	if !IsNumber(s) || len(s) > 64 {
		return
	}
	r, ok := exactly(s)
	if !ok {
		return
	}
	n, st := ParseIntegral(s)
	wn, wst := integralOracle(r)
	if n != wn || st != wst {
		t.Errorf("ParseIntegral(%q) = %d, %d; exactly it is %d, %d", s, n, st, wn, wst)
	}
}

// A whole number written with a fraction or an exponent is read exactly from its digits: through a float64,
// 1234567890123456789.0 became 1234567890123456768.
func TestParseIntegralIsExact(t *testing.T) {
	for _, s := range integralSeeds {
		checkIntegral(t, s)
	}
	for s, want := range map[string]int64{"1234567890123456789.0": 1234567890123456789, "1.0e3": 1000, "12e0": 12,
		"-9223372036854775808.0": math.MinInt64, "9.223372036854775807e18": math.MaxInt64} {
		if n, st := ParseIntegral(s); n != want || st != IntOK {
			t.Errorf("%s: %d, %d, want %d", s, n, st, want)
		}
	}
	for s, want := range map[string]IntStatus{"1.5": IntFraction, "1e-1000000000000000000000": IntFraction,
		"1e1000000000000000000000": IntRange, "10000000000000000000000": IntRange} {
		if _, st := ParseIntegral(s); st != want {
			t.Errorf("%s: %d, want %d", s, st, want)
		}
	}
}

func FuzzParseIntegral(f *testing.F) {
	for _, s := range integralSeeds {
		f.Add(s)
	}
	f.Fuzz(checkIntegral)
}

// unixOracle is what ParseUnix must say: r of u exactly, truncated toward zero to the nanosecond, refused
// past 63 bits of whole u or outside years 0000-9999.
func unixOracle(r *big.Rat, u time.Duration) (time.Time, bool) {
	whole := new(big.Int).Quo(r.Num(), r.Denom())
	if new(big.Int).Abs(whole).Cmp(big.NewInt(math.MaxInt64)) > 0 {
		return time.Time{}, false
	}
	ns := new(big.Rat).Mul(r, new(big.Rat).SetInt64(int64(u)))
	n := new(big.Int).Quo(ns.Num(), ns.Denom()) // toward zero
	sec, nsec := new(big.Int).QuoRem(n, big.NewInt(1e9), new(big.Int))
	if !sec.IsInt64() {
		return time.Time{}, false
	}
	tm := time.Unix(sec.Int64(), nsec.Int64()).UTC()
	if !codec.InRange(tm) {
		return time.Time{}, false
	}
	return tm, true
}

var unixSeeds = []string{
	"1705312800", "1705312800.123456789", "1.705312800123456789e9", "17053128001234.56789e-4", "-1.5", "-0.5e-9",
	"0", "-0.0e3", "1705312800123", "1.705312800123e12", "1705312800123456789", "1.705312800123456789e18",
	"253402300799.999999999", "253402300800", "-62167219200", "-62167219201", "1e400", "1e-400", "9.3e18",
	"0.0000000001", "1e1000000000000000000000", "12345678901234567890",
}

func checkUnix(t *testing.T, s string) {
	if !IsNumber(s) || len(s) > 64 {
		return
	}
	r, ok := exactly(s)
	if !ok {
		return
	}
	for _, u := range []time.Duration{time.Second, time.Millisecond, time.Microsecond, time.Nanosecond} {
		got, ok := ParseUnix(s, u)
		want, wok := unixOracle(r, u)
		if ok != wok || !got.Equal(want) {
			t.Errorf("ParseUnix(%q, %v) = %v, %v; exactly it is %v, %v", s, u, got, ok, want, wok)
		}
	}
}

// An epoch number with an exponent keeps every digit, as the same number without one does.
func TestParseUnixIsExact(t *testing.T) {
	for _, s := range unixSeeds {
		checkUnix(t, s)
	}
	a, _ := ParseUnix("1705312800.123456789", time.Second)
	b, ok := ParseUnix("1.705312800123456789e9", time.Second)
	if !ok || !a.Equal(b) || b.Nanosecond() != 123456789 {
		t.Errorf("with an exponent %v, without %v", b, a)
	}
	for _, s := range []string{"1e1000000000000000000000", "1e-1000000000000000000000"} {
		got, ok := ParseUnix(s, time.Millisecond)
		if s[2] == '-' != (ok && got.Equal(time.Unix(0, 0))) {
			t.Errorf("%s: %v, %v", s, got, ok)
		}
	}
}

func FuzzParseUnix(f *testing.F) {
	for _, s := range unixSeeds {
		f.Add(s)
	}
	f.Fuzz(checkUnix)
}
