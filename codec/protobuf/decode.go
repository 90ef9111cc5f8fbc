package protobuf

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/packed"
)

// maxDepth bounds how deeply the walk follows nested messages: deeper than any configured path needs.
const maxDepth = 64

// Decode reads the message indexes at the start of body, then walks the message they name into out.
func (p *plan) Decode(body []byte, out []codec.Value, buf []byte) ([]byte, error) {
	var key msgKey
	rest, err := readIndexes(body, &key)
	if err != nil {
		return buf, err
	}
	e, err := p.entry(&key)
	if err != nil {
		return buf, err
	}
	if e.err != nil {
		return buf, e.err
	}
	for i := range out {
		out[i] = codec.Value{}
	}
	d := decoder{out: out, buf: buf}
	err = d.message(e.m, rest, 0)
	return d.buf, err
}

// readIndexes reads the Confluent message-index array: a zig-zag count, then that many zig-zag indexes; a count
// of 0 (one 0 byte) is [0], the file's first message.
func readIndexes(b []byte, key *msgKey) ([]byte, error) {
	count, n := protowire.ConsumeVarint(b)
	if n < 0 {
		return nil, codec.Decodef("protobuf message indexes cut short or malformed: the body is %d bytes", len(b))
	}
	b = b[n:]
	c := protowire.DecodeZigZag(count)
	switch {
	case c == 0:
		key.n, key.idx[0] = 1, 0
		return b, nil
	case c < 0 || c > maxIndexDepth:
		return nil, codec.Decodef("protobuf message indexes: a count of %d (at most %d levels are read)", c, maxIndexDepth)
	}
	key.n = uint8(c)
	for i := 0; i < int(c); i++ {
		x, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return nil, codec.Decodef("protobuf message indexes cut short: %d of %d read", i, c)
		}
		b = b[n:]
		v := protowire.DecodeZigZag(x)
		if v < 0 || v > math.MaxInt32 {
			return nil, codec.Decodef("protobuf message indexes: index %d is not a message index", v)
		}
		key.idx[i] = int32(v)
	}
	return b, nil
}

// decoder is the state of one Decode.
type decoder struct {
	out []codec.Value
	buf []byte
}

func malformed(format string, args ...any) error {
	return codec.Decodef("protobuf: "+format, args...)
}

// message walks the fields of one message in b. Fields no leaf or path needs are skipped by wire type. The
// defaults of implicit presence are set at the end, so a later occurrence of the field always wins.
func (d *decoder) message(m *message, b []byte, depth int) error {
	if depth > maxDepth {
		return malformed("messages nested deeper than %d", maxDepth)
	}
	whole := b
	for len(b) > 0 {
		at := len(whole) - len(b)
		num, typ, n := consumeTag(b)
		if n < 0 {
			return malformed("a malformed field tag at byte %d of a message", at)
		}
		b = b[n:]
		f, n := consumeField(num, typ, b)
		if n < 0 {
			return malformed("field %d (wire type %d) cut short or malformed at byte %d of a message", num, typ, at)
		}
		b = b[n:]
		st := m.step(num)
		if st == nil {
			continue
		}
		if st.sub != nil {
			if typ != protowire.BytesType {
				return malformed("field %d is a message, but its wire type is %d", num, typ)
			}
			if err := d.message(st.sub, f.b, depth+1); err != nil {
				return err
			}
		}
		for _, lf := range st.leaves {
			var err error
			if lf.udt != nil {
				if d.out[lf.out].State == codec.Absent {
					// The first occurrence merges every occurrence of the message, as Protobuf does.
					err = d.udt(lf, num, f, b, depth, &d.out[lf.out])
				}
			} else if lf.shape == single {
				err = d.single(lf, f, depth)
			} else if d.out[lf.out].State == codec.Absent {
				// The first occurrence gathers every occurrence of the field in this message.
				err = d.collection(lf, num, whole[at:], depth)
			}
			if err != nil {
				return err
			}
		}
	}
	for _, lf := range m.leaves {
		if lf.implicit && d.out[lf.out].State == codec.Absent {
			if err := d.zero(lf); err != nil {
				return err
			}
		}
	}
	return nil
}

// scalar is one decoded Protobuf value.
type scalar struct {
	n      int64 // the integers and bool, enum numbers; an unsigned 64-bit value's bits
	signed bool
	f      float64
	b      []byte // string, bytes
	t      time.Time
}

