package mapper

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"math/big"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
	"unsafe"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"github.com/valyala/fastjson"
	"gopkg.in/inf.v0"

	"github.com/bucketsink/sink/bucketer"
	"github.com/bucketsink/sink/codec"
	jsonc "github.com/bucketsink/sink/codec/json"
	"github.com/bucketsink/sink/packed"
)

// problem says why a JSON value does not fit a column type. The zero value means no problem.
// The caller adds the column and the field; elem names the offending element of a collection.
type problem struct {
	msg  string
	elem string // where in a collection: "element 3", "entry 2" (a map's entries in the object's order)
	key  []byte // a map entry's key, shown only in the quoted message
	val  *fastjson.Value
}

func (p problem) ok() bool { return p.msg == "" }

// err is the codec.ValueError of the problem of the value at subject (`column c: field "f"`).
func (p problem) err(subject string, s *scratch) *codec.ValueError {
	plain := subject + prefixed(" ", p.elem)
	quoted := plain
	if p.key != nil {
		quoted = subject + " key " + strconv.Quote(string(p.key))
	}
	if p.val == nil { // a value whose bytes are not text is described, not shown
		return &codec.ValueError{Plain: plain + " " + p.msg, Quoted: quoted + " " + p.msg}
	}
	return &codec.ValueError{Plain: plain + " is " + p.msg, Quoted: quoted + " is " + show(p.val, s) + ", " + p.msg}
}

func fail(v *fastjson.Value, msg string) problem { return problem{msg: msg, val: v} }

