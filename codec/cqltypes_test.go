package codec

import (
	"bytes"
	"math"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/bucketsink/sink/packed"
)

func TestParseTimeOfDay(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"00:00:00", 0, true},
		{"23:59:59.999999999", NanosPerDay - 1, true},
		{"15:04:05.1", int64(15*time.Hour + 4*time.Minute + 5*time.Second + 100*time.Millisecond), true},
		{"24:00:00", 0, false},
		{"12:60:00", 0, false},
		{"12:00:60", 0, false},
		{"12:00", 0, false},
		{"12:00:00.", 0, false},
		{"12:00:00.1234567890", 0, false},
		{"12:00:00Z", 0, false},
		{"1a:00:00", 0, false},
	} {
		got, ok := ParseTimeOfDay(tc.in)
		if ok != tc.ok || got != tc.want {
			t.Errorf("%q: %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestParseDuration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Duration
		ok   bool
	}{
		{"P1Y2M3DT4H5M6.5S", Duration{14, 3, int64(4*time.Hour + 5*time.Minute + 6500*time.Millisecond)}, true},
		{"P2W", Duration{0, 14, 0}, true},
		{"PT0.000000001S", Duration{0, 0, 1}, true},
		{"-P1M", Duration{-1, 0, 0}, true},
		{"1y2mo3w4d5h6m7s8ms9us10ns", Duration{14, 25, int64(5*time.Hour + 6*time.Minute + 7*time.Second + 8*time.Millisecond + 9*time.Microsecond + 10)}, true},
		{"3µs", Duration{0, 0, 3000}, true},
		{"1h30m", Duration{0, 0, int64(90 * time.Minute)}, true},
		{"1.5h", Duration{0, 0, int64(90 * time.Minute)}, true},
		{"-1.5s", Duration{0, 0, -int64(1500 * time.Millisecond)}, true},
		{"", Duration{}, false},
		{"P", Duration{}, false},
		{"PT", Duration{}, false},
		{"P1.5D", Duration{}, false},
		{"P1H", Duration{}, false},
		{"1x", Duration{}, false},
		{"h", Duration{}, false},
		{"--1h", Duration{}, false},
		{"+1h", Duration{}, false},
		{"9223372036854775807h", Duration{}, false},
		{"3000000000mo", Duration{}, false},
	} {
		got, ok := ParseDuration(tc.in)
		if ok != tc.ok || got != tc.want {
			t.Errorf("%q: %+v, %v; want %+v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// AppendDuration writes the bytes gocql marshals for the same gocql.Duration, at every vint length.
func TestAppendDurationIsGocqls(t *testing.T) {
	info := gocql.NewNativeType(4, gocql.TypeDuration, "")
	vals := []int64{0, 1, -1, 63, -64, 64, 1 << 20, -(1 << 33), math.MaxInt32, math.MinInt32, math.MaxInt64, math.MinInt64}
	for _, n := range vals {
		for _, m := range []int32{0, -1, 1 << 30, math.MinInt32} {
			d := Duration{Months: m, Days: int32(n), Nanos: n}
			want, err := gocql.Marshal(info, gocql.Duration{Months: d.Months, Days: d.Days, Nanoseconds: d.Nanos})
			if err != nil {
				t.Fatal(err)
			}
			if got := AppendDuration(nil, d); !bytes.Equal(got, want) {
				t.Errorf("%+v: %x, gocql %x", d, got, want)
			}
			if got := packed.GoValue(&packed.Value{Type: packed.Scalar(packed.KDuration), Wire: want}); got != (gocql.Duration{Months: d.Months, Days: d.Days, Nanoseconds: d.Nanos}) {
				t.Errorf("GoValue of %x: %#v", want, got)
			}
		}
	}
}

func TestAppendMapKey(t *testing.T) {
	for _, tc := range []struct {
		k    packed.Kind
		in   string
		want []byte
		ok   bool
	}{
		{packed.KInt, "-2", []byte{0xff, 0xff, 0xff, 0xfe}, true},
		{packed.KTinyint, "128", nil, false},
		{packed.KBigint, "1.0", nil, false},
		{packed.KDate, "1970-01-02", []byte{0x80, 0, 0, 1}, true},
		{packed.KUUID, "not a uuid", nil, false},
		{packed.KASCII, "é", nil, false},
	} {
		got, err := AppendMapKey(nil, tc.k, []byte(tc.in))
		if (err == nil) != tc.ok || tc.ok && !bytes.Equal(got, tc.want) {
			t.Errorf("%s %q: %x, %v; want %x, ok %v", tc.k, tc.in, got, err, tc.want, tc.ok)
		}
	}
}
