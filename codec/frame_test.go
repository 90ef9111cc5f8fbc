package codec

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestFrameSaysWhatIsWrongWithTheFraming(t *testing.T) {
	for _, tc := range []struct {
		name  string
		value []byte
		want  string
	}{
		{"null", nil, "null (a tombstone)"},
		{"empty", []byte{}, "empty (0 bytes)"},
		{"wrong magic", []byte(`{"a":1}`), "wrong magic byte 0x7b"},
		{"cut short", []byte{0, 0, 1}, "framing cut short: 3 bytes"},
	} {
		_, _, err := Frame(tc.value)
		var e *Error
		if !errors.As(err, &e) || e.Reason != ReasonDecode || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a decode error saying %q", tc.name, err, tc.want)
		}
	}
}

func TestFrameReadsWhatAppendFrameWrites(t *testing.T) {
	v := append(AppendFrame(nil, 0x01020304, nil), 'x')
	id, body, err := Frame(v)
	if err != nil || id != 0x01020304 || string(body) != "x" {
		t.Fatalf("Frame = %d %q %v, want 16909060 \"x\"", id, body, err)
	}
	for _, idx := range [][]int{{0}, {1}, {2, 0, 5}} {
		v := append(AppendFrame(nil, 7, idx), 'y')
		_, body, _ := Frame(v)
		got, rest, err := MessageIndexes(body)
		if err != nil || !slices.Equal(got, idx) || string(rest) != "y" {
			t.Errorf("indexes %v: read %v %q %v", idx, got, rest, err)
		}
	}
}

func TestMessageIndexesRefuseTruncatedAndNegative(t *testing.T) {
	for _, body := range [][]byte{{}, {4, 2}, {2, 1}, {0x80}} { // none, 2 of 2 cut, -1 (zig-zag 1), cut varint
		if _, _, err := MessageIndexes(body); err == nil {
			t.Errorf("MessageIndexes(% x) accepted", body)
		}
	}
}
