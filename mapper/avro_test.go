package mapper

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/linkedin/goavro/v2"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/config"
)

// staticRegistry serves fixed schemas, for unit tests; the integration tests use the real registry.
type staticRegistry struct {
	schemas map[int]*codec.Schema
	down    atomic.Bool
}

func (r *staticRegistry) Schema(_ context.Context, id int) (*codec.Schema, error) {
	if r.down.Load() {
		return nil, &codec.UnavailableError{Err: errors.New("connection refused")}
	}
	s, ok := r.schemas[id]
	if !ok {
		return nil, fmt.Errorf("schema id %d: %w", id, codec.ErrUnknownSchema)
	}
	return s, nil
}

// sensorAvro is the sensor event of sensorJSON as an Avro writer schema, with fields the topic does
// not read before, between and after the ones it does.
const sensorAvro = `{"type": "record", "name": "Reading", "namespace": "sensors", "fields": [
	{"name": "firmware", "type": "string"},
	{"name": "device_id", "type": "string"},
	{"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
	{"name": "tags", "type": {"type": "map", "values": "string"}},
	{"name": "temperature", "type": "double"},
	{"name": "humidity", "type": ["null", "double"]},
	{"name": "battery", "type": "float"},
	{"name": "site", "type": {"type": "record", "name": "Site", "fields": [
		{"name": "name", "type": ["null", "string"]},
		{"name": "id", "type": "string"}]}},
	{"name": "samples", "type": {"type": "array", "items": "double"}}
]}`

// sensorNative is sensorJSON's event in goavro's native form, for sensorAvro.
func sensorNative() map[string]any {
	return map[string]any{
		"firmware":    "1.2.3",
		"device_id":   "dev-0042",
		"ts":          time.Date(2024, 1, 15, 14, 37, 22, 123e6, time.UTC),
		"tags":        map[string]any{"room": "a", "floor": "2"},
		"temperature": 21.5,
		"humidity":    goavro.Union("double", 40.2),
		"battery":     float32(3.71),
		"site":        map[string]any{"name": nil, "id": "plant-1"},
		"samples":     []any{1.0, 2.5},
	}
}

// avroValue encodes native with schema text in the Confluent wire format, schema id id, through
// goavro: another library than the one that decodes it.
func avroValue(t testing.TB, text string, id int, native map[string]any) []byte {
	t.Helper()
	c, err := goavro.NewCodec(text)
	if err != nil {
		t.Fatal(err)
	}
	v, err := c.BinaryFromNative(codec.AppendFrame(nil, id, nil), native)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// newAvroMapper is newMapper's sensor topic read as Avro from reg.
func newAvroMapper(t testing.TB, reg codec.Registry, mutate func(*config.Topic)) *Mapper {
	t.Helper()
	c := baseConfig()
	tp := c.Topics["readings"]
	tp.Codec = config.CodecAvro
	if mutate != nil {
		mutate(&tp)
	}
	c.Topics["readings"] = tp
	c.SchemaRegistry.URLs = []string{"http://registry.invalid"}
	c.ApplyDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	m, err := New(c, WithRegistry(reg))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m
}

func TestAvroRowEqualsTheJSONRowOfTheSameEvent(t *testing.T) {
	reg := &staticRegistry{schemas: map[int]*codec.Schema{7: {ID: 7, Type: "AVRO", Text: sensorAvro}}}
	jm, am := newMapper(t, nil), newAvroMapper(t, reg, nil)
	want, err := jm.Map(rec(sensorJSON))
	if err != nil {
		t.Fatal(err)
	}
	r := rec("")
	r.Value = avroValue(t, sensorAvro, 7, sensorNative())
	got, err := am.Map(r)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Packed) != string(want.Packed) || got.Key != want.Key || got.Size != want.Size ||
		!got.EventTime.Equal(want.EventTime) || got.Target.Table != want.Target.Table {
		t.Errorf("avro row %+v\n json row %+v", got, want)
	}
}
