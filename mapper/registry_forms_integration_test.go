package mapper

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bufbuild/protocompile"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/codec/registry"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/internal/testenv"
)

// pythonProtoDir holds a proto3 file importing a proto2 one and two well-known files, with the base64 of the
// `serialized_pb` of their protoc-generated Python modules: what Confluent's Python serializer registers.
var pythonProtoDir = filepath.Join("..", "codec", "protobuf", "testdata", "python")

func realRegistry(t *testing.T) *registry.Client {
	t.Helper()
	reg, err := registry.New(config.SchemaRegistry{URLs: []string{testenv.Registry(t)}, Timeout: config.Duration(10 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// registerAs registers text of type typ under subject with refs, as a client's serializer does, and returns
// its id.
func registerAs(t *testing.T, reg *registry.Client, subject string, typ sr.SchemaType, text string, refs ...sr.SchemaReference) sr.SubjectSchema {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ss, err := reg.SR().CreateSchema(ctx, subject, sr.Schema{Schema: text, Type: typ, References: refs})
	if err != nil {
		t.Fatalf("registering %s: %v", subject, err)
	}
	return ss
}

func pythonFixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(pythonProtoDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// pythonEnvelopeValue is sensorJSON's event as a sinktest.events.Batch.Reading (message indexes [1, 0]),
// encoded by protobuf-go from the file's source, framed for schema id id.
func pythonEnvelopeValue(t *testing.T, id int) []byte {
	t.Helper()
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{ImportPaths: []string{pythonProtoDir}})}
	files, err := c.Compile(context.Background(), "sinktest/envelope.proto")
	if err != nil {
		t.Fatal(err)
	}
	md := files[0].Messages().ByName("Batch").Messages().ByName("Reading")
	m := dynamicpb.NewMessage(md)
	f := md.Fields().ByName
	m.Set(f("firmware"), protoreflect.ValueOfString("1.2.3"))
	m.Set(f("device_id"), protoreflect.ValueOfString("dev-0042"))
	m.Set(f("ts"), protoreflect.ValueOfMessage(timestamppb.New(kafkaTS.Add(-877*time.Millisecond)).ProtoReflect()))
	m.Set(f("temperature"), protoreflect.ValueOfFloat64(21.5))
	m.Set(f("humidity"), protoreflect.ValueOfMessage(wrapperspb.Double(40.2).ProtoReflect()))
	m.Set(f("battery"), protoreflect.ValueOfFloat32(3.71))
	site := m.Mutable(f("site")).Message()
	site.Set(site.Descriptor().Fields().ByName("id"), protoreflect.ValueOfString("plant-1"))
	m.Set(f("count"), protoreflect.ValueOfInt64(3))
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return append(codec.AppendFrame(nil, id, []int{1, 0}), b...)
}

// TestIntegrationProtobufAsPythonRegistersIt: the base64 FileDescriptorProtos of protoc-generated Python
// modules, which carry no json_name, registered through the real registry as confluent-kafka's
// ProtobufSerializer registers them (the proto2 import as a reference; the well-known imports skipped, its
// default, or registered as references too), map a record to the row the JSON codec maps from the same event.
func TestIntegrationProtobufAsPythonRegistersIt(t *testing.T) {
	reg := realRegistry(t)
	prefix := testenv.Name(t, "pyproto")
	site := registerAs(t, reg, prefix+"-sinktest/site.proto", sr.TypeProtobuf, pythonFixture(t, "site.b64"))
	siteRef := sr.SchemaReference{Name: "sinktest/site.proto", Subject: site.Subject, Version: site.Version}
	skipped := registerAs(t, reg, prefix+"-skipped-value", sr.TypeProtobuf, pythonFixture(t, "envelope.b64"), siteRef)
	refs := []sr.SchemaReference{siteRef}
	for _, wk := range []struct{ name, file string }{{"google/protobuf/timestamp.proto", "timestamp.b64"}, {"google/protobuf/wrappers.proto", "wrappers.b64"}} {
		ss := registerAs(t, reg, prefix+"-"+wk.name, sr.TypeProtobuf, pythonFixture(t, wk.file))
		refs = append(refs, sr.SchemaReference{Name: wk.name, Subject: ss.Subject, Version: ss.Version})
	}
	referenced := registerAs(t, reg, prefix+"-referenced-value", sr.TypeProtobuf, pythonFixture(t, "envelope.b64"), refs...)

	want, err := newMapper(t, nil).Map(rec(sensorJSON))
	if err != nil {
		t.Fatal(err)
	}
	pm := newProtobufMapper(t, reg)
	for name, id := range map[string]int{"well-known imports skipped": skipped.ID, "well-known imports as references": referenced.ID} {
		r := rec("")
		r.Value = pythonEnvelopeValue(t, id)
		got, err := pm.Map(r)
		if err != nil {
			t.Errorf("%s (schema id %d): %v", name, id, err)
			continue
		}
		if string(got.Packed) != string(want.Packed) || got.Key != want.Key || !got.EventTime().Equal(want.EventTime()) {
			t.Errorf("%s: protobuf row %+v\n    json row %+v", name, got, want)
		}
	}
}

// TestIntegrationJSONSchemaVersionWithoutAConfiguredFieldIsSchema: two versions of a subject's JSON Schema
// registered through the real registry, the second without humidity (a configured column, not required):
// records of the first version map as plain JSON does; every record of the second is refused with reason
// schema, naming the schema id and the field, where its rows were written with the column unset.
func TestIntegrationJSONSchemaVersionWithoutAConfiguredFieldIsSchema(t *testing.T) {
	reg := realRegistry(t)
	subject := testenv.Name(t, "jsonschema") + "-value"
	v1 := registerAs(t, reg, subject, sr.TypeJSON, sensorJSONSchema)
	dropped := strings.Replace(sensorJSONSchema, `"humidity": {"type": "number"}, `, ``, 1)
	if dropped == sensorJSONSchema {
		t.Fatal("the schema has no humidity property to drop")
	}
	v2 := registerAs(t, reg, subject, sr.TypeJSON, dropped)
	if v1.ID == v2.ID {
		t.Fatalf("both versions have id %d", v1.ID)
	}
	m := newAvroMapper(t, reg, func(tp *config.Topic) { tp.Codec = config.CodecJSONSchema })
	want, err := newMapper(t, nil).Map(rec(sensorJSON))
	if err != nil {
		t.Fatal(err)
	}
	r := rec("")
	r.Value = append(codec.AppendFrame(nil, v1.ID, nil), sensorJSON...)
	got, err := m.Map(r)
	if err != nil {
		t.Fatalf("version 1 (id %d): %v", v1.ID, err)
	}
	if string(got.Packed) != string(want.Packed) {
		t.Errorf("version 1: row %+v, want %+v", got, want)
	}
	withoutHumidity := strings.Replace(sensorJSON, `"humidity":40.2,`, ``, 1)
	for i, body := range []string{withoutHumidity, withoutHumidity, sensorJSON} {
		r := rec("")
		r.Offset += int64(i)
		r.Value = append(codec.AppendFrame(nil, v2.ID, nil), body...)
		_, err := m.Map(r)
		var re *RecordError
		if !errors.As(err, &re) || re.Reason != ReasonSchema || !strings.Contains(err.Error(), "humidity") ||
			!strings.Contains(err.Error(), fmt.Sprintf("schema id %d", v2.ID)) {
			t.Errorf("version 2 (id %d), record %d: %v, want reason schema naming humidity and the schema id", v2.ID, i, err)
		}
	}
}

// TestIntegrationProtobufTextFormsThroughTheRegistry: the envelope file as the Go serializer prints it, and
// in the Java serializer's normalized layout (leading-dot names, option literals, Confluent's and Google's
// known imports without references), registered through the real registry with the site file as a
// reference, map a record to the JSON codec's row of the same event.
func TestIntegrationProtobufTextFormsThroughTheRegistry(t *testing.T) {
	reg := realRegistry(t)
	want, err := newMapper(t, nil).Map(rec(sensorJSON))
	if err != nil {
		t.Fatal(err)
	}
	pm := newProtobufMapper(t, reg)
	for _, form := range []string{"goserializer", "javanormalized"} {
		dir := filepath.Join(pythonProtoDir, "..", form)
		read := func(name string) string {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
		prefix := testenv.Name(t, form)
		site := registerAs(t, reg, prefix+"-site", sr.TypeProtobuf, read("site.proto"))
		value := registerAs(t, reg, prefix+"-value", sr.TypeProtobuf, read("envelope.proto"),
			sr.SchemaReference{Name: "sinktest/site.proto", Subject: site.Subject, Version: site.Version})
		r := rec("")
		r.Value = pythonEnvelopeValue(t, value.ID)
		got, err := pm.Map(r)
		if err != nil {
			t.Errorf("%s (schema id %d): %v", form, value.ID, err)
			continue
		}
		if string(got.Packed) != string(want.Packed) || got.Key != want.Key {
			t.Errorf("%s: protobuf row %+v\n    json row %+v", form, got, want)
		}
	}
}
