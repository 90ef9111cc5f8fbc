package avro

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bucketsink/sink/bucketer"
	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/packed"
)

// decoder is the state of one Decode.
type decoder struct {
	b     []byte
	out   []codec.Value
	buf   []byte
	depth int
	id    int
	items int64 // how many more array and map items the body may hold (maxItems)
}

// maxDepth bounds how deep a body may nest (a recursive record, arrays of arrays): each level
// costs a little stack, and a real record is never this deep.
const maxDepth = 256

// maxItems is how many items a body of n bytes may hold in all its arrays and maps together, at
// every depth. An item of any type takes at least one byte of its own but the zero-width ones (null,
// a fixed of size 0, a record of only such fields), which a writer encodes as a block count alone:
// without a bound, a few kilobytes of block headers claim billions of them, each costing a step (and
// a kept one 4 bytes of memory), so that one record would stall its partition. Every item is charged
// against the bound, so the work of a body, and what a kept collection appends, is linear in its
// size; the slack and the factor of two leave room for zero-width items beside real ones.
func maxItems(n int) int64 { return 2*int64(n) + 1024 }

// Decode walks body in writer order and sets out's values.
func (p *plan) Decode(body []byte, out []codec.Value, buf []byte) ([]byte, error) {
	for i := range out {
		out[i].State = codec.Absent
	}
	d := decoder{b: body, out: out, buf: buf, id: p.id, items: maxItems(len(body))}
	pos, err := d.steps(p.root, 0)
	if err != nil {
		return d.buf, err
	}
	if pos != len(body) {
		return d.buf, codec.Decodef("avro: %d bytes left after the record of schema id %d: the body does not match its writer schema",
			len(body)-pos, p.id)
	}
	return d.buf, nil
}

func (d *decoder) steps(sts []step, pos int) (int, error) {
	var err error
	for i := range sts {
		if pos, err = d.step(&sts[i], pos); err != nil {
			return pos, err
		}
	}
	return pos, nil
}

func (d *decoder) step(st *step, pos int) (int, error) {
	switch st.op {
	case opSkip:
		return d.skip(st.n, st.name, pos)
	case opKeep:
		end := pos
		for i := range st.targets {
			t := &st.targets[i]
			v := &d.out[t.slot]
			var err error
			if end, err = d.convert(st.n, st.name, t, t.conv, t.typ.Kind, pos, v); err != nil {
				if e, ok := err.(*codec.Error); ok && e.Reason == codec.ReasonMap {
					e.Column = t.column
				}
				return end, err
			}
			v.State = codec.Set
		}
		return end, nil
	case opRecord:
		d.depth++
		if d.depth > maxDepth {
			return pos, d.malformed(st.name, "nested deeper than %d", maxDepth)
		}
		pos, err := d.steps(st.sub, pos)
		d.depth--
		return pos, err
	}
	// opUnion
	idx, pos, err := d.long(st.name, pos)
	if err != nil {
		return pos, err
	}
	if idx < 0 || idx >= int64(len(st.arms)) {
		return pos, d.malformed(st.name, "union branch %d of %d", idx, len(st.arms))
	}
	arm := &st.arms[idx]
	if arm.n.kind == tNull {
		for _, s := range st.nulls {
			d.out[s].State = codec.Null
		}
		return pos, nil
	}
	return d.step(arm, pos)
}

// short is the error of a body that ends inside field name.
func (d *decoder) short(name string) error {
	return codec.Decodef("avro: the body ends inside field %q: it is shorter than its writer schema (schema id %d)", name, d.id)
}

func (d *decoder) malformed(name, format string, args ...any) error {
	return codec.Decodef("avro: field %q: %s (schema id %d)", name, fmt.Sprintf(format, args...), d.id)
}

// long reads a zig-zag varint.
func (d *decoder) long(name string, pos int) (int64, int, error) {
	b := d.b
	if pos < len(b) && b[pos] < 0x80 { // one byte: most lengths, indexes and small numbers
		u := uint64(b[pos])
		return int64(u>>1) ^ -int64(u&1), pos + 1, nil
	}
	var u uint64
	for s := uint(0); s < 70; s += 7 {
		if pos >= len(b) {
			return 0, pos, d.short(name)
		}
		c := b[pos]
		pos++
		if s == 63 && c > 1 {
			return 0, pos, d.malformed(name, "a varint longer than 64 bits")
		}
		u |= uint64(c&0x7f) << s
		if c < 0x80 {
			return int64(u>>1) ^ -int64(u&1), pos, nil
		}
	}
	return 0, pos, d.malformed(name, "a varint longer than 64 bits")
}

