package protobuf

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/packed"
)

// siteProto is imported by sensorProto through a schema reference.
const siteProto = `syntax = "proto3";
package common;
message Site {
  optional string name = 1;
  string id = 2;
}
`

// sensorProto holds the sensor event as a nested message at index [1, 0], behind a first message the topic
// does not read, with fields the topic does not read before, between and after the ones it does.
const sensorProto = `syntax = "proto3";
package sensors;
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";
import "common/site.proto";

message Envelope { string note = 1; }

message Batch {
  message Reading {
    string firmware = 1;
    string device_id = 2;
    google.protobuf.Timestamp ts = 3;
    map<string, string> tags = 4;
    double temperature = 5;
    google.protobuf.DoubleValue humidity = 6;
    float battery = 7;
    common.Site site = 8;
    repeated double samples = 9;
    Level level = 10;
    oneof reading {
      sint64 count = 11;
      string label = 12;
    }
    int64 ms = 13;
  }
  repeated Reading readings = 1;
}

enum Level { LOW = 0; HIGH = 1; }
`

func sensorSchema(id int) *codec.Schema {
	return &codec.Schema{ID: id, Type: "PROTOBUF", Text: sensorProto, References: []codec.Reference{
		{Name: "common/site.proto", Subject: "common-site", Version: 1, Schema: &codec.Schema{ID: 1, Type: "PROTOBUF", Text: siteProto}},
	}}
}

// readingDescriptor compiles the schema with protocompile for the encoder: the records are written with
// dynamicpb and proto.Marshal, not by the wire walker under test.
func readingDescriptor(t testing.TB) protoreflect.MessageDescriptor {
	t.Helper()
	files := map[string]string{"sensor.proto": sensorProto, "common/site.proto": siteProto}
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
		Accessor: protocompile.SourceAccessorFromMap(files)})}
	out, err := c.Compile(context.Background(), "sensor.proto")
	if err != nil {
		t.Fatal(err)
	}
	return out[0].Messages().ByName("Batch").Messages().ByName("Reading")
}

var sensorTS = time.Date(2024, 1, 15, 14, 37, 22, 123e6, time.UTC)