// single reads one occurrence of a singular field into its value; a later occurrence overwrites it.
func (d *decoder) single(lf *leaf, f field, depth int) error {
	v := &d.out[lf.out] // a later occurrence overwrites the member its kind uses
	var s scalar
	if err := readValue(lf, lf.src, f, depth, &s); err != nil {
		return d.fieldErr(lf, err)
	}
	if err := d.set(lf, v, lf.kind, &s); err != nil {
		return err
	}
	v.State = codec.Set
	return nil
}

// zero sets the default value of a field with implicit presence that is not on the wire. A time or a value a
// string must spell (uuid, inet, ...) stays absent: a default there is a writer that forgot the field.
func (d *decoder) zero(lf *leaf) error {
	switch lf.kind {
	case packed.KTimestamp, packed.KDate, packed.KUUID, packed.KTimeUUID, packed.KInet:
		return nil
	case packed.KDecimal, packed.KVarint, packed.KTime, packed.KDuration:
		if lf.src == sString {
			return nil
		}
	}
	s := scalar{signed: true}
	v := &d.out[lf.out]
	if err := d.set(lf, v, lf.kind, &s); err != nil {
		return err
	}
	v.State = codec.Set
	return nil
}

// wireErr is a value whose wire type does not match its declared type.
type wireErr struct {
	src source
	typ protowire.Type
}

func (e wireErr) Error() string {
	return fmt.Sprintf("a %s value with wire type %d", sourceNames[e.src], e.typ)
}

// field is one field's value as the wire holds it: x for the varint and fixed types, b for length-delimited.
type field struct {
	typ protowire.Type
	x   uint64
	b   []byte
}

// consumeTag is protowire.ConsumeTag with the one-byte tag of field numbers 1 to 15 read inline.
func consumeTag(b []byte) (protowire.Number, protowire.Type, int) {
	if len(b) > 0 && b[0] < 0x80 && b[0] >= 8 {
		return protowire.Number(b[0] >> 3), protowire.Type(b[0] & 7), 1
	}
	return protowire.ConsumeTag(b)
}

// consumeField reads the value of field num of wire type typ at the start of b, once, and returns it with its
// length (negative when cut short or malformed). A group is skipped whole.
func consumeField(num protowire.Number, typ protowire.Type, b []byte) (field, int) {
	f := field{typ: typ}
	var n int
	switch typ {
	case protowire.VarintType:
		if len(b) > 0 && b[0] < 0x80 { // most varints are one byte
			return field{typ: typ, x: uint64(b[0])}, 1
		}
		f.x, n = protowire.ConsumeVarint(b)
	case protowire.Fixed32Type:
		var x uint32
		x, n = protowire.ConsumeFixed32(b)
		f.x = uint64(x)
	case protowire.Fixed64Type:
		f.x, n = protowire.ConsumeFixed64(b)
	case protowire.BytesType:
		if len(b) > 0 && b[0] < 0x80 && int(b[0]) < len(b) { // a length under 128
			l := int(b[0])
			return field{typ: typ, b: b[1 : 1+l : 1+l]}, 1 + l
		}
		f.b, n = protowire.ConsumeBytes(b)
	default:
		n = protowire.ConsumeFieldValue(num, typ, b)
	}
	return f, n
}

