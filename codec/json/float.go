package json

import "strconv"

// IsNumber reports whether s is a JSON number: -?digits(.digits)?([eE][+-]?digits)?.
// fastjson's scanner is lenient (it accepts "1-2", "inf", "nan"), so every numeric value is
// checked with this before it is trusted. Leading zeros are tolerated.
func IsNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	start := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == start {
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		start = i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == start {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		start = i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == start {
			return false
		}
	}
	return i == len(s)
}

// ParseFloat returns exactly what strconv.ParseFloat(s, 64) returns for the text of a JSON number
// (see IsNumber). strconv was a tenth of a sensor record's mapping (three floats); most readings
// have few digits and no exponent, and for those the exact result is one IEEE division or
// multiplication (parseFloatFast), everything else goes to strconv. TestParseFloatMatchesStrconv
// and FuzzParseFloat hold the equality.
func ParseFloat(s string) (float64, error) {
	if f, ok := parseFloatFast(s); ok {
		return f, nil
	}
	return strconv.ParseFloat(s, 64)
}

// float64pow10 are the powers of ten a float64 holds exactly.
var float64pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// parseFloatFast handles -?digits(.digits)?([eE][+-]?digits)? whose digits form an integer of at
// most 2^53 and whose decimal exponent is within ±22. Both the integer and the power of ten are
// then exact float64s, so one correctly rounded division or multiplication gives the correctly
// rounded result, the one strconv gives (Clinger's fast path, which strconv takes first too).
// false means "not handled here", not "invalid".
func parseFloatFast(s string) (float64, bool) {
	i := 0
	neg := i < len(s) && s[i] == '-'
	if neg {
		i++
	}
	var mant uint64
	nd := 0
	start := i
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		mant = mant*10 + uint64(s[i]-'0')
		nd++
	}
	if i == start {
		return 0, false
	}
	exp := 0
	if i < len(s) && s[i] == '.' {
		i++
		start = i
		for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			mant = mant*10 + uint64(s[i]-'0')
			nd++
			exp--
		}
		if i == start {
			return 0, false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		eneg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			eneg = s[i] == '-'
			i++
		}
		start = i
		e := 0
		for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			if i-start >= 4 {
				return 0, false
			}
			e = e*10 + int(s[i]-'0')
		}
		if i == start {
			return 0, false
		}
		if eneg {
			e = -e
		}
		exp += e
	}
	// 19 digits cannot overflow the uint64; more might have.
	if i != len(s) || nd > 19 || mant > 1<<53 {
		return 0, false
	}
	f := float64(mant)
	switch {
	case exp == 0:
	case exp < 0 && exp >= -22:
		f /= float64pow10[-exp]
	case exp > 0 && exp <= 22:
		f *= float64pow10[exp]
	default:
		return 0, false
	}
	if neg {
		f = -f
	}
	return f, true
}
