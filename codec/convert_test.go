package codec

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/bucketsink/sink/bucketer"
	"github.com/bucketsink/sink/packed"
)

func TestTimeBoundsAreTheBucketers(t *testing.T) {
	if !MinTime.Equal(bucketer.MinTime) || !MaxTime.Equal(bucketer.MaxTime) {
		t.Fatalf("codec bounds %v..%v, bucketer's %v..%v", MinTime, MaxTime, bucketer.MinTime, bucketer.MaxTime)
	}
}

func TestUnixTimeUnitsAndRange(t *testing.T) {
	at := time.Date(2024, 1, 15, 14, 37, 22, 123456789, time.UTC)
	for unit, x := range map[time.Duration]int64{
		time.Nanosecond: at.UnixNano(), time.Microsecond: at.UnixMicro(), time.Millisecond: at.UnixMilli(), time.Second: at.Unix(),
	} {
		got, ok := UnixTime(x, unit)
		if !ok || !got.Equal(at.Truncate(unit)) {
			t.Errorf("UnixTime(%d, %v) = %v %v, want %v", x, unit, got, ok, at.Truncate(unit))
		}
	}
	if got, ok := UnixTime(-1, time.Millisecond); !ok || !got.Equal(time.Unix(0, -1e6).UTC()) {
		t.Errorf("one millisecond before the epoch: %v %v", got, ok)
	}
	for _, x := range []int64{math.MaxInt64, math.MinInt64, 253402300800} {
		if _, ok := UnixTime(x, time.Second); ok {
			t.Errorf("UnixTime(%d, s) is in range", x)
		}
	}
}

// An unsigned 64-bit value above MaxInt64 (signed false, negative bits) is too big for every CQL integer, and a
// positive varint or decimal.
func TestSetIntegerUnsignedAboveMaxInt64(t *testing.T) {
	var v Value
	if _, err := SetInteger(&v, packed.KBigint, -1, false, nil, nil); err == nil {
		t.Error("2^64-1 fits bigint")
	}
	buf, err := SetInteger(&v, packed.KVarint, -1, false, nil, nil)
	if err != nil || string(v.B) != "\x00\xff\xff\xff\xff\xff\xff\xff\xff" {
		t.Errorf("varint of 2^64-1: %x %v", v.B, err)
	}
	_ = buf
}

func TestSetIntegerVarintIsMinimalTwosComplement(t *testing.T) {
	for x, want := range map[int64]string{0: "00", 1: "01", -1: "ff", 127: "7f", 128: "0080", -128: "80", -129: "ff7f",
		math.MaxInt64: "7fffffffffffffff", math.MinInt64: "8000000000000000"} {
		var v Value
		if _, err := SetInteger(&v, packed.KVarint, x, true, nil, nil); err != nil || fmt.Sprintf("%x", v.B) != want {
			t.Errorf("varint %d: %x %v, want %s", x, v.B, err, want)
		}
	}
}
