package mapper

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/config"
)

// The writer schemas of TestNoCodecPutsAValueIntoThePlainMessage: the sensor event with a string
// "person" and a long "level", which the topic reads into a uuid and an int column.
const (
	quietAvro = `{"type": "record", "name": "Q", "fields": [
		{"name": "device_id", "type": "string"},
		{"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
		{"name": "temperature", "type": "double"},
		{"name": "person", "type": "string"},
		{"name": "level", "type": "long"}]}`
	quietProto = `syntax = "proto3";
message Q {
  string device_id = 1;
  string ts = 2;
  double temperature = 3;
  string person = 4;
  int64 level = 5;
}
`
)

// quietProtoValue is a Q message of quietProto, framed for schema id id, message index [0].
func quietProtoValue(t *testing.T, id int, person string, level int64) []byte {
	t.Helper()
	c := protocompile.Compiler{Resolver: &protocompile.SourceResolver{
		Accessor: protocompile.SourceAccessorFromMap(map[string]string{"q.proto": quietProto})}}
	files, err := c.Compile(context.Background(), "q.proto")
	if err != nil {
		t.Fatal(err)
	}
	md := files[0].Messages().ByName("Q")
	m := dynamicpb.NewMessage(md)
	f := md.Fields().ByName
	m.Set(f("device_id"), protoreflect.ValueOfString("d"))
	m.Set(f("ts"), protoreflect.ValueOfString("2024-01-15T14:37:22Z"))
	m.Set(f("temperature"), protoreflect.ValueOfFloat64(1))
	m.Set(f("person"), protoreflect.ValueOfString(person))
	m.Set(f("level"), protoreflect.ValueOfInt64(level))
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return append(codec.AppendFrame(nil, id, []int{0}), b...)
}

// TestNoCodecPutsAValueIntoThePlainMessage guards logs with log.quote_values false: a value that does not
// fit its column is reported without the value on every codec's path (Avro, Protobuf, JSON, JSON Schema)
// and for a tombstone's key decoded by a registry key codec, while the quoted message (the dead letter's,
// and the log's when log.quote_values asks) still shows it.
func TestNoCodecPutsAValueIntoThePlainMessage(t *testing.T) {
	const secret = "Jane-Doe-1970"
	const level = 31337 // out of range for CQL tinyint
	reg := keyRegistry()
	reg.schemas[41] = &codec.Schema{ID: 41, Type: "AVRO", Text: quietAvro}
	reg.schemas[42] = &codec.Schema{ID: 42, Type: "PROTOBUF", Text: quietProto}
	reg.schemas[43] = &codec.Schema{ID: 43, Type: "JSON", Text: `{"type": "object"}`}
	columns := func(codecName, timeFormat string, col config.Column) func(*config.Topic) {
		return func(tp *config.Topic) {
			tp.Codec = codecName
			tp.Time.Format = timeFormat
			tp.Columns = []config.Column{tp.Columns[0], tp.Columns[1], tp.Columns[3], col}
		}
	}
	person := config.Column{Name: "person", Type: "uuid", Field: "person"}
	lvl := config.Column{Name: "level", Type: "tinyint", Field: "level"}
	native := func(p string, l int64) map[string]any {
		return map[string]any{"device_id": "d", "ts": kafkaTS, "temperature": 1.0, "person": p, "level": l}
	}
	jsonBody := func(p string, l int64) string {
		return `{"device_id":"d","ts":"2024-01-15T14:37:22Z","temperature":1,"person":"` + p + `","level":` + strconv.FormatInt(l, 10) + `}`
	}
	cfg := func(mutate func(*config.Topic)) *config.Config {
		c := baseConfig()
		tp := c.Topics["readings"]
		mutate(&tp)
		c.Topics["readings"] = tp
		return c
	}
	type tcase struct {
		name, shown string
		m           *Mapper
		r           Record
	}
	var cases []tcase
	for _, col := range []config.Column{person, lvl} {
		p, l, shown := secret, int64(1), secret
		if col.Name == "level" {
			p, l, shown = "0b6a1f6e-3f0c-4a53-9b8f-1f2a3b4c5d6e", level, strconv.Itoa(level)
		}
		r := rec("")
		r.Value = avroValue(t, quietAvro, 41, native(p, l))
		cases = append(cases, tcase{"avro " + col.Name, shown, registryMapper(t, cfg(columns(config.CodecAvro, "rfc3339", col)), reg), r})
		r.Value = quietProtoValue(t, 42, p, l)
		cases = append(cases, tcase{"protobuf " + col.Name, shown, registryMapper(t, cfg(columns(config.CodecProtobuf, "rfc3339", col)), reg), r})
		cases = append(cases, tcase{"json " + col.Name, shown, newMapper(t, columns(config.CodecJSON, "rfc3339", col)), rec(jsonBody(p, l))})
		r.Value = append(codec.AppendFrame(nil, 43, nil), jsonBody(p, l)...)
		cases = append(cases, tcase{"json_schema " + col.Name, shown, registryMapper(t, cfg(columns(config.CodecJSONSchema, "rfc3339", col)), reg), r})
	}
	// A tombstone's key: an Avro "string" key read into a uuid id column.
	mk := keyedMapper(t, config.CodecAvro, reg, func(tp *config.Topic) { tp.Columns[0].Type = "uuid" })
	cases = append(cases, tcase{"avro key", secret, mk, tombstoneOf(avroValue(t, `"string"`, 21, secret))})
	mk = keyedMapper(t, config.CodecProtobuf, reg, func(tp *config.Topic) { tp.Columns[0].Type = "uuid" })
	cases = append(cases, tcase{"protobuf key", secret, mk, tombstoneOf(protoKey(t, 25, secret))})
	mk = keyedMapper(t, config.CodecJSONSchema, reg, func(tp *config.Topic) { tp.Columns[0].Type = "uuid" })
	cases = append(cases, tcase{"json_schema key", secret, mk, tombstoneOf(jsonKey(26, `"`+secret+`"`))})
	mk = latestMapper(t, config.OnTombstoneDelete, func(tp *config.Topic) { tp.Columns[0].Type = "uuid" })
	cases = append(cases, tcase{"text key", secret, mk, tombstoneOf([]byte(secret))})

	for _, tc := range cases {
		_, err := tc.m.Map(tc.r)
		if err == nil {
			t.Errorf("%s: mapped", tc.name)
			continue
		}
		if !strings.Contains(Quoted(err), tc.shown) {
			t.Errorf("%s: the quoted message does not show the value: %s", tc.name, Quoted(err))
		}
		for _, part := range []string{tc.shown, tc.shown[:4], tc.shown[len(tc.shown)-4:]} {
			if strings.Contains(err.Error(), part) {
				t.Errorf("%s: the message shows the value (%q): %s", tc.name, part, err)
				break
			}
		}
	}
}
