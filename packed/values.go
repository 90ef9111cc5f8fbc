package packed

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"net"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"gopkg.in/inf.v0"
)

// Values returns the values of the packed row p in new memory: a *Value for each value (bindable
// as it is, see Value.MarshalCQL, and readable with GoValue), gocql.UnsetValue for an unset one,
// nil for a null. For tests, `sink explain` and diagnostics; the write path uses a Binder.
func Values(p []byte) []any {
	var b Binder
	args := b.Args(p)
	for i, a := range args {
		if v, ok := a.(*Value); ok {
			args[i] = &Value{Type: v.Type, Wire: bytes.Clone(v.Wire)}
		}
	}
	return args
}

// MustPack packs vals, Go values of the CQL types named in types (the first len(vals) of them), with
// no key, and panics on an error. For tests that build rows by hand.
func MustPack(types []string, vals ...any) []byte {
	p, _, err := Pack(MustTypes(types[:len(vals)]...), vals, nil)
	if err != nil {
		panic(err)
	}
	return p
}

// Pack packs vals, Go values of types as AppendValue takes them (gocql.UnsetValue for unset, nil
// for null), followed by key, the way the mapper packs a row. For tests and tools that build rows
// by hand.
func Pack(types []Type, vals []any, key []byte) (values []byte, k string, err error) {
	if len(types) != len(vals) {
		return nil, "", fmt.Errorf("packed: %d types for %d values", len(types), len(vals))
	}
	var w Writer
	w.Reset()
	for i, v := range vals {
		if v == nil || v == gocql.UnsetValue {
			w.Absent(v)
			continue
		}
		if err := w.Value(types[i], v); err != nil {
			return nil, "", fmt.Errorf("value %d: %w", i, err)
		}
	}
	values, k = w.Finish(key)
	return values, k, nil
}

// GoValue returns the Go value a *Value stands for, the type gocql would bind to the same bytes:
// string (text, ascii), int64, int32, int16, int8, float32, float64, bool, time.Time in UTC with
// millisecond precision (timestamp, date), gocql.UUID, []byte, net.IP, *inf.Dec, *big.Int, []any
// (list, set) and map[string]any (a key that is not text in its fmt form); time.Duration (time),
// gocql.Duration; for a tuple []any and for a UDT map[string]any of its parts when the Value's Type has
// them (a Value read from a packed row has not: its bytes, as for a tuple's element), for a vector
// []any. Any other value is returned as it is (gocql.UnsetValue, nil).
func GoValue(v any) any {
	x, ok := v.(*Value)
	if !ok {
		return v
	}
	switch x.Type.Kind {
	case KList, KSet:
		n, rest := collectionCount(x.Wire)
		out := make([]any, 0, n)
		for range n {
			var e []byte
			e, rest = collectionItem(rest)
			out = append(out, decodeScalar(x.Type.Elem, e))
		}
		return out
	case KMap:
		n, rest := collectionCount(x.Wire)
		out := make(map[string]any, n)
		for range n {
			var k, e []byte
			k, rest = collectionItem(rest)
			e, rest = collectionItem(rest)
			key := string(k)
			if kk := x.Type.MapKey(); kk != KText && kk != KASCII {
				key = fmt.Sprint(decodeScalar(kk, k))
			}
			out[key] = decodeScalar(x.Type.Elem, e)
		}
		return out
	case KTuple, KUDT:
		if x.Type.Comp == nil {
			return bytes.Clone(x.Wire) // a packed value carries no more of its type
		}
		parts := make([]any, len(x.Type.Comp.Types))
		rest := x.Wire
		for i, t := range x.Type.Comp.Types {
			if len(rest) >= 4 && int32(binary.BigEndian.Uint32(rest)) < 0 {
				rest = rest[4:] // a null part
				continue
			}
			var e []byte
			e, rest = collectionItem(rest)
			parts[i] = GoValue(&Value{Type: t, Wire: e})
		}
		if x.Type.Kind == KTuple {
			return parts
		}
		out := make(map[string]any, len(parts))
		for i, name := range x.Type.Comp.Fields {
			out[name] = parts[i]
		}
		return out
	case KVector:
		if x.Type.Comp == nil {
			return bytes.Clone(x.Wire)
		}
		k := x.Type.Comp.Types[0].Kind
		w := Width(k)
		out := make([]any, 0, x.Type.Comp.Dim)
		for i := 0; i+w <= len(x.Wire) && w > 0; i += w {
			out = append(out, decodeScalar(k, x.Wire[i:i+w]))
		}
		return out
	}
	return decodeScalar(x.Type.Kind, x.Wire)
}