// bytes reads a length-prefixed bytes or string value; the slice aliases the body.
func (d *decoder) bytes(name string, pos int) ([]byte, int, error) {
	n, pos, err := d.long(name, pos)
	if err != nil {
		return nil, pos, err
	}
	if n < 0 {
		return nil, pos, d.malformed(name, "a negative length %d", n)
	}
	if n > int64(len(d.b)-pos) {
		return nil, pos, d.short(name)
	}
	end := pos + int(n)
	return d.b[pos:end:end], end, nil
}

// fixed reads n bytes.
func (d *decoder) fixed(name string, pos, n int) ([]byte, int, error) {
	if n > len(d.b)-pos {
		return nil, pos, d.short(name)
	}
	return d.b[pos : pos+n : pos+n], pos + n, nil
}

// skip steps over a value of n.
func (d *decoder) skip(n *node, name string, pos int) (int, error) {
	if n.width == widthZero {
		return pos, nil // nothing to read, nothing to check
	}
	var err error
	switch n.kind {
	case tNull:
		return pos, nil
	case tBoolean:
		_, pos, err = d.fixed(name, pos, 1)
	case tInt, tLong, tEnum:
		_, pos, err = d.long(name, pos)
	case tFloat:
		_, pos, err = d.fixed(name, pos, 4)
	case tDouble:
		_, pos, err = d.fixed(name, pos, 8)
	case tBytes, tString:
		_, pos, err = d.bytes(name, pos)
	case tFixed:
		_, pos, err = d.fixed(name, pos, n.size)
	case tRecord:
		d.depth++
		if d.depth > maxDepth {
			return pos, d.malformed(name, "nested deeper than %d", maxDepth)
		}
		for i := range n.fields {
			if pos, err = d.skip(n.fields[i].typ, dotted(name, n.fields[i].name), pos); err != nil {
				return pos, err
			}
		}
		d.depth--
	case tUnion:
		var idx int64
		if idx, pos, err = d.long(name, pos); err != nil {
			return pos, err
		}
		if idx < 0 || idx >= int64(len(n.branches)) {
			return pos, d.malformed(name, "union branch %d of %d", idx, len(n.branches))
		}
		return d.skip(n.branches[idx], name, pos)
	case tArray, tMap:
		d.depth++
		if d.depth > maxDepth {
			return pos, d.malformed(name, "nested deeper than %d", maxDepth)
		}
		for {
			var count int64
			if count, pos, err = d.block(name, pos); err != nil || count == 0 {
				break
			}
			if n.kind == tArray && n.items.width == widthZero {
				continue // the block's items are its count, charged by block
			}
			for range count {
				if n.kind == tMap {
					if _, pos, err = d.bytes(name, pos); err != nil {
						return pos, err
					}
				}
				if pos, err = d.skip(n.items, name, pos); err != nil {
					return pos, err
				}
			}
		}
		d.depth--
	}
	return pos, err
}

// block reads the header of the next block of an array or map: its item count, 0 after the last.
// The count is charged against the body's item bound (maxItems) before any item is read, so a
// count no body of this size can hold is refused at once.
func (d *decoder) block(name string, pos int) (int64, int, error) {
	count, pos, err := d.long(name, pos)
	if err != nil || count == 0 {
		return 0, pos, err
	}
	if count < 0 {
		// A negative count is followed by the block's size in bytes.
		if count == math.MinInt64 {
			return 0, pos, d.malformed(name, "a block count out of range")
		}
		count = -count
		var size int64
		if size, pos, err = d.long(name, pos); err != nil {
			return 0, pos, err
		}
		if size < 0 {
			return 0, pos, d.malformed(name, "a negative block size %d", size)
		}
		if size > int64(len(d.b)-pos) {
			return 0, pos, d.short(name)
		}
	}
	if count > d.items {
		return 0, pos, d.malformed(name, "a block of %d items, more than a %d-byte body may hold (%d items in all its arrays and maps)",
			count, len(d.b), maxItems(len(d.b)))
	}
	d.items -= count
	return count, pos, nil
}

