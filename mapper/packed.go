package mapper

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"unsafe"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/bucketsink/sink/batcher"
)

// Packed rows.
//
// A row waits in its batch for up to seconds, by the hundred thousand, and a row whose values are
// a []any of pointers into a block of row memory costs the collector a scan of every value at
// every cycle, and the writer a handful of cold cache lines when it finally binds them. So the
// mapper builds a row's values in scratch row memory (rowmem.go) and then packs their bytes, the
// bytes Cassandra receives, into one allocation with no pointers, followed by the routing key:
//
//	count uint16 | per value: tag byte [, length uvarint], bytes | routing key
//
// The tag is the kind the bytes were encoded for (so binding still refuses a bind marker of
// another type, see BindTypeError), or tagUnset or tagNull, which carry no bytes. Only text and
// ascii carry a length; every other kind's width follows from it (fixedWidth). That took the
// sensor record of BenchmarkMapSensor from a 144-byte to a 112-byte allocation: less to write when
// the row is mapped and to read, cold, when it is written. Row.Packed is the values part; Row.Key is
// a string over the key part, in the same allocation.
//
// Binder turns packed rows into bind arguments at write time, into memory reused batch after
// batch. Topics with a column type the mapper does not encode (collections, blob, inet, decimal,
// varint, boolean) keep Row.Values.

const (
	tagUnset = 0xfe // gocql.UnsetValue: the column is left as it is
	tagNull  = 0xff // nil: the column is written null (protocol 3 has no unset)
)

// packedHeader is the size of the value count.
const packedHeader = 2

// pack serializes vals and key into one allocation and sets row.Packed, row.Key and row.Size,
// building the values part in buf first (a scratch buffer, returned for reuse). It returns false,
// leaving row alone, if a value is of a kind it does not pack. The switch is on concrete types:
// asserting to the encoded interface costs an itab lookup per value.
func pack(row *batcher.Row, vals []any, key, buf []byte) ([]byte, bool) {
	buf = binary.BigEndian.AppendUint16(buf[:0], uint16(len(vals)))
	size := rowOverhead
	for _, v := range vals {
		var k kind
		var w []byte
		switch e := v.(type) {
		case *encText:
			k, w = kText, e.wire()
		case *encASCII:
			k, w = kASCII, e.wire()
		case *encBigint:
			k, w = kBigint, e[:]
		case *encInt:
			k, w = kInt, e[:]
		case *encSmallint:
			k, w = kSmallint, e[:]
		case *encTinyint:
			k, w = kTinyint, e[:]
		case *encFloat:
			k, w = kFloat, e[:]
		case *encDouble:
			k, w = kDouble, e[:]
		case *encTimestamp:
			k, w = kTimestamp, e[:]
		case *encDate:
			k, w = kDate, e[:]
		case *encUUID:
			k, w = kUUID, e[:]
		case *encTimeUUID:
			k, w = kTimeUUID, e[:]
		case nil:
			buf = append(buf, tagNull)
			size += 4
			continue
		default:
			if v != gocql.UnsetValue {
				return buf, false
			}
			buf = append(buf, tagUnset)
			size += 4
			continue
		}
		buf = append(buf, byte(k))
		if packedWidth[k] == 0 {
			buf = binary.AppendUvarint(buf, uint64(len(w)))
		}
		buf = append(buf, w...)
		size += 4 + len(w)
	}
	n := len(buf)
	own := make([]byte, n+len(key))
	copy(own, buf)
	copy(own[n:], key)
	row.Packed = own[:n:n]
	row.Values = nil
	row.Size = size
	if len(key) > 0 {
		row.Key = unsafe.String(&own[n], len(key))
	} else {
		row.Key = ""
	}
	return buf, true
}

// NumValues is how many values a row binds, packed or not.
func NumValues(r *batcher.Row) int {
	if r.Packed != nil {
		return int(binary.BigEndian.Uint16(r.Packed))
	}
	return len(r.Values)
}

// packedValue is one packed value being bound: gocql marshals it by calling MarshalCQL.
type packedValue struct {
	b []byte
	k kind
}

// MarshalCQL returns the bytes for a bind marker of the type they were encoded for, and a
// *BindTypeError for any other, as the encoded types do (encoded.go).
func (v *packedValue) MarshalCQL(info gocql.TypeInfo) ([]byte, error) {
	t := bindType(info)
	if t != packedTypes[v.k] && (v.k != kText || t != gocql.TypeText) {
		return nil, bindTypeError(v.k, info)
	}
	return v.b, nil
}

