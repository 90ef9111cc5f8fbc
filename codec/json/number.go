package json

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/bucketsink/sink/codec"
)

// The numbers of JSON as the sink reads them: whole numbers for the integer columns, epoch
// numbers for timestamps. Their text is a JSON number (IsNumber) already.

// IntStatus is what ParseIntegral found.
type IntStatus uint8

const (
	IntOK       IntStatus = iota // a whole number within int64
	IntFraction                  // a number with a fraction (1.5)
	IntRange                     // a whole number beyond int64
)

// ParseIntegral parses a JSON number that must be a whole number: 42, -7, 1e3 and 12.0 are;
// 1.5 is not. Beyond int64 it reports IntRange.
func ParseIntegral(s string) (int64, IntStatus) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err == nil {
		return n, IntOK
	}
	if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
		return 0, IntRange
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, IntRange // syntax was checked by IsNumber: only a range error remains
	}
	if f != math.Trunc(f) {
		return 0, IntFraction
	}
	if f < -(1<<63) || f >= 1<<63 {
		return 0, IntRange
	}
	return int64(f), IntOK
}

// ParseUnix parses an epoch number (a valid JSON number, see IsNumber) counted in u, exactly: the
// integer and fraction digits are handled as integers so "1705312800.123456789" keeps its
// nanoseconds. Exponent forms go through float64 and must come out whole in u. The result is UTC
// and within years 0000-9999.
func ParseUnix(s string, u time.Duration) (time.Time, bool) {
	neg := false
	if s != "" && s[0] == '-' {
		neg, s = true, s[1:]
	}
	intPart, frac := s, ""
	if strings.ContainsAny(s, "eE") {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || f != math.Trunc(f) || f >= 1<<62 {
			return time.Time{}, false
		}
		intPart = strconv.FormatInt(int64(f), 10)
	} else if dot := strings.IndexByte(s, '.'); dot >= 0 {
		intPart, frac = s[:dot], s[dot+1:]
	}
	n, err := strconv.ParseUint(intPart, 10, 63)
	if err != nil {
		return time.Time{}, false
	}
	perSec := uint64(time.Second / u)
	sec, rem := n/perSec, n%perSec
	nsec := rem * uint64(u)
	// Fraction digits below one nanosecond are dropped.
	scale := uint64(u) / 10
	for i := 0; i < len(frac) && scale > 0; i++ {
		nsec += uint64(frac[i]-'0') * scale
		scale /= 10
	}
	if sec > uint64(codec.MaxTime.Unix()-codec.MinTime.Unix()) {
		return time.Time{}, false
	}
	ss, ns := int64(sec), int64(nsec)
	if neg {
		ss, ns = -ss, -ns
	}
	t := time.Unix(ss, ns).UTC()
	if !codec.InRange(t) {
		return time.Time{}, false
	}
	return t, true
}