var (
	wireFalse = []byte{0}
	wireTrue  = []byte{1}
)

// convert reads a value of n at pos and sets v for CQL kind k by conversion cv.
func (d *decoder) convert(n *node, name string, t *target, cv conv, k packed.Kind, pos int, v *codec.Value) (int, error) {
	switch cv {
	case cText, cTimestampText, cDateText, cUUIDText, cInetText, cTimeFormat:
		s, end, err := d.bytes(name, pos)
		if err != nil {
			return end, err
		}
		if cv == cTimeFormat {
			if !utf8.Valid(s) {
				return end, d.malformed(name, "a string that is not UTF-8")
			}
			what := ""
			if t.column != "" {
				what = "for CQL " + k.String()
			}
			tm, why := t.time.Text(k, s, what)
			if why != "" {
				return end, mapValueErr(name, codec.TextError(s, why))
			}
			v.T = tm
			return end, nil
		}
		return end, d.text(name, cv, k, s, v)
	case cEnumText:
		i, end, err := d.long(name, pos)
		if err != nil {
			return end, err
		}
		if i < 0 || i >= int64(len(n.symbols)) {
			return end, d.malformed(name, "enum index %d of %d symbols", i, len(n.symbols))
		}
		v.B = n.symbols[i]
		if k == packed.KASCII && !codec.ASCII(v.B) {
			return end, mapValueErr(name, &codec.ValueError{Plain: "the symbol is not ASCII for CQL ascii", Quoted: fmt.Sprintf("the symbol %q is not ASCII for CQL ascii", v.B)})
		}
		return end, nil
	case cInt, cTimeOfDay, cTimestamp, cDate, cDecimalInt, cVarint:
		x, end, err := d.long(name, pos)
		if err != nil {
			return end, err
		}
		return end, d.integer(name, n, t, cv, k, x, v)
	case cFloat:
		var f float64
		end := pos
		switch n.kind {
		case tFloat:
			b, e, err := d.fixed(name, pos, 4)
			if err != nil {
				return e, err
			}
			f, end = float64(math.Float32frombits(binary.LittleEndian.Uint32(b))), e
		case tDouble:
			b, e, err := d.fixed(name, pos, 8)
			if err != nil {
				return e, err
			}
			f, end = math.Float64frombits(binary.LittleEndian.Uint64(b)), e
		default:
			x, e, err := d.long(name, pos)
			if err != nil {
				return e, err
			}
			f, end = float64(x), e
		}
		if k == packed.KFloat && math.Abs(f) > math.MaxFloat32 && !math.IsInf(f, 0) {
			return end, mapValueErr(name, codec.BadValue(strconv.FormatFloat(f, 'g', -1, 64), "out of range for CQL float"))
		}
		v.F = f
		return end, nil
	case cBool:
		b, end, err := d.fixed(name, pos, 1)
		if err != nil {
			return end, err
		}
		switch b[0] {
		case 0:
			v.B = wireFalse
		case 1:
			v.B = wireTrue
		default:
			return end, d.malformed(name, "boolean byte 0x%02x", b[0])
		}
		return end, nil
	case cUUIDFixed, cBlob, cInetFixed, cDecimal, cVarintDecimal:
		var b []byte
		var end int
		var err error
		if n.kind == tFixed {
			b, end, err = d.fixed(name, pos, n.size)
		} else {
			b, end, err = d.bytes(name, pos)
		}
		if err != nil {
			return end, err
		}
		switch cv {
		case cUUIDFixed:
			copy(v.U[:], b)
			if k == packed.KTimeUUID && b[6]>>4 != 1 {
				return end, &codec.Error{Reason: codec.ReasonMap, Field: name, Err: errors.New("not a version 1 UUID for CQL timeuuid")}
			}
		case cBlob, cInetFixed:
			v.B = b
		case cDecimal:
			at := len(d.buf)
			d.buf = binary.BigEndian.AppendUint32(d.buf, uint32(int32(n.scale)))
			d.buf = codec.AppendMinimal(d.buf, b)
			v.B = d.buf[at:]
		case cVarintDecimal:
			at := len(d.buf)
			d.buf = codec.AppendMinimal(d.buf, b)
			v.B = d.buf[at:]
		}
		return end, nil
	case cList, cMap:
		return d.collection(n, name, t, k, pos, v)
	case cTimeText, cDuration:
		s, end, err := d.bytes(name, pos)
		if err != nil {
			return end, err
		}
		if !utf8.Valid(s) {
			return end, d.malformed(name, "a string that is not UTF-8")
		}
		if d.buf, err = codec.SetText(v, k, s, d.buf); err != nil {
			var ve *codec.ValueError
			if errors.As(err, &ve) {
				return end, mapValueErr(name, ve)
			}
			return end, &codec.Error{Reason: codec.ReasonMap, Field: name, Err: err}
		}
		return end, nil
	case cUDT:
		return d.udt(n, name, t, pos, v)
	case cTuple, cVector:
		return d.sequence(n, name, t, pos, v)
	case cIntText, cBoolText, cFloatText:
		return d.asText(n, name, t, cv, k, pos, v)
	}
	return pos, d.malformed(name, "no conversion") // Compile never builds a target without one
}

