package codec

import (
	"math"
	"math/bits"
	"strconv"
	"strings"
	"time"

	"github.com/bucketsink/sink/packed"
)

// The texts of CQL time and duration, the keys of maps whose keys are not text, and the framing of
// tuples and UDTs: shared by the codecs, whose records spell them alike.

// NanosPerDay is one past the largest CQL time: a time is nanoseconds since midnight.
const NanosPerDay = int64(24 * time.Hour)

// ParseTimeOfDay parses the text of a CQL time, HH:MM:SS with up to nine digits of a fraction
// ("15:04:05", "15:04:05.123456789"), into nanoseconds since midnight.
func ParseTimeOfDay(s string) (int64, bool) {
	if len(s) < 8 || s[2] != ':' || s[5] != ':' {
		return 0, false
	}
	h, okH := digits2(s[0:2])
	m, okM := digits2(s[3:5])
	sec, okS := digits2(s[6:8])
	if !okH || !okM || !okS || h > 23 || m > 59 || sec > 59 {
		return 0, false
	}
	ns := (int64(h)*3600 + int64(m)*60 + int64(sec)) * int64(time.Second)
	if rest := s[8:]; rest != "" {
		frac := rest[1:]
		if rest[0] != '.' || len(frac) == 0 || len(frac) > 9 {
			return 0, false
		}
		f := int64(0)
		for i := 0; i < 9; i++ {
			f *= 10
			if i < len(frac) {
				if frac[i] < '0' || frac[i] > '9' {
					return 0, false
				}
				f += int64(frac[i] - '0')
			}
		}
		ns += f
	}
	return ns, true
}

func digits2(s string) (int, bool) {
	if s[0] < '0' || s[0] > '9' || s[1] < '0' || s[1] > '9' {
		return 0, false
	}
	return int(s[0]-'0')*10 + int(s[1]-'0'), true
}

// TimeProblem is why a value is not a CQL time, for messages.
const TimeProblem = "not a time of day (HH:MM:SS with up to 9 fraction digits, or nanoseconds since midnight from 0 to 86399999999999) for CQL time"

// Duration is a CQL duration: months, days and nanoseconds, each with the sign of the whole.
type Duration struct {
	Months, Days int32
	Nanos        int64
}

// DurationProblem is why a value is not a CQL duration, for messages.
const DurationProblem = "not a duration (ISO 8601 such as P1DT2H or P2W, CQL's 1mo2d3h4m5s6ms7us8ns, or Go's 1h30m or 1.5s) for CQL duration"

// ParseDuration parses the text of a CQL duration in any of the forms CQL takes for a duration
// literal, and Go's: ISO 8601 (P1Y2M3DT4H5M6S, P2W, with a fraction of a second), CQL's units
// (1y2mo3w4d5h6m7s8ms9us10ns; µs too), Go's (1h30m, 1.5s: only units of a fixed length, so all in
// nanoseconds), each with an optional leading minus. Years and months become months, weeks and days
// days, and the rest nanoseconds, as Cassandra does.
func ParseDuration(s string) (Duration, bool) {
	neg := false
	body := s
	if strings.HasPrefix(body, "-") {
		neg, body = true, body[1:]
	}
	var d Duration
	var ok bool
	switch {
	case body == "":
		return Duration{}, false
	case body[0] == 'P':
		d, ok = parseISODuration(body[1:])
	default:
		if d, ok = parseUnitDuration(body); !ok {
			// Go's form: fractions of fixed units, all nanoseconds.
			g, err := time.ParseDuration(body)
			if err != nil || g < 0 || strings.HasPrefix(body, "+") {
				return Duration{}, false
			}
			d, ok = Duration{Nanos: int64(g)}, true
		}
	}
	if !ok {
		return Duration{}, false
	}
	if neg {
		d = Duration{-d.Months, -d.Days, -d.Nanos}
	}
	return d, true
}

// durationUnits are CQL's units: months, days or nanoseconds per unit.
var durationUnits = map[string]struct{ months, days, nanos int64 }{
	"y": {months: 12}, "mo": {months: 1}, "w": {days: 7}, "d": {days: 1},
	"h": {nanos: int64(time.Hour)}, "m": {nanos: int64(time.Minute)}, "s": {nanos: int64(time.Second)},
	"ms": {nanos: int64(time.Millisecond)}, "us": {nanos: int64(time.Microsecond)}, "µs": {nanos: int64(time.Microsecond)},
	"ns": {nanos: 1},
}

// parseUnitDuration parses CQL's form: whole numbers, each followed by a unit.
func parseUnitDuration(s string) (Duration, bool) {
	var months, days, nanos int64
	for s != "" {
		i := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		j := i
		for j < len(s) && (s[j] < '0' || s[j] > '9') {
			j++
		}
		if i == 0 || j == i {
			return Duration{}, false
		}
		n, err := strconv.ParseInt(s[:i], 10, 64)
		u, ok := durationUnits[strings.ToLower(s[i:j])]
		if err != nil || !ok {
			return Duration{}, false
		}
		if !addTimes(&months, n, u.months) || !addTimes(&days, n, u.days) || !addTimes(&nanos, n, u.nanos) {
			return Duration{}, false
		}
		s = s[j:]
	}
	return makeDuration(months, days, nanos)
}

