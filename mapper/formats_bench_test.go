package mapper

import (
	"testing"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/config"
)

// sensorJSONSchema is a JSON Schema of sensorJSON, for the json_schema codec.
const sensorJSONSchema = `{"type": "object", "properties": {"device_id": {"type": "string"},
	"ts": {"type": "string", "format": "date-time"}, "temperature": {"type": "number"},
	"humidity": {"type": "number"}, "battery": {"type": "number"},
	"site": {"type": "object", "properties": {"id": {"type": "string"}}}}}`

// formatRecords are sensorJSON's event as each codec's topic reads it, with the mapper of that topic.
// A codec's entry is one case here.
func formatRecords(b *testing.B) map[string]func() (*Mapper, Record) {
	reg := &staticRegistry{schemas: map[int]*codec.Schema{
		7: {ID: 7, Type: "AVRO", Text: sensorAvro},
		8: {ID: 8, Type: "JSON", Text: sensorJSONSchema},
		9: {ID: 9, Type: "PROTOBUF", Text: sensorProto},
	}}
	return map[string]func() (*Mapper, Record){
		config.CodecJSON: func() (*Mapper, Record) { return newMapper(b, nil), rec(sensorJSON) },
		config.CodecAvro: func() (*Mapper, Record) {
			r := rec("")
			r.Value = avroValue(b, sensorAvro, 7, sensorNative())
			return newAvroMapper(b, reg, nil), r
		},
		config.CodecProtobuf: func() (*Mapper, Record) {
			r := rec("")
			r.Value = sensorProtoValue(b, 9)
			return newProtobufMapper(b, reg), r
		},
		config.CodecJSONSchema: func() (*Mapper, Record) {
			r := rec("")
			r.Value = append(codec.AppendFrame(nil, 8, nil), sensorJSON...)
			return newAvroMapper(b, reg, func(tp *config.Topic) { tp.Codec = config.CodecJSONSchema }), r
		},
	}
}

// BenchmarkDecodeMapSensor decodes and maps the same sensor event in each format, side by side in one
// run: compare each codec's ns/op and allocs/op with json's (docs/PERFORMANCE.md states the ratios).
func BenchmarkDecodeMapSensor(b *testing.B) {
	cases := formatRecords(b)
	for _, name := range []string{config.CodecJSON, config.CodecAvro, config.CodecProtobuf, config.CodecJSONSchema} {
		setup, ok := cases[name]
		if !ok {
			continue // a codec without its case here yet
		}
		b.Run(name, func(b *testing.B) {
			m, r := setup()
			if _, err := m.Map(r); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.SetBytes(int64(len(r.Value)))
			for b.Loop() {
				if _, err := m.Map(r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
