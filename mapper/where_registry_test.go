package mapper

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bufbuild/protocompile"
	"github.com/linkedin/goavro/v2"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/config"
)

// eventAvro is one writer schema of a topic of three event types: the type an enum, and fields of other
// types the filters compare as text.
const eventAvro = `{"type": "record", "name": "Event", "namespace": "app", "fields": [
	{"name": "type", "type": {"type": "enum", "name": "Kind", "symbols": ["click", "view", "purchase"]}},
	{"name": "user", "type": "string"},
	{"name": "n", "type": "int"},
	{"name": "test", "type": "boolean"},
	{"name": "score", "type": ["null", "double"]}
]}`

// countingCodec counts the bodies its plans decode.
type countingCodec struct {
	codec.Codec
	decodes *atomic.Int32
}

func (c countingCodec) Compile(s *codec.Schema, fields []codec.Field) (codec.Plan, error) {
	p, err := c.Codec.Compile(s, fields)
	if err != nil {
		return nil, err
	}
	return countingPlan{p, c.decodes}, nil
}

type countingPlan struct {
	codec.Plan
	decodes *atomic.Int32
}

func (p countingPlan) Decode(body []byte, out []codec.Value, buf []byte) ([]byte, error) {
	p.decodes.Add(1)
	return p.Plan.Decode(body, out, buf)
}

// countDecodes makes every plan of the Kafka topic's decodings (shared, each entry's, each filter's)
// count its decodes.
func countDecodes(m *Mapper, kafkaTopic string) *atomic.Int32 {
	n := &atomic.Int32{}
	f := m.byKafka[kafkaTopic]
	f.codec = countingCodec{f.codec, n}
	for _, p := range f.entries {
		p.codec = countingCodec{p.codec, n}
		if p.where != nil && p.where.value != nil {
			p.where.value.codec = countingCodec{p.where.value.codec, n}
		}
	}
	return n
}

// registryEventsMapper is eventsConfig's topic read by codec codecName, each entry's filter replaced by
// the one of its name in where.
func registryEventsMapper(t *testing.T, codecName string, reg codec.Registry, where map[string]*config.Where) *Mapper {
	t.Helper()
	c := eventsConfig()
	for name, tp := range c.Topics {
		tp.Codec, tp.Where = codecName, where[name]
		c.Topics[name] = tp
	}
	return registryMapper(t, c, reg)
}

