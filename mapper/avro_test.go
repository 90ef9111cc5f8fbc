package mapper

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"github.com/linkedin/goavro/v2"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/packed"
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
func avroValue(t testing.TB, text string, id int, native any) []byte {
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
	return registryMapper(t, c, reg)
}

// registryMapper builds the mapper of c, given a registry URL and validated, on registry reg.
func registryMapper(t testing.TB, c *config.Config, reg codec.Registry) *Mapper {
	t.Helper()
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
		!got.EventTime().Equal(want.EventTime()) || got.Target.Table != want.Target.Table {
		t.Errorf("avro row %+v\n json row %+v", got, want)
	}
}

func TestRegistryCodecErrorsHaveTheirReasons(t *testing.T) {
	noTemp := strings.Replace(sensorAvro, `{"name": "temperature", "type": "double"},`, ``, 1)
	reg := &staticRegistry{schemas: map[int]*codec.Schema{
		7: {ID: 7, Type: "AVRO", Text: sensorAvro},
		9: {ID: 9, Type: "AVRO", Text: noTemp},
	}}
	m := newAvroMapper(t, reg, nil)
	good := avroValue(t, sensorAvro, 7, sensorNative())
	withoutTemp := sensorNative()
	delete(withoutTemp, "temperature")
	for _, tc := range []struct {
		name, reason, want string
		value              []byte
		header             bool
	}{
		{"wrong magic", ReasonDecode, "wrong magic byte 0x7b", []byte(sensorJSON), false},
		{"framing cut short", ReasonDecode, "framing cut short: 4 bytes", good[:4], false},
		{"unknown id", ReasonSchema, "schema id 12345: the schema registry has no schema with this id", append(codec.AppendFrame(nil, 12345, nil), good[5:]...), false},
		{"body short", ReasonDecode, "shorter than its writer schema (schema id 7)", good[:len(good)-3], false},
		{"field missing from the writer schema", ReasonSchema, `schema id 9, field "temperature" (column temperature): the writer schema has no field "temperature"`,
			avroValue(t, noTemp, 9, withoutTemp), false},
		{"header form", ReasonDecode, "__value_schema_id header", good, true},
	} {
		r := rec("")
		r.Value, r.SchemaIDHeader = tc.value, tc.header
		_, err := m.Map(r)
		var re *RecordError
		if !errors.As(err, &re) || re.Reason != tc.reason || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want reason %s saying %q", tc.name, err, tc.reason, tc.want)
		}
	}

	reg.down.Store(true)
	r := rec("")
	r.Value = append(codec.AppendFrame(nil, 77, nil), good[5:]...)
	_, err := m.Map(r)
	var re *RecordError
	if ue := (*codec.UnavailableError)(nil); !errors.As(err, &ue) || errors.As(err, &re) {
		t.Errorf("registry down: %v, want an UnavailableError that is no RecordError", err)
	}
	r.Value = good
	if _, err := m.Map(r); err != nil {
		t.Errorf("a cached schema id with the registry down: %v", err)
	}
}

func TestNullUnionLeavesTheColumnUnsetAndARequiredOneIsBadInput(t *testing.T) {
	reg := &staticRegistry{schemas: map[int]*codec.Schema{7: {ID: 7, Type: "AVRO", Text: sensorAvro}}}
	m := newAvroMapper(t, reg, nil)
	n := sensorNative()
	n["humidity"] = nil
	r := rec("")
	r.Value = avroValue(t, sensorAvro, 7, n)
	row, err := m.Map(r)
	if err != nil {
		t.Fatal(err)
	}
	if v := packed.Values(row.Packed)[4]; v != gocql.UnsetValue {
		t.Errorf("humidity %v, want unset (no tombstone)", v)
	}
	m = newAvroMapper(t, reg, func(tp *config.Topic) { tp.Columns[4].Required = true })
	if _, err := m.Map(r); err == nil || !strings.Contains(err.Error(), `column humidity: field "humidity" is null, and the column is required`) {
		t.Errorf("a required column on the null branch: %v", err)
	}
}

func TestWriteNullBindsANullInsteadOfLeavingTheColumnUnset(t *testing.T) {
	reg := &staticRegistry{schemas: map[int]*codec.Schema{7: {ID: 7, Type: "AVRO", Text: sensorAvro}}}
	writeNull := func(tp *config.Topic) { tp.Columns[4].WriteNull = true }
	n := sensorNative()
	n["humidity"] = nil
	avro := rec("")
	avro.Value = avroValue(t, sensorAvro, 7, n)
	noHumidity := rec(strings.Replace(sensorJSON, `"humidity":40.2,`, ``, 1))
	for _, tc := range []struct {
		name string
		m    *Mapper
		r    Record
		want any
	}{
		{"avro null, unset by default", newAvroMapper(t, reg, nil), avro, gocql.UnsetValue},
		{"avro null, write_null", newAvroMapper(t, reg, writeNull), avro, nil},
		{"json missing, unset by default", newMapper(t, nil), noHumidity, gocql.UnsetValue},
		{"json missing, write_null", newMapper(t, writeNull), noHumidity, nil},
	} {
		row, err := tc.m.Map(tc.r)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := packed.Values(row.Packed)[4]; got != tc.want {
			t.Errorf("%s: humidity binds %v, want %v", tc.name, got, tc.want)
		}
	}
}
