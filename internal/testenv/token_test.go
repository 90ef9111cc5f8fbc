package testenv

import (
	"bytes"
	"encoding/hex"
	"testing"
)

func TestAppendRoutingKey(t *testing.T) {
	tests := []struct {
		name  string
		comps [][]byte
		want  []byte
	}{
		{"single component is the value itself", [][]byte{[]byte("abc")}, []byte("abc")},
		{"composite: length, bytes, zero", [][]byte{[]byte("ab"), {0, 0, 0, 7}},
			[]byte{0, 2, 'a', 'b', 0, 0, 4, 0, 0, 0, 7, 0}},
		{"empty component in a composite", [][]byte{{}, []byte("x")}, []byte{0, 0, 0, 0, 1, 'x', 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := AppendRoutingKey(nil, tt.comps...); !bytes.Equal(got, tt.want) {
				t.Fatalf("AppendRoutingKey = %x, want %x", got, tt.want)
			}
		})
	}
}

// Published MurmurHash3 x64-128 h1 values for ASCII input (no sign-extension effect), and one
// Cassandra token of a composite key whose tail holds bytes >= 0x80, where a stock murmur3
// disagrees with Cassandra. TestTokenMatchesCassandra checks many more keys against the server.
func TestTokenVectors(t *testing.T) {
	ascii := []struct {
		in   string
		want uint64
	}{
		{"", 0},
		{"0", 0x2ac9debed546a380},
		{"012345678901234", 0xa4b203bb1d90b9a3},  // 15-byte tail only
		{"0123456789012345", 0xa3293ad698ecb99a}, // one full block
		{"0123456789012345678", 0x2d0338c1ca87d132},
		{"hello", 0xcbd8a7b341bd9b02},
		{"The quick brown fox jumps over the lazy dog.", 0xcd99481f9ee902c9},
	}
	for _, v := range ascii {
		if got := Token([]byte(v.in)); got != int64(v.want) {
			t.Errorf("Token(%q) = %d, want %d", v.in, got, int64(v.want))
		}
	}
	key, _ := hex.DecodeString("00104327529fb645dd00b883ec39ae448bb800000400066a6b00")
	if got, want := Token(key), int64(-9223371632693506265); got != want {
		t.Errorf("Token(%x) = %d, want %d", key, got, want)
	}
}

func BenchmarkToken(b *testing.B) {
	key := AppendRoutingKey(nil, []byte("sensor-000042"), []byte("2024-01-15"))
	b.ReportAllocs()
	for b.Loop() {
		Token(key)
	}
}