// packedWidth is fixedWidth as an array: the width of a packed value of each kind, 0 for text and
// ascii, which carry their length.
var packedWidth = func() (a [kMap + 1]uint8) {
	for k := range a {
		a[k] = uint8(fixedWidth(kind(k)))
	}
	return a
}()

// packedTypes is gocqlTypes as an array: MarshalCQL runs for every value of every row written.
var packedTypes = func() (a [kMap + 1]gocql.Type) {
	for i := range a {
		a[i] = gocql.TypeCustom // matches no bind marker bindType reports for a native type
	}
	for k, t := range gocqlTypes {
		a[k] = t
	}
	return a
}()

// Binder turns rows into bind arguments. A packed row's arguments point into the row and into the
// binder's memory, which Reset lets the next batch reuse: arguments are valid until Reset. One
// binder serves one goroutine; writers keep them in a sync.Pool.
type Binder struct {
	vals []packedValue
	args []any
}

// Reserve makes room for the arguments of rows, so that Args never grows the binder's memory while
// they are bound. It reads every packed row's value count first, in a loop of independent loads: a
// row waits in its batch long enough to leave the CPU caches, and these loads overlap their misses,
// where reading row after row in Args would wait for each in turn.
func (b *Binder) Reserve(rows []batcher.Row) {
	n := 0
	for i := range rows {
		if p := rows[i].Packed; len(p) >= packedHeader {
			n += int(binary.BigEndian.Uint16(p))
		} else {
			n += len(rows[i].Values)
		}
	}
	if cap(b.args)-len(b.args) < n {
		b.args = slices.Grow(b.args, n)
	}
	if cap(b.vals)-len(b.vals) < n {
		b.vals = slices.Grow(b.vals, n)
	}
}

// Args returns the bind arguments of r: Values as they are, or the packed values unpacked.
func (b *Binder) Args(r *batcher.Row) []any {
	if r.Packed == nil {
		return r.Values
	}
	p := r.Packed
	n := int(binary.BigEndian.Uint16(p))
	start := len(b.args)
	at := packedHeader
	for range n {
		switch tag := p[at]; tag {
		case tagUnset:
			b.args = append(b.args, gocql.UnsetValue)
			at++
		case tagNull:
			b.args = append(b.args, nil)
			at++
		default:
			k := kind(tag)
			at++
			l := int(packedWidth[k])
			if l == 0 {
				u, m := binary.Uvarint(p[at:])
				l, at = int(u), at+m
			}
			// Earlier pointers stay valid if append moves vals: they keep the old array alive, and an
			// entry is never written after its pointer is taken.
			b.vals = append(b.vals, packedValue{b: p[at : at+l : at+l], k: k})
			b.args = append(b.args, &b.vals[len(b.vals)-1])
			at += l
		}
	}
	return b.args[start:len(b.args):len(b.args)]
}

// Reset forgets every argument handed out, and what they referred to.
func (b *Binder) Reset() {
	clear(b.vals)
	clear(b.args)
	b.vals, b.args = b.vals[:0], b.args[:0]
}

// Values returns the values of r as the mapper bound them before packing: for a packed row, each
// value as a pre-encoded value (see GoValue), gocql.UnsetValue or nil, in new memory. For tests,
// `sink explain` and diagnostics; the write path uses a Binder.
func Values(r batcher.Row) []any {
	if r.Packed == nil {
		return r.Values
	}
	var b Binder
	args := b.Args(&r)
	out := make([]any, len(args))
	for i, a := range args {
		pv, ok := a.(*packedValue)
		if !ok {
			out[i] = a
			continue
		}
		out[i] = unpacked(pv.k, bytes.Clone(pv.b))
	}
	return out
}

// unpacked is the encoded value of kind k whose bytes are w, in memory of its own.
func unpacked(k kind, w []byte) encoded {
	switch k {
	case kText:
		e := encText(w)
		return &e
	case kASCII:
		e := encASCII(w)
		return &e
	case kBigint:
		return (*encBigint)(w)
	case kInt:
		return (*encInt)(w)
	case kSmallint:
		return (*encSmallint)(w)
	case kTinyint:
		return (*encTinyint)(w)
	case kFloat:
		return (*encFloat)(w)
	case kDouble:
		return (*encDouble)(w)
	case kTimestamp:
		return (*encTimestamp)(w)
	case kDate:
		return (*encDate)(w)
	case kUUID:
		return (*encUUID)(w)
	case kTimeUUID:
		return (*encTimeUUID)(w)
	}
	panic(fmt.Sprintf("mapper: packed value of kind %d", k))
}
