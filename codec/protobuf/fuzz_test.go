package protobuf

import (
	"errors"
	"testing"
	"unicode/utf8"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/packed"
)

// FuzzDecode feeds whole record values (framing and body) to the sensor plan: nothing may panic, every error
// is a *codec.Error with a reason, and every text value that decodes is UTF-8.
func FuzzDecode(f *testing.F) {
	msg := sensorMessage(f, readingDescriptor(f), nil)
	for _, idx := range [][]int{{1, 0}, {0}, {1}, {3}, {1, 0, 0}} {
		v := append(codec.AppendFrame(nil, 9, idx), msg...)
		f.Add(v)
		f.Add(v[:len(v)/2])
	}
	f.Add([]byte{0, 0, 0, 0, 9})
	f.Add([]byte{1, 0, 0, 0, 9, 0})
	fields := sensorFields()
	p := compile(f, sensorSchema(9), fields)
	f.Fuzz(func(t *testing.T, value []byte) {
		out := make([]codec.Value, len(fields))
		_, body, err := codec.Frame(value)
		if err == nil {
			_, err = p.Decode(body, out, nil)
		}
		if err != nil {
			var ce *codec.Error
			if !errors.As(err, &ce) || ce.Reason == "" {
				t.Fatalf("error %v (%T) is not a *codec.Error with a reason", err, err)
			}
			return
		}
		for i, fd := range fields {
			if fd.Type.Kind == packed.KText && out[i].State == codec.Set && !utf8.Valid(out[i].B) {
				t.Fatalf("field %s: text %q is not UTF-8", fd.Name(), out[i].B)
			}
		}
	})
}
