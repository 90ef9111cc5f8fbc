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
	"strings"
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
	case packed.KTime:
		var ns int64
		if ns, pr = timeOf(v, buf); pr.ok() {
			return codec.AppendTime(dst, ns), pr
		}
	case packed.KDuration:
		if v.Type() == fastjson.TypeString {
			b, _ := v.StringBytes()
			if d, ok := codec.ParseDuration(bstr(b)); ok {
				return codec.AppendDuration(dst, d), pr
			}
		}
		return dst, fail(v, codec.DurationProblem)
	default:
		return dst, fail(v, "of an unsupported type")
	}
	return dst, pr
}

// timeOf is the value of a time: a string HH:MM:SS[.fffffffff], or a whole number of nanoseconds since
// midnight.
func timeOf(v *fastjson.Value, buf *numbers) (int64, *problem) {
	if v.Type() == fastjson.TypeString {
		b, _ := v.StringBytes()
		if ns, ok := codec.ParseTimeOfDay(bstr(b)); ok {
			return ns, nil
		}
		if !IsNumber(bstr(b)) {
			return 0, fail(v, codec.TimeProblem)
		}
	}
	text, ok := numberText(v, buf)
	if !ok {
		return 0, fail(v, codec.TimeProblem)
	}
	n, st := ParseIntegral(bstr(text))
	if st != IntOK || n < 0 || n >= codec.NanosPerDay {
		return 0, fail(v, codec.TimeProblem)
	}
	return n, nil
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

// instantOf is the value of a timestamp or date column, or of the event time (f.Column ""), in f's format
// (codec.TimeFormat): the one conversion of a time for every JSON field. The event time's words differ
// from a column's: they end without "for CQL timestamp".
func instantOf(f *codec.Field, v *fastjson.Value, buf *numbers) (time.Time, *problem) {
	k, tf := f.Type.Kind, &f.Time
	what := ""
	if f.Column != "" {
		what = "for CQL " + k.String()
	}
	switch tf.Form {
	case codec.TimeDefault:
		if k == packed.KDate {
			return dateOf(v)
		}
		return timestampOf(v, buf)
	case codec.TimeRFC3339:
		if v.Type() == fastjson.TypeString {
			b, _ := v.StringBytes()
			if t, err := ParseRFC3339(bstr(b)); err == nil {
				if !codec.InRange(t) {
					return time.Time{}, fail(v, "out of range "+suffixed(what)+"(years 0000 to 9999)")
				}
				return t, nil
			} else if err == ErrRFC3339Offset {
				return time.Time{}, fail(v, OffsetProblem+prefixed(" ", what))
			}
		}
		return time.Time{}, fail(v, "not RFC 3339 with an offset (e.g. 2024-01-15T10:00:00Z)"+prefixed(" ", what))
	case codec.TimeLayout:
		if v.Type() != fastjson.TypeString {
			return time.Time{}, fail(v, "not a string in the layout "+strconv.Quote(tf.Layout)+prefixed(" ", what))
		}
		b, _ := v.StringBytes()
		if t, why := tf.Text(k, b, what); why != "" {
			return t, fail(v, why)
		} else {
			return t, nil
		}
	}
	unit := codec.UnitName(tf.Unit)
	text, ok := numberText(v, buf)
	if !ok {
		return time.Time{}, fail(v, "not a "+unit+" number"+prefixed(" ", what))
	}
	if tf.Unit == codec.Day {
		if _, st := ParseIntegral(bstr(text)); st == IntFraction {
			return time.Time{}, fail(v, "not a whole number of days"+prefixed(" ", what))
		}
	}
	t, ok := parseUnix(bstr(text), tf.Unit)
	if !ok {
		if what == "" {
			what = "for " + unit
		}
		return time.Time{}, fail(v, "out of range "+what+" (years 0000 to 9999)")
	}
	return t, nil
}

// suffixed returns s+" ", or "" for an empty s.
func suffixed(s string) string {
	if s == "" {
		return ""
	}
	return s + " "
}

// timestampOf is the value of a timestamp column in its default format: RFC 3339 with an offset, or
// epoch milliseconds.
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

// dateOf is the value of a date column in its default format: YYYY-MM-DD, as midnight UTC.
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
			if kk := t.MapKey(); kk != packed.KText {
				// The key's bytes are converted into dst, where they stay while the map is built.
				at := len(dst)
				var err error
				if dst, err = codec.AppendMapKey(dst, kk, key); err != nil {
					bad = &problem{msg: keyProblem(err), elem: entry + "'s key", key: key}
					return
				}
				key = dst[at:len(dst):len(dst)]
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
	case packed.KTuple, packed.KUDT, packed.KVector:
		return appendComposite(dst, t, v, buf, entries)
	}
	return appendScalar(dst, t.Kind, v, buf)
}

