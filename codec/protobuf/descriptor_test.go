package protobuf

import (
	"context"
	"encoding/base64"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/packed"
)

// The files under testdata/python are what Confluent's Python serializer registers for a protoc-generated
// module: the base64 of its `serialized_pb`, in which no field carries a json_name (testdata/python/generate.py
// says how they were made). envelope.proto is proto3 and imports the proto2 sinktest/site.proto and two
// well-known files.

func testdataText(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "python", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// pythonSchema is the envelope file as the Python serializer registers it: its descriptor with a reference to
// the site file's descriptor, and, when knownAsReferences (skip.known.types false), the well-known files'
// descriptors as references too; by default the serializer skips them and the reader must know them.
func pythonSchema(t testing.TB, id int, knownAsReferences bool) *codec.Schema {
	t.Helper()
	refs := []codec.Reference{{Name: "sinktest/site.proto", Subject: "sinktest/site.proto", Version: 1,
		Schema: &codec.Schema{ID: id + 1, Type: "PROTOBUF", Text: testdataText(t, "site.b64")}}}
	if knownAsReferences {
		refs = append(refs,
			codec.Reference{Name: "google/protobuf/timestamp.proto", Subject: "google/protobuf/timestamp.proto", Version: 1,
				Schema: &codec.Schema{ID: id + 2, Type: "PROTOBUF", Text: testdataText(t, "timestamp.b64")}},
			codec.Reference{Name: "google/protobuf/wrappers.proto", Subject: "google/protobuf/wrappers.proto", Version: 1,
				Schema: &codec.Schema{ID: id + 3, Type: "PROTOBUF", Text: testdataText(t, "wrappers.b64")}})
	}
	return &codec.Schema{ID: id, Type: "PROTOBUF", Text: testdataText(t, "envelope.b64"), References: refs}
}

// pythonTextSchema is the same pair of files as .proto text.
func pythonTextSchema(t testing.TB, id int) *codec.Schema {
	t.Helper()
	return &codec.Schema{ID: id, Type: "PROTOBUF", Text: testdataText(t, "sinktest/envelope.proto"), References: []codec.Reference{
		{Name: "sinktest/site.proto", Schema: &codec.Schema{ID: id + 1, Type: "PROTOBUF", Text: testdataText(t, "sinktest/site.proto")}},
	}}
}

// pythonReading compiles the envelope file's source for the encoder.
func pythonReading(t testing.TB) protoreflect.MessageDescriptor {
	t.Helper()
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
		ImportPaths: []string{filepath.Join("testdata", "python")}})}
	out, err := c.Compile(context.Background(), "sinktest/envelope.proto")
	if err != nil {
		t.Fatal(err)
	}
	return out[0].Messages().ByName("Batch").Messages().ByName("Reading")
}

// withoutJSONNames is fd as a descriptor whose fields carry no json_name, as protoc embeds them in generated
// code, in base64.
func withoutJSONNames(t testing.TB, fd protoreflect.FileDescriptor) string {
	t.Helper()
	fdp := protodesc.ToFileDescriptorProto(fd)
	var clear func(ms []*descriptorpb.DescriptorProto)
	clear = func(ms []*descriptorpb.DescriptorProto) {
		for _, m := range ms {
			for _, f := range m.GetField() {
				f.JsonName = nil
			}
			clear(m.GetNestedType())
		}
	}
	clear(fdp.GetMessageType())
	raw, err := proto.Marshal(fdp)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(raw)
}

// sameValues fails t where two decodes of one record differ.
func sameValues(t *testing.T, what string, fields []codec.Field, want, got []codec.Value) {
	t.Helper()
	for i := range want {
		a, b := want[i], got[i]
		if a.State != b.State || a.N != b.N || a.F != b.F || !a.T.Equal(b.T) || string(a.B) != string(b.B) {
			t.Errorf("%s: field %s is %+v, from .proto text %+v", what, fields[i].Name(), b, a)
		}
	}
}