// readValue reads one value of source src from f.
func readValue(lf *leaf, src source, f field, depth int, s *scalar) error {
	*s = scalar{signed: true}
	typ, x := f.typ, f.x
	switch src {
	case sInt32, sInt64, sUint32, sUint64, sSint32, sSint64, sBool, sEnum:
		if typ != protowire.VarintType {
			return wireErr{src, typ}
		}
		switch src {
		case sInt32, sEnum:
			s.n = int64(int32(x))
		case sUint32:
			s.n = int64(uint32(x))
		case sUint64:
			s.n, s.signed = int64(x), false
		case sSint32:
			s.n = int64(int32(protowire.DecodeZigZag(x & math.MaxUint32)))
		case sSint64:
			s.n = protowire.DecodeZigZag(x)
		case sBool:
			s.n = 0
			if x != 0 {
				s.n = 1
			}
		default:
			s.n = int64(x)
		}
	case sFixed32, sSfixed32, sFloat:
		if typ != protowire.Fixed32Type {
			return wireErr{src, typ}
		}
		switch src {
		case sFixed32:
			s.n = int64(uint32(x))
		case sSfixed32:
			s.n = int64(int32(uint32(x)))
		default:
			s.f = float64(math.Float32frombits(uint32(x)))
		}
	case sFixed64, sSfixed64, sDouble:
		if typ != protowire.Fixed64Type {
			return wireErr{src, typ}
		}
		switch src {
		case sFixed64:
			s.n, s.signed = int64(x), false
		case sSfixed64:
			s.n = int64(x)
		default:
			s.f = math.Float64frombits(x)
		}
	case sString, sBytes:
		if typ != protowire.BytesType {
			return wireErr{src, typ}
		}
		s.b = f.b
		if src == sString && !utf8.Valid(s.b) {
			return fmt.Errorf("a string that is not UTF-8")
		}
	case sTimestamp, sDuration, sWrapper:
		if typ != protowire.BytesType {
			return wireErr{src, typ}
		}
		return readMessageValue(lf, src, f.b, depth, s)
	}
	return nil
}

// readMessageValue reads a well-known message: Timestamp and Duration (seconds 1, nanos 2) or a wrapper (value
// 1). Their fields are scalars without presence: a field not on the wire is 0.
func readMessageValue(lf *leaf, src source, b []byte, depth int, s *scalar) error {
	var secs, nanos int64
	*s = scalar{signed: true}
	for len(b) > 0 {
		num, typ, n := consumeTag(b)
		if n < 0 {
			return fmt.Errorf("a malformed field tag in %s", sourceNames[src])
		}
		b = b[n:]
		f, n := consumeField(num, typ, b)
		if n < 0 {
			return fmt.Errorf("field %d of a %s cut short", num, sourceNames[src])
		}
		b = b[n:]
		switch {
		case src == sWrapper && num == 1:
			if err := readValue(lf, lf.inner, f, depth+1, s); err != nil {
				return err
			}
		case src != sWrapper && (num == 1 || num == 2):
			if typ != protowire.VarintType {
				return wireErr{sInt64, typ}
			}
			if num == 1 {
				secs = int64(f.x)
			} else {
				nanos = int64(int32(f.x))
			}
		}
	}
	switch src {
	case sTimestamp:
		if nanos < 0 || nanos >= 1e9 {
			return fmt.Errorf("a google.protobuf.Timestamp with nanos %d (0 to 999,999,999)", nanos)
		}
		if secs < minSeconds || secs > maxSeconds {
			return fmt.Errorf("a google.protobuf.Timestamp of %d seconds is out of range for CQL timestamp (years 0000 to 9999)", secs)
		}
		s.t = time.Unix(secs, nanos).UTC()
	case sDuration:
		if nanos <= -1e9 || nanos >= 1e9 || secs > 0 && nanos < 0 || secs < 0 && nanos > 0 {
			return fmt.Errorf("a google.protobuf.Duration with nanos %d for %d seconds", nanos, secs)
		}
		if secs > maxDurationSeconds || secs < -maxDurationSeconds {
			return fmt.Errorf("a google.protobuf.Duration of %d seconds is out of range for bigint nanoseconds", secs)
		}
		s.n = secs*1e9 + nanos
	}
	return nil
}

// maxDurationSeconds keeps a Duration's nanoseconds within an int64.
const maxDurationSeconds = math.MaxInt64/int64(time.Second) - 1

var (
	minSeconds = time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	maxSeconds = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC).Unix()
)