// parseISODuration parses ISO 8601's form after its P: [nY][nM][nW][nD][T[nH][nM][n[.f]S]].
func parseISODuration(s string) (Duration, bool) {
	var months, days, nanos int64
	date, clock, hasT := strings.Cut(s, "T")
	if s == "" || hasT && clock == "" {
		return Duration{}, false
	}
	for _, part := range []struct {
		text  string
		units map[byte]struct{ months, days, nanos int64 }
	}{
		{date, map[byte]struct{ months, days, nanos int64 }{'Y': {months: 12}, 'M': {months: 1}, 'W': {days: 7}, 'D': {days: 1}}},
		{clock, map[byte]struct{ months, days, nanos int64 }{'H': {nanos: int64(time.Hour)}, 'M': {nanos: int64(time.Minute)}, 'S': {nanos: int64(time.Second)}}},
	} {
		t := part.text
		for t != "" {
			i := 0
			for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
				i++
			}
			if i == 0 || i == len(t) {
				return Duration{}, false
			}
			u, ok := part.units[t[i]]
			if !ok {
				return Duration{}, false
			}
			num := t[:i]
			if whole, frac, dot := strings.Cut(num, "."); dot {
				// Only seconds take a fraction, to the nanosecond.
				if t[i] != 'S' || whole == "" || frac == "" || len(frac) > 9 || strings.Contains(frac, ".") {
					return Duration{}, false
				}
				f, err := strconv.ParseInt((frac + "000000000")[:9], 10, 64)
				if err != nil {
					return Duration{}, false
				}
				nanos += f
				num = whole
			}
			n, err := strconv.ParseInt(num, 10, 64)
			if err != nil || !addTimes(&months, n, u.months) || !addTimes(&days, n, u.days) || !addTimes(&nanos, n, u.nanos) {
				return Duration{}, false
			}
			t = t[i+1:]
		}
	}
	return makeDuration(months, days, nanos)
}

// addTimes adds n×per to *sum, false on overflow.
func addTimes(sum *int64, n, per int64) bool {
	if per == 0 {
		return true
	}
	hi, lo := bits.Mul64(uint64(n), uint64(per))
	if hi != 0 || lo > math.MaxInt64 {
		return false
	}
	s, c := bits.Add64(uint64(*sum), lo, 0)
	if c != 0 || s > math.MaxInt64 {
		return false
	}
	*sum = int64(s)
	return true
}

func makeDuration(months, days, nanos int64) (Duration, bool) {
	if months > math.MaxInt32 || days > math.MaxInt32 {
		return Duration{}, false
	}
	return Duration{Months: int32(months), Days: int32(days), Nanos: nanos}, true
}

// AppendDuration appends d's wire bytes: months, days and nanoseconds as CQL's variable-length
// zigzag integers (gocql's encoding of a Duration).
func AppendDuration(dst []byte, d Duration) []byte {
	dst = appendVint(dst, int64(d.Months))
	dst = appendVint(dst, int64(d.Days))
	return appendVint(dst, d.Nanos)
}

// appendVint appends v as Cassandra's unsigned vint of its zigzag form: the count of extra bytes in
// the leading one bits of the first byte, then the value big-endian.
func appendVint(dst []byte, v int64) []byte {
	z := uint64(v>>63) ^ uint64(v<<1)
	n := (639 - bits.LeadingZeros64(z)*9) >> 6 // bytes needed, as gocql computes it
	if n <= 1 {
		return append(dst, byte(z))
	}
	var b [9]byte
	for i := n - 1; i >= 0; i-- {
		b[i] = byte(z)
		z >>= 8
	}
	b[0] |= ^byte(0xff >> uint(n-1))
	return append(dst, b[:n]...)
}

// AppendTime appends the wire bytes of a CQL time of ns nanoseconds since midnight.
func AppendTime(dst []byte, ns int64) []byte { return packed.AppendBigint(dst, ns) }

// AppendMapKey appends the wire bytes, unframed, of a map key of kind k that a record spells as text
// s (a JSON object key, an Avro map key): text and ascii as they are, an integer kind in decimal,
// and the kinds SetText reads as it reads them (timestamp in RFC 3339, date, uuid, timeuuid, inet,
// varint). Its error says why s is not a key of kind k.
func AppendMapKey(dst []byte, k packed.Kind, s []byte) ([]byte, error) {
	switch k {
	case packed.KTinyint, packed.KSmallint, packed.KInt, packed.KBigint:
		n, err := strconv.ParseInt(string(s), 10, 64)
		if b := intBounds[k]; err != nil || n < b[0] || n > b[1] {
			return dst, BadValue(Shown(s), "not a whole number in range for a CQL "+k.String()+" map key")
		}
		at := len(dst)
		dst = AppendElement(dst, k, &Value{N: n})
		return append(dst[:at], dst[at+4:]...), nil
	}
	var v Value
	if _, err := SetText(&v, k, s, nil); err != nil {
		return dst, err
	}
	at := len(dst)
	dst = AppendElement(dst, k, &v)
	return append(dst[:at], dst[at+4:]...), nil
}

// AppendNullElement appends a null tuple element or UDT field: the length -1.
func AppendNullElement(dst []byte) []byte { return append(dst, 0xff, 0xff, 0xff, 0xff) }
