package packed

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"net"
	"slices"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"gopkg.in/inf.v0"
)

// The encoders append a value's wire bytes, without the 4-byte length, exactly as gocql's
// marshalers produce them for the Go value of the column's type, with one difference: the zero
// time.Time, which gocql sends as an empty value, is encoded as the instant
// 0001-01-01T00:00:00Z it is.

// AppendBigint appends a bigint: 8 bytes, big-endian two's complement.
func AppendBigint(dst []byte, n int64) []byte { return binary.BigEndian.AppendUint64(dst, uint64(n)) }

// AppendInt appends an int: 4 bytes, big-endian two's complement.
func AppendInt(dst []byte, n int32) []byte { return binary.BigEndian.AppendUint32(dst, uint32(n)) }

// AppendSmallint appends a smallint: 2 bytes, big-endian two's complement.
func AppendSmallint(dst []byte, n int16) []byte { return binary.BigEndian.AppendUint16(dst, uint16(n)) }

// AppendTinyint appends a tinyint: 1 byte.
func AppendTinyint(dst []byte, n int8) []byte { return append(dst, byte(n)) }

// AppendFloat appends a float: IEEE 754 binary32, big-endian.
func AppendFloat(dst []byte, f float32) []byte {
	return binary.BigEndian.AppendUint32(dst, math.Float32bits(f))
}

// AppendDouble appends a double: IEEE 754 binary64, big-endian.
func AppendDouble(dst []byte, f float64) []byte {
	return binary.BigEndian.AppendUint64(dst, math.Float64bits(f))
}

// AppendBoolean appends a boolean: one byte, 1 or 0.
func AppendBoolean(dst []byte, b bool) []byte {
	if b {
		return append(dst, 1)
	}
	return append(dst, 0)
}

// AppendTimestamp appends a timestamp: whole milliseconds since the Unix epoch (the sub-millisecond
// part dropped), 8 bytes big-endian.
func AppendTimestamp(dst []byte, t time.Time) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(unixMilli(t)))
}

// AppendDate appends a date: gocql's milliseconds divided by a day's (Go division, which truncates
// toward zero; the sink's dates are all midnight UTC, where that never shows), plus 2^31, 4 bytes.
func AppendDate(dst []byte, t time.Time) []byte {
	return binary.BigEndian.AppendUint32(dst, uint32(int32(unixMilli(t)/msPerDay+(1<<31))))
}

// AppendUUID appends a uuid or timeuuid: its 16 bytes.
func AppendUUID(dst []byte, u gocql.UUID) []byte { return append(dst, u[:]...) }

// AppendInet appends an inet: 4 bytes for an IPv4 address, else 16.
func AppendInet(dst []byte, ip net.IP) []byte {
	if v4 := ip.To4(); v4 != nil {
		return append(dst, v4...)
	}
	return append(dst, ip.To16()...)
}

// AppendDecimal appends a decimal: the scale as 4 bytes big-endian, then the unscaled value as a varint.
func AppendDecimal(dst []byte, d *inf.Dec) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(int32(d.Scale())))
	return AppendVarint(dst, d.UnscaledBig())
}

// AppendVarint appends a varint: the minimal big-endian two's-complement form of n.
func AppendVarint(dst []byte, n *big.Int) []byte {
	switch n.Sign() {
	case 0:
		return append(dst, 0)
	case 1:
		// The magnitude's bytes, filled in place, with a 0x00 in front when the top bit would
		// otherwise read as negative.
		size := (n.BitLen() + 8) / 8 // one bit more than the magnitude: room for the sign
		at := len(dst)
		dst = slices.Grow(dst, size)[:at+size]
		n.FillBytes(dst[at:])
		return dst
	}
	// For n < 0 the two's complement bytes are the inverted bytes of |n|-1 = ^n, with a 0xff sign
	// byte in front when the top bit would otherwise read as positive.
	m := new(big.Int).Not(n).Bytes()
	if len(m) == 0 || m[0]&0x80 != 0 {
		dst = append(dst, 0xff)
	}
	for _, c := range m {
		dst = append(dst, ^c)
	}
	return dst
}

const msPerDay = 24 * 60 * 60 * 1000

// unixMilli is gocql's milliseconds of t.
func unixMilli(t time.Time) int64 { return t.Unix()*1e3 + int64(t.Nanosecond()/1e6) }