// set converts s into v for kind k.
func (d *decoder) set(lf *leaf, v *codec.Value, k packed.Kind, s *scalar) error {
	if lf.asText {
		return d.setText(lf, v, s)
	}
	var err error
	switch lf.value() {
	case sString, sBytes:
		switch {
		case lf.value() == sBytes && (k == packed.KUUID || k == packed.KTimeUUID):
			if len(s.b) != 16 {
				return d.mapErr(lf, fmt.Errorf("%d bytes are not a UUID (16) for CQL %s", len(s.b), k))
			}
			err = codec.SetUUID(v, k, [16]byte(s.b))
		case lf.value() == sBytes && k == packed.KInet:
			if len(s.b) != 4 && len(s.b) != 16 {
				return d.mapErr(lf, fmt.Errorf("%d bytes are not an IPv4 (4) or IPv6 (16) address for CQL inet", len(s.b)))
			}
			v.B = s.b
		case (k == packed.KTimestamp || k == packed.KDate) && (lf.time.Form == codec.TimeLayout || lf.time.Form == codec.TimeUnix):
			what := ""
			if lf.column != "" {
				what = "for CQL " + k.String()
			}
			t, why := lf.time.Text(k, s.b, what)
			if why != "" {
				return d.mapErr(lf, codec.TextError(s.b, why))
			}
			v.T = t
		default:
			d.buf, err = codec.SetText(v, k, s.b, d.buf)
		}
	case sBool:
		at := len(d.buf)
		d.buf = packed.AppendBoolean(d.buf, s.n != 0)
		v.B = d.buf[at:]
	case sFloat, sDouble:
		err = codec.SetFloat(v, k, s.f)
	case sTimestamp:
		if k == packed.KDate {
			if !s.t.Equal(s.t.Truncate(24 * time.Hour)) {
				return d.mapErr(lf, codec.BadValue(s.t.Format(time.RFC3339Nano), "not at midnight UTC for CQL date"))
			}
		}
		v.T = s.t
	case sEnum:
		if k == packed.KText || k == packed.KASCII {
			name, ok := lf.enum[int32(s.n)]
			if !ok {
				return d.mapErr(lf, &codec.ValueError{Plain: "the enum value has no name in the writer schema", Quoted: fmt.Sprintf("enum value %d has no name in the writer schema", s.n)})
			}
			v.B = name
			return nil
		}
		d.buf, err = codec.SetInteger(v, k, s.n, true, lf.time, d.buf)
	case sDuration:
		if k == packed.KDuration { // seconds and nanoseconds: CQL's nanoseconds, no months or days
			at := len(d.buf)
			d.buf = codec.AppendDuration(d.buf, codec.Duration{Nanos: s.n})
			v.B = d.buf[at:]
			return nil
		}
		d.buf, err = codec.SetInteger(v, k, s.n, s.signed, lf.time, d.buf)
	default: // the integers
		d.buf, err = codec.SetInteger(v, k, s.n, s.signed, lf.time, d.buf)
	}
	if err != nil {
		return d.mapErr(lf, err)
	}
	return nil
}

// setText sets v to the text of s (codec.Field.AsText): a string as it is, an enum's name (its number
// when the writer schema names none), an integer in decimal, a bool as true or false, a float or double in
// the shortest form that reads back exactly.
func (d *decoder) setText(lf *leaf, v *codec.Value, s *scalar) error {
	at := len(d.buf)
	switch src := lf.value(); src {
	case sString:
		v.B = s.b
		return nil
	case sEnum:
		if name, ok := lf.enum[int32(s.n)]; ok {
			v.B = name
			return nil
		}
		d.buf = strconv.AppendInt(d.buf, s.n, 10)
	case sBool:
		d.buf = strconv.AppendBool(d.buf, s.n != 0)
	case sFloat:
		d.buf = strconv.AppendFloat(d.buf, s.f, 'g', -1, 32)
	case sDouble:
		d.buf = strconv.AppendFloat(d.buf, s.f, 'g', -1, 64)
	default:
		if s.signed {
			d.buf = strconv.AppendInt(d.buf, s.n, 10)
		} else {
			d.buf = strconv.AppendUint(d.buf, uint64(s.n), 10)
		}
	}
	v.B = d.buf[at:]
	return nil
}

func (d *decoder) mapErr(lf *leaf, err error) error {
	return &codec.Error{Reason: codec.ReasonMap, Field: lf.name, Column: lf.column, Err: err}
}

func (d *decoder) fieldErr(lf *leaf, err error) error {
	return &codec.Error{Reason: codec.ReasonDecode, Field: lf.name, Column: lf.column, Err: fmt.Errorf("protobuf: %w", err)}
}

