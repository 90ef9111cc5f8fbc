package json

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"math"
	"math/big"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"github.com/valyala/fastjson"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/packed"
)

// The conversions of the parsed tree (tree.go): one JSON value into a column's value, every column
// type, each with the words that say why a value does not fit. They are the reference the scan's
// conversions (decode.go) follow.

// problem says why a JSON value does not fit a column type; the conversions return a *problem, nil
// when the value fits (a pointer: the happy path returns one word, and only a refusal allocates).
// elem names the offending element of a collection.
type problem struct {
	msg  string
	elem string // where in a collection: "element 3", "entry 2" (a map's entries in the object's order)
	key  []byte // a map entry's key, shown only in the quoted message
	val  *fastjson.Value
}

func (p *problem) ok() bool { return p == nil }

// valueError is the problem in words that follow the field's subject (codec.ValueError.At): the
// element or entry by its position and what is wrong; quoted, the value and a map entry's key too.
func (p *problem) valueError() *codec.ValueError {
	plain := prefixed(" ", p.elem)
	quoted := plain
	if p.key != nil {
		quoted = " key " + strconv.Quote(string(p.key))
	}
	if p.val == nil { // a value whose bytes are not text is described, not shown
		return &codec.ValueError{Plain: plain + " " + p.msg, Quoted: quoted + " " + p.msg}
	}
	return &codec.ValueError{Plain: plain + " is " + p.msg, Quoted: quoted + " is " + show(p.val) + ", " + p.msg}
}

func fail(v *fastjson.Value, msg string) *problem { return &problem{msg: msg, val: v} }

// prefixed returns sep+s, or "" for an empty s.
func prefixed(sep, s string) string {
	if s == "" {
		return ""
	}
	return sep + s
}

// maxShown bounds how much of a bad value a quoted error message repeats.
const maxShown = 64

// show renders a JSON value for an error message: its JSON text, shortened when long.
func show(v *fastjson.Value) string {
	b := v.MarshalTo(nil)
	if len(b) > maxShown {
		return string(b[:maxShown]) + "..."
	}
	return string(b)
}

// numbers is the scratch text of a number while it is converted, and what is known of the document's
// numbers.
type numbers struct {
	text []byte
	// checked: every number of the parsed document is JSON's (a value plan's parse checked them all,
	// lenientNumber), so a JSON number's text need not be checked again.
	checked bool
}

// numberText returns the text of a JSON number, or of a string holding one, in n.text, and whether it
// is a JSON number.
func numberText(v *fastjson.Value, n *numbers) ([]byte, bool) {
	switch v.Type() {
	case fastjson.TypeNumber:
		n.text = v.MarshalTo(n.text[:0])
		if n.checked {
			return n.text, true
		}
	case fastjson.TypeString:
		b, _ := v.StringBytes()
		n.text = append(n.text[:0], b...)
	default:
		return n.text, false
	}
	return n.text, IsNumber(bstr(n.text))
}

var rangeMsgs = [...]string{
	packed.KTinyint:  "out of range for CQL tinyint (-128 to 127)",
	packed.KSmallint: "out of range for CQL smallint (-32768 to 32767)",
	packed.KInt:      "out of range for CQL int (-2147483648 to 2147483647)",
	packed.KBigint:   "out of range for CQL bigint (-9223372036854775808 to 9223372036854775807)",
}

