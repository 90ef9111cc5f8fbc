package config

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Day and Week are the extra units Duration accepts. A day is always 24 hours: bucket
// arithmetic is in UTC, where days have no daylight-saving transitions.
const (
	Day  = 24 * time.Hour
	Week = 7 * Day
)

var durationUnits = []struct {
	name string
	d    time.Duration
}{
	// Longest names first so "ms" is not read as "m" followed by garbage.
	{"ns", time.Nanosecond},
	{"us", time.Microsecond},
	{"µs", time.Microsecond},
	{"μs", time.Microsecond},
	{"ms", time.Millisecond},
	{"s", time.Second},
	{"m", time.Minute},
	{"h", time.Hour},
	{"d", Day},
	{"w", Week},
}

// ParseDuration parses a Go duration extended with "d" (24h) and "w" (7d) units, e.g. "90d",
// "1w", "1d12h", "250ms". A bare "0" is allowed; any other number needs a unit, because a
// unitless TTL or timeout is ambiguous (seconds? milliseconds?).
func ParseDuration(s string) (Duration, error) {
	orig := s
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("empty duration; use a number with a unit, e.g. 30s, 10m, 90d")
	}
	neg := false
	if s[0] == '-' || s[0] == '+' {
		neg = s[0] == '-'
		s = s[1:]
	}
	if s == "0" {
		return 0, nil
	}
	if s == "" {
		return 0, fmt.Errorf("%q is not a duration; use a number with a unit, e.g. 30s, 10m, 90d", orig)
	}
	var total float64 // float accumulation keeps fractional parts ("1.5h") exact enough, then range-checked
	var exact int64
	allInt := true
	for s != "" {
		i := 0
		for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
			i++
		}
		if i == 0 {
			return 0, fmt.Errorf("%q is not a duration; use a number with a unit, e.g. 30s, 10m, 90d", orig)
		}
		num := s[:i]
		s = s[i:]
		j := 0
		for j < len(s) && !(s[j] >= '0' && s[j] <= '9' || s[j] == '.') {
			j++
		}
		unitName := s[:j]
		s = s[j:]
		if unitName == "" {
			return 0, fmt.Errorf("%q has a number without a unit; use ns, us, ms, s, m, h, d or w, e.g. %ss", orig, num)
		}
		var unit time.Duration
		for _, u := range durationUnits {
			if u.name == unitName {
				unit = u.d
				break
			}
		}
		if unit == 0 {
			return 0, fmt.Errorf("%q has unknown unit %q; use ns, us, ms, s, m, h, d or w", orig, unitName)
		}
		if strings.Contains(num, ".") {
			f, err := strconv.ParseFloat(num, 64)
			if err != nil {
				return 0, fmt.Errorf("%q is not a duration: bad number %q", orig, num)
			}
			allInt = false
			total += f * float64(unit)
			continue
		}
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil || n > math.MaxInt64/int64(unit) {
			return 0, fmt.Errorf("%q is out of range (at most about 292 years)", orig)
		}
		total += float64(n) * float64(unit)
		if exact > math.MaxInt64-n*int64(unit) {
			return 0, fmt.Errorf("%q is out of range (at most about 292 years)", orig)
		}
		exact += n * int64(unit)
	}
	var d int64
	if allInt {
		d = exact
	} else {
		if total >= math.MaxInt64 {
			return 0, fmt.Errorf("%q is out of range (at most about 292 years)", orig)
		}
		d = int64(math.Round(total))
	}
	if neg {
		d = -d
	}
	return Duration(d), nil
}

// Truncate drops the part of d below a second (CQL counts TTLs and gc_grace_seconds in seconds).
func (d Duration) Truncate() Duration { return Duration(time.Duration(d).Truncate(time.Second)) }

// Std returns the value as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// Seconds returns the whole seconds, the unit of CQL TTLs and gc_grace_seconds.
func (d Duration) Seconds() int64 { return int64(time.Duration(d) / time.Second) }

// String formats with the largest units first ("90d", "1d12h", "1m30s", "250ms") so the text
// parses back to the same value.
func (d Duration) String() string {
	if d == 0 {
		return "0s"
	}
	var b strings.Builder
	v := time.Duration(d)
	if v < 0 {
		b.WriteByte('-')
		if v == math.MinInt64 {
			return time.Duration(v).String()
		}
		v = -v
	}
	for _, u := range []struct {
		name string
		d    time.Duration
	}{{"d", Day}, {"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}, {"ms", time.Millisecond}, {"us", time.Microsecond}, {"ns", time.Nanosecond}} {
		if v >= u.d {
			b.WriteString(strconv.FormatInt(int64(v/u.d), 10))
			b.WriteString(u.name)
			v %= u.d
		}
	}
	return b.String()
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(text []byte) error {
	v, err := ParseDuration(string(text))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

var byteUnits = []struct {
	name string
	n    int64
}{
	// String tries these in order: the largest unit that divides the value exactly.
	{"TiB", 1 << 40}, {"TB", 1e12},
	{"GiB", 1 << 30}, {"GB", 1e9},
	{"MiB", 1 << 20}, {"MB", 1e6},
	{"KiB", 1 << 10}, {"KB", 1e3},
	{"B", 1},
}

// ParseBytes parses a byte size: a plain number of bytes ("1048576") or a number with a decimal
// (KB, MB, GB, TB: powers of 1000) or binary (KiB, MiB, GiB, TiB: powers of 1024) unit, e.g.
// "64MiB", "100MB", "1.5GB". Units are case-insensitive; a space before the unit is allowed.
func ParseBytes(s string) (Bytes, error) {
	orig := s
	s = strings.TrimSpace(s)
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	num, unitName := s[:i], strings.TrimSpace(s[i:])
	if num == "" {
		return 0, fmt.Errorf("%q is not a byte size; use e.g. 64MiB, 100MB or a number of bytes", orig)
	}
	mult := int64(1)
	if unitName != "" {
		found := false
		for _, u := range byteUnits {
			if strings.EqualFold(u.name, unitName) {
				mult, found = u.n, true
				break
			}
		}
		if !found {
			return 0, fmt.Errorf("%q has unknown unit %q; use B, KB, MB, GB, TB, KiB, MiB, GiB or TiB", orig, unitName)
		}
	}
	if strings.Contains(num, ".") {
		f, err := strconv.ParseFloat(num, 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not a byte size: bad number %q", orig, num)
		}
		v := math.Round(f * float64(mult))
		if v >= math.MaxInt64 {
			return 0, fmt.Errorf("%q is out of range", orig)
		}
		return Bytes(v), nil
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("%q is out of range", orig)
	}
	return Bytes(n * mult), nil
}

// String formats with the largest unit that divides the value exactly ("64MiB", "100MB",
// "1500B"), so the text parses back to the same value.
func (b Bytes) String() string {
	if b == 0 {
		return "0B"
	}
	v, sign := int64(b), ""
	if v < 0 {
		if v == math.MinInt64 {
			return strconv.FormatInt(v, 10) + "B"
		}
		v, sign = -v, "-"
	}
	for _, u := range byteUnits {
		if v%u.n == 0 {
			return sign + strconv.FormatInt(v/u.n, 10) + u.name
		}
	}
	return sign + strconv.FormatInt(v, 10) + "B" // unreachable: B divides everything
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (b *Bytes) UnmarshalText(text []byte) error {
	v, err := ParseBytes(string(text))
	if err != nil {
		return err
	}
	*b = v
	return nil
}

// MarshalText implements encoding.TextMarshaler.
func (b Bytes) MarshalText() ([]byte, error) { return []byte(b.String()), nil }