// bstr views b as a string without copying; only for calls that do not keep the string
// (strconv and time parsers copy what they keep, including into their errors).
func bstr(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// numberText returns the text of a JSON number, or of a string holding one, appended to buf.
func numberText(v *fastjson.Value, buf []byte) ([]byte, bool) {
	switch v.Type() {
	case fastjson.TypeNumber:
		buf = v.MarshalTo(buf[:0])
	case fastjson.TypeString:
		b, _ := v.StringBytes()
		buf = append(buf[:0], b...)
	default:
		return buf, false
	}
	return buf, jsonc.IsNumber(bstr(buf))
}

var intBounds = map[kind][2]int64{
	kTinyint:  {math.MinInt8, math.MaxInt8},
	kSmallint: {math.MinInt16, math.MaxInt16},
	kInt:      {math.MinInt32, math.MaxInt32},
	kBigint:   {math.MinInt64, math.MaxInt64},
}

var rangeMsgs = map[kind]string{
	kTinyint:  "out of range for CQL tinyint (-128 to 127)",
	kSmallint: "out of range for CQL smallint (-32768 to 32767)",
	kInt:      "out of range for CQL int (-2147483648 to 2147483647)",
	kBigint:   "out of range for CQL bigint (-9223372036854775808 to 9223372036854775807)",
}

// minTime and maxTime bound every time the mapper accepts, both included: four-digit years, the
// range RFC 3339 can spell and the bucket keys are defined for (bucketer.MinTime, MaxTime).
var (
	minTime = bucketer.MinTime
	maxTime = bucketer.MaxTime
)

// inTimeRange reports whether t is one the mapper writes. The zero time.Time
// (0001-01-01T00:00:00Z) is an instant like any other here: the packed row format encodes times
// itself, as the instant, where gocql would send the zero time as an empty value.
func inTimeRange(t time.Time) bool { return !t.Before(minTime) && !t.After(maxTime) }

// appendScalar appends the wire bytes of one JSON value converted for CQL type k to dst.
// buf is scratch space. Collections use it for their elements, and value for the columns it does
// not encode through a cell; the typed helpers below (textOf, intOf, ...) are the one definition of
// each conversion, shared with value and the scan.
func appendScalar(dst []byte, k kind, v *fastjson.Value, buf *[]byte) ([]byte, problem) {
	var pr problem
	switch k {
	case kText, kASCII:
		var b []byte
		if b, pr = textOf(k, v, buf); pr.ok() {
			return append(dst, b...), pr
		}
	case kInt, kBigint, kSmallint, kTinyint:
		var n int64
		if n, pr = intOf(k, v, buf); pr.ok() {
			return appendInteger(dst, k, n), pr
		}
	case kFloat, kDouble:
		var f float64
		if f, pr = floatOf(k, v, buf); pr.ok() {
			if k == kFloat {
				return packed.AppendFloat(dst, float32(f)), pr
			}
			return packed.AppendDouble(dst, f), pr
		}
	case kTimestamp:
		var t time.Time
		if t, pr = timestampOf(v, buf); pr.ok() {
			return packed.AppendTimestamp(dst, t), pr
		}
	case kDate:
		var t time.Time
		if t, pr = dateOf(v); pr.ok() {
			return packed.AppendDate(dst, t), pr
		}
	case kUUID, kTimeUUID:
		var u gocql.UUID
		if u, pr = uuidOf(k, v); pr.ok() {
			return packed.AppendUUID(dst, u), pr
		}

	case kBoolean:
		switch v.Type() {
		case fastjson.TypeTrue:
			return packed.AppendBoolean(dst, true), pr
		case fastjson.TypeFalse:
			return packed.AppendBoolean(dst, false), pr
		case fastjson.TypeString:
			b, _ := v.StringBytes()
			switch bstr(b) {
			case "true":
				return packed.AppendBoolean(dst, true), pr
			case "false":
				return packed.AppendBoolean(dst, false), pr
			}
		}
		return dst, fail(v, "not true or false for CQL boolean")

	case kBlob:
		if v.Type() == fastjson.TypeString {
			b, _ := v.StringBytes()
			enc := base64.StdEncoding
			if len(b)%4 != 0 {
				enc = base64.RawStdEncoding
			}
			if out, err := enc.AppendDecode(dst, b); err == nil {
				return out, pr
			}
		}
		return dst, fail(v, "not base64 for CQL blob")

	case kInet:
		if v.Type() == fastjson.TypeString {
			b, _ := v.StringBytes()
			if a, err := netip.ParseAddr(bstr(b)); err == nil && a.Zone() == "" {
				if a.Is4() {
					b4 := a.As4()
					return append(dst, b4[:]...), pr
				}
				b16 := a.As16()
				return append(dst, b16[:]...), pr
			}
		}
		return dst, fail(v, "not an IP address for CQL inet")

	case kDecimal, kVarint:
		text, ok := numberText(v, *buf)
		*buf = text
		if !ok {
			return dst, fail(v, "not a number for CQL "+kindNames[k])
		}
		unscaled, scale, ok := parseDecimal(bstr(text))
		if !ok {
			return dst, fail(v, "out of range for CQL "+kindNames[k]+" (exponent too large)")
		}
		if k == kDecimal {
			dst = packed.AppendInt(dst, scale)
			return packed.AppendVarint(dst, unscaled), pr
		}
		n, ok := integralBig(unscaled, scale)
		if !ok {
			return dst, fail(v, "not a whole number for CQL varint")
		}
		return packed.AppendVarint(dst, n), pr
	default:
		return dst, fail(v, "of an unsupported type")
	}
	return dst, pr
}

// appendInteger appends n as a value of integer kind k; n is in the kind's range.
func appendInteger(dst []byte, k kind, n int64) []byte {
	switch k {
	case kTinyint:
		return packed.AppendTinyint(dst, int8(n))
	case kSmallint:
		return packed.AppendSmallint(dst, int16(n))
	case kInt:
		return packed.AppendInt(dst, int32(n))
	}
	return packed.AppendBigint(dst, n)
}

// textOf is the text of a text or ascii column: a JSON string as is, any other JSON value as
// its JSON text. The bytes alias the parser's memory or *buf: copy them before the next record.
func textOf(k kind, v *fastjson.Value, buf *[]byte) ([]byte, problem) {
	var b []byte
	if v.Type() == fastjson.TypeString {
		b, _ = v.StringBytes()
	} else {
		if v.Type() == fastjson.TypeNumber {
			if _, ok := numberText(v, *buf); !ok {
				return nil, fail(v, "not a valid JSON number")
			}
		}
		// Numbers, booleans, objects and arrays are kept as their JSON text.
		*buf = v.MarshalTo((*buf)[:0])
		b = *buf
	}
	if k == kASCII {
		for i := 0; i < len(b); i++ {
			if b[i] >= 0x80 {
				return nil, fail(v, "not ASCII for CQL ascii")
			}
		}
	} else if msg := utf8Problem(b); msg != "" {
		return nil, problem{msg: msg} // no val: the bytes are not shown
	}
	return b, problem{}
}

// utf8Problem says where b stops being UTF-8, or "" when it is valid. CQL text must be UTF-8:
// Cassandra refuses anything else with "String didn't validate.", which names neither the
// column nor the byte, so the mapper checks first.
func utf8Problem(b []byte) string {
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

// prefixed returns sep+s, or "" for an empty s.
func prefixed(sep, s string) string {
	if s == "" {
		return ""
	}
	return sep + s
}

// intOf is the value of an int, bigint, smallint or tinyint column, range-checked for k.
func intOf(k kind, v *fastjson.Value, buf *[]byte) (int64, problem) {
	text, ok := numberText(v, *buf)
	*buf = text
	if !ok {
		return 0, fail(v, "not a number for CQL "+kindNames[k])
	}
	n, st := jsonc.ParseIntegral(bstr(text))
	switch {
	case st == jsonc.IntFraction:
		return 0, fail(v, "not a whole number for CQL "+kindNames[k])
	case st == jsonc.IntRange, n < intBounds[k][0], n > intBounds[k][1]:
		return 0, fail(v, rangeMsgs[k])
	}
	return n, problem{}
}

// floatOf is the value of a float or double column, range-checked for k.
func floatOf(k kind, v *fastjson.Value, buf *[]byte) (float64, problem) {
	text, ok := numberText(v, *buf)
	*buf = text
	if !ok {
		return 0, fail(v, "not a number for CQL "+kindNames[k])
	}
	f, err := jsonc.ParseFloat(bstr(text))
	if err != nil || (k == kFloat && math.Abs(f) > math.MaxFloat32) {
		return 0, fail(v, "out of range for CQL "+kindNames[k])
	}
	return f, problem{}
}

// timestampOf is the value of a timestamp column: RFC 3339 with an offset, or epoch milliseconds.
func timestampOf(v *fastjson.Value, buf *[]byte) (time.Time, problem) {
	if v.Type() == fastjson.TypeString {
		b, _ := v.StringBytes()
		if !jsonc.IsNumber(bstr(b)) {
			t, err := jsonc.ParseRFC3339(bstr(b))
			if err == jsonc.ErrRFC3339Offset {
				return time.Time{}, fail(v, jsonc.OffsetProblem+" for CQL timestamp")
			}
			if err != nil {
				return time.Time{}, fail(v, "not RFC 3339 with an offset, nor epoch milliseconds, for CQL timestamp")
			}
			if !inTimeRange(t) {
				return time.Time{}, fail(v, "out of range for CQL timestamp (years 0000 to 9999)")
			}
			return t, problem{}
		}
	}
	text, ok := numberText(v, *buf)
	*buf = text
	if !ok {
		return time.Time{}, fail(v, "not RFC 3339 with an offset, nor epoch milliseconds, for CQL timestamp")
	}
	t, ok := jsonc.ParseUnix(bstr(text), time.Millisecond)
	if !ok {
		return time.Time{}, fail(v, "out of range for CQL timestamp (years 0000 to 9999)")
	}
	return t, problem{}
}

// dateOf is the value of a date column: YYYY-MM-DD, as midnight UTC.
func dateOf(v *fastjson.Value) (time.Time, problem) {
	if v.Type() == fastjson.TypeString {
		b, _ := v.StringBytes()
		if len(b) == len(time.DateOnly) {
			if t, err := time.Parse(time.DateOnly, bstr(b)); err == nil && inTimeRange(t) {
				return t, problem{}
			}
		}
	}
	return time.Time{}, fail(v, "not a date (YYYY-MM-DD) for CQL date")
}

// uuidOf is the value of a uuid or timeuuid column.
func uuidOf(k kind, v *fastjson.Value) (gocql.UUID, problem) {
	if v.Type() == fastjson.TypeString {
		b, _ := v.StringBytes()
		if u, ok := parseCanonicalUUID(b); ok {
			if k == kTimeUUID && u.Version() != 1 {
				return u, fail(v, "not a version 1 UUID for CQL timeuuid")
			}
			return u, problem{}
		}
	}
	return gocql.UUID{}, fail(v, "not a UUID (8-4-4-4-12 hex digits) for CQL "+kindNames[k])
}

// maxExponent bounds the decimal exponent a record may carry: "1e999999999" must not make the
// mapper build a billion-digit integer.
const maxExponent = 1000

// parseDecimal splits a JSON number into an exact unscaled integer and a scale (value =
// unscaled × 10^-scale), keeping every digit of its text.
func parseDecimal(s string) (*big.Int, int32, bool) {
	mant, exp := s, int64(0)
	for i := 0; i < len(s); i++ {
		if s[i] == 'e' || s[i] == 'E' {
			e, err := strconv.ParseInt(s[i+1:], 10, 32)
			if err != nil || e > maxExponent || e < -maxExponent {
				return nil, 0, false
			}
			mant, exp = s[:i], e
			break
		}
	}
	digits := make([]byte, 0, len(mant))
	frac := int64(0)
	seenDot := false
	for i := 0; i < len(mant); i++ {
		switch c := mant[i]; {
		case c == '.':
			seenDot = true
		default:
			digits = append(digits, c)
			if seenDot {
				frac++
			}
		}
	}
	n, ok := new(big.Int).SetString(string(digits), 10)
	if !ok {
		return nil, 0, false
	}
	return n, int32(frac - exp), true
}

// integralBig turns unscaled × 10^-scale into an integer when it is one.
func integralBig(unscaled *big.Int, scale int32) (*big.Int, bool) {
	if scale <= 0 {
		p := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(-scale)), nil)
		return p.Mul(p, unscaled), true
	}
	p := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)
	q, r := new(big.Int).QuoRem(unscaled, p, new(big.Int))
	return q, r.Sign() == 0
}