// Descriptors without json_name, as Python's generated classes register them, compile and decode every field
// as the .proto text does: proto3 and a proto2 import, options, nested messages and enums, a map, a oneof, and
// the well-known files either known to the codec or registered as references.
func TestDescriptorsWithoutJSONNamesDecodeAsTheTextDoes(t *testing.T) {
	md := pythonReading(t)
	msg := framed([]int{1, 0}, sensorMessage(t, md, func(m *dynamicpb.Message) {
		site := m.Mutable(md.Fields().ByName("site")).Message()
		site.Set(site.Descriptor().Fields().ByName("name"), protoreflect.ValueOfString("north"))
	}))
	fields := sensorFields()
	want := make([]codec.Value, len(fields))
	if _, err := compile(t, pythonTextSchema(t, 40), fields).Decode(msg, want, nil); err != nil {
		t.Fatal(err)
	}
	if want[0].State != codec.Set || string(want[0].B) != "dev-0042" || string(want[7].B) != "north" || !want[12].T.Equal(sensorTS) {
		t.Fatalf("from text: %+v", want)
	}
	goFile := withoutJSONNames(t, md.ParentFile())
	goSite := withoutJSONNames(t, md.Fields().ByName("site").Message().ParentFile())
	for name, s := range map[string]*codec.Schema{
		"python, well-known files known":            pythonSchema(t, 50, false),
		"python, well-known files as references":    pythonSchema(t, 60, true),
		"go descriptors cleared of their json_name": {ID: 70, Type: "PROTOBUF", Text: goFile, References: []codec.Reference{{Name: "sinktest/site.proto", Schema: &codec.Schema{ID: 71, Type: "PROTOBUF", Text: goSite}}}},
	} {
		p, err := Codec{}.Compile(s, fields)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		got := make([]codec.Value, len(fields))
		if _, err := p.Decode(msg, got, nil); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		sameValues(t, name, fields, want, got)
	}
}

// The first message of the file, whose fields' default JSON names are distinct: compiling it never read a
// missing json_name as a custom empty one shared by both fields.
func TestDescriptorWithoutJSONNamesKeepsEveryFieldApart(t *testing.T) {
	fields := []codec.Field{{Path: []string{"seq"}, Column: "seq", Type: sensorFields()[9].Type}, {Path: []string{"note"}, Column: "note", Type: sensorFields()[0].Type}}
	p, err := Codec{}.Compile(pythonSchema(t, 80, false), fields)
	if err != nil {
		t.Fatal(err)
	}
	env := dynamicpb.NewMessage(pythonReading(t).ParentFile().Messages().ByName("Envelope"))
	env.Set(env.Descriptor().Fields().ByName("seq"), protoreflect.ValueOfInt64(42))
	env.Set(env.Descriptor().Fields().ByName("note"), protoreflect.ValueOfString("hello"))
	raw, err := proto.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]codec.Value, 2)
	if _, err := p.Decode(framed([]int{0}, raw), out, nil); err != nil {
		t.Fatal(err)
	}
	if out[0].N != 42 || string(out[1].B) != "hello" {
		t.Fatalf("seq %+v note %+v", out[0], out[1])
	}
}

func TestJSONCamelCaseIsProtobufsDefault(t *testing.T) {
	for name, want := range map[string]string{"device_id": "deviceId", "seq": "seq", "a__b": "aB", "x_1y": "x1y", "_lead": "Lead", "trail_": "trail", "Mixed_Case": "MixedCase"} {
		if got := jsonCamelCase(name); got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
	}
	// protodesc derives the same names from a file compiled from source.
	md := pythonReading(t)
	for i := 0; i < md.Fields().Len(); i++ {
		f := md.Fields().Get(i)
		if got := jsonCamelCase(string(f.Name())); got != f.JSONName() {
			t.Errorf("%s: %s, protobuf-go says %s", f.Name(), got, f.JSONName())
		}
	}
}

