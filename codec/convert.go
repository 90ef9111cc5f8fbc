package codec

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"net/netip"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"gopkg.in/inf.v0"

	"github.com/bucketsink/sink/packed"
)

// Conversions shared by the codecs: a decoded string, integer or float into the Value of a column kind, and a
// Value into the wire bytes of a collection element. Their errors are plain (the codec wraps them with the
// field), and a value that does not fit is a *ValueError, which shows the value only in its quoted form.

// SetText converts string s into v for kind k: text and ascii (checked), blob, and the kinds a string spells
// (timestamp in RFC 3339, date as YYYY-MM-DD, uuid, timeuuid, inet, decimal, varint, time as HH:MM:SS, duration
// in the forms ParseDuration reads). v.B aliases s or buf. s
// is valid UTF-8: a codec checks that as it reads a string, since bytes that are not are not a string of its
// format at all.
func SetText(v *Value, k packed.Kind, s, buf []byte) ([]byte, error) {
	switch k {
	case packed.KText, packed.KBlob:
		v.B = s
	case packed.KASCII:
		if !ASCII(s) {
			return buf, BadValue(Shown(s), "not ASCII for CQL ascii")
		}
		v.B = s
	case packed.KTimestamp:
		t, err := time.Parse(time.RFC3339Nano, string(s))
		if err != nil {
			return buf, BadValue(Shown(s), "not RFC 3339 with an offset for CQL timestamp")
		}
		if t = t.UTC(); !InRange(t) {
			return buf, BadValue(Shown(s), "out of range for CQL timestamp (years 0000 to 9999)")
		}
		v.T = t
	case packed.KDate:
		t, err := time.Parse(time.DateOnly, string(s))
		if err != nil || len(s) != len(time.DateOnly) {
			return buf, BadValue(Shown(s), "not a date (YYYY-MM-DD) for CQL date")
		}
		v.T = t
	case packed.KUUID, packed.KTimeUUID:
		u, ok := ParseUUID(s)
		if !ok {
			return buf, BadValue(Shown(s), "not a UUID (8-4-4-4-12 hex digits) for CQL "+k.String())
		}
		return buf, SetUUID(v, k, u)
	case packed.KInet:
		a, err := netip.ParseAddr(string(s))
		if err != nil || a.Zone() != "" {
			return buf, BadValue(Shown(s), "not an IP address for CQL inet")
		}
		at := len(buf)
		buf = append(buf, a.AsSlice()...)
		v.B = buf[at:]
	case packed.KDecimal:
		d, ok := new(inf.Dec).SetString(string(s))
		if !ok {
			return buf, BadValue(Shown(s), "not a decimal number for CQL decimal")
		}
		at := len(buf)
		buf = packed.AppendDecimal(buf, d)
		v.B = buf[at:]
	case packed.KVarint:
		n, ok := new(big.Int).SetString(string(s), 10)
		if !ok {
			return buf, BadValue(Shown(s), "not an integer for CQL varint")
		}
		at := len(buf)
		buf = packed.AppendVarint(buf, n)
		v.B = buf[at:]
	case packed.KTime:
		ns, ok := ParseTimeOfDay(string(s))
		if !ok {
			return buf, BadValue(Shown(s), TimeProblem)
		}
		at := len(buf)
		buf = AppendTime(buf, ns)
		v.B = buf[at:]
	case packed.KDuration:
		d, ok := ParseDuration(string(s))
		if !ok {
			return buf, BadValue(Shown(s), DurationProblem)
		}
		at := len(buf)
		buf = AppendDuration(buf, d)
		v.B = buf[at:]
	default:
		return buf, fmt.Errorf("a string cannot feed CQL %s", k)
	}
	return buf, nil
}

// SetUUID sets v.U to u, refusing a UUID that is not version 1 for timeuuid.
func SetUUID(v *Value, k packed.Kind, u [16]byte) error {
	if k == packed.KTimeUUID && u[6]>>4 != 1 {
		return fmt.Errorf("not a version 1 UUID for CQL timeuuid")
	}
	v.U = u
	return nil
}