// sensorMessage is the sensor event; set changes it before it is encoded.
func sensorMessage(t testing.TB, md protoreflect.MessageDescriptor, set func(m *dynamicpb.Message)) []byte {
	t.Helper()
	m := dynamicpb.NewMessage(md)
	f := md.Fields().ByName
	m.Set(f("firmware"), protoreflect.ValueOfString("1.2.3"))
	m.Set(f("device_id"), protoreflect.ValueOfString("dev-0042"))
	m.Set(f("ts"), protoreflect.ValueOfMessage(timestamppb.New(sensorTS).ProtoReflect()))
	tags := m.Mutable(f("tags")).Map()
	tags.Set(protoreflect.ValueOfString("room").MapKey(), protoreflect.ValueOfString("a"))
	tags.Set(protoreflect.ValueOfString("floor").MapKey(), protoreflect.ValueOfString("2"))
	m.Set(f("temperature"), protoreflect.ValueOfFloat64(21.5))
	m.Set(f("humidity"), protoreflect.ValueOfMessage(wrapperspb.Double(40.2).ProtoReflect()))
	m.Set(f("battery"), protoreflect.ValueOfFloat32(3.71))
	site := m.Mutable(f("site")).Message()
	site.Set(site.Descriptor().Fields().ByName("id"), protoreflect.ValueOfString("plant-1"))
	samples := m.Mutable(f("samples")).List()
	samples.Append(protoreflect.ValueOfFloat64(1))
	samples.Append(protoreflect.ValueOfFloat64(2.5))
	m.Set(f("level"), protoreflect.ValueOfEnum(1))
	m.Set(f("count"), protoreflect.ValueOfInt64(-7))
	m.Set(f("ms"), protoreflect.ValueOfInt64(sensorTS.UnixMilli()))
	if set != nil {
		set(m)
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sensorFields are the fields a topic reads from the sensor event.
func sensorFields() []codec.Field {
	f := func(path, column, typ string) codec.Field {
		tp, err := packed.ParseType(typ)
		if err != nil {
			panic(err)
		}
		return codec.Field{Path: strings.Split(path, "."), Column: column, Type: tp}
	}
	return []codec.Field{
		f("device_id", "device_id", "text"),
		f("site.id", "site_id", "text"),
		f("temperature", "temperature", "double"),
		f("humidity", "humidity", "double"),
		f("battery", "battery", "float"),
		f("tags", "tags", "map<text, text>"),
		f("samples", "samples", "list<double>"),
		f("site.name", "site_name", "text"),
		f("level", "level", "text"),
		f("count", "count", "bigint"),
		f("label", "label", "text"),
		f("ms", "ms", "timestamp"),
		{Path: []string{"ts"}, Type: packed.Scalar(packed.KTimestamp)},
	}
}

func compile(t testing.TB, s *codec.Schema, fields []codec.Field) codec.Plan {
	t.Helper()
	p, err := Codec{}.Compile(s, fields)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// framed is body with the message indexes in front, as Decode receives it after the 5-byte prefix.
func framed(indexes []int, msg []byte) []byte {
	return append(codec.AppendFrame(nil, 1, indexes)[5:], msg...)
}

func TestNestedMessageWithReferenceDecodesEveryField(t *testing.T) {
	p := compile(t, sensorSchema(9), sensorFields())
	out := make([]codec.Value, len(sensorFields()))
	buf, err := p.Decode(framed([]int{1, 0}, sensorMessage(t, readingDescriptor(t), nil)), out, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = buf
	text := func(i int, want string) {
		t.Helper()
		if out[i].State != codec.Set || string(out[i].B) != want {
			t.Errorf("field %d: %+v, want %q", i, out[i], want)
		}
	}
	text(0, "dev-0042")
	text(1, "plant-1")
	text(8, "HIGH")
	if out[2].F != 21.5 || out[3].F != 40.2 || float32(out[4].F) != 3.71 {
		t.Errorf("numbers %v %v %v", out[2].F, out[3].F, out[4].F)
	}
	wantMap, _ := packed.AppendValue(nil, packed.MustTypes("map<text, text>")[0], map[string]any{"room": "a", "floor": "2"})
	if string(out[5].B) != string(wantMap) {
		t.Errorf("tags %x, want %x", out[5].B, wantMap)
	}
	wantList, _ := packed.AppendValue(nil, packed.MustTypes("list<double>")[0], []any{1.0, 2.5})
	if string(out[6].B) != string(wantList) {
		t.Errorf("samples %x, want %x", out[6].B, wantList)
	}
	if out[7].State != codec.Absent {
		t.Errorf("site.name (optional, not written) is %+v, want absent", out[7])
	}
	if out[9].State != codec.Set || out[9].N != -7 || out[10].State != codec.Absent {
		t.Errorf("oneof: count %+v label %+v", out[9], out[10])
	}
	if !out[11].T.Equal(sensorTS) || !out[12].T.Equal(sensorTS) {
		t.Errorf("times %v %v, want %v", out[11].T, out[12].T, sensorTS)
	}
}

// Unset presence fields stay absent (unset columns, never nulls); a proto3 scalar without presence reads as
// its default, since writers never put a default on the wire.
func TestAbsentFieldsStayAbsentAndImplicitScalarsReadAsDefault(t *testing.T) {
	md := readingDescriptor(t)
	msg := sensorMessage(t, md, func(m *dynamicpb.Message) {
		for _, name := range []string{"humidity", "temperature", "count", "site", "ts"} {
			m.Clear(md.Fields().ByName(protoreflect.Name(name)))
		}
	})
	p := compile(t, sensorSchema(9), sensorFields())
	out := make([]codec.Value, len(sensorFields()))
	if _, err := p.Decode(framed([]int{1, 0}, msg), out, nil); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{1, 3, 7, 9, 12} {
		if out[i].State != codec.Absent {
			t.Errorf("field %s: %+v, want absent", sensorFields()[i].Name(), out[i])
		}
	}
	if out[2].State != codec.Set || out[2].F != 0 {
		t.Errorf("temperature (proto3 double, 0 not on the wire): %+v, want set to 0", out[2])
	}
}

func TestDescriptorSchemaDecodesAsTheTextDoes(t *testing.T) {
	md := readingDescriptor(t)
	b64 := func(fd protoreflect.FileDescriptor) string {
		raw, err := proto.Marshal(protodesc.ToFileDescriptorProto(fd))
		if err != nil {
			t.Fatal(err)
		}
		return base64.StdEncoding.EncodeToString(raw)
	}
	site := md.Fields().ByName("site").Message().ParentFile()
	s := &codec.Schema{ID: 10, Type: "PROTOBUF", Text: b64(md.ParentFile()), References: []codec.Reference{
		{Name: "common/site.proto", Schema: &codec.Schema{ID: 2, Type: "PROTOBUF", Text: b64(site)}},
	}}
	msg := framed([]int{1, 0}, sensorMessage(t, md, nil))
	fromText, fromDesc := make([]codec.Value, len(sensorFields())), make([]codec.Value, len(sensorFields()))
	if _, err := compile(t, sensorSchema(9), sensorFields()).Decode(msg, fromText, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := compile(t, s, sensorFields()).Decode(msg, fromDesc, nil); err != nil {
		t.Fatal(err)
	}
	for i := range fromText {
		a, b := fromText[i], fromDesc[i]
		if a.State != b.State || a.N != b.N || a.F != b.F || !a.T.Equal(b.T) || string(a.B) != string(b.B) {
			t.Errorf("field %s: from text %+v, from descriptor %+v", sensorFields()[i].Name(), a, b)
		}
	}
}

func TestMessageIndexPastTheFileIsADecodeError(t *testing.T) {
	p := compile(t, sensorSchema(9), sensorFields())
	out := make([]codec.Value, len(sensorFields()))
	for _, idx := range [][]int{{3}, {1, 1}, {0, 0}} {
		_, err := p.Decode(framed(idx, sensorMessage(t, readingDescriptor(t), nil)), out, nil)
		var ce *codec.Error
		if !errors.As(err, &ce) || ce.Reason != codec.ReasonDecode || !strings.Contains(err.Error(), "past") {
			t.Errorf("indexes %v: %v, want a decode error saying the index is past the messages", idx, err)
		}
	}
}

func TestFieldMissingFromTheMessageIsASchemaError(t *testing.T) {
	fields := append(sensorFields(), codec.Field{Path: []string{"site", "region"}, Column: "region", Type: packed.Scalar(packed.KText)})
	p := compile(t, sensorSchema(9), fields)
	out := make([]codec.Value, len(fields))
	_, err := p.Decode(framed([]int{1, 0}, sensorMessage(t, readingDescriptor(t), nil)), out, nil)
	var ce *codec.Error
	if !errors.As(err, &ce) || ce.Reason != codec.ReasonSchema || ce.Field != "site.region" || !strings.Contains(err.Error(), "schema id 9") {
		t.Fatalf("%v, want reason schema naming site.region and the schema id", err)
	}
	// Index [0] (Envelope) cannot feed the topic either.
	_, err = p.Decode(framed([]int{0}, nil), out, nil)
	if !errors.As(err, &ce) || ce.Reason != codec.ReasonSchema || !strings.Contains(err.Error(), "sensors.Envelope") {
		t.Fatalf("%v, want reason schema naming sensors.Envelope", err)
	}
}

func TestTypeThatCannotFeedTheColumnIsASchemaError(t *testing.T) {
	fields := []codec.Field{{Path: []string{"device_id"}, Column: "device_id", Type: packed.Scalar(packed.KDouble)}}
	_, err := compile(t, sensorSchema(9), fields).Decode(framed([]int{1, 0}, nil), make([]codec.Value, 1), nil)
	var ce *codec.Error
	if !errors.As(err, &ce) || ce.Reason != codec.ReasonSchema || !strings.Contains(err.Error(), "string field cannot feed a double column") {
		t.Fatalf("%v", err)
	}
}

// A repeated scalar may arrive packed, unpacked, or both; a parser must accept all three.
func TestRepeatedScalarPackedAndUnpacked(t *testing.T) {
	p := compile(t, sensorSchema(9), []codec.Field{{Path: []string{"samples"}, Column: "s", Type: packed.MustTypes("list<double>")[0]}})
	var msg []byte
	msg = protowire.AppendTag(msg, 9, protowire.Fixed64Type)
	msg = protowire.AppendFixed64(msg, 0x3ff0000000000000) // 1.0, unpacked
	msg = protowire.AppendTag(msg, 2, protowire.BytesType) // another field between
	msg = protowire.AppendString(msg, "dev")
	msg = protowire.AppendTag(msg, 9, protowire.BytesType) // 2.0 and 3.0, packed
	msg = protowire.AppendVarint(msg, 16)
	msg = protowire.AppendFixed64(msg, 0x4000000000000000)
	msg = protowire.AppendFixed64(msg, 0x4008000000000000)
	out := make([]codec.Value, 1)
	if _, err := p.Decode(framed([]int{1, 0}, msg), out, nil); err != nil {
		t.Fatal(err)
	}
	want, _ := packed.AppendValue(nil, packed.MustTypes("list<double>")[0], []any{1.0, 2.0, 3.0})
	if string(out[0].B) != string(want) {
		t.Fatalf("samples %x, want %x", out[0].B, want)
	}
}

func TestMalformedBodiesAreDecodeErrors(t *testing.T) {
	p := compile(t, sensorSchema(9), sensorFields())
	good := sensorMessage(t, readingDescriptor(t), nil)
	cases := map[string][]byte{
		"indexes cut short":        {0x04},
		"body cut short":           framed([]int{1, 0}, good[:len(good)-3]),
		"wrong wire type":          framed([]int{1, 0}, protowire.AppendVarint(protowire.AppendTag(nil, 2, protowire.VarintType), 5)),
		"string not UTF-8":         framed([]int{1, 0}, protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), []byte{0xff})),
		"timestamp nanos too big":  framed([]int{1, 0}, protowire.AppendBytes(protowire.AppendTag(nil, 3, protowire.BytesType), protowire.AppendVarint(protowire.AppendTag(nil, 2, protowire.VarintType), 2e9))),
		"negative message index":   {0x02, 0x01},
		"too many message indexes": {0x7e},
	}
	for name, body := range cases {
		_, err := p.Decode(body, make([]codec.Value, len(sensorFields())), nil)
		var ce *codec.Error
		if !errors.As(err, &ce) || ce.Reason != codec.ReasonDecode {
			t.Errorf("%s: %v, want reason decode", name, err)
		}
	}
}

func TestCompileRefusesWhatIsNotAProtobufFile(t *testing.T) {
	for name, s := range map[string]*codec.Schema{
		"avro":              {ID: 3, Type: "AVRO", Text: `"string"`},
		"syntax error":      {ID: 3, Type: "PROTOBUF", Text: `syntax = "proto3"; message {`},
		"missing reference": {ID: 3, Type: "PROTOBUF", Text: sensorProto},
		"no message":        {ID: 3, Type: "PROTOBUF", Text: `syntax = "proto3"; enum E { A = 0; }`},
	} {
		_, err := Codec{}.Compile(s, sensorFields())
		var se *codec.SchemaError
		if !errors.As(err, &se) || se.SchemaID != 3 {
			t.Errorf("%s: %v, want a *codec.SchemaError of schema id 3", name, err)
		}
	}
}

func BenchmarkDecodeSensor(b *testing.B) {
	p := compile(b, sensorSchema(9), sensorFields())
	body := framed([]int{1, 0}, sensorMessage(b, readingDescriptor(b), nil))
	out := make([]codec.Value, len(sensorFields()))
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = p.Decode(body, out, buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
}