// collection reads every occurrence of repeated or map field num in msg (the message from the field's first
// occurrence on) and sets its value to the collection's CQL wire bytes. A repeated scalar may be packed or
// not, in any mix, as the Protobuf spec asks of parsers; a map keeps the last of equal keys, in key order.
func (d *decoder) collection(lf *leaf, num protowire.Number, msg []byte, depth int) error {
	v := &d.out[lf.out]
	start := len(d.buf)
	if lf.dim == 0 { // a vector has no count
		d.buf = append(d.buf, 0, 0, 0, 0)
	}
	count := 0
	var entries []codec.MapEntry
	var ev codec.Value
	for len(msg) > 0 {
		n, f, rest, err := nextField(msg)
		if err != nil {
			return err
		}
		msg = rest
		typ := f.typ
		if n != num {
			continue
		}
		if lf.shape == mapped {
			e, err := d.mapEntry(lf, f, depth, &ev)
			if err != nil {
				return err
			}
			entries = append(entries, e)
			continue
		}
		if typ == protowire.BytesType && packable(lf.src) {
			for inner := f.b; len(inner) > 0; {
				ef, width := consumeField(0, packedWire(lf.src), inner)
				if width < 0 {
					return d.fieldErr(lf, fmt.Errorf("a packed repeated field cut short"))
				}
				if err := d.element(lf, ef, depth, &ev); err != nil {
					return err
				}
				inner = inner[width:]
				count++
			}
			continue
		}
		if err := d.element(lf, f, depth, &ev); err != nil {
			return err
		}
		count++
	}
	switch {
	case lf.shape == mapped:
		d.buf = codec.SortedMap(d.buf, start, entries)
	case lf.dim > 0:
		if count != lf.dim {
			return d.mapErr(lf, &codec.ValueError{Plain: fmt.Sprintf("the repeated field has %d elements; CQL %s takes exactly %d", count, lf.typ, lf.dim)})
		}
	default:
		binary.BigEndian.PutUint32(d.buf[start:], uint32(count))
	}
	v.B = d.buf[start:]
	v.State = codec.Set
	return nil
}

// element appends one element of a repeated field to the collection being built in d.buf.
func (d *decoder) element(lf *leaf, f field, depth int, ev *codec.Value) error {
	var s scalar
	if err := readValue(lf, lf.src, f, depth, &s); err != nil {
		return d.fieldErr(lf, err)
	}
	*ev = codec.Value{}
	if err := d.set(lf, ev, lf.kind, &s); err != nil {
		return err
	}
	at := len(d.buf)
	d.buf = codec.AppendElement(d.buf, lf.kind, ev)
	if lf.dim > 0 { // a vector's elements are not framed
		d.buf = append(d.buf[:at], d.buf[at+4:]...)
	}
	return nil
}

// mapEntry reads one map entry (a message: key 1, value 2; either may be missing and is then its default, for
// a message value the empty message)
// and appends its framed value to d.buf.
func (d *decoder) mapEntry(lf *leaf, f field, depth int, ev *codec.Value) (codec.MapEntry, error) {
	var e codec.MapEntry
	if f.typ != protowire.BytesType {
		return e, d.fieldErr(lf, fmt.Errorf("a map entry with wire type %d", f.typ))
	}
	b := f.b
	var key, val field
	hasKey, hasVal := false, false
	for len(b) > 0 {
		num, t, n := consumeTag(b)
		if n < 0 {
			return e, d.fieldErr(lf, fmt.Errorf("a malformed tag in a map entry"))
		}
		b = b[n:]
		ef, n := consumeField(num, t, b)
		if n < 0 {
			return e, d.fieldErr(lf, fmt.Errorf("a map entry cut short"))
		}
		b = b[n:]
		switch num {
		case 1:
			key, hasKey = ef, true
		case 2:
			val, hasVal = ef, true
		}
	}
	var err error
	if e.Key, err = d.mapKey(lf, key, hasKey); err != nil {
		return e, err
	}
	e.At = len(d.buf)
	if !hasVal && (lf.src == sTimestamp || lf.src == sDuration || lf.src == sWrapper) {
		// The default of a message value is the empty message: a Timestamp of 1970-01-01T00:00:00Z, a
		// Duration or wrapped value of 0, as every Protobuf library reads the entry.
		val, hasVal = field{typ: protowire.BytesType}, true
	}
	if !hasVal {
		*ev = codec.Value{}
		if err := d.set(lf, ev, lf.kind, &scalar{signed: true}); err != nil {
			return e, err
		}
		d.buf = codec.AppendElement(d.buf, lf.kind, ev)
	} else if err := d.element(lf, val, depth, ev); err != nil {
		return e, err
	}
	e.End = len(d.buf)
	return e, nil
}