// intBounds are the ranges of the CQL integer kinds.
var intBounds = map[packed.Kind][2]int64{
	packed.KTinyint: {math.MinInt8, math.MaxInt8}, packed.KSmallint: {math.MinInt16, math.MaxInt16},
	packed.KInt: {math.MinInt32, math.MaxInt32}, packed.KBigint: {math.MinInt64, math.MaxInt64},
}

// SetInteger converts integer x (negative only when signed; an unsigned 64-bit value above MaxInt64 has
// signed false) into v for kind k: the integer kinds (range-checked), float, double, varint, decimal (scale 0),
// and timestamp and date, where x counts units of tf's unit since the Unix epoch (tf is nil for the other
// kinds).
func SetInteger(v *Value, k packed.Kind, x int64, signed bool, tf *TimeFormat, buf []byte) ([]byte, error) {
	big64 := !signed && x < 0 // an unsigned value of 2^63 or more
	switch k {
	case packed.KTinyint, packed.KSmallint, packed.KInt, packed.KBigint:
		if b := intBounds[k]; big64 || x < b[0] || x > b[1] {
			return buf, BadValue(showInt(x, signed), "out of range for CQL "+k.String())
		}
		v.N = x
	case packed.KFloat, packed.KDouble:
		v.F = float64(x)
		if big64 {
			v.F = float64(uint64(x))
		}
	case packed.KVarint, packed.KDecimal:
		at := len(buf)
		if k == packed.KDecimal {
			buf = append(buf, 0, 0, 0, 0) // scale 0
		}
		// A sign byte in front: 0 for an unsigned value, whose top bit is not a sign; else x's own.
		var w [9]byte
		if !big64 && x < 0 {
			w[0] = 0xff
		}
		binary.BigEndian.PutUint64(w[1:], uint64(x))
		buf = AppendMinimal(buf, w[:])
		v.B = buf[at:]
	case packed.KTimestamp, packed.KDate:
		if tf.IntegerUnit(k) == 0 {
			return buf, fmt.Errorf("an integer cannot feed CQL %s", k)
		}
		t, why := tf.Integer(k, x, "for CQL "+k.String())
		if big64 {
			why = tf.outOfRange("for CQL " + k.String())
		}
		if why != "" {
			shown := showInt(x, signed)
			if k == packed.KDate {
				shown += " days"
			}
			return buf, BadValue(shown, why)
		}
		v.T = t
	default:
		return buf, fmt.Errorf("an integer cannot feed CQL %s", k)
	}
	return buf, nil
}

func showInt(x int64, signed bool) string {
	if signed {
		return fmt.Sprint(x)
	}
	return fmt.Sprint(uint64(x))
}

// SetFloat converts f into v for float or double, refusing a finite value beyond float's range.
func SetFloat(v *Value, k packed.Kind, f float64) error {
	if k == packed.KFloat && math.Abs(f) > math.MaxFloat32 && !math.IsInf(f, 0) {
		return BadValue(strconv.FormatFloat(f, 'g', -1, 64), "out of range for CQL float")
	}
	v.F = f
	return nil
}

// UnixTime is x units of unit since the Unix epoch, in UTC, and whether it is in range for CQL timestamp.
func UnixTime(x int64, unit time.Duration) (time.Time, bool) {
	if unit <= 0 {
		return time.Time{}, false
	}
	per := int64(time.Second / unit) // units per second; 0 when a unit is longer than a second
	var sec, nsec int64
	if per > 0 {
		sec, nsec = x/per, (x%per)*int64(unit)
	} else {
		secs := int64(unit / time.Second)
		if x > math.MaxInt64/secs || x < math.MinInt64/secs {
			return time.Time{}, false
		}
		sec = x * secs
	}
	if sec < minUnix || sec > maxUnix {
		return time.Time{}, false
	}
	t := time.Unix(sec, nsec).UTC()
	return t, InRange(t)
}

// MinTime and MaxTime bound a Value's T: years 0000 to 9999, the instants whose bucket keys are part of the
// on-disk contract (bucketer.MinTime and MaxTime, which TestTimeBoundsAreTheBucketers keeps them equal to; the
// seam does not import the bucketer).
var (
	MinTime = time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)
	MaxTime = time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)
)

var (
	minUnix = MinTime.Unix()
	maxUnix = MaxTime.Unix()
)

