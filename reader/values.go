package reader

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"math/big"
	"net"
	"strconv"
	"strings"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"gopkg.in/inf.v0"
)

// The scalar CQL types a key column (id or clustering) may have, with the Go type the driver
// returns for each (Row.Values holds these) and the text form used by ParseValue, FormatValue
// and cursors:
//
//	text, ascii, varchar        string      as is
//	int, smallint, tinyint      int, int16, int8   decimal
//	bigint                      int64       decimal
//	varint                      *big.Int    decimal
//	float, double               float32, float64   shortest decimal that round-trips; NaN, Infinity, -Infinity
//	decimal                     *inf.Dec    decimal
//	boolean                     bool        true, false
//	timestamp                   time.Time   RFC 3339 (milliseconds are what Cassandra keeps)
//	date                        time.Time   2006-01-02
//	uuid, timeuuid              gocql.UUID  canonical 8-4-4-4-12
//	blob                        []byte      0x followed by hex
//	inet                        net.IP      dotted or colon form

// ParseValue converts the text form of a value to the Go value the driver binds for CQL type typ.
// Its errors say what the type wants.
func ParseValue(typ, s string) (any, error) {
	switch normType(typ) {
	case "text", "ascii":
		return s, nil
	case "int":
		v, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("%q is not an int (a whole number from -2147483648 to 2147483647)", s)
		}
		return int(v), nil
	case "smallint":
		v, err := strconv.ParseInt(s, 10, 16)
		if err != nil {
			return nil, fmt.Errorf("%q is not a smallint (a whole number from -32768 to 32767)", s)
		}
		return int16(v), nil
	case "tinyint":
		v, err := strconv.ParseInt(s, 10, 8)
		if err != nil {
			return nil, fmt.Errorf("%q is not a tinyint (a whole number from -128 to 127)", s)
		}
		return int8(v), nil
	case "bigint":
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a bigint (a 64-bit whole number)", s)
		}
		return v, nil
	case "varint":
		v, ok := new(big.Int).SetString(s, 10)
		if !ok {
			return nil, fmt.Errorf("%q is not a varint (a whole number)", s)
		}
		return v, nil
	case "float":
		v, err := strconv.ParseFloat(s, 32)
		if err != nil {
			return nil, fmt.Errorf("%q is not a float", s)
		}
		return float32(v), nil
	case "double":
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a double", s)
		}
		return v, nil
	case "decimal":
		v, ok := new(inf.Dec).SetString(s)
		if !ok {
			return nil, fmt.Errorf("%q is not a decimal", s)
		}
		return v, nil
	case "boolean":
		v, err := strconv.ParseBool(s)
		if err != nil {
			return nil, fmt.Errorf("%q is not a boolean (true or false)", s)
		}
		return v, nil
	case "timestamp":
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return nil, fmt.Errorf("%q is not a timestamp in RFC 3339 with an offset (e.g. 2024-01-15T10:00:00Z)", s)
		}
		return v.UTC(), nil
	case "date":
		v, err := time.Parse(time.DateOnly, s)
		if err != nil {
			return nil, fmt.Errorf("%q is not a date (2006-01-02)", s)
		}
		return v, nil
	case "uuid", "timeuuid":
		v, err := gocql.ParseUUID(s)
		if err != nil {
			return nil, fmt.Errorf("%q is not a UUID (e.g. 6ba7b810-9dad-11d1-80b4-00c04fd430c8)", s)
		}
		if normType(typ) == "timeuuid" && v.Version() != 1 {
			return nil, fmt.Errorf("%q is a version %d UUID; a timeuuid is version 1", s, v.Version())
		}
		return v, nil
	case "blob":
		h, ok := strings.CutPrefix(strings.ToLower(s), "0x")
		b, err := hex.DecodeString(h)
		if !ok || err != nil {
			return nil, fmt.Errorf("%q is not a blob (0x followed by hex digits)", s)
		}
		return b, nil
	case "inet":
		v := net.ParseIP(s)
		if v == nil {
			return nil, fmt.Errorf("%q is not an IP address", s)
		}
		return v, nil
	}
	return nil, fmt.Errorf("type %s cannot be given as a key value", typ)
}

