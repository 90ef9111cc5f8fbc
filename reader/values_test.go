package reader

import (
	"math/big"
	"net"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"gopkg.in/inf.v0"
)

// TestCursorValuesRoundTrip: every key type's value survives the text form a cursor stores, so a
// resumed read restarts exactly at the row it names.
func TestCursorValuesRoundTrip(t *testing.T) {
	u := gocql.UUIDFromTime(time.Date(2024, 1, 15, 10, 0, 0, 123456700, time.UTC))
	for _, tc := range []struct {
		typ string
		v   any
	}{
		{"text", "sensor-42 é"}, {"ascii", ""}, {"int", -7}, {"smallint", int16(300)}, {"tinyint", int8(-3)},
		{"bigint", int64(1) << 60}, {"varint", big.NewInt(-123456789)}, {"float", float32(0.1)}, {"double", 0.1},
		{"decimal", inf.NewDec(12345, 3)}, {"boolean", true}, {"timestamp", time.Date(2024, 1, 15, 10, 0, 0, 7e6, time.UTC)},
		{"date", time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)}, {"timeuuid", u}, {"uuid", u},
		{"blob", []byte{0, 1, 0xfe}}, {"inet", net.ParseIP("10.0.0.1")},
	} {
		s, err := FormatValue(tc.typ, tc.v)
		if err != nil {
			t.Fatalf("%s: %v", tc.typ, err)
		}
		back, err := ParseValue(tc.typ, s)
		if err != nil {
			t.Fatalf("%s %q: %v", tc.typ, s, err)
		}
		if compareValues(tc.typ, tc.v, back) != 0 {
			t.Errorf("%s: %v became %q and came back as %v", tc.typ, tc.v, s, back)
		}
	}
}

// TestTimeUUIDOrderIsCassandras: time first, then the last eight bytes as signed bytes, so a node
// byte of 0x80 sorts before 0x7f (Cassandra's TimeUUIDType).
func TestTimeUUIDOrderIsCassandras(t *testing.T) {
	at := time.Date(2024, 1, 15, 10, 0, 0, 0, time.UTC)
	a, b := gocql.UUIDFromTime(at), gocql.UUIDFromTime(at)
	a[15], b[15] = 0x80, 0x7f
	copy(a[8:15], b[8:15])
	if compareTimeUUID(a, b) != -1 || compareTimeUUID(b, a) != 1 {
		t.Errorf("a node byte of 0x80 must sort before 0x7f (signed bytes)")
	}
	later := gocql.UUIDFromTime(at.Add(time.Microsecond))
	if compareTimeUUID(b, later) != -1 {
		t.Errorf("an earlier time must sort first whatever the other bytes")
	}
}