// packable reports whether a repeated field of src may come packed (every scalar but string and bytes).
func packable(src source) bool {
	switch src {
	case sString, sBytes, sTimestamp, sDuration, sWrapper:
		return false
	}
	return true
}

// packedWire is the wire type of one element of a packed field of src.
func packedWire(src source) protowire.Type {
	switch src {
	case sFixed32, sSfixed32, sFloat:
		return protowire.Fixed32Type
	case sFixed64, sSfixed64, sDouble:
		return protowire.Fixed64Type
	}
	return protowire.VarintType
}

// udt reads the message f, field num, feeding UDT leaf lf and sets v.B to the UDT's wire bytes: each
// field framed, in the UDT's order, null when the message does not have it (as a column would be left
// unset). Later occurrences of the field in rest (the message after f) merge into it, as Protobuf
// merges a message field written twice: their bytes are read after f's.
func (d *decoder) udt(lf *leaf, num protowire.Number, f field, rest []byte, depth int, v *codec.Value) error {
	if f.typ != protowire.BytesType {
		return d.fieldErr(lf, fmt.Errorf("a message with wire type %d", f.typ))
	}
	msg := f.b
	for len(rest) > 0 {
		n, g, after, err := nextField(rest)
		if err != nil {
			return err
		}
		rest = after
		if n != num {
			continue
		}
		if g.typ != protowire.BytesType {
			return d.fieldErr(lf, fmt.Errorf("a message with wire type %d", g.typ))
		}
		if len(msg) == len(f.b) { // a second occurrence: the merged bytes need memory of their own
			msg = append([]byte(nil), f.b...)
		}
		msg = append(msg, g.b...)
	}
	f.b = msg
	var small [16]codec.Value
	vals := small[:0]
	if len(lf.comp.Fields) > len(small) {
		vals = make([]codec.Value, 0, len(lf.comp.Fields))
	}
	vals = vals[:len(lf.comp.Fields)]
	sub := decoder{out: vals, buf: d.buf}
	start := len(d.buf)
	err := sub.message(lf.udt, f.b, depth+1)
	d.buf = sub.buf
	if err != nil {
		return err
	}
	asm := len(d.buf)
	for i := range vals {
		if vals[i].State != codec.Set {
			d.buf = codec.AppendNullElement(d.buf)
			continue
		}
		d.buf = codec.AppendElement(d.buf, lf.comp.Types[i].Kind, &vals[i])
	}
	// The fields' values may be in d.buf from start: the UDT moves over them.
	m := copy(d.buf[start:], d.buf[asm:])
	d.buf = d.buf[:start+m]
	v.B, v.State = d.buf[start:], codec.Set
	return nil
}

// mapKey is the wire bytes, unframed, of a map entry's key f (its default when the entry has none),
// of the column's key kind: a string as it is for text, else parsed as a JSON object's keys are; an
// integer range-checked.
func (d *decoder) mapKey(lf *leaf, f field, has bool) ([]byte, error) {
	s := scalar{signed: true}
	if has {
		if err := readValue(lf, lf.keySrc, f, 0, &s); err != nil {
			return nil, d.fieldErr(lf, fmt.Errorf("a map key: %w", err))
		}
	}
	if lf.keySrc == sString {
		if lf.keyKind == packed.KText {
			return s.b, nil
		}
		key, err := codec.AppendMapKey(nil, lf.keyKind, s.b)
		if err != nil {
			return nil, d.mapErr(lf, err)
		}
		return key, nil
	}
	var kv codec.Value
	if _, err := codec.SetInteger(&kv, lf.keyKind, s.n, s.signed, &codec.TimeFormat{}, nil); err != nil {
		return nil, d.mapErr(lf, fmt.Errorf("a map key: %w", err))
	}
	return codec.AppendElement(nil, lf.keyKind, &kv)[4:], nil
}

// nextField reads the next field of message b: its number, its value, and the bytes after it.
func nextField(b []byte) (protowire.Number, field, []byte, error) {
	n, typ, tn := consumeTag(b)
	if tn < 0 {
		return 0, field{}, nil, malformed("a malformed field tag in a message")
	}
	b = b[tn:]
	f, vn := consumeField(n, typ, b)
	if vn < 0 {
		return 0, field{}, nil, malformed("field %d cut short", n)
	}
	return n, f, b[vn:], nil
}