// FormatValue is the text form of v, a value of CQL type typ as the driver returns it; ParseValue
// reads it back to an equal value.
func FormatValue(typ string, v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case int:
		return strconv.FormatInt(int64(x), 10), nil
	case int8:
		return strconv.FormatInt(int64(x), 10), nil
	case int16:
		return strconv.FormatInt(int64(x), 10), nil
	case int32:
		return strconv.FormatInt(int64(x), 10), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case *big.Int:
		return x.String(), nil
	case float32:
		return formatFloat(float64(x), 32), nil
	case float64:
		return formatFloat(x, 64), nil
	case *inf.Dec:
		return x.String(), nil
	case bool:
		return strconv.FormatBool(x), nil
	case time.Time:
		if normType(typ) == "date" {
			return x.UTC().Format(time.DateOnly), nil
		}
		return x.UTC().Format(time.RFC3339Nano), nil
	case gocql.UUID:
		return x.String(), nil
	case []byte:
		return "0x" + hex.EncodeToString(x), nil
	case net.IP:
		return x.String(), nil
	case time.Duration: // CQL time: nanoseconds since midnight
		return FormatTimeOfDay(x), nil
	case gocql.Duration:
		return FormatDuration(x), nil
	}
	return "", fmt.Errorf("a %T value of type %s has no text form", v, typ)
}

// FormatTimeOfDay is a CQL time as HH:MM:SS, with its fraction of a second when it has one, to the
// nanosecond without trailing zeros ("15:04:05.1234").
func FormatTimeOfDay(d time.Duration) string {
	return time.Unix(0, int64(d)).UTC().Format("15:04:05.999999999")
}

