package mapper

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/packed"
)

// encodedKinds are the kinds the mapper encodes directly (store).
var encodedKinds = []kind{kText, kASCII, kBigint, kInt, kSmallint, kTinyint, kFloat, kDouble, kTimestamp, kDate, kUUID, kTimeUUID}

// nativeInfo is gocql's TypeInfo of a scalar kind, as a prepared statement reports it.
func nativeInfo(k kind) gocql.TypeInfo { return gocql.NewNativeType(4, packed.CQLType(k), "") }

// typedValue is the Go value the mapper bound for kind k before it encoded values: the value
// gocql.Marshal is compared against.
func typedValue(k kind, x *codec.Value) any {
	switch k {
	case kText, kASCII:
		return string(x.B)
	case kBigint:
		return x.N
	case kInt:
		return int32(x.N)
	case kSmallint:
		return int16(x.N)
	case kTinyint:
		return int8(x.N)
	case kFloat:
		return float32(x.F)
	case kDouble:
		return x.F
	case kTimestamp, kDate:
		return x.T
	case kUUID, kTimeUUID:
		return gocql.UUID(x.U)
	}
	panic(k)
}

// encodeOne runs the mapper's store path for one value of kind k into a fresh packed row and
// returns that value as it binds.
func encodeOne(k kind, x *codec.Value) (any, *scratch) {
	c := &column{name: "v", typ: cqlType{kind: k, name: kindNames[k]}, direct: true, hash: 0}
	s := &scratch{canon: make([]span, 1)}
	s.w.Reset()
	store(c, x, s)
	p, _ := s.w.Finish(nil)
	return packed.Values(p)[0], s
}

// wire is the bytes a packed value binds.
func wire(v any) []byte { return v.(*packed.Value).Wire }

// checkExact asserts that the encoding of x for kind k is what gocql.Marshal makes of the typed
// value, that gocql unmarshals it to GoValue, and that the canonical text recorded for the event
// bucket hash is the one of the typed value.
func checkExact(t *testing.T, k kind, x *codec.Value) {
	t.Helper()
	want := typedValue(k, x)
	enc, s := encodeOne(k, x)
	info := nativeInfo(k)
	got, err := gocql.Marshal(info, enc)
	if err != nil {
		t.Fatalf("%s %#v: MarshalCQL: %v", kindNames[k], want, err)
	}
	wantB, err := gocql.Marshal(info, want)
	if err != nil {
		t.Fatalf("%s %#v: gocql.Marshal: %v", kindNames[k], want, err)
	}
	if !bytes.Equal(got, wantB) || (got == nil) != (wantB == nil) {
		t.Fatalf("%s %#v: encoded %x (nil %v), gocql.Marshal gives %x (nil %v)", kindNames[k], want, got, got == nil, wantB, wantB == nil)
	}
	if n := len(wire(enc)); n != len(wantB) {
		t.Errorf("%s %#v: encoded size %d, want %d", kindNames[k], want, n, len(wantB))
	}
	if ser := packed.AppendKeyComponent(nil, 1, wire(enc)); !bytes.Equal(ser, wantB) {
		t.Errorf("%s %#v: routing-key bytes %x, want %x", kindNames[k], want, ser, wantB)
	}
	dst := reflect.New(reflect.TypeOf(packed.GoValue(enc)))
	if err := gocql.Unmarshal(info, got, dst.Interface()); err != nil {
		t.Fatalf("%s %#v: gocql.Unmarshal: %v", kindNames[k], want, err)
	}
	if dec := dst.Elem().Interface(); !sameValue(dec, packed.GoValue(enc)) {
		t.Errorf("%s %#v: GoValue %#v, gocql decodes %#v", kindNames[k], want, packed.GoValue(enc), dec)
	}
	var canon []byte
	if k == kDate {
		canon = appendDateCanonical(nil, x.T)
	} else {
		canon = appendCanonical(nil, want)
	}
	if sp := s.canon[0]; string(s.canonText[sp.off:sp.off+sp.n]) != string(canon) {
		t.Errorf("%s %#v: canonical text %q, want %q", kindNames[k], want, s.canonText[sp.off:sp.off+sp.n], canon)
	}
}

// sameValue is == with floats compared by bits (NaN) and times by instant and location.
func sameValue(a, b any) bool {
	switch x := a.(type) {
	case float32:
		y, ok := b.(float32)
		return ok && math.Float32bits(x) == math.Float32bits(y)
	case float64:
		y, ok := b.(float64)
		return ok && math.Float64bits(x) == math.Float64bits(y)
	case time.Time:
		y, ok := b.(time.Time)
		return ok && x.Equal(y) && x.Location() == y.Location()
	}
	return a == b
}

