package mapper

import (
	"errors"
	"testing"
	"unicode/utf8"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/packed"
)

// fuzzFormat maps arbitrary values through a topic of codec and requires that the mapper never panics,
// that every error is a *RecordError with a dead-letter reason, and that every row it returns reads
// back as values of the table's types.
func fuzzFormat(f *testing.F, codecName string, seeds [][]byte) {
	reg := &staticRegistry{schemas: map[int]*codec.Schema{
		7: {ID: 7, Type: "AVRO", Text: sensorAvro},
		8: {ID: 8, Type: "JSON", Text: sensorJSONSchema},
	}}
	m := newAvroMapper(f, reg, func(tp *config.Topic) {
		tp.Codec = codecName
		tp.Columns = append(tp.Columns, config.Column{Name: "firmware", Type: "ascii", Field: "firmware"})
	})
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, value []byte) {
		r := rec("")
		r.Value = value
		row, err := m.Map(r)
		if err != nil {
			var re *RecordError
			if !errors.As(err, &re) {
				t.Fatalf("%T %v, want a *RecordError", err, err)
			}
			switch re.Reason {
			case ReasonDecode, ReasonMap, ReasonSchema, ReasonExpired, ReasonLate, ReasonFuture:
			default:
				t.Fatalf("reason %q of %v", re.Reason, err)
			}
			return
		}
		for _, v := range packed.Values(row.Packed) {
			if pv, ok := v.(*packed.Value); ok && (pv.Type.Kind == packed.KText || pv.Type.Kind == packed.KASCII) && !utf8.Valid(pv.Wire) {
				t.Fatalf("a text value that is not UTF-8: %q", pv.Wire)
			}
			packed.GoValue(v)
		}
	})
}

// FuzzMapAvro: framing and Avro body of the sensor schema, through the mapper.
func FuzzMapAvro(f *testing.F) {
	good := avroValue(f, sensorAvro, 7, sensorNative())
	fuzzFormat(f, config.CodecAvro, [][]byte{good, good[:5], good[:len(good)-1], codec.AppendFrame(nil, 9, nil), []byte(sensorJSON)})
}

// FuzzMapJSONSchema: framing and JSON body, through the mapper.
func FuzzMapJSONSchema(f *testing.F) {
	good := append(codec.AppendFrame(nil, 8, nil), sensorJSON...)
	fuzzFormat(f, config.CodecJSONSchema, [][]byte{good, good[:5], good[:20], append(codec.AppendFrame(nil, 7, nil), sensorJSON...), []byte(sensorJSON)})
}