// FormatDuration is a CQL duration in CQL's units, each part once, largest first: 1y2mo3d4h5m6s7ms8us9ns,
// "-" in front of a negative one, "0s" for none.
func FormatDuration(d gocql.Duration) string {
	var b strings.Builder
	months, days, nanos := int64(d.Months), int64(d.Days), d.Nanoseconds
	if months < 0 || days < 0 || nanos < 0 {
		b.WriteByte('-')
		months, days, nanos = -months, -days, -nanos
	}
	part := func(n int64, unit string) {
		if n != 0 {
			b.WriteString(strconv.FormatInt(n, 10) + unit)
		}
	}
	part(months/12, "y")
	part(months%12, "mo")
	part(days, "d")
	for _, u := range []struct {
		unit string
		per  time.Duration
	}{{"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}, {"ms", time.Millisecond}, {"us", time.Microsecond}, {"ns", 1}} {
		part(nanos/int64(u.per), u.unit)
		nanos %= int64(u.per)
	}
	if b.Len() == 0 || b.String() == "-" {
		return "0s"
	}
	return b.String()
}

// formatFloat is the shortest decimal that reads back as x, or NaN, Infinity, -Infinity: the names
// JavaScript, Jackson and cqlsh's CQL literals use, which strconv.ParseFloat reads too.
func formatFloat(x float64, bits int) string {
	switch {
	case math.IsInf(x, 1):
		return "Infinity"
	case math.IsInf(x, -1):
		return "-Infinity"
	}
	return strconv.FormatFloat(x, 'g', -1, bits) // NaN as NaN
}

// normType folds the aliases of a CQL type name.
func normType(typ string) string {
	t := strings.ToLower(strings.TrimSpace(typ))
	if t == "varchar" {
		return "text"
	}
	return t
}

// comparable reports whether the reader can order values of CQL type typ as Cassandra does.
func comparableType(typ string) bool {
	switch normType(typ) {
	case "text", "ascii", "int", "smallint", "tinyint", "bigint", "varint", "float", "double", "decimal",
		"boolean", "timestamp", "date", "uuid", "timeuuid", "blob", "inet":
		return true
	}
	return false
}

// compareValues orders two values of CQL type typ the way Cassandra orders that type in an
// ascending clustering column: -1, 0 or +1. A null (nil, or a zero value the driver gives for null)
// sorts by its Go zero value, which is where Cassandra puts an empty value.
func compareValues(typ string, a, b any) int {
	switch normType(typ) {
	case "text", "ascii":
		return strings.Compare(asString(a), asString(b))
	case "int", "smallint", "tinyint", "bigint":
		return cmp.Compare(asInt(a), asInt(b))
	case "varint":
		return asBig(a).Cmp(asBig(b))
	case "float", "double":
		return cmpFloat(asFloat(a), asFloat(b))
	case "decimal":
		return asDec(a).Cmp(asDec(b))
	case "boolean":
		x, y := asBool(a), asBool(b)
		switch {
		case x == y:
			return 0
		case !x:
			return -1
		}
		return 1
	case "timestamp", "date":
		return asTime(a).Compare(asTime(b))
	case "timeuuid":
		return compareTimeUUID(asUUID(a), asUUID(b))
	case "uuid":
		return compareUUID(asUUID(a), asUUID(b))
	case "blob":
		return bytes.Compare(asBytes(a), asBytes(b))
	case "inet":
		return bytes.Compare(ipBytes(a), ipBytes(b))
	}
	return 0
}

// compareTimeUUID is Cassandra's TimeUUIDType order: the 60-bit timestamp, then the last eight
// bytes (clock sequence and node) compared byte by byte as signed bytes.
func compareTimeUUID(a, b gocql.UUID) int {
	if c := cmp.Compare(a.Timestamp(), b.Timestamp()); c != 0 {
		return c
	}
	const flip = 0x8080808080808080 // signed bytes compare like unsigned ones with the top bit flipped
	return cmp.Compare(binary.BigEndian.Uint64(a[8:])^flip, binary.BigEndian.Uint64(b[8:])^flip)
}

// compareUUID is Cassandra's UUIDType order: by version, then time-based UUIDs by their time
// like timeuuid, and the others by their bytes.
func compareUUID(a, b gocql.UUID) int {
	if c := cmp.Compare(a.Version(), b.Version()); c != 0 {
		return c
	}
	if a.Version() == 1 {
		return compareTimeUUID(a, b)
	}
	return bytes.Compare(a[:], b[:])
}

// cmpFloat is Java's Double.compare, which Cassandra uses: NaN after every number.
func cmpFloat(a, b float64) int {
	if an, bn := math.IsNaN(a), math.IsNaN(b); an || bn {
		return cmp.Compare(b2i(an), b2i(bn))
	}
	return cmp.Compare(a, b)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func asString(v any) string { s, _ := v.(string); return s }
func asBool(v any) bool     { b, _ := v.(bool); return b }
func asBytes(v any) []byte  { b, _ := v.([]byte); return b }
func asUUID(v any) gocql.UUID {
	u, _ := v.(gocql.UUID)
	return u
}
func asTime(v any) time.Time {
	t, _ := v.(time.Time)
	return t
}

func asInt(v any) int64 {
	switch x := v.(type) {
	case int:
		return int64(x)
	case int8:
		return int64(x)
	case int16:
		return int64(x)
	case int32:
		return int64(x)
	case int64:
		return x
	}
	return 0
}

func asFloat(v any) float64 {
	switch x := v.(type) {
	case float32:
		return float64(x)
	case float64:
		return x
	}
	return 0
}

func asBig(v any) *big.Int {
	if x, ok := v.(*big.Int); ok && x != nil {
		return x
	}
	return new(big.Int)
}

func asDec(v any) *inf.Dec {
	if x, ok := v.(*inf.Dec); ok && x != nil {
		return x
	}
	return new(inf.Dec)
}

func ipBytes(v any) []byte {
	ip, _ := v.(net.IP)
	if v4 := ip.To4(); v4 != nil {
		return v4
	}
	return ip
}