// TestEncodedMatchesGocql holds the exactness of pre-encoded values at the edges of every type:
// the bytes the mapper binds are the bytes gocql would have sent for the Go value it used to bind.
func TestEncodedMatchesGocql(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	tz := time.FixedZone("UTC-13:45", -(13*3600 + 45*60))
	uuids := []gocql.UUID{{}, mustUUID("ffffffff-ffff-ffff-ffff-ffffffffffff"), mustUUID("0b6a1f6e-3f0c-4a53-9b8f-1f2a3b4c5d6e")}
	timeUUIDs := []gocql.UUID{mustUUID("e7a1b2c0-b3a4-11ee-8c90-0242ac120002"), mustUUID("00000000-0000-1000-8000-000000000000")}
	cases := map[kind][]codec.Value{
		kText: {{B: nil}, {B: []byte("")}, {B: []byte("dev-0042")}, {B: []byte("héllo, 世界")}, {B: []byte{0}},
			{B: []byte("\xff\xfe not UTF-8")}, {B: []byte(strings.Repeat("x", 70000))}},
		kASCII:    {{B: []byte("")}, {B: []byte("plain")}, {B: []byte("\x00\x7f")}},
		kBigint:   {{N: math.MinInt64}, {N: -1}, {N: 0}, {N: 1}, {N: math.MaxInt64}, {N: 1705329442123456}},
		kInt:      {{N: math.MinInt32}, {N: -1}, {N: 0}, {N: 7776000}, {N: math.MaxInt32}},
		kSmallint: {{N: math.MinInt16}, {N: -300}, {N: 0}, {N: math.MaxInt16}},
		kTinyint:  {{N: math.MinInt8}, {N: -1}, {N: 0}, {N: 12}, {N: math.MaxInt8}},
		kFloat: {{F: 0}, {F: math.Copysign(0, -1)}, {F: 3.71}, {F: -1.5}, {F: math.MaxFloat32}, {F: -math.MaxFloat32},
			{F: math.SmallestNonzeroFloat32}, {F: 1e-46}, {F: math.Inf(1)}, {F: math.NaN()}},
		kDouble: {{F: 0}, {F: math.Copysign(0, -1)}, {F: 21.5}, {F: -2.25e-3}, {F: math.MaxFloat64}, {F: -math.MaxFloat64},
			{F: math.SmallestNonzeroFloat64}, {F: math.Inf(-1)}, {F: math.NaN()}},
		kTimestamp: {{T: at("0001-01-01T00:00:00.000000001Z")}, {T: at("0001-01-01T00:00:00.001Z")},
			{T: at("1969-12-31T23:59:59.999999999Z")}, {T: at("1969-07-20T20:17:40.5Z")}, {T: at("1970-01-01T00:00:00Z")},
			{T: at("1970-01-01T00:00:00.000999Z")}, {T: at("2024-01-15T14:37:22.123456789Z")},
			{T: at("2024-01-15T14:37:22.123456789Z").In(tz)}, {T: at("9999-12-31T23:59:59.999999999Z")}},
		kDate: {{T: at("0001-01-02T00:00:00Z")}, {T: at("1969-07-20T00:00:00Z")}, {T: at("1969-12-31T12:00:00Z")},
			{T: at("1970-01-01T00:00:00Z")}, {T: at("2024-02-29T00:00:00Z")}, {T: at("2024-02-29T23:59:59.999Z")},
			{T: at("2024-02-29T00:00:00Z").In(tz)}, {T: at("9999-12-31T00:00:00Z")}},
		kUUID:     {{U: uuids[0]}, {U: uuids[1]}, {U: uuids[2]}},
		kTimeUUID: {{U: timeUUIDs[0]}, {U: timeUUIDs[1]}},
	}
	for _, k := range encodedKinds {
		if len(cases[k]) == 0 {
			t.Fatalf("no cases for %s", kindNames[k])
		}
		for i := range cases[k] {
			x := cases[k][i]
			t.Run(fmt.Sprintf("%s/%d", kindNames[k], i), func(t *testing.T) { checkExact(t, k, &x) })
		}
	}
}

