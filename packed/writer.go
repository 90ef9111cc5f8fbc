package packed

import (
	"encoding/binary"
	"time"
	"unsafe"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

// Tags of the values that carry no bytes; every other tag is the Kind of the value.
const (
	tagUnset = 0xfe // gocql.UnsetValue: the column is left as it is
	tagNull  = 0xff // nil: the column is written null (protocol 3 has no unset)
)

// header is the size of the value count that starts a packed row.
const header = 2

// Span is where the wire bytes of one value lie in a Writer's buffer; Off is -1 for an unset or
// null value, which has none.
type Span struct{ Off, End int }

// Absent reports whether the value was unset or null.
func (s Span) Absent() bool { return s.Off < 0 }

// Writer builds the packed values of one row at a time, in an append buffer it reuses row after
// packed: Reset, one call per value in bind order, then Finish. A Writer is not safe for concurrent
// use; the mapper keeps one per pooled scratch.
type Writer struct {
	buf  []byte
	tmp  []byte // AppendValue's output before its length is known
	n    int    // values written
	size int    // their encoded size, each with its 4-byte length
	last Span
}

// Reset starts a new row.
func (w *Writer) Reset() {
	w.buf = append(w.buf[:0], 0, 0)
	w.n, w.size = 0, 0
}

// Last is the span of the value written last.
func (w *Writer) Last() Span { return w.last }

// Wire is the bytes of a value written since the last Reset; valid until the next Reset.
func (w *Writer) Wire(s Span) []byte { return w.buf[s.Off:s.End:s.End] }

// Unset writes gocql.UnsetValue.
func (w *Writer) Unset() { w.absent(tagUnset) }

// Null writes a null.
func (w *Writer) Null() { w.absent(tagNull) }

func (w *Writer) absent(tag byte) {
	w.buf = append(w.buf, tag)
	w.n++
	w.size += 4
	w.last = Span{-1, -1}
}

// Absent writes v, which is gocql.UnsetValue or nil.
func (w *Writer) Absent(v any) {
	if v == nil {
		w.Null()
		return
	}
	w.Unset()
}

// fixed starts a scalar of fixed width (kind k): its tag alone.
func (w *Writer) fixed(k Kind) {
	w.buf = append(w.buf, byte(k))
	w.last.Off = len(w.buf)
}

func (w *Writer) end() {
	w.last.End = len(w.buf)
	w.n++
	w.size += 4 + w.last.End - w.last.Off
}

// Encoded writes a value of type t whose wire bytes are b (as the Append functions make them).
func (w *Writer) Encoded(t Type, b []byte) {
	w.buf = append(w.buf, byte(t.Kind))
	if t.Kind.Collection() {
		w.buf = append(w.buf, byte(t.Elem))
		if t.Kind == KMap {
			w.buf = append(w.buf, byte(t.MapKey()))
		}
	}
	if kindInfo[t.Kind].width == 0 {
		if n := len(b); n < 0x80 { // the usual length: a one-byte uvarint, appended in place
			w.buf = append(w.buf, byte(n))
		} else {
			w.set(binary.AppendUvarint(w.buf, uint64(n)))
		}
	}
	w.last.Off = len(w.buf)
	w.set(append(w.buf, b...))
	w.end()
	if t.Kind == KTuple && t.Comp != nil {
		w.n += len(t.Comp.Types) - 1 // a tuple binds one value per element (see Binder.Args)
	}
}

// NullTuple writes a tuple of type t whose elements are all null: what a tuple column without a value
// binds, since its elements are bound one by one and a tuple literal takes no unset element.
func (w *Writer) NullTuple(t Type) {
	w.tmp = w.tmp[:0]
	for range t.Comp.Types {
		w.tmp = append(w.tmp, 0xff, 0xff, 0xff, 0xff)
	}
	w.Encoded(t, w.tmp)
}

// set makes b, the buffer with bytes appended, the buffer. When the append did not move it, only
// the length is written: an assignment of a function's result (or of append(w.buf, b...)) stores
// the buffer's pointer too, with a write barrier while the collector marks, on every value.
func (w *Writer) set(b []byte) {
	if unsafe.SliceData(b) == unsafe.SliceData(w.buf) {
		w.buf = w.buf[:len(b)]
		return
	}
	w.buf = b
}

// Text writes a text or ascii value (k is KText or KASCII).
func (w *Writer) Text(k Kind, b []byte) { w.Encoded(Type{Kind: k}, b) }

// Integer writes n as a tinyint, smallint, int or bigint (k); n is in the kind's range.
func (w *Writer) Integer(k Kind, n int64) {
	w.fixed(k)
	switch k {
	case KTinyint:
		w.set(AppendTinyint(w.buf, int8(n)))
	case KSmallint:
		w.set(AppendSmallint(w.buf, int16(n)))
	case KInt:
		w.set(AppendInt(w.buf, int32(n)))
	default:
		w.set(AppendBigint(w.buf, n))
	}
	w.end()
}

// Floating writes f as a float or double (k); f is in float32's range for a float.
func (w *Writer) Floating(k Kind, f float64) {
	w.fixed(k)
	if k == KFloat {
		w.set(AppendFloat(w.buf, float32(f)))
	} else {
		w.set(AppendDouble(w.buf, f))
	}
	w.end()
}

// Time writes t as a timestamp or date (k).
func (w *Writer) Time(k Kind, t time.Time) {
	w.fixed(k)
	if k == KDate {
		w.set(AppendDate(w.buf, t))
	} else {
		w.set(AppendTimestamp(w.buf, t))
	}
	w.end()
}

// UUID writes u as a uuid or timeuuid (k).
func (w *Writer) UUID(k Kind, u gocql.UUID) {
	w.fixed(k)
	w.set(AppendUUID(w.buf, u))
	w.end()
}

// Value writes v, a Go value of type t as AppendValue takes it.
func (w *Writer) Value(t Type, v any) error {
	var err error
	w.tmp, err = AppendValue(w.tmp[:0], t, v)
	if err != nil {
		return err
	}
	w.Encoded(t, w.tmp)
	return nil
}

// Values is the packed form of the values written since Reset (their tags, lengths and wire bytes,
// without the count), the same bytes for the same values; valid until the next write.
func (w *Writer) Values() []byte { return w.buf[header:] }

// Size is the encoded size of the values written since Reset, each with its 4-byte length.
func (w *Writer) Size() int { return w.size }

// Finish copies the row's packed values, followed by the routing key, into one new allocation with
// no pointers in it, and returns the values part and the key, a string over the rest.
func (w *Writer) Finish(key []byte) (values []byte, k string) {
	own, n := w.AppendRow(make([]byte, 0, len(w.buf)+len(key)), key)
	return Split(own, n)
}

// AppendRow appends the row's packed values, followed by the routing key, to dst, and returns the
// extended buffer and the length of the values part. Several rows appended to one buffer, copied
// once into their own allocation, give each row its part with Split: the rows of one record then
// cost one allocation.
func (w *Writer) AppendRow(dst, key []byte) ([]byte, int) {
	binary.BigEndian.PutUint16(w.buf, uint16(w.n))
	dst = append(dst, w.buf...)
	return append(dst, key...), len(w.buf)
}

// Split is a row's values and key over own, which holds the values' n bytes followed by the key and
// nothing else (AppendRow's output for one row). The values' capacity ends at n.
func Split(own []byte, n int) (values []byte, k string) {
	if len(own) > n {
		k = unsafe.String(&own[n], len(own)-n)
	}
	return own[:n:n], k
}

// Shrink drops a buffer that one huge row grew past max bytes, so that it does not stay pinned.
func (w *Writer) Shrink(max int) {
	if cap(w.buf) > max {
		w.buf = nil
	}
	if cap(w.tmp) > max {
		w.tmp = nil
	}
}

// AppendKeyComponent appends one partition key value's wire bytes b in routing-key form: the
// bytes as they are when the key has one component, else a 2-byte big-endian length, the bytes and
// a 0x00. The routing key is what Cassandra hashes to a token.
func AppendKeyComponent(dst []byte, components int, b []byte) []byte {
	if components == 1 {
		return append(dst, b...)
	}
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(b)))
	dst = append(dst, b...)
	return append(dst, 0)
}