// textSchema is testdata's envelope and site files of one form as .proto text, the site file a reference.
func textSchema(t testing.TB, form string, id int) *codec.Schema {
	t.Helper()
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("testdata", form, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	return &codec.Schema{ID: id, Type: "PROTOBUF", Text: read("envelope.proto"), References: []codec.Reference{
		{Name: "sinktest/site.proto", Schema: &codec.Schema{ID: id + 1, Type: "PROTOBUF", Text: read("site.proto")}},
	}}
}

// javaNormalizedFile compiles testdata/javanormalized/envelope.proto, its known imports resolved as the codec
// resolves them.
func javaNormalizedFile(t testing.TB) protoreflect.FileDescriptor {
	t.Helper()
	dir := filepath.Join("testdata", "javanormalized")
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(protocompile.ResolverFunc(func(name string) (protocompile.SearchResult, error) {
		if name == "envelope.proto" || name == "sinktest/site.proto" {
			f, err := os.Open(filepath.Join(dir, filepath.Base(name)))
			return protocompile.SearchResult{Source: f}, err
		}
		if r, ok := knownImport(name); ok {
			return r, nil
		}
		return protocompile.SearchResult{}, os.ErrNotExist
	}))}
	out, err := c.Compile(context.Background(), "envelope.proto")
	if err != nil {
		t.Fatal(err)
	}
	return out[0]
}

// Every form a Confluent serializer registers decodes a record as the source text does: the Go serializer's
// printed text, the Java normalizer's layout (leading-dot names, option literals, known imports of Confluent's
// and Google's files without references), and a descriptor without json_name importing those known files.
func TestEveryRegisteredFormDecodesAsTheSourceDoes(t *testing.T) {
	md := pythonReading(t)
	msg := framed([]int{1, 0}, sensorMessage(t, md, func(m *dynamicpb.Message) {
		site := m.Mutable(md.Fields().ByName("site")).Message()
		site.Set(site.Descriptor().Fields().ByName("name"), protoreflect.ValueOfString("north"))
	}))
	fields := sensorFields()
	want := make([]codec.Value, len(fields))
	if _, err := compile(t, pythonTextSchema(t, 40), fields).Decode(msg, want, nil); err != nil {
		t.Fatal(err)
	}
	java := javaNormalizedFile(t)
	javaDesc := &codec.Schema{ID: 110, Type: "PROTOBUF", Text: withoutJSONNames(t, java), References: []codec.Reference{
		{Name: "sinktest/site.proto", Schema: &codec.Schema{ID: 111, Type: "PROTOBUF", Text: withoutJSONNames(t, java.Imports().Get(5).FileDescriptor)}},
	}}
	for name, s := range map[string]*codec.Schema{
		"go serializer text":                        textSchema(t, "goserializer", 90),
		"java normalized text":                      textSchema(t, "javanormalized", 100),
		"descriptor importing known files, no refs": javaDesc,
	} {
		p, err := Codec{}.Compile(s, fields)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		got := make([]codec.Value, len(fields))
		if _, err := p.Decode(msg, got, nil); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		sameValues(t, name, fields, want, got)
	}
}

// Each known import compiles alone and declares what a reader of it expects.
func TestKnownImportsCompile(t *testing.T) {
	names := []string{"confluent/meta.proto", "confluent/type/decimal.proto"}
	entries, err := known.ReadDir("known/google/type")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		names = append(names, "google/type/"+e.Name())
	}
	if len(names) != 19 {
		t.Errorf("%d known files, want confluent's 2 and google/type's 17", len(names))
	}
	for _, name := range names {
		s := &codec.Schema{ID: 120, Type: "PROTOBUF", Text: "syntax = \"proto3\";\nimport \"" + name + "\";\nmessage M { int32 a = 1; }\n"}
		if _, err := (Codec{}).Compile(s, nil); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	fd := javaNormalizedFile(t)
	amount := fd.Messages().ByName("Batch").Messages().ByName("Reading").Fields().ByName("amount").Message()
	if amount.FullName() != "confluent.type.Decimal" || amount.Fields().ByNumber(3).Name() != "scale" {
		t.Errorf("amount is %s", amount.FullName())
	}
}