// InRange reports whether t is within MinTime and MaxTime.
func InRange(t time.Time) bool { return !t.Before(MinTime) && !t.After(MaxTime) }

// AppendElement appends the framed wire bytes of collection element v of kind k: a 4-byte length, then the
// bytes.
func AppendElement(dst []byte, k packed.Kind, v *Value) []byte {
	at := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	switch k {
	case packed.KTinyint:
		dst = packed.AppendTinyint(dst, int8(v.N))
	case packed.KSmallint:
		dst = packed.AppendSmallint(dst, int16(v.N))
	case packed.KInt:
		dst = packed.AppendInt(dst, int32(v.N))
	case packed.KBigint:
		dst = packed.AppendBigint(dst, v.N)
	case packed.KFloat:
		dst = packed.AppendFloat(dst, float32(v.F))
	case packed.KDouble:
		dst = packed.AppendDouble(dst, v.F)
	case packed.KTimestamp:
		dst = packed.AppendTimestamp(dst, v.T)
	case packed.KDate:
		dst = packed.AppendDate(dst, v.T)
	case packed.KUUID, packed.KTimeUUID:
		dst = append(dst, v.U[:]...)
	default: // text, ascii and the kinds handed over as wire bytes
		dst = append(dst, v.B...)
	}
	binary.BigEndian.PutUint32(dst[at:], uint32(len(dst)-at-4))
	return dst
}

// AppendMinimal appends the big-endian two's complement integer b without the leading bytes that only repeat
// the sign (a single 0 for an empty b): the form CQL varint and decimal values take.
func AppendMinimal(dst, b []byte) []byte {
	if len(b) == 0 {
		return append(dst, 0)
	}
	i := 0
	for i < len(b)-1 && (b[i] == 0 && b[i+1]&0x80 == 0 || b[i] == 0xff && b[i+1]&0x80 != 0) {
		i++
	}
	return append(dst, b[i:]...)
}

// ASCII reports whether b is all ASCII.
func ASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// maxShown bounds how much of a bad value a message repeats.
const maxShown = 64

// Shown quotes b for an error message, cut at 64 bytes.
func Shown(b []byte) string {
	if len(b) > maxShown {
		return fmt.Sprintf("%q...", b[:maxShown])
	}
	return fmt.Sprintf("%q", b)
}

// MapEntry is a map entry a codec collects: its key, and its framed value at buf[At:End].
type MapEntry struct {
	Key     []byte
	At, End int
}

// SortedMap rewrites the map collected at buf[start:] (a 4-byte count placeholder, then the framed values of
// es) as its CQL wire form: entries in key order, the last of equal keys kept. That is Protobuf's rule for
// a map field and what Avro's reference decoders do; JSON, whose objects have no such rule, keeps the first.
func SortedMap(buf []byte, start int, es []MapEntry) []byte {
	slices.SortStableFunc(es, func(a, b MapEntry) int { return bytes.Compare(a.Key, b.Key) })
	n := 0
	for i := range es {
		if i+1 < len(es) && bytes.Equal(es[i].Key, es[i+1].Key) {
			continue
		}
		es[n] = es[i]
		n++
	}
	mid := len(buf)
	buf = binary.BigEndian.AppendUint32(buf, uint32(n))
	for _, e := range es[:n] {
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(e.Key)))
		buf = append(buf, e.Key...)
		buf = append(buf, buf[e.At:e.End]...)
	}
	m := copy(buf[start:], buf[mid:])
	return buf[:start+m]
}

// UTF8Problem says where b stops being UTF-8, or "" when it is valid. CQL text must be UTF-8: Cassandra
// refuses anything else with "String didn't validate.", which names neither the column nor the byte, so
// the sink checks first.
func UTF8Problem(b []byte) string {
	if utf8.Valid(b) {
		return ""
	}
	at := 0
	for at < len(b) {
		r, n := utf8.DecodeRune(b[at:])
		if r == utf8.RuneError && n <= 1 {
			break
		}
		at += n
	}
	return fmt.Sprintf("is not valid UTF-8 for CQL text: byte 0x%02x at offset %d of %d", b[at], at, len(b))
}
