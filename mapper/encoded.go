package mapper

import (
	"encoding/binary"
	"math"
	"strconv"
	"time"
	"unsafe"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

// Encoded values: a bound value the mapper has already serialized.
//
// gocql marshals every bound value for every row it sends, and for most Go values that means a
// fresh byte slice (string to []byte, int64 to 8 bytes, ...): about one allocation per value.
// The mapper knows each column's CQL type when it converts the value, so it writes the bytes
// Cassandra receives right there, into memory the row owns, and binds a pointer to them. The
// pointer's type implements gocql.Marshaler: gocql.Marshal and the driver's batch path call
// MarshalCQL, which returns the bytes in place. A pointer in an interface costs no allocation.
//
// Each CQL type has its own Go type, so the type word of the interface says what the bytes were
// encoded for, at no cost in memory; MarshalCQL refuses a bind marker of any other type (see
// BindTypeError). The byte-array types have alignment 1, so row memory packs them without
// padding (see rowmem.go).

// encoded is a bound value in its native-protocol form.
type encoded interface {
	gocql.Marshaler
	// wire is the value's bytes as sent, without the 4-byte length. Never nil, and the slice's
	// capacity is its length, so an append by whoever receives it cannot write past it.
	wire() []byte
	// goValue is the Go value the bytes stand for, the type gocql would bind to the same bytes:
	// string, int64, int32, int16, int8, float32, float64, time.Time (UTC), gocql.UUID.
	goValue() any
}

type (
	encText      string   // text (varchar): the UTF-8 bytes
	encASCII     string   // ascii: the bytes
	encBigint    [8]byte  // big-endian two's complement
	encInt       [4]byte  // big-endian two's complement
	encSmallint  [2]byte  // big-endian two's complement
	encTinyint   [1]byte  // two's complement
	encFloat     [4]byte  // big-endian IEEE 754 binary32
	encDouble    [8]byte  // big-endian IEEE 754 binary64
	encTimestamp [8]byte  // milliseconds since the Unix epoch, big-endian
	encDate      [4]byte  // days since the Unix epoch plus 2^31, big-endian
	encUUID      [16]byte // the 16 bytes
	encTimeUUID  [16]byte // the 16 bytes of a version 1 UUID
)

// fixedWidth is the encoded size of a kind row memory holds as bytes; 0 for the others.
func fixedWidth(k kind) int {
	switch k {
	case kTinyint:
		return 1
	case kSmallint:
		return 2
	case kInt, kFloat, kDate:
		return 4
	case kBigint, kDouble, kTimestamp:
		return 8
	case kUUID, kTimeUUID:
		return 16
	}
	return 0
}

// The set methods encode exactly as gocql's marshalers do for the Go value of the column's
// type (int64, int32, int16, int8, float32, float64, time.Time, gocql.UUID), with one
// difference: the zero time.Time, which gocql sends as an empty value, is encoded as the instant
// 0001-01-01T00:00:00Z it is, since the mapper accepts every time of years 0000 to 9999
// (inTimeRange).

func (e *encBigint) set(n int64)        { binary.BigEndian.PutUint64(e[:], uint64(n)) }
func (e *encInt) set(n int32)           { binary.BigEndian.PutUint32(e[:], uint32(n)) }
func (e *encSmallint) set(n int16)      { binary.BigEndian.PutUint16(e[:], uint16(n)) }
func (e *encTinyint) set(n int8)        { e[0] = byte(n) }
func (e *encFloat) set(f float32)       { binary.BigEndian.PutUint32(e[:], math.Float32bits(f)) }
func (e *encDouble) set(f float64)      { binary.BigEndian.PutUint64(e[:], math.Float64bits(f)) }
func (e *encUUID) set(u gocql.UUID)     { *e = encUUID(u) }
func (e *encTimeUUID) set(u gocql.UUID) { *e = encTimeUUID(u) }

// set stores gocql's timestamp: whole milliseconds, the sub-millisecond part dropped.
func (e *encTimestamp) set(t time.Time) {
	binary.BigEndian.PutUint64(e[:], uint64(unixMilli(t)))
}

// set stores gocql's date: milliseconds divided by a day's (Go division, which truncates toward
// zero, so gocql rounds a pre-1970 time of day up to the next day; the mapper's dates are all
// midnight UTC, where that never shows), plus 2^31, as 32 bits.
func (e *encDate) set(t time.Time) {
	binary.BigEndian.PutUint32(e[:], uint32(int32(unixMilli(t)/msPerDay+(1<<31))))
}

// unixMilli is gocql's milliseconds of t.
func unixMilli(t time.Time) int64 { return t.Unix()*1e3 + int64(t.Nanosecond()/1e6) }

// emptyWire is the bytes of an empty text value: empty but not nil, since gocql sends a nil
// slice as null.
var emptyWire = []byte{}

func (e *encText) wire() []byte      { return stringWire(string(*e)) }
func (e *encASCII) wire() []byte     { return stringWire(string(*e)) }
func (e *encBigint) wire() []byte    { return e[:] }
func (e *encInt) wire() []byte       { return e[:] }
func (e *encSmallint) wire() []byte  { return e[:] }
func (e *encTinyint) wire() []byte   { return e[:] }
func (e *encFloat) wire() []byte     { return e[:] }
func (e *encDouble) wire() []byte    { return e[:] }
func (e *encTimestamp) wire() []byte { return e[:] }
func (e *encDate) wire() []byte      { return e[:] }
func (e *encUUID) wire() []byte      { return e[:] }
func (e *encTimeUUID) wire() []byte  { return e[:] }

// stringWire views a string's bytes as a slice without copying. The bytes live in memory the row
// owns and are never written after the row is built; gocql only copies them into the frame.
func stringWire(s string) []byte {
	if len(s) == 0 {
		return emptyWire
	}
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// MarshalCQL returns the bytes for a bind marker of the type they were encoded for, and a
// *BindTypeError for any other: the bytes would mean another value there.
func (e *encText) MarshalCQL(info gocql.TypeInfo) ([]byte, error) {
	if t := bindType(info); t != gocql.TypeVarchar && t != gocql.TypeText {
		return nil, bindTypeError(kText, info)
	}
	return e.wire(), nil
}

func (e *encASCII) MarshalCQL(info gocql.TypeInfo) ([]byte, error) {
	if bindType(info) != gocql.TypeAscii {
		return nil, bindTypeError(kASCII, info)
	}
	return e.wire(), nil
}

func (e *encBigint) MarshalCQL(info gocql.TypeInfo) ([]byte, error) {
	if bindType(info) != gocql.TypeBigInt {
		return nil, bindTypeError(kBigint, info)
	}
	return e[:], nil
}

func (e *encInt) MarshalCQL(info gocql.TypeInfo) ([]byte, error) {
	if bindType(info) != gocql.TypeInt {
		return nil, bindTypeError(kInt, info)
	}
	return e[:], nil
}

func (e *encSmallint) MarshalCQL(info gocql.TypeInfo) ([]byte, error) {
	if bindType(info) != gocql.TypeSmallInt {
		return nil, bindTypeError(kSmallint, info)
	}
	return e[:], nil
}

func (e *encTinyint) MarshalCQL(info gocql.TypeInfo) ([]byte, error) {
	if bindType(info) != gocql.TypeTinyInt {
		return nil, bindTypeError(kTinyint, info)
	}
	return e[:], nil
}

func (e *encFloat) MarshalCQL(info gocql.TypeInfo) ([]byte, error) {
	if bindType(info) != gocql.TypeFloat {
		return nil, bindTypeError(kFloat, info)
	}
	return e[:], nil
}

func (e *encDouble) MarshalCQL(info gocql.TypeInfo) ([]byte, error) {
	if bindType(info) != gocql.TypeDouble {
		return nil, bindTypeError(kDouble, info)
	}
	return e[:], nil
}

func (e *encTimestamp) MarshalCQL(info gocql.TypeInfo) ([]byte, error) {
	if bindType(info) != gocql.TypeTimestamp {
		return nil, bindTypeError(kTimestamp, info)
	}
	return e[:], nil
}

func (e *encDate) MarshalCQL(info gocql.TypeInfo) ([]byte, error) {
	if bindType(info) != gocql.TypeDate {
		return nil, bindTypeError(kDate, info)
	}
	return e[:], nil
}

func (e *encUUID) MarshalCQL(info gocql.TypeInfo) ([]byte, error) {
	if bindType(info) != gocql.TypeUUID {
		return nil, bindTypeError(kUUID, info)
	}
	return e[:], nil
}

func (e *encTimeUUID) MarshalCQL(info gocql.TypeInfo) ([]byte, error) {
	if bindType(info) != gocql.TypeTimeUUID {
		return nil, bindTypeError(kTimeUUID, info)
	}
	return e[:], nil
}

// bindType is info's type; a nil info (no metadata) matches nothing.
func bindType(info gocql.TypeInfo) gocql.Type {
	if info == nil {
		return gocql.TypeCustom
	}
	return info.Type()
}

func (e *encText) goValue() any     { return string(*e) }
func (e *encASCII) goValue() any    { return string(*e) }
func (e *encBigint) goValue() any   { return int64(binary.BigEndian.Uint64(e[:])) }
func (e *encInt) goValue() any      { return int32(binary.BigEndian.Uint32(e[:])) }
func (e *encSmallint) goValue() any { return int16(binary.BigEndian.Uint16(e[:])) }
func (e *encTinyint) goValue() any  { return int8(e[0]) }
func (e *encFloat) goValue() any    { return math.Float32frombits(binary.BigEndian.Uint32(e[:])) }
func (e *encDouble) goValue() any   { return math.Float64frombits(binary.BigEndian.Uint64(e[:])) }
func (e *encUUID) goValue() any     { return gocql.UUID(*e) }
func (e *encTimeUUID) goValue() any { return gocql.UUID(*e) }
func (e *encTimestamp) goValue() any {
	return time.UnixMilli(int64(binary.BigEndian.Uint64(e[:]))).UTC()
}
func (e *encDate) goValue() any {
	days := int64(binary.BigEndian.Uint32(e[:])) - 1<<31
	return time.UnixMilli(days * msPerDay).UTC()
}

// GoValue returns the Go value a value of batcher.Row.Values stands for: for a value the mapper
// bound pre-encoded, the value its bytes decode to (string, int64, int32, int16, int8, float32,
// float64, time.Time in UTC with millisecond precision, gocql.UUID); any other value as it is
// (gocql.UnsetValue, nil, []byte, net.IP, *inf.Dec, *big.Int, bool, collections, and the event
// bucket's int32). For display and tests; the write path binds Row.Values directly.
func GoValue(v any) any {
	if e, ok := v.(encoded); ok {
		return e.goValue()
	}
	return v
}

// BindTypeError is the error of binding a pre-encoded value to a bind marker of another CQL type
// than the one it was encoded for. It means the table's column type differs from the type
// configured for the column (topics.<name>.columns[].type), for example after an ALTER TABLE:
// sending the bytes anyway would store a different value, so nothing is sent. It is not a
// gocql.MarshalError on purpose: every row of the table would fail alike, so the write must
// stop (the cassandra writer treats unknown errors as fatal) rather than dead-letter each row.
type BindTypeError struct {
	Encoded string     // the configured CQL type the value was encoded for, e.g. "int"
	Bound   gocql.Type // the type of the bind marker in the prepared statement
}

func (e *BindTypeError) Error() string {
	return "binding a value encoded as CQL " + e.Encoded + " to a bind marker of CQL type " + gocqlTypeName(e.Bound) +
		": the table's column type differs from the column's configured type (topics.<name>.columns[].type); " +
		"make the configuration and the table agree"
}

func bindTypeError(k kind, info gocql.TypeInfo) error {
	return &BindTypeError{Encoded: kindNames[k], Bound: bindType(info)}
}

// gocqlTypeName names a native type id for messages.
func gocqlTypeName(t gocql.Type) string {
	for k, gt := range gocqlTypes {
		if gt == t {
			return kindNames[k]
		}
	}
	switch t {
	case gocql.TypeText:
		return "text"
	case gocql.TypeCounter:
		return "counter"
	case gocql.TypeTime:
		return "time"
	case gocql.TypeDuration:
		return "duration"
	}
	return "type id 0x" + strconv.FormatUint(uint64(t), 16)
}

// gocqlTypes is the native type id of each scalar kind.
var gocqlTypes = map[kind]gocql.Type{
	kText: gocql.TypeVarchar, kASCII: gocql.TypeAscii, kInt: gocql.TypeInt, kBigint: gocql.TypeBigInt,
	kSmallint: gocql.TypeSmallInt, kTinyint: gocql.TypeTinyInt, kFloat: gocql.TypeFloat, kDouble: gocql.TypeDouble,
	kBoolean: gocql.TypeBoolean, kTimestamp: gocql.TypeTimestamp, kDate: gocql.TypeDate, kUUID: gocql.TypeUUID,
	kTimeUUID: gocql.TypeTimeUUID, kBlob: gocql.TypeBlob, kInet: gocql.TypeInet, kDecimal: gocql.TypeDecimal,
	kVarint: gocql.TypeVarint,
}

// encodeShared encodes a value many rows bind (a bucket value, the TTL, the Kafka topic) once,
// in memory of its own. A combination it does not encode (the zero time, which gocql sends as an
// empty value) stays the Go value, which gocql marshals as before.
func encodeShared(k kind, v any) any {
	switch x := v.(type) {
	case string:
		switch k {
		case kText:
			e := encText(x)
			return &e
		case kASCII:
			e := encASCII(x)
			return &e
		}
	case int32:
		if k == kInt {
			e := new(encInt)
			e.set(x)
			return e
		}
	case int64:
		if k == kBigint {
			e := new(encBigint)
			e.set(x)
			return e
		}
	case time.Time:
		switch k {
		case kTimestamp:
			e := new(encTimestamp)
			e.set(x)
			return e
		case kDate:
			e := new(encDate)
			e.set(x)
			return e
		}
	}
	return v
}