// checkTakenBy maps r for every entry and checks that only entry want maps it ("" for none), every other
// entry skipping it as filtered, none refusing it; and that MapAll's outcomes are MapEntry's.
func checkTakenBy(t *testing.T, m *Mapper, r Record, want string) {
	t.Helper()
	out, err := m.MapAll(context.Background(), r, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, got := range out {
		var re *RecordError
		switch {
		case got.Entry == want && got.Err != nil:
			t.Errorf("%s must map the record: %v", got.Entry, got.Err)
		case got.Entry != want && (!errors.As(got.Err, &re) || re.Reason != ReasonFiltered):
			t.Errorf("%s must skip the record as filtered: %v", got.Entry, got.Err)
		}
	}
	checkMapAllIsMapEntry(t, m, r)
}

// TestWhereOnAvroValueFields guards filters of Avro value fields (refused by config on main): the
// filter reads the decoded record, an enum as its symbol, an int in decimal, a boolean as true or false,
// a double in its shortest form, a null union branch as absent; and the record is decoded once for every
// entry of the topic, the filters judged on that one decoding.
func TestWhereOnAvroValueFields(t *testing.T) {
	reg := &staticRegistry{schemas: map[int]*codec.Schema{30: {ID: 30, Type: "AVRO", Text: eventAvro}}}
	m := registryEventsMapper(t, config.CodecAvro, reg, map[string]*config.Where{
		"clicks": {All: []config.Where{{Field: "type", Equals: ptr("click")}, {Field: "n", OneOf: []string{"1", "2"}}}},
		"views":  {All: []config.Where{{Field: "type", Equals: ptr("view")}, {Field: "test", Equals: ptr("false")}}},
		"purchases": {All: []config.Where{{Field: "type", Equals: ptr("purchase")},
			{Any: []config.Where{{Field: "score", Equals: ptr("9.5")}, {Not: &config.Where{Field: "score", Exists: ptr(true)}}}}}},
	})
	decodes := countDecodes(m, "events")
	ts := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	score := func(f float64) any { return goavro.Union("double", f) }
	for i, tc := range []struct {
		event map[string]any
		want  string
	}{
		{map[string]any{"type": "click", "user": "u1", "n": 2, "test": false, "score": nil}, "clicks"},
		{map[string]any{"type": "click", "user": "u1", "n": 3, "test": false, "score": nil}, ""},
		{map[string]any{"type": "view", "user": "u2", "n": 1, "test": false, "score": nil}, "views"},
		{map[string]any{"type": "view", "user": "u2", "n": 1, "test": true, "score": nil}, ""},
		{map[string]any{"type": "purchase", "user": "u3", "n": 1, "test": false, "score": score(9.5)}, "purchases"},
		{map[string]any{"type": "purchase", "user": "u3", "n": 1, "test": false, "score": nil}, "purchases"},
		{map[string]any{"type": "purchase", "user": "u3", "n": 1, "test": false, "score": score(9.25)}, ""},
	} {
		r := Record{Topic: "events", Offset: int64(i), Value: avroValue(t, eventAvro, 30, tc.event), Timestamp: ts}
		before := decodes.Load()
		if _, err := m.MapAll(context.Background(), r, nil); err != nil {
			t.Fatal(err)
		}
		if n := decodes.Load() - before; n != 1 {
			t.Errorf("record %d was decoded %d times for three filtered entries, want once", i, n)
		}
		checkTakenBy(t, m, r, tc.want)
	}
}

// The writer schemas of a topic whose event types each have a record of their own (the
// TopicRecordNameStrategy): the click has a url, the view a page, and both a type.
const (
	clickAvro = `{"type": "record", "name": "Click", "namespace": "app", "fields": [
		{"name": "type", "type": "string"}, {"name": "user", "type": "string"}, {"name": "n", "type": "int"},
		{"name": "url", "type": "string"}]}`
	viewAvro = `{"type": "record", "name": "View", "namespace": "app", "fields": [
		{"name": "type", "type": "string"}, {"name": "user", "type": "string"}, {"name": "n", "type": "int"},
		{"name": "page", "type": "string"}]}`
)

// TestWhereSkipsARecordOfASchemaItsEntryCannotRead guards a topic whose event types have writer schemas
// of their own: an entry whose columns read a field only its type has is not refused a record of another
// type (reason schema) when its filter does not take it: the filter reads the fields it tests alone, and
// the record is skipped. A record the filter takes, of a schema that cannot feed the entry, is refused.
func TestWhereSkipsARecordOfASchemaItsEntryCannotRead(t *testing.T) {
	reg := &staticRegistry{schemas: map[int]*codec.Schema{31: {ID: 31, Type: "AVRO", Text: clickAvro}, 32: {ID: 32, Type: "AVRO", Text: viewAvro}}}
	c := eventsConfig()
	delete(c.Topics, "purchases")
	for name, tp := range c.Topics {
		tp.Codec, tp.Where = config.CodecAvro, &config.Where{Field: "type", Equals: ptr(strings.TrimSuffix(name, "s"))}
		extra := map[string]string{"clicks": "url", "views": "page"}[name]
		tp.Columns = append(tp.Columns, config.Column{Name: extra, Type: "text", Field: extra})
		c.Topics[name] = tp
	}
	m := registryMapper(t, c, reg)
	ts := time.Now()
	click := Record{Topic: "events", Value: avroValue(t, clickAvro, 31, map[string]any{"type": "click", "user": "u", "n": 1, "url": "/a"}), Timestamp: ts}
	view := Record{Topic: "events", Value: avroValue(t, viewAvro, 32, map[string]any{"type": "view", "user": "u", "n": 1, "page": "home"}), Timestamp: ts}
	checkTakenBy(t, m, click, "clicks")
	checkTakenBy(t, m, view, "views")

	// A view that says it is a click: clicks takes it, and its schema has no url.
	liar := Record{Topic: "events", Value: avroValue(t, viewAvro, 32, map[string]any{"type": "click", "user": "u", "n": 1, "page": "home"}), Timestamp: ts}
	_, err := m.MapEntry(context.Background(), "clicks", liar)
	var re *RecordError
	if !errors.As(err, &re) || re.Reason != ReasonSchema || !strings.Contains(err.Error(), `"url"`) {
		t.Errorf("clicks must refuse a record it takes whose schema lacks its field (reason schema): %v", err)
	}
}

// eventProto is the event as a Protobuf message.
const eventProto = `syntax = "proto3";
package app;
enum Kind { KIND_UNSPECIFIED = 0; CLICK = 1; VIEW = 2; }
message Event { Kind type = 1; string user = 2; int32 n = 3; uint64 big = 4; float ratio = 5; }
`

// protoEvent is an Event of eventProto framed for schema id id.
func protoEvent(t *testing.T, id int, kind int32, user string, n int32, big uint64, ratio float32) []byte {
	t.Helper()
	c := protocompile.Compiler{Resolver: &protocompile.SourceResolver{
		Accessor: protocompile.SourceAccessorFromMap(map[string]string{"event.proto": eventProto})}}
	files, err := c.Compile(context.Background(), "event.proto")
	if err != nil {
		t.Fatal(err)
	}
	md := files[0].Messages().ByName("Event")
	msg := dynamicpb.NewMessage(md)
	msg.Set(md.Fields().ByName("type"), protoreflect.ValueOfEnum(protoreflect.EnumNumber(kind)))
	msg.Set(md.Fields().ByName("user"), protoreflect.ValueOfString(user))
	msg.Set(md.Fields().ByName("n"), protoreflect.ValueOfInt32(n))
	msg.Set(md.Fields().ByName("big"), protoreflect.ValueOfUint64(big))
	msg.Set(md.Fields().ByName("ratio"), protoreflect.ValueOfFloat32(ratio))
	b, err := proto.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	return append(codec.AppendFrame(nil, id, []int{0}), b...)
}

// TestWhereOnProtobufValueFields guards filters of Protobuf value fields (refused by config on main): an
// enum as its value's name, integers in decimal (a uint64 beyond int64 too), a float in its shortest form.
func TestWhereOnProtobufValueFields(t *testing.T) {
	reg := &staticRegistry{schemas: map[int]*codec.Schema{40: {ID: 40, Type: "PROTOBUF", Text: eventProto}}}
	m := registryEventsMapper(t, config.CodecProtobuf, reg, map[string]*config.Where{
		"clicks":    {All: []config.Where{{Field: "type", Equals: ptr("CLICK")}, {Field: "ratio", Equals: ptr("0.1")}}},
		"views":     {Field: "type", Equals: ptr("VIEW")},
		"purchases": {Field: "big", Equals: ptr("18446744073709551615")},
	})
	ts := time.Now()
	for i, tc := range []struct {
		kind  int32
		big   uint64
		ratio float32
		want  string
	}{
		{1, 0, 0.1, "clicks"},
		{1, 0, 0.2, ""},
		{2, 0, 0, "views"},
		{0, 1<<64 - 1, 0, "purchases"},
	} {
		r := Record{Topic: "events", Offset: int64(i), Value: protoEvent(t, 40, tc.kind, "u", 1, tc.big, tc.ratio), Timestamp: ts}
		checkTakenBy(t, m, r, tc.want)
	}
}

// TestWhereOnRegistryKeyFields guards key tests of a registry-framed key (refused by config on main): the
// key is decoded by key_codec, and a key that cannot be decoded is bad input, reason key.
func TestWhereOnRegistryKeyFields(t *testing.T) {
	c := eventsConfig()
	for name, tp := range c.Topics {
		tp.KeyCodec = config.CodecAvro
		tp.Where = &config.Where{Key: "device_id", Equals: ptr("dev-" + name)}
		c.Topics[name] = tp
	}
	m := registryMapper(t, c, keyRegistry())
	r := Record{Topic: "events", Value: []byte(`{"user":"u","n":1}`), Timestamp: time.Now(),
		Key: avroValue(t, keyRecordAvro, 23, map[string]any{"device_id": "dev-views"})}
	checkTakenBy(t, m, r, "views")
	r.Key = []byte("dev-views")
	_, err := m.MapEntry(context.Background(), "views", r)
	var re *RecordError
	if !errors.As(err, &re) || re.Reason != ReasonKey || !strings.Contains(err.Error(), "magic byte") {
		t.Errorf("a key not in the wire format: %v, want reason key", err)
	}
	r.Key = nil
	checkTakenBy(t, m, r, "") // no key: the field is absent
}