// randomCell draws a value of kind k: uniformly random bits for numbers and UUIDs, random
// instants with nanoseconds over the whole range the mapper accepts, random bytes for text.
func randomCell(r *rand.Rand, k kind) codec.Value {
	var x codec.Value
	switch k {
	case kText, kASCII:
		x.B = make([]byte, r.IntN(40))
		for i := range x.B {
			x.B[i] = byte(r.Uint32())
			if k == kASCII {
				x.B[i] &= 0x7f
			}
		}
	case kBigint:
		x.N = int64(r.Uint64())
	case kInt:
		x.N = int64(int32(r.Uint32()))
	case kSmallint:
		x.N = int64(int16(r.Uint32()))
	case kTinyint:
		x.N = int64(int8(r.Uint32()))
	case kFloat:
		x.F = float64(math.Float32frombits(r.Uint32()))
	case kDouble:
		x.F = math.Float64frombits(r.Uint64())
	case kTimestamp, kDate:
		span := maxTime.Unix() - minTime.Unix()
		x.T = time.Unix(minTime.Unix()+1+r.Int64N(span-1), r.Int64N(1e9)).UTC()
		if k == kDate && r.IntN(2) == 0 {
			x.T = x.T.Truncate(24 * time.Hour) // the dates JSON gives: midnight UTC
		}
	case kUUID, kTimeUUID:
		binary.BigEndian.PutUint64(x.U[:8], r.Uint64())
		binary.BigEndian.PutUint64(x.U[8:], r.Uint64())
		if k == kTimeUUID {
			x.U[6] = x.U[6]&0x0f | 0x10
		}
	}
	return x
}

// TestEncodedMatchesGocqlRandom is the property: for random values of every kind, the encoding
// equals gocql.Marshal of the typed value.
func TestEncodedMatchesGocqlRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(20240115, 1207))
	n := 5000
	if testing.Short() {
		n = 500
	}
	for _, k := range encodedKinds {
		for range n {
			x := randomCell(r, k)
			checkExact(t, k, &x)
			if t.Failed() {
				return
			}
		}
	}
}

// FuzzEncodedMatchesGocql explores the same property from fuzzed raw inputs.
func FuzzEncodedMatchesGocql(f *testing.F) {
	f.Add(uint8(0), int64(0), uint64(0), int64(0), uint32(0), []byte("x"))
	f.Add(uint8(2), int64(math.MinInt64), uint64(math.MaxUint64), int64(-62135596799), uint32(999999999), []byte{})
	f.Add(uint8(8), int64(-1), uint64(0x7ff8000000000001), int64(-1), uint32(1), []byte("\xff"))
	f.Add(uint8(9), int64(1), uint64(1), int64(-43200), uint32(0), []byte(nil))
	f.Fuzz(func(t *testing.T, sel uint8, n int64, bits uint64, sec int64, nsec uint32, text []byte) {
		k := encodedKinds[int(sel)%len(encodedKinds)]
		var x codec.Value
		switch k {
		case kText:
			x.B = text
		case kASCII:
			for _, c := range text {
				x.B = append(x.B, c&0x7f)
			}
		case kBigint, kInt, kSmallint, kTinyint:
			bits := 8 * packed.Width(k)
			lo, hi := int64(-1)<<(bits-1), int64(1)<<(bits-1)-1
			if n < lo || n > hi {
				n = lo + int64(uint64(n)%uint64(hi-lo+1)) // fold into range; only bigint spans all of int64
			}
			x.N = n
		case kFloat:
			x.F = float64(math.Float32frombits(uint32(bits)))
		case kDouble:
			x.F = math.Float64frombits(bits)
		case kTimestamp, kDate:
			x.T = time.Unix(sec, int64(nsec%1e9)).UTC()
			if !inTimeRange(x.T) || x.T.IsZero() {
				// Never encoded: the mapper rejects times outside 0000 to 9999. The zero time is
				// encoded as its instant on purpose, where gocql sends an empty value
				// (TestSharedValuesMatchGocql).
				return
			}
		case kUUID, kTimeUUID:
			binary.BigEndian.PutUint64(x.U[:8], bits)
			binary.BigEndian.PutUint64(x.U[8:], uint64(n))
		}
		checkExact(t, k, &x)
	})
}