// AppendValue appends the wire bytes of v, the Go value gocql binds for type t: string (text,
// ascii), int8, int16, int32, int64, float32, float64, bool, time.Time (timestamp, date), gocql.UUID,
// []byte, net.IP, *inf.Dec, *big.Int; for a list or set a []any of element values, for a map a
// map[string]any, whose entries it writes in key order so that the same map always gives the same
// bytes (gocql's order is Go's map order). A collection is framed as in native protocol 3 and later:
// a 4-byte count, then per element (per key and value of a map) a 4-byte length and the bytes.
// Integers and times are also accepted for the other integer and time kinds the way gocql accepts
// them (an int64 timestamp is milliseconds). An error names a value that does not fit t.
func AppendValue(dst []byte, t Type, v any) ([]byte, error) {
	switch t.Kind {
	case KList, KSet:
		elems, ok := v.([]any)
		if !ok {
			return dst, fmt.Errorf("packed: %T is not a []any for CQL %s", v, t)
		}
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(elems)))
		for _, e := range elems {
			var err error
			if dst, err = appendElem(dst, t.Elem, e); err != nil {
				return dst, err
			}
		}
		return dst, nil
	case KMap:
		m, ok := v.(map[string]any)
		if !ok {
			return dst, fmt.Errorf("packed: %T is not a map[string]any for CQL %s", v, t)
		}
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(m)))
		keys := make([]string, 0, 8) // on the stack for a small map
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			dst = binary.BigEndian.AppendUint32(dst, uint32(len(k)))
			dst = append(dst, k...)
			var err error
			if dst, err = appendElem(dst, t.Elem, m[k]); err != nil {
				return dst, err
			}
		}
		return dst, nil
	}
	return appendScalar(dst, t.Kind, v)
}

// appendElem appends one collection element with its 4-byte length.
func appendElem(dst []byte, k Kind, v any) ([]byte, error) {
	at := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst, err := appendScalar(dst, k, v)
	binary.BigEndian.PutUint32(dst[at:], uint32(len(dst)-at-4))
	return dst, err
}

func appendScalar(dst []byte, k Kind, v any) ([]byte, error) {
	switch x := v.(type) {
	case string:
		switch k {
		case KText, KASCII, KBlob:
			return append(dst, x...), nil
		}
	case []byte:
		switch k {
		case KText, KASCII, KBlob:
			return append(dst, x...), nil
		}
	case int8:
		return appendInteger(dst, k, int64(x))
	case int16:
		return appendInteger(dst, k, int64(x))
	case int32:
		return appendInteger(dst, k, int64(x))
	case int64:
		return appendInteger(dst, k, x)
	case int:
		return appendInteger(dst, k, int64(x))
	case float32:
		if k == KFloat {
			return AppendFloat(dst, x), nil
		}
	case float64:
		if k == KDouble {
			return AppendDouble(dst, x), nil
		}
	case bool:
		if k == KBoolean {
			return AppendBoolean(dst, x), nil
		}
	case time.Time:
		switch k {
		case KTimestamp:
			return AppendTimestamp(dst, x), nil
		case KDate:
			return AppendDate(dst, x), nil
		}
	case gocql.UUID:
		if k == KUUID || k == KTimeUUID {
			return AppendUUID(dst, x), nil
		}
	case net.IP:
		if k == KInet {
			return AppendInet(dst, x), nil
		}
	case *inf.Dec:
		if k == KDecimal {
			return AppendDecimal(dst, x), nil
		}
	case *big.Int:
		if k == KVarint {
			return AppendVarint(dst, x), nil
		}
	}
	return dst, fmt.Errorf("packed: %T is not a value for CQL %s", v, k)
}

// appendInteger appends n for an integer kind, checking its range, or as milliseconds for a
// timestamp and date (as gocql does).
func appendInteger(dst []byte, k Kind, n int64) ([]byte, error) {
	switch k {
	case KBigint:
		return AppendBigint(dst, n), nil
	case KInt:
		if n == int64(int32(n)) {
			return AppendInt(dst, int32(n)), nil
		}
	case KSmallint:
		if n == int64(int16(n)) {
			return AppendSmallint(dst, int16(n)), nil
		}
	case KTinyint:
		if n == int64(int8(n)) {
			return AppendTinyint(dst, int8(n)), nil
		}
	case KVarint:
		return AppendVarint(dst, big.NewInt(n)), nil
	case KTimestamp:
		return binary.BigEndian.AppendUint64(dst, uint64(n)), nil
	case KDate:
		return binary.BigEndian.AppendUint32(dst, uint32(int32(n/msPerDay+(1<<31)))), nil
	default:
		return dst, fmt.Errorf("packed: an integer is not a value for CQL %s", k)
	}
	return dst, fmt.Errorf("packed: %d is out of range for CQL %s", n, k)
}
