package gen

import (
	"context"
	"fmt"
	"math"
	"strconv"

	"github.com/linkedin/goavro/v2"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/encoding/protowire"
)

// The generated events in the schema-registry formats (Confluent wire format: magic byte 0, the schema id, for
// Protobuf the message indexes, then the body). An Encoder writes the same readings the JSON record holds, so a
// topic read with any codec gets the same rows. Avro is encoded with goavro and Protobuf with protowire's
// appenders: libraries the sink's own decoders do not use.

// Codec names, as a topic's codec key spells them.
const (
	CodecJSON       = "json"
	CodecAvro       = "avro"
	CodecProtobuf   = "protobuf"
	CodecJSONSchema = "json_schema"
)

// SensorAvro is the Avro writer schema of the sample events. device_id is nullable so a record of the
// MissingID defect can leave it out.
const SensorAvro = `{"type": "record", "name": "Reading", "namespace": "sink.sample", "fields": [
	{"name": "device_id", "type": ["null", "string"], "default": null},
	{"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
	{"name": "temperature", "type": "double"},
	{"name": "humidity", "type": "double"},
	{"name": "battery", "type": "double"},
	{"name": "site", "type": {"type": "record", "name": "Site", "fields": [{"name": "id", "type": "string"}]}}
]}`

// SensorProto is the Protobuf writer schema of the sample events; Reading is message [0].
const SensorProto = `syntax = "proto3";
package sink.sample;

import "google/protobuf/timestamp.proto";

message Reading {
  optional string device_id = 1;
  google.protobuf.Timestamp ts = 2;
  double temperature = 3;
  double humidity = 4;
  double battery = 5;
  message Site { string id = 1; }
  Site site = 6;
}
`

// SensorJSONSchema is the JSON Schema of the sample events.
const SensorJSONSchema = `{"type": "object", "additionalProperties": false,
	"required": ["ts", "temperature", "humidity", "battery", "site"],
	"properties": {
		"device_id": {"type": "string"},
		"ts": {"type": "string", "format": "date-time"},
		"temperature": {"type": "number"},
		"humidity": {"type": "number"},
		"battery": {"type": "number"},
		"site": {"type": "object", "additionalProperties": false, "required": ["id"],
			"properties": {"id": {"type": "string"}}}
	}}`

// Schema is the writer schema of the sample events in codec.
func Schema(codec string) (sr.Schema, error) {
	switch codec {
	case CodecAvro:
		return sr.Schema{Schema: SensorAvro, Type: sr.TypeAvro}, nil
	case CodecProtobuf:
		return sr.Schema{Schema: SensorProto, Type: sr.TypeProtobuf}, nil
	case CodecJSONSchema:
		return sr.Schema{Schema: SensorJSONSchema, Type: sr.TypeJSON}, nil
	}
	return sr.Schema{}, fmt.Errorf("codec %q: want %s, %s or %s", codec, CodecAvro, CodecProtobuf, CodecJSONSchema)
}

// Encoder writes generated events in one schema-registry format under one schema id.
type Encoder struct {
	codec  string
	id     int
	header sr.ConfluentHeader
	avro   *goavro.Codec
}

// NewEncoder encodes events in codec with schema id id (the id the registry gave Schema(codec)).
func NewEncoder(codec string, id int) (*Encoder, error) {
	if _, err := Schema(codec); err != nil {
		return nil, err
	}
	e := &Encoder{codec: codec, id: id}
	if codec == CodecAvro {
		c, err := goavro.NewCodec(SensorAvro)
		if err != nil {
			return nil, fmt.Errorf("compiling the sample Avro schema: %w", err)
		}
		e.avro = c
	}
	return e, nil
}

// Register registers the sample schema of codec under subject (for Confluent's default naming,
// "<topic>-value") and returns an Encoder with the id the registry gave it. Registering the same schema
// again returns the same id.
func Register(ctx context.Context, cl *sr.Client, codec, subject string) (*Encoder, error) {
	s, err := Schema(codec)
	if err != nil {
		return nil, err
	}
	ss, err := cl.CreateSchema(ctx, subject, s)
	if err != nil {
		return nil, fmt.Errorf("registering the sample %s schema under subject %s: %w", codec, subject, err)
	}
	return NewEncoder(codec, ss.ID)
}

// ID is the schema id the encoder frames values with.
func (e *Encoder) ID() int { return e.id }

// Append appends ev in the encoder's format to dst. A deliberately bad event stays bad: Unparsable is cut in
// the middle of its body, MissingID has no device_id, and BadTemperature is, for Avro and Protobuf, the JSON
// record without framing (a producer that wrote JSON to a binary topic); for JSON Schema it is the JSON record
// with its text temperature, framed.
func (e *Encoder) Append(dst []byte, ev Event) ([]byte, error) {
	if ev.Defect == BadTemperature && e.codec != CodecJSONSchema {
		return append(dst, ev.Value...), nil
	}
	start := len(dst)
	var index []int
	if e.codec == CodecProtobuf {
		index = []int{0}
	}
	dst, err := e.header.AppendEncode(dst, e.id, index)
	if err != nil {
		return dst, err
	}
	body := len(dst)
	switch e.codec {
	case CodecJSONSchema:
		dst = append(dst, ev.Value...)
	case CodecAvro:
		native := map[string]any{
			"device_id": goavro.Union("string", string(ev.Key)), "ts": ev.Time,
			"temperature": ev.Temperature, "humidity": ev.Humidity, "battery": ev.Battery,
			"site": map[string]any{"id": "plant-" + strconv.Itoa(ev.Site)},
		}
		if ev.Defect == MissingID {
			native["device_id"] = nil
		}
		if dst, err = e.avro.BinaryFromNative(dst, native); err != nil {
			return dst[:start], fmt.Errorf("encoding a sample event in Avro: %w", err)
		}
	case CodecProtobuf:
		dst = appendProto(dst, ev)
	}
	if ev.Defect == Unparsable {
		dst = dst[:body+(len(dst)-body)/2]
	}
	return dst, nil
}

// appendProto appends ev as the Reading message of SensorProto.
func appendProto(dst []byte, ev Event) []byte {
	if ev.Defect != MissingID {
		dst = protowire.AppendTag(dst, 1, protowire.BytesType)
		dst = protowire.AppendBytes(dst, ev.Key)
	}
	var ts []byte
	ts = protowire.AppendTag(ts, 1, protowire.VarintType)
	ts = protowire.AppendVarint(ts, uint64(ev.Time.Unix()))
	if ns := ev.Time.Nanosecond(); ns != 0 {
		ts = protowire.AppendTag(ts, 2, protowire.VarintType)
		ts = protowire.AppendVarint(ts, uint64(ns))
	}
	dst = protowire.AppendTag(dst, 2, protowire.BytesType)
	dst = protowire.AppendBytes(dst, ts)
	for i, v := range []float64{ev.Temperature, ev.Humidity, ev.Battery} {
		dst = protowire.AppendTag(dst, protowire.Number(3+i), protowire.Fixed64Type)
		dst = protowire.AppendFixed64(dst, math.Float64bits(v))
	}
	var site []byte
	site = protowire.AppendTag(site, 1, protowire.BytesType)
	site = protowire.AppendString(site, "plant-"+strconv.Itoa(ev.Site))
	dst = protowire.AppendTag(dst, 6, protowire.BytesType)
	return protowire.AppendBytes(dst, site)
}