// asText reads an int, long, boolean, float or double at pos as its text (codec.Field.AsText).
func (d *decoder) asText(n *node, name string, t *target, cv conv, k packed.Kind, pos int, v *codec.Value) (int, error) {
	var end int
	var err error
	at := len(d.buf)
	switch cv {
	case cIntText:
		var x int64
		if x, end, err = d.long(name, pos); err == nil {
			d.buf = strconv.AppendInt(d.buf, x, 10)
		}
	case cBoolText:
		if end, err = d.convert(n, name, t, cBool, k, pos, v); err == nil {
			d.buf = strconv.AppendBool(d.buf, v.B[0] == 1)
		}
	default:
		if end, err = d.convert(n, name, t, cFloat, packed.KDouble, pos, v); err == nil {
			bits := 64
			if n.kind == tFloat {
				bits = 32
			}
			d.buf = strconv.AppendFloat(d.buf, v.F, 'g', -1, bits)
		}
	}
	if err != nil {
		return end, err
	}
	*v = codec.Value{B: d.buf[at:]}
	return end, nil
}

// text converts a string value s.
func (d *decoder) text(name string, cv conv, k packed.Kind, s []byte, v *codec.Value) error {
	if !utf8.Valid(s) {
		return d.malformed(name, "a string that is not UTF-8")
	}
	switch cv {
	case cText:
		if k == packed.KASCII && !codec.ASCII(s) {
			return mapValueErr(name, codec.BadValue(codec.Shown(s), "not ASCII for CQL ascii"))
		}
		v.B = s
	case cTimestampText:
		tm, err := time.Parse(time.RFC3339Nano, string(s))
		if err != nil {
			return mapValueErr(name, codec.BadValue(codec.Shown(s), "not RFC 3339 with an offset for CQL timestamp"))
		}
		if tm = tm.UTC(); !inRange(tm) {
			return mapValueErr(name, codec.BadValue(codec.Shown(s), "out of range for CQL timestamp (years 0000 to 9999)"))
		}
		v.T = tm
	case cDateText:
		tm, err := time.Parse(time.DateOnly, string(s))
		if err != nil || len(s) != len(time.DateOnly) {
			return mapValueErr(name, codec.BadValue(codec.Shown(s), "not a date (YYYY-MM-DD) for CQL date"))
		}
		v.T = tm
	case cUUIDText:
		u, ok := codec.ParseUUID(s)
		if !ok {
			return mapValueErr(name, codec.BadValue(codec.Shown(s), "not a UUID (8-4-4-4-12 hex digits) for CQL "+k.String()))
		}
		if k == packed.KTimeUUID && u[6]>>4 != 1 {
			return mapValueErr(name, codec.BadValue(codec.Shown(s), "not a version 1 UUID for CQL timeuuid"))
		}
		v.U = u
	case cInetText:
		a, err := netip.ParseAddr(string(s))
		if err != nil || a.Zone() != "" {
			return mapValueErr(name, codec.BadValue(codec.Shown(s), "not an IP address for CQL inet"))
		}
		at := len(d.buf)
		if a.Is4() {
			b4 := a.As4()
			d.buf = append(d.buf, b4[:]...)
		} else {
			b16 := a.As16()
			d.buf = append(d.buf, b16[:]...)
		}
		v.B = d.buf[at:]
	}
	return nil
}

