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

// ParseIntegral parses a JSON number that must be a whole number: 42, -7, 1e3, 12.0 and
// 1234567890123456789.0 are, read exactly from their digits (never rounded through a float64); 1.5
// and 5e-1 are not. Beyond int64 it reports IntRange.
func ParseIntegral(s string) (int64, IntStatus) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, IntOK
	}
	// Not a plain int64: a fraction, an exponent or too many digits (strconv's range error comes
	// before it sees a point or an exponent further on, so it is not trusted).
	d := splitNumber(s)
	first := d.firstNonZero()
	if first == d.len() {
		return 0, IntOK // every digit is 0: -0.0, 0e5
	}
	for i := max(d.point, first); i < d.len(); i++ {
		if d.digit(i) != '0' {
			return 0, IntFraction
		}
	}
	if d.point-first > 19 {
		return 0, IntRange
	}
	var u uint64
	for i := first; i < d.point; i++ {
		u = u*10 + uint64(d.digit(i)-'0') // 19 digits fit in a uint64
	}
	switch {
	case d.neg && u <= 1<<63:
		return int64(-u), IntOK // -u wraps to the negative value, MinInt64 included
	case !d.neg && u <= math.MaxInt64:
		return int64(u), IntOK
	}
	return 0, IntRange
}

// decimalText is a JSON number's text (see IsNumber) split exactly: its sign, the digits before and after its
// decimal point as written, and where the point falls among all of them once the exponent is applied (it may
// fall before the first digit or past the last).
type decimalText struct {
	neg    bool
	ip, fp string
	point  int
}

// maxShift bounds the exponent a number's point is moved by: far past any digit a timestamp or an int64
// can hold, and small enough that no index arithmetic overflows.
const maxShift = 1 << 20

func splitNumber(s string) decimalText {
	var d decimalText
	if s != "" && s[0] == '-' {
		d.neg, s = true, s[1:]
	}
	mant, exp := s, 0
	if e := strings.IndexAny(s, "eE"); e >= 0 {
		mant = s[:e]
		es, neg := s[e+1:], false
		if es != "" && (es[0] == '+' || es[0] == '-') {
			neg, es = es[0] == '-', es[1:]
		}
		for i := 0; i < len(es) && exp < maxShift; i++ {
			exp = exp*10 + int(es[i]-'0')
		}
		exp = min(exp, maxShift)
		if neg {
			exp = -exp
		}
	}
	d.ip = mant
	if dot := strings.IndexByte(mant, '.'); dot >= 0 {
		d.ip, d.fp = mant[:dot], mant[dot+1:]
	}
	d.point = len(d.ip) + exp
	return d
}

func (d *decimalText) len() int { return len(d.ip) + len(d.fp) }

// digit is the i-th digit, '0' outside the written ones.
func (d *decimalText) digit(i int) byte {
	switch {
	case i < 0 || i >= d.len():
		return '0'
	case i < len(d.ip):
		return d.ip[i]
	}
	return d.fp[i-len(d.ip)]
}

// firstNonZero is the index of the first digit that is not 0, len() if none is.
func (d *decimalText) firstNonZero() int {
	i := 0
	for i < d.len() && d.digit(i) == '0' {
		i++
	}
	return i
}

// ParseUnix parses an epoch number (a valid JSON number, see IsNumber) counted in u, exactly: its
// digits are handled as integers, the exponent moving the decimal point among them, so
// "1705312800.123456789" and "1.705312800123456789e9" keep their nanoseconds. Fraction digits below
// one nanosecond are dropped. The result is UTC and within years 0000-9999.
func ParseUnix(s string, u time.Duration) (time.Time, bool) {
	d := splitNumber(s)
	first := d.firstNonZero()
	if first == d.len() {
		first = d.point // zero: no whole digit to read, however far the exponent moves the point
	}
	if d.point-first > 19 {
		return time.Time{}, false // beyond 63 bits
	}
	var n uint64
	for i := min(first, d.point); i < d.point; i++ {
		n = n*10 + uint64(d.digit(i)-'0') // 19 digits fit in a uint64
	}
	if n > math.MaxInt64 {
		return time.Time{}, false
	}
	perSec := uint64(time.Second / u)
	sec, rem := n/perSec, n%perSec
	nsec := rem * uint64(u)
	scale := uint64(u) / 10
	for i := d.point; i < d.len() && scale > 0; i++ {
		nsec += uint64(d.digit(i)-'0') * scale
		scale /= 10
	}
	if sec > uint64(codec.MaxTime.Unix()-codec.MinTime.Unix()) {
		return time.Time{}, false
	}
	ss, ns := int64(sec), int64(nsec)
	if d.neg {
		ss, ns = -ss, -ns
	}
	t := time.Unix(ss, ns).UTC()
	if !codec.InRange(t) {
		return time.Time{}, false
	}
	return t, true
}