// keyProblem is the words of a map key that is not of the key type: a *codec.ValueError's reason
// without its "the value is".
func keyProblem(err error) string {
	msg := err.Error()
	if r, ok := strings.CutPrefix(msg, "the value is "); ok {
		return "is " + r
	}
	return msg
}

// appendComposite appends the wire bytes of a tuple (a JSON array of its elements, as many as it has),
// a UDT (a JSON object whose members of the field names feed the fields; a missing or null one is a
// null field, other members are ignored) or a vector (a JSON array of exactly its dimension's numbers).
func appendComposite(dst []byte, t packed.Type, v *fastjson.Value, buf *numbers, entries *[]mapEntry) ([]byte, *problem) {
	c := t.Comp
	switch t.Kind {
	case packed.KVector:
		if v.Type() != fastjson.TypeArray {
			return dst, fail(v, "not a JSON array for CQL "+t.String())
		}
		arr, _ := v.Array()
		if len(arr) != c.Dim {
			return dst, &problem{msg: "has " + strconv.Itoa(len(arr)) + " elements; CQL " + t.String() + " takes exactly " + strconv.Itoa(c.Dim)}
		}
		for i, e := range arr {
			if e.Type() == fastjson.TypeNull {
				return dst, &problem{msg: "is null, and a CQL vector cannot hold nulls", elem: "element " + strconv.Itoa(i)}
			}
			var p *problem
			if dst, p = appendScalar(dst, c.Types[0].Kind, e, buf); !p.ok() {
				p.elem = "element " + strconv.Itoa(i)
				return dst, p
			}
		}
		return dst, nil
	case packed.KTuple:
		if v.Type() != fastjson.TypeArray {
			return dst, fail(v, "not a JSON array for CQL "+t.String())
		}
		arr, _ := v.Array()
		if len(arr) != len(c.Types) {
			return dst, &problem{msg: "has " + strconv.Itoa(len(arr)) + " elements; CQL " + t.String() + " takes exactly " + strconv.Itoa(len(c.Types))}
		}
		for i, e := range arr {
			var p *problem
			if dst, p = appendPart(dst, c.Types[i], e, buf, entries); !p.ok() {
				p.elem = prefixed("", "element "+strconv.Itoa(i)) + prefixed(" ", p.elem)
				return dst, p
			}
		}
		return dst, nil
	}
	if v.Type() != fastjson.TypeObject {
		return dst, fail(v, "not a JSON object for CQL UDT "+c.Name)
	}
	for i, name := range c.Fields {
		var p *problem
		if dst, p = appendPart(dst, c.Types[i], v.Get(name), buf, entries); !p.ok() {
			p.elem = "field " + name + prefixed(" ", p.elem)
			return dst, p
		}
	}
	return dst, nil
}

// appendPart appends one element of a tuple or field of a UDT, framed: null when e is nil or JSON's
// null.
func appendPart(dst []byte, t packed.Type, e *fastjson.Value, buf *numbers, entries *[]mapEntry) ([]byte, *problem) {
	if e == nil || e.Type() == fastjson.TypeNull {
		return codec.AppendNullElement(dst), nil
	}
	at := len(dst)
	dst, p := appendConverted(append(dst, 0, 0, 0, 0), t, e, buf, entries)
	if !p.ok() {
		return dst[:at], p
	}
	binary.BigEndian.PutUint32(dst[at:], uint32(len(dst)-at-4))
	return dst, p
}