// TestEncodedRefusesOtherTypes guards the type check: a value encoded for one CQL type bound to
// a marker of another (a table altered after the config was written) fails with a
// *BindTypeError through gocql.Marshal instead of sending bytes that mean another value.
func TestEncodedRefusesOtherTypes(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	natives := []gocql.Type{gocql.TypeVarchar, gocql.TypeText, gocql.TypeAscii, gocql.TypeBigInt, gocql.TypeCounter,
		gocql.TypeInt, gocql.TypeSmallInt, gocql.TypeTinyInt, gocql.TypeFloat, gocql.TypeDouble, gocql.TypeTimestamp,
		gocql.TypeDate, gocql.TypeUUID, gocql.TypeTimeUUID, gocql.TypeBlob, gocql.TypeBoolean, gocql.TypeVarint,
		gocql.TypeDecimal, gocql.TypeInet, gocql.TypeTime, gocql.TypeDuration}
	for _, k := range encodedKinds {
		x := randomCell(r, k)
		enc, _ := encodeOne(k, &x)
		for _, nt := range natives {
			accepted := nt == packed.CQLType(k) || (k == kText && nt == gocql.TypeText)
			b, err := gocql.Marshal(gocql.NewNativeType(4, nt, ""), enc)
			if accepted {
				if err != nil {
					t.Errorf("%s bound as %s: %v", kindNames[k], packed.TypeName(nt), err)
				}
				continue
			}
			var bte *packed.BindTypeError
			if !errors.As(err, &bte) || b != nil {
				t.Errorf("%s bound as %s: %x, %v; want no bytes and a *BindTypeError", kindNames[k], packed.TypeName(nt), b, err)
				continue
			}
			if bte.Encoded != kindNames[k] || bte.Bound != nt {
				t.Errorf("%s bound as %s: error says %+v", kindNames[k], packed.TypeName(nt), bte)
			}
			want := "binding a value encoded as CQL " + kindNames[k] + " to a bind marker of CQL type " + packed.TypeName(nt) + ": "
			if !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "type id") {
				t.Errorf("message %q, want it to start %q", err, want)
			}
		}
		if _, err := enc.(gocql.Marshaler).MarshalCQL(nil); err == nil {
			t.Errorf("%s: MarshalCQL without type information succeeded", kindNames[k])
		}
	}
}

// TestMarshalCQLDoesNotAllocate holds the point of encoding: binding costs gocql no allocation.
func TestMarshalCQLDoesNotAllocate(t *testing.T) {
	// The race detector and coverage instrumentation add allocations of their own.
	countAllocs := testing.CoverMode() == "" && !raceEnabled
	r := rand.New(rand.NewPCG(3, 4))
	for _, k := range encodedKinds {
		x := randomCell(r, k)
		enc, _ := encodeOne(k, &x)
		info := nativeInfo(k)
		if n := testing.AllocsPerRun(100, func() {
			if _, err := gocql.Marshal(info, enc); err != nil {
				t.Fatal(err)
			}
		}); countAllocs && n != 0 {
			t.Errorf("%s: gocql.Marshal allocates %.1f times", kindNames[k], n)
		}
	}
}

// TestSharedValuesMatchGocql: the values many rows bind (a bucket value, the TTL, the Kafka topic)
// are encoded once from their Go value, to the bytes gocql gives.
func TestSharedValuesMatchGocql(t *testing.T) {
	day := time.Date(2024, 1, 15, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		k kind
		v any
	}{{kText, "2024-01-15"}, {kASCII, "sensor-readings"}, {kInt, int32(7776000)}, {kBigint, int64(202401150000)},
		{kTimestamp, day}, {kDate, day}} {
		b, err := packed.AppendValue(nil, packed.Scalar(tc.k), tc.v)
		if err != nil {
			t.Errorf("%s %#v: %v", kindNames[tc.k], tc.v, err)
			continue
		}
		e := &packed.Value{Type: packed.Scalar(tc.k), Wire: b}
		got, err := gocql.Marshal(nativeInfo(tc.k), e)
		want, werr := gocql.Marshal(nativeInfo(tc.k), tc.v)
		if err != nil || werr != nil || !bytes.Equal(got, want) {
			t.Errorf("%s %#v: %x, %v; gocql gives %x, %v", kindNames[tc.k], tc.v, got, err, want, werr)
		}
		if !sameValue(packed.GoValue(e), tc.v) {
			t.Errorf("%s: GoValue %#v, want %#v", kindNames[tc.k], packed.GoValue(e), tc.v)
		}
	}
	// gocql sends the zero time as an empty value; the mapper sends the instant it is
	// (0001-01-01T00:00:00Z is a time the mapper accepts, see inTimeRange).
	zero, _ := packed.AppendValue(nil, packed.Scalar(kTimestamp), time.Time{})
	if len(zero) != 8 || int64(binary.BigEndian.Uint64(zero)) != (time.Time{}).UnixMilli() {
		t.Errorf("timestamp of the zero time = %x, want the instant's milliseconds", zero)
	}
}

func TestAppendUUIDCanonical(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 1000 {
		x := randomCell(r, kUUID)
		if got := string(appendUUIDCanonical([]byte("p:"), x.U)); got != "p:"+gocql.UUID(x.U).String() {
			t.Fatalf("%q, want p:%s", got, gocql.UUID(x.U))
		}
	}
}
