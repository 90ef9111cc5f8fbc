package mapper

import (
	"encoding/hex"
	"math/big"
	"net"
	"strconv"
	"time"
	"unsafe"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"gopkg.in/inf.v0"

	"github.com/bucketsink/sink/bucketer"
)

// bstr views b as a string without copying; only for calls that do not keep the string
// (strconv and time parsers copy what they keep, including into their errors).
func bstr(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// minTime and maxTime bound every time the mapper accepts, both included: four-digit years, the
// range RFC 3339 can spell and the bucket keys are defined for (bucketer.MinTime, MaxTime).
var (
	minTime = bucketer.MinTime
	maxTime = bucketer.MaxTime
)

// inTimeRange reports whether t is one the mapper writes. The zero time.Time
// (0001-01-01T00:00:00Z) is an instant like any other here: the packed row format encodes times
// itself, as the instant, where gocql would send the zero time as an empty value.
func inTimeRange(t time.Time) bool { return !t.Before(minTime) && !t.After(maxTime) }

// appendCanonical appends the canonical text of a scalar value: the form hashed for event
// buckets (an on-disk contract, see the package comment) and shown by explain.
func appendCanonical(dst []byte, val any) []byte {
	switch x := val.(type) {
	case string:
		return append(dst, x...)
	case int8:
		return strconv.AppendInt(dst, int64(x), 10)
	case int16:
		return strconv.AppendInt(dst, int64(x), 10)
	case int32:
		return strconv.AppendInt(dst, int64(x), 10)
	case int64:
		return strconv.AppendInt(dst, x, 10)
	case float32:
		return strconv.AppendFloat(dst, float64(x), 'g', -1, 32)
	case float64:
		return strconv.AppendFloat(dst, x, 'g', -1, 64)
	case bool:
		return strconv.AppendBool(dst, x)
	case time.Time:
		return appendTimeCanonical(dst, x)
	case gocql.UUID:
		return appendUUIDCanonical(dst, x)
	case []byte:
		return hex.AppendEncode(dst, x)
	case net.IP:
		return append(dst, x.String()...)
	case *inf.Dec:
		return append(dst, x.String()...)
	case *big.Int:
		return x.Append(dst, 10)
	}
	return dst
}

// appendTimeCanonical is appendCanonical for a CQL timestamp: milliseconds, UTC.
func appendTimeCanonical(dst []byte, t time.Time) []byte {
	return t.UTC().AppendFormat(dst, "2006-01-02T15:04:05.000Z07:00")
}

// appendDateCanonical is appendCanonical for a CQL date, which holds no time of day.
func appendDateCanonical(dst []byte, t time.Time) []byte {
	return t.UTC().AppendFormat(dst, time.DateOnly)
}

// appendUUIDCanonical appends u in lower-case 8-4-4-4-12 form, the text of gocql.UUID.String
// without its allocation.
func appendUUIDCanonical(dst []byte, u gocql.UUID) []byte {
	dst = hex.AppendEncode(dst, u[0:4])
	dst = append(dst, '-')
	dst = hex.AppendEncode(dst, u[4:6])
	dst = append(dst, '-')
	dst = hex.AppendEncode(dst, u[6:8])
	dst = append(dst, '-')
	dst = hex.AppendEncode(dst, u[8:10])
	dst = append(dst, '-')
	return hex.AppendEncode(dst, u[10:16])
}