// parseCanonicalUUID parses the 36-character 8-4-4-4-12 form, either case (codec.ParseUUID, the
// one parser every codec shares).
func parseCanonicalUUID(b []byte) (gocql.UUID, bool) { return codec.ParseUUID(b) }

// mapEntry is one entry of a JSON object converted for a CQL map: its key, and where its value's
// bytes are.
type mapEntry struct {
	key        []byte
	start, end int
}

// appendConverted appends the wire bytes of a JSON value converted for column type t, collections
// included, to dst. A collection is framed as packed.AppendValue frames it (a map's entries in key
// order, the first of duplicate keys kept), so that both give the same bytes.
// entries is scratch space for a map's entries.
func appendConverted(dst []byte, t cqlType, v *fastjson.Value, buf *[]byte, entries *[]mapEntry) ([]byte, problem) {
	switch t.kind {
	case kList, kSet:
		if v.Type() != fastjson.TypeArray {
			return dst, fail(v, "not a JSON array for CQL "+t.name)
		}
		arr, _ := v.Array()
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(arr)))
		for i, e := range arr {
			if e.Type() == fastjson.TypeNull {
				return dst, problem{msg: "is null, and CQL collections cannot hold nulls", elem: "element " + strconv.Itoa(i)}
			}
			at := len(dst)
			var p problem
			if dst, p = appendScalar(append(dst, 0, 0, 0, 0), t.elem, e, buf); !p.ok() {
				p.elem = "element " + strconv.Itoa(i)
				return dst, p
			}
			binary.BigEndian.PutUint32(dst[at:], uint32(len(dst)-at-4))
		}
		return dst, problem{}
	case kMap:
		if v.Type() != fastjson.TypeObject {
			return dst, fail(v, "not a JSON object for CQL "+t.name)
		}
		o, _ := v.Object()
		// The values are converted after the framed entries' place, then written in key order.
		es := (*entries)[:0]
		vals := len(dst)
		var bad problem
		i := -1
		o.Visit(func(key []byte, e *fastjson.Value) {
			i++
			if !bad.ok() {
				return
			}
			entry := "entry " + strconv.Itoa(i)
			if msg := utf8Problem(key); msg != "" {
				bad = problem{msg: msg, elem: entry + "'s key", key: key}
				return
			}
			if e.Type() == fastjson.TypeNull {
				bad = problem{msg: "is null, and CQL collections cannot hold nulls", elem: entry, key: key}
				return
			}
			start := len(dst)
			var p problem
			if dst, p = appendScalar(dst, t.elem, e, buf); !p.ok() {
				p.elem, p.key = entry, key
				bad = p
				return
			}
			es = append(es, mapEntry{key: key, start: start, end: len(dst)})
		})
		*entries = es
		if !bad.ok() {
			return dst[:vals], bad
		}
		slices.SortStableFunc(es, func(a, b mapEntry) int { return bytes.Compare(a.key, b.key) })
		// Entries kept: the first of each run of equal keys (the sort is stable), the occurrence a plain
		// field takes too (fastjson's Get and the scan), so one rule holds for a key given twice.
		n := 0
		for i := range es {
			if n > 0 && bytes.Equal(es[n-1].key, es[i].key) {
				continue
			}
			es[n] = es[i]
			n++
		}
		end := len(dst)
		dst = binary.BigEndian.AppendUint32(dst, uint32(n))
		for _, e := range es[:n] {
			dst = binary.BigEndian.AppendUint32(dst, uint32(len(e.key)))
			dst = append(dst, e.key...)
			dst = binary.BigEndian.AppendUint32(dst, uint32(e.end-e.start))
			dst = append(dst, dst[e.start:e.end]...)
		}
		// Move the framed map over the values it was built from.
		n = copy(dst[vals:], dst[end:])
		return dst[:vals+n], problem{}
	}
	return appendScalar(dst, t.kind, v, buf)
}