// intBounds are the ranges of the CQL integer kinds.
var intBounds = map[packed.Kind][2]int64{
	packed.KTinyint: {math.MinInt8, math.MaxInt8}, packed.KSmallint: {math.MinInt16, math.MaxInt16},
	packed.KInt: {math.MinInt32, math.MaxInt32}, packed.KBigint: {math.MinInt64, math.MaxInt64},
}

// integer converts an int or long value x.
func (d *decoder) integer(name string, n *node, t *target, cv conv, k packed.Kind, x int64, v *codec.Value) error {
	switch cv {
	case cInt:
		if b := intBounds[k]; x < b[0] || x > b[1] {
			return mapValueErr(name, codec.BadValue(strconv.FormatInt(x, 10), "out of range for CQL "+k.String()))
		}
		v.N = x
	case cTimeOfDay:
		per := int64(time.Millisecond)
		if n.logical == "time-micros" {
			per = int64(time.Microsecond)
		}
		if x < 0 || x >= int64(24*time.Hour)/per {
			return mapValueErr(name, codec.BadValue(strconv.FormatInt(x, 10), "not a time of day ("+n.logical+")"))
		}
		v.N = x * per
		if k == packed.KTime { // handed over as wire bytes
			at := len(d.buf)
			d.buf = codec.AppendTime(d.buf, v.N)
			v.B = d.buf[at:]
		}
	case cTimestamp:
		tm, ok := unixTime(x, t.mul)
		if !ok {
			return mapValueErr(name, codec.BadValue(strconv.FormatInt(x, 10), "out of range for CQL timestamp (years 0000 to 9999)"))
		}
		v.T = tm
	case cDate:
		tm := time.Unix(x*86400, 0).UTC()
		if x < -1e7 || x > 1e7 || !inRange(tm) {
			return mapValueErr(name, codec.BadValue(strconv.FormatInt(x, 10)+" days", "out of range for CQL date (years 0000 to 9999)"))
		}
		v.T = tm
	case cDecimalInt, cVarint:
		at := len(d.buf)
		if cv == cDecimalInt {
			d.buf = append(d.buf, 0, 0, 0, 0)
		}
		var w [8]byte
		binary.BigEndian.PutUint64(w[:], uint64(x))
		d.buf = codec.AppendMinimal(d.buf, w[:])
		v.B = d.buf[at:]
	}
	return nil
}

// unixTime is x units of mul nanoseconds since the Unix epoch, in range for CQL timestamp.
func unixTime(x, mul int64) (time.Time, bool) {
	per := int64(time.Second) / mul
	if per < 1 { // a unit longer than a second: seconds only
		per = 1
	}
	sec, rem := x/per, x%per
	if sec < minUnix || sec > maxUnix {
		return time.Time{}, false
	}
	tm := time.Unix(sec, rem*mul).UTC()
	return tm, inRange(tm)
}

var (
	minUnix = bucketer.MinTime.Unix()
	maxUnix = bucketer.MaxTime.Unix()
)

func inRange(t time.Time) bool { return !t.Before(bucketer.MinTime) && !t.After(bucketer.MaxTime) }