func collectionCount(b []byte) (int, []byte) {
	if len(b) < 4 {
		return 0, nil
	}
	return int(binary.BigEndian.Uint32(b)), b[4:]
}

func collectionItem(b []byte) (item, rest []byte) {
	if len(b) < 4 {
		return nil, nil
	}
	n := int(int32(binary.BigEndian.Uint32(b)))
	if n < 0 || 4+n > len(b) {
		return nil, b[len(b):]
	}
	return b[4 : 4+n], b[4+n:]
}

// decodeScalar is the Go value of the wire bytes b of kind k.
func decodeScalar(k Kind, b []byte) any {
	if w := Width(k); w > 0 && len(b) != w {
		return fmt.Sprintf("<%d bytes of %s>", len(b), k) // never made by the encoders
	}
	switch k {
	case KText, KASCII:
		return string(b)
	case KBigint:
		return int64(binary.BigEndian.Uint64(b))
	case KInt:
		return int32(binary.BigEndian.Uint32(b))
	case KSmallint:
		return int16(binary.BigEndian.Uint16(b))
	case KTinyint:
		return int8(b[0])
	case KFloat:
		return math.Float32frombits(binary.BigEndian.Uint32(b))
	case KDouble:
		return math.Float64frombits(binary.BigEndian.Uint64(b))
	case KBoolean:
		return b[0] != 0
	case KTimestamp:
		return time.UnixMilli(int64(binary.BigEndian.Uint64(b))).UTC()
	case KDate:
		days := int64(binary.BigEndian.Uint32(b)) - 1<<31
		return time.UnixMilli(days * msPerDay).UTC()
	case KUUID, KTimeUUID:
		return gocql.UUID(b)
	case KBlob:
		return bytes.Clone(b)
	case KInet:
		return net.IP(bytes.Clone(b))
	case KDecimal:
		if len(b) < 4 {
			return fmt.Sprintf("<%d bytes of decimal>", len(b))
		}
		return inf.NewDecBig(varint(b[4:]), inf.Scale(int32(binary.BigEndian.Uint32(b))))
	case KVarint:
		return varint(b)
	case KTime:
		if len(b) == 8 {
			return time.Duration(binary.BigEndian.Uint64(b))
		}
	case KDuration:
		if d, ok := decodeDuration(b); ok {
			return d
		}
	}
	return bytes.Clone(b)
}

// varint decodes big-endian two's complement.
func varint(b []byte) *big.Int {
	n := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		n.Sub(n, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return n
}

// decodeDuration reads the wire bytes of a duration: three vints of zigzag integers.
func decodeDuration(b []byte) (gocql.Duration, bool) {
	var v [3]int64
	for i := range v {
		if len(b) == 0 {
			return gocql.Duration{}, false
		}
		n := bitsLeadingOnes(b[0])
		if len(b) < n+1 {
			return gocql.Duration{}, false
		}
		z := uint64(b[0] & (0xff >> uint(n)))
		for j := 1; j <= n; j++ {
			z = z<<8 | uint64(b[j])
		}
		v[i] = int64(z>>1) ^ -int64(z&1)
		b = b[n+1:]
	}
	return gocql.Duration{Months: int32(v[0]), Days: int32(v[1]), Nanoseconds: v[2]}, len(b) == 0
}

func bitsLeadingOnes(c byte) int {
	n := 0
	for c&0x80 != 0 {
		n++
		c <<= 1
	}
	return n
}