// appendScalar appends the wire bytes of one JSON value converted for CQL kind k to dst. buf is
// scratch space. Collections use it for their elements, and the tree for the kinds handed over as
// wire bytes; the typed helpers below (textOf, intOf, ...) are the one definition of each conversion.
func appendScalar(dst []byte, k packed.Kind, v *fastjson.Value, buf *numbers) ([]byte, *problem) {
	var pr *problem
	switch k {
	case packed.KText, packed.KASCII:
		var b []byte
		if b, pr = textOf(k, v, buf); pr.ok() {
			return append(dst, b...), pr
		}
	case packed.KInt, packed.KBigint, packed.KSmallint, packed.KTinyint:
		var n int64
		if n, pr = intOf(k, v, buf); pr.ok() {
			return appendInteger(dst, k, n), pr
		}
	case packed.KFloat, packed.KDouble:
		var f float64
		if f, pr = floatOf(k, v, buf); pr.ok() {
			if k == packed.KFloat {
				return packed.AppendFloat(dst, float32(f)), pr
			}
			return packed.AppendDouble(dst, f), pr
		}
	case packed.KTimestamp:
		var t time.Time
		if t, pr = timestampOf(v, buf); pr.ok() {
			return packed.AppendTimestamp(dst, t), pr
		}
	case packed.KDate:
		var t time.Time
		if t, pr = dateOf(v); pr.ok() {
			return packed.AppendDate(dst, t), pr
		}
	case packed.KUUID, packed.KTimeUUID:
		var u [16]byte
		if u, pr = uuidOf(k, v); pr.ok() {
			return append(dst, u[:]...), pr
		}

	case packed.KBoolean:
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

	case packed.KBlob:
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

	case packed.KInet:
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

	case packed.KDecimal, packed.KVarint:
		text, ok := numberText(v, buf)
		if !ok {
			return dst, fail(v, "not a number for CQL "+k.String())
		}
		unscaled, scale, ok := parseDecimal(bstr(text))
		if !ok {
			return dst, fail(v, "out of range for CQL "+k.String()+" (exponent too large)")
		}
		if k == packed.KDecimal {
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
func appendInteger(dst []byte, k packed.Kind, n int64) []byte {
	switch k {
	case packed.KTinyint:
		return packed.AppendTinyint(dst, int8(n))
	case packed.KSmallint:
		return packed.AppendSmallint(dst, int16(n))
	case packed.KInt:
		return packed.AppendInt(dst, int32(n))
	}
	return packed.AppendBigint(dst, n)
}

// textOf is the text of a text or ascii column: a JSON string as is, any other JSON value as
// its JSON text. The bytes alias the parser's memory or buf.text: copy them before the next record.
func textOf(k packed.Kind, v *fastjson.Value, buf *numbers) ([]byte, *problem) {
	var b []byte
	if v.Type() == fastjson.TypeString {
		b, _ = v.StringBytes()
	} else {
		if v.Type() == fastjson.TypeNumber {
			if _, ok := numberText(v, buf); !ok {
				return nil, fail(v, "not a valid JSON number")
			}
		}
		// Numbers, booleans, objects and arrays are kept as their JSON text.
		buf.text = v.MarshalTo(buf.text[:0])
		b = buf.text
	}
	if k == packed.KASCII {
		if !codec.ASCII(b) {
			return nil, fail(v, "not ASCII for CQL ascii")
		}
	} else if msg := codec.UTF8Problem(b); msg != "" {
		return nil, &problem{msg: msg} // no val: the bytes are not shown
	}
	return b, nil
}

// intOf is the value of an int, bigint, smallint or tinyint column, range-checked for k.
func intOf(k packed.Kind, v *fastjson.Value, buf *numbers) (int64, *problem) {
	text, ok := numberText(v, buf)
	if !ok {
		return 0, fail(v, "not a number for CQL "+k.String())
	}
	n, st := ParseIntegral(bstr(text))
	switch {
	case st == IntFraction:
		return 0, fail(v, "not a whole number for CQL "+k.String())
	case st == IntRange, n < intBounds[k][0], n > intBounds[k][1]:
		return 0, fail(v, rangeMsgs[k])
	}
	return n, nil
}

// floatOf is the value of a float or double column, range-checked for k.
func floatOf(k packed.Kind, v *fastjson.Value, buf *numbers) (float64, *problem) {
	text, ok := numberText(v, buf)
	if !ok {
		return 0, fail(v, "not a number for CQL "+k.String())
	}
	f, err := ParseFloat(bstr(text))
	if err != nil || (k == packed.KFloat && math.Abs(f) > math.MaxFloat32) {
		return 0, fail(v, "out of range for CQL "+k.String())
	}
	return f, nil
}

// timestampOf is the value of a timestamp column: RFC 3339 with an offset, or epoch milliseconds.
func timestampOf(v *fastjson.Value, buf *numbers) (time.Time, *problem) {
	if v.Type() == fastjson.TypeString {
		b, _ := v.StringBytes()
		if !IsNumber(bstr(b)) {
			t, err := ParseRFC3339(bstr(b))
			if err == ErrRFC3339Offset {
				return time.Time{}, fail(v, OffsetProblem+" for CQL timestamp")
			}
			if err != nil {
				return time.Time{}, fail(v, "not RFC 3339 with an offset, nor epoch milliseconds, for CQL timestamp")
			}
			if !codec.InRange(t) {
				return time.Time{}, fail(v, "out of range for CQL timestamp (years 0000 to 9999)")
			}
			return t, nil
		}
	}
	text, ok := numberText(v, buf)
	if !ok {
		return time.Time{}, fail(v, "not RFC 3339 with an offset, nor epoch milliseconds, for CQL timestamp")
	}
	t, ok := ParseUnix(bstr(text), time.Millisecond)
	if !ok {
		return time.Time{}, fail(v, "out of range for CQL timestamp (years 0000 to 9999)")
	}
	return t, nil
}

// unitNames are the time.format names of the event time's units, for messages.
var unitNames = map[time.Duration]string{
	time.Second: "unix_s", time.Millisecond: "unix_ms", time.Microsecond: "unix_us", time.Nanosecond: "unix_ns",
}

// eventTimeOf is the value of the event time (a field of no column): RFC 3339 with an offset when unit
// is 0 (time.format rfc3339), else a number of units since the epoch. Its words are the event time's,
// which differ from a timestamp column's.
func eventTimeOf(v *fastjson.Value, unit time.Duration, buf *numbers) (time.Time, *problem) {
	if unit == 0 {
		if v.Type() == fastjson.TypeString {
			b, _ := v.StringBytes()
			if t, err := ParseRFC3339(bstr(b)); err == nil {
				if !codec.InRange(t) {
					return time.Time{}, fail(v, "out of range (years 0000 to 9999)")
				}
				return t, nil
			} else if err == ErrRFC3339Offset {
				return time.Time{}, fail(v, OffsetProblem)
			}
		}
		return time.Time{}, fail(v, "not RFC 3339 with an offset (e.g. 2024-01-15T10:00:00Z)")
	}
	text, ok := numberText(v, buf)
	if !ok {
		return time.Time{}, fail(v, "not a "+unitNames[unit]+" number")
	}
	t, ok := ParseUnix(bstr(text), unit)
	if !ok {
		return time.Time{}, fail(v, "out of range for "+unitNames[unit]+" (years 0000 to 9999)")
	}
	return t, nil
}

// dateOf is the value of a date column: YYYY-MM-DD, as midnight UTC.
func dateOf(v *fastjson.Value) (time.Time, *problem) {
	if v.Type() == fastjson.TypeString {
		b, _ := v.StringBytes()
		if len(b) == len(time.DateOnly) {
			if t, err := time.Parse(time.DateOnly, bstr(b)); err == nil && codec.InRange(t) {
				return t, nil
			}
		}
	}
	return time.Time{}, fail(v, "not a date (YYYY-MM-DD) for CQL date")
}

// uuidOf is the value of a uuid or timeuuid column.
func uuidOf(k packed.Kind, v *fastjson.Value) ([16]byte, *problem) {
	if v.Type() == fastjson.TypeString {
		b, _ := v.StringBytes()
		if u, ok := codec.ParseUUID(b); ok {
			if k == packed.KTimeUUID && u[6]>>4 != 1 {
				return u, fail(v, "not a version 1 UUID for CQL timeuuid")
			}
			return u, nil
		}
	}
	return [16]byte{}, fail(v, "not a UUID (8-4-4-4-12 hex digits) for CQL "+k.String())
}

// maxExponent bounds the decimal exponent a record may carry: "1e999999999" must not make the
// codec build a billion-digit integer.
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
func appendConverted(dst []byte, t packed.Type, v *fastjson.Value, buf *numbers, entries *[]mapEntry) ([]byte, *problem) {
	switch t.Kind {
	case packed.KList, packed.KSet:
		if v.Type() != fastjson.TypeArray {
			return dst, fail(v, "not a JSON array for CQL "+t.String())
		}
		arr, _ := v.Array()
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(arr)))
		for i, e := range arr {
			if e.Type() == fastjson.TypeNull {
				return dst, &problem{msg: "is null, and CQL collections cannot hold nulls", elem: "element " + strconv.Itoa(i)}
			}
			at := len(dst)
			var p *problem
			if dst, p = appendScalar(append(dst, 0, 0, 0, 0), t.Elem, e, buf); !p.ok() {
				p.elem = "element " + strconv.Itoa(i)
				return dst, p
			}
			binary.BigEndian.PutUint32(dst[at:], uint32(len(dst)-at-4))
		}
		return dst, nil
	case packed.KMap:
		if v.Type() != fastjson.TypeObject {
			return dst, fail(v, "not a JSON object for CQL "+t.String())
		}
		o, _ := v.Object()
		// The values are converted after the framed entries' place, then written in key order.
		es := (*entries)[:0]
		vals := len(dst)
		var bad *problem
		i := -1
		o.Visit(func(key []byte, e *fastjson.Value) {
			i++
			if !bad.ok() {
				return
			}
			entry := "entry " + strconv.Itoa(i)
			if msg := codec.UTF8Problem(key); msg != "" {
				bad = &problem{msg: msg, elem: entry + "'s key", key: key}
				return
			}
			if e.Type() == fastjson.TypeNull {
				bad = &problem{msg: "is null, and CQL collections cannot hold nulls", elem: entry, key: key}
				return
			}
			start := len(dst)
			var p *problem
			if dst, p = appendScalar(dst, t.Elem, e, buf); !p.ok() {
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
		return dst[:vals+n], nil
	}
	return appendScalar(dst, t.Kind, v, buf)
}