// collection reads an array or map and sets v.B to its CQL wire bytes: the item count, then each
// item (for a map, key then value) as a 4-byte length and its bytes; a map's entries in key order,
// the last of equal keys kept, as the JSON path writes them.
func (d *decoder) collection(n *node, name string, t *target, k packed.Kind, pos int, v *codec.Value) (int, error) {
	start := len(d.buf)
	d.buf = append(d.buf, 0, 0, 0, 0)
	total := 0
	var entries []codec.MapEntry
	var ev codec.Value
	et := *t
	et.conv, et.typ = t.elem, packed.Scalar(t.typ.Elem)
	d.depth++
	if d.depth > maxDepth {
		return pos, d.malformed(name, "nested deeper than %d", maxDepth)
	}
	for {
		count, p, err := d.block(name, pos)
		if pos = p; err != nil {
			return pos, err
		}
		if count == 0 {
			break
		}
		for range count {
			var key []byte
			if n.kind == tMap {
				if key, pos, err = d.bytes(name, pos); err != nil {
					return pos, err
				}
				if !utf8.Valid(key) {
					return pos, d.malformed(name, "a map key that is not UTF-8")
				}
				if kk := t.typ.MapKey(); kk != packed.KText {
					// An Avro map's keys are strings: parsed into the column's key type, into memory
					// of their own (the converted value follows in d.buf).
					if key, err = codec.AppendMapKey(nil, kk, key); err != nil {
						var ve *codec.ValueError
						if errors.As(err, &ve) {
							return pos, mapValueErr(name, &codec.ValueError{Plain: "a map key " + strings.TrimPrefix(ve.Plain, "the value "),
								Quoted: "map key " + ve.Quoted})
						}
						return pos, &codec.Error{Reason: codec.ReasonMap, Field: name, Err: err}
					}
				}
			}
			if pos, err = d.convert(n.items, name, &et, t.elem, t.typ.Elem, pos, &ev); err != nil {
				return pos, err
			}
			at := len(d.buf)
			d.buf = append(d.buf, 0, 0, 0, 0)
			d.buf = appendWire(d.buf, t.typ.Elem, &ev)
			binary.BigEndian.PutUint32(d.buf[at:], uint32(len(d.buf)-at-4))
			if n.kind == tMap {
				entries = append(entries, codec.MapEntry{Key: key, At: at, End: len(d.buf)})
			}
			total++
		}
	}
	d.depth--
	end := pos
	if n.kind == tMap {
		d.buf = codec.SortedMap(d.buf, start, entries)
		v.B = d.buf[start:]
		return end, nil
	}
	binary.BigEndian.PutUint32(d.buf[start:], uint32(total))
	v.B = d.buf[start:]
	return end, nil
}

// appendWire appends the CQL wire bytes of an element value v of kind k.
func appendWire(dst []byte, k packed.Kind, v *codec.Value) []byte {
	switch k {
	case packed.KTinyint:
		return packed.AppendTinyint(dst, int8(v.N))
	case packed.KSmallint:
		return packed.AppendSmallint(dst, int16(v.N))
	case packed.KInt:
		return packed.AppendInt(dst, int32(v.N))
	case packed.KBigint:
		return packed.AppendBigint(dst, v.N)
	case packed.KFloat:
		return packed.AppendFloat(dst, float32(v.F))
	case packed.KDouble:
		return packed.AppendDouble(dst, v.F)
	case packed.KTimestamp:
		return packed.AppendTimestamp(dst, v.T)
	case packed.KDate:
		return packed.AppendDate(dst, v.T)
	case packed.KUUID, packed.KTimeUUID:
		return append(dst, v.U[:]...)
	}
	return append(dst, v.B...) // text, ascii and the kinds handed over as wire bytes
}

// mapValueErr is a value that does not fit its column: reason map. The mapper adds the column.
func mapValueErr(name string, err *codec.ValueError) error {
	return &codec.Error{Reason: codec.ReasonMap, Field: name, Err: err}
}