// An editions file's descriptor, as Python registers it, keeps the presence its features give: a field of
// implicit presence not on the wire reads as its default, one of explicit presence stays missing, and is set
// when written, even to 0.
func TestEditionDescriptorKeepsItsPresence(t *testing.T) {
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
		ImportPaths: []string{filepath.Join("testdata", "python")}})}
	files, err := c.Compile(context.Background(), "sinktest/edition.proto")
	if err != nil {
		t.Fatal(err)
	}
	md := files[0].Messages().ByName("Reading")
	fields := []codec.Field{
		schemaFieldOf("device_id", "text"), schemaFieldOf("temperature", "double"), schemaFieldOf("floor", "int"),
		schemaFieldOf("kind", "text"), schemaFieldOf("codes", "list<int>"), {Path: []string{"ts"}, Type: packed.Scalar(packed.KTimestamp)},
	}
	p := compile(t, &codec.Schema{ID: 140, Type: "PROTOBUF", Text: testdataText(t, "edition.b64")}, fields)
	for _, floorSet := range []bool{false, true} {
		m := dynamicpb.NewMessage(md)
		m.Set(md.Fields().ByName("ts"), protoreflect.ValueOfMessage(timestamppb.New(sensorTS).ProtoReflect()))
		m.Mutable(md.Fields().ByName("codes")).List().Append(protoreflect.ValueOfInt32(7))
		if floorSet {
			m.Set(md.Fields().ByName("floor"), protoreflect.ValueOfInt32(0))
		}
		raw, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]codec.Value, len(fields))
		if _, err := p.Decode(framed([]int{0}, raw), out, nil); err != nil {
			t.Fatal(err)
		}
		if out[0].State != codec.Set || len(out[0].B) != 0 || out[1].State != codec.Set || out[1].F != 0 ||
			string(out[3].B) != "KIND_UNSPECIFIED" || !out[5].T.Equal(sensorTS) {
			t.Errorf("implicit fields: %+v", out)
		}
		if want := map[bool]codec.State{false: codec.Absent, true: codec.Set}[floorSet]; out[2].State != want || out[2].N != 0 {
			t.Errorf("floor written %v: %+v, want state %v", floorSet, out[2], want)
		}
		wantCodes, _ := packed.AppendValue(nil, fields[4].Type, []any{int32(7)})
		if string(out[4].B) != string(wantCodes) {
			t.Errorf("codes %x, want %x", out[4].B, wantCodes)
		}
	}
}

func schemaFieldOf(name, typ string) codec.Field {
	tp, err := packed.ParseType(typ)
	if err != nil {
		panic(err)
	}
	return codec.Field{Path: []string{name}, Column: name, Type: tp}
}

// A Python descriptor importing confluent/meta.proto, confluent/type/decimal.proto and google/type/date.proto,
// registered without references (the serializer skips them), with Confluent's annotations as options,
// compiles against the known files and decodes.
func TestDescriptorImportingKnownFilesWithoutReferences(t *testing.T) {
	fields := []codec.Field{schemaFieldOf("id", "text"), schemaFieldOf("value", "double")}
	p := compile(t, &codec.Schema{ID: 150, Type: "PROTOBUF", Text: testdataText(t, "payment.b64")}, fields)
	md := p.(*plan).file.Messages().ByName("Payment")
	if md == nil || md.Fields().ByName("amount").Message().FullName() != "confluent.type.Decimal" ||
		md.Fields().ByName("day").Message().FullName() != "google.type.Date" {
		t.Fatalf("Payment: %v", md)
	}
	var msg []byte
	msg = protowire.AppendTag(msg, 1, protowire.BytesType)
	msg = protowire.AppendString(msg, "pay-1")
	msg = protowire.AppendTag(msg, 2, protowire.BytesType) // amount, skipped
	msg = protowire.AppendBytes(msg, protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), []byte{0x30, 0x39}))
	msg = protowire.AppendTag(msg, 4, protowire.Fixed64Type)
	msg = protowire.AppendFixed64(msg, math.Float64bits(12.5))
	out := make([]codec.Value, len(fields))
	if _, err := p.Decode(framed([]int{0}, msg), out, nil); err != nil {
		t.Fatal(err)
	}
	if string(out[0].B) != "pay-1" || out[1].F != 12.5 {
		t.Errorf("%+v", out)
	}
}