// appendCanonical appends the canonical text of a scalar value: the form hashed for event
// buckets (an on-disk contract, see the package comment) and shown by explain.
func appendCanonical(dst []byte, val any) []byte {
	switch x := val.(type) {
	case string:
		return append(dst, x...)
	case int8:
		return strconv.AppendInt(dst, int64(x), 10)
	case int16:
		return strconv.AppendInt(dst, int64(x), 10)
	case int32:
		return strconv.AppendInt(dst, int64(x), 10)
	case int64:
		return strconv.AppendInt(dst, x, 10)
	case float32:
		return strconv.AppendFloat(dst, float64(x), 'g', -1, 32)
	case float64:
		return strconv.AppendFloat(dst, x, 'g', -1, 64)
	case bool:
		return strconv.AppendBool(dst, x)
	case time.Time:
		return appendTimeCanonical(dst, x)
	case gocql.UUID:
		return appendUUIDCanonical(dst, x)
	case []byte:
		return hex.AppendEncode(dst, x)
	case net.IP:
		return append(dst, x.String()...)
	case *inf.Dec:
		return append(dst, x.String()...)
	case *big.Int:
		return x.Append(dst, 10)
	}
	return dst
}

// appendTimeCanonical is appendCanonical for a CQL timestamp: milliseconds, UTC.
func appendTimeCanonical(dst []byte, t time.Time) []byte {
	return t.UTC().AppendFormat(dst, "2006-01-02T15:04:05.000Z07:00")
}

// appendDateCanonical is appendCanonical for a CQL date, which holds no time of day.
func appendDateCanonical(dst []byte, t time.Time) []byte {
	return t.UTC().AppendFormat(dst, time.DateOnly)
}

// appendUUIDCanonical appends u in lower-case 8-4-4-4-12 form, the text of gocql.UUID.String
// without its allocation.
func appendUUIDCanonical(dst []byte, u gocql.UUID) []byte {
	dst = hex.AppendEncode(dst, u[0:4])
	dst = append(dst, '-')
	dst = hex.AppendEncode(dst, u[4:6])
	dst = append(dst, '-')
	dst = hex.AppendEncode(dst, u[6:8])
	dst = append(dst, '-')
	dst = hex.AppendEncode(dst, u[8:10])
	dst = append(dst, '-')
	return hex.AppendEncode(dst, u[10:16])
}