// udt reads record n and sets v.B to the wire bytes of the UDT of t: each field framed, in the UDT's
// order, the writer fields of their names feeding them (a missing one or the null branch of a union
// is a null field; writer fields the UDT has not are skipped).
func (d *decoder) udt(n *node, name string, t *target, pos int, v *codec.Value) (int, error) {
	d.depth++
	if d.depth > maxDepth {
		return pos, d.malformed(name, "nested deeper than %d", maxDepth)
	}
	comp := t.typ.Comp
	var small [16][2]int
	spans := small[:0]
	if len(comp.Fields) > len(small) {
		spans = make([][2]int, 0, len(comp.Fields))
	}
	spans = spans[:len(comp.Fields)]
	for i := range spans {
		spans[i] = [2]int{-1, -1}
	}
	start := len(d.buf)
	var err error
	for i := range t.parts {
		p := &t.parts[i]
		fname := dotted(name, p.name)
		if p.field < 0 {
			if pos, err = d.skip(p.n, fname, pos); err != nil {
				return pos, err
			}
			continue
		}
		at := len(d.buf)
		if pos, err = d.part(p, fname, true, pos); err != nil {
			return pos, err
		}
		spans[p.field] = [2]int{at, len(d.buf)}
	}
	// The fields in the UDT's order after what was read, then moved over it.
	asm := len(d.buf)
	for _, sp := range spans {
		if sp[0] < 0 {
			d.buf = codec.AppendNullElement(d.buf)
			continue
		}
		d.buf = append(d.buf, d.buf[sp[0]:sp[1]]...)
	}
	m := copy(d.buf[start:], d.buf[asm:])
	d.buf = d.buf[: start+m : start+m]
	v.B = d.buf[start:]
	d.depth--
	return pos, nil
}

// sequence reads array n and sets v.B to the wire bytes of the tuple or vector of t: an array of
// another length is bad input, as is a null element of a vector.
func (d *decoder) sequence(n *node, name string, t *target, pos int, v *codec.Value) (int, error) {
	d.depth++
	if d.depth > maxDepth {
		return pos, d.malformed(name, "nested deeper than %d", maxDepth)
	}
	comp := t.typ.Comp
	want := comp.Dim
	if t.conv == cTuple {
		want = len(comp.Types)
	}
	start := len(d.buf)
	total := 0
	for {
		count, p, err := d.block(name, pos)
		if pos = p; err != nil {
			return pos, err
		}
		if count == 0 {
			break
		}
		for range count {
			if total >= want { // too many: read on to count them
				if pos, err = d.skip(n.items, name, pos); err != nil {
					return pos, err
				}
			} else {
				p := &t.parts[0]
				if t.conv == cTuple {
					p = &t.parts[total]
				}
				if pos, err = d.part(p, name+"["+strconv.Itoa(total)+"]", t.conv == cTuple, pos); err != nil {
					return pos, err
				}
			}
			total++
		}
	}
	d.depth--
	if total != want {
		return pos, mapValueErr(name, &codec.ValueError{Plain: "the array has " + strconv.Itoa(total) + " items; CQL " + t.typ.String() +
			" takes exactly " + strconv.Itoa(want)})
	}
	v.B = d.buf[start:]
	return pos, nil
}

// part reads the value of p and appends its wire bytes to d.buf: framed (a UDT's field, a tuple's
// element; the null branch of a union a null) or not (a vector's element, which cannot be null).
func (d *decoder) part(p *part, name string, framed bool, pos int) (int, error) {
	n, t := p.n, p.arms[0]
	if n.kind == tUnion {
		idx, end, err := d.long(name, pos)
		if err != nil {
			return end, err
		}
		if idx < 0 || idx >= int64(len(n.branches)) {
			return end, d.malformed(name, "union branch %d of %d", idx, len(n.branches))
		}
		pos, n, t = end, n.branches[idx], p.arms[idx]
	}
	if t == nil {
		if !framed {
			return pos, mapValueErr(name, &codec.ValueError{Plain: "an element is null, and a CQL vector cannot hold nulls"})
		}
		d.buf = codec.AppendNullElement(d.buf)
		return pos, nil
	}
	if t.conv == cNone { // a union branch that cannot feed this tuple element
		return pos, mapValueErr(name, &codec.ValueError{Plain: "the item is " + n.describe() + ", which cannot feed CQL " + t.typ.String()})
	}
	var ev codec.Value
	at := len(d.buf)
	pos, err := d.convert(n, name, t, t.conv, t.typ.Kind, pos, &ev)
	if err != nil {
		return pos, err
	}
	// The value's bytes may be in d.buf from at (a decimal, a time, a list): its wire bytes follow
	// them, then move over them.
	mid := len(d.buf)
	if framed {
		d.buf = codec.AppendElement(d.buf, t.typ.Kind, &ev)
	} else {
		d.buf = appendWire(d.buf, t.typ.Kind, &ev)
	}
	m := copy(d.buf[at:], d.buf[mid:])
	d.buf = d.buf[:at+m]
	return pos, nil
}
