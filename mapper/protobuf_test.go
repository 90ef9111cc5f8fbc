package mapper

import (
	"context"
	"testing"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/config"
)

// sensorProto is the sensor event of sensorJSON as a Protobuf writer schema: the event is the second message
// (index [1]), with fields the topic does not read before, between and after the ones it does.
const sensorProto = `syntax = "proto3";
package sensors;
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";

message Ack { int64 offset = 1; }

message Reading {
  string firmware = 1;
  string device_id = 2;
  google.protobuf.Timestamp ts = 3;
  map<string, string> tags = 4;
  double temperature = 5;
  google.protobuf.DoubleValue humidity = 6;
  float battery = 7;
  message Site {
    google.protobuf.StringValue name = 1;
    string id = 2;
  }
  Site site = 8;
  repeated double samples = 9;
}
`

// sensorProtoValue is sensorJSON's event encoded with dynamicpb and proto.Marshal (not the decoder's wire
// walker), framed for schema id id and message index [1].
func sensorProtoValue(t testing.TB, id int) []byte {
	t.Helper()
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
		Accessor: protocompile.SourceAccessorFromMap(map[string]string{"sensor.proto": sensorProto})})}
	files, err := c.Compile(context.Background(), "sensor.proto")
	if err != nil {
		t.Fatal(err)
	}
	md := files[0].Messages().ByName("Reading")
	m := dynamicpb.NewMessage(md)
	f := md.Fields().ByName
	m.Set(f("firmware"), protoreflect.ValueOfString("1.2.3"))
	m.Set(f("device_id"), protoreflect.ValueOfString("dev-0042"))
	m.Set(f("ts"), protoreflect.ValueOfMessage(timestamppb.New(kafkaTS.Add(-877*1e6)).ProtoReflect()))
	m.Mutable(f("tags")).Map().Set(protoreflect.ValueOfString("room").MapKey(), protoreflect.ValueOfString("a"))
	m.Set(f("temperature"), protoreflect.ValueOfFloat64(21.5))
	m.Set(f("humidity"), protoreflect.ValueOfMessage(wrapperspb.Double(40.2).ProtoReflect()))
	m.Set(f("battery"), protoreflect.ValueOfFloat32(3.71))
	site := m.Mutable(f("site")).Message()
	site.Set(site.Descriptor().Fields().ByName("id"), protoreflect.ValueOfString("plant-1"))
	m.Mutable(f("samples")).List().Append(protoreflect.ValueOfFloat64(1))
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return append(codec.AppendFrame(nil, id, []int{1}), b...)
}

// newProtobufMapper is newMapper's sensor topic read as Protobuf from reg.
func newProtobufMapper(t testing.TB, reg codec.Registry) *Mapper {
	t.Helper()
	c := baseConfig()
	tp := c.Topics["readings"]
	tp.Codec = config.CodecProtobuf
	c.Topics["readings"] = tp
	return registryMapper(t, c, reg)
}

func TestProtobufRowEqualsTheJSONRowOfTheSameEvent(t *testing.T) {
	reg := &staticRegistry{schemas: map[int]*codec.Schema{8: {ID: 8, Type: "PROTOBUF", Text: sensorProto}}}
	jm, pm := newMapper(t, nil), newProtobufMapper(t, reg)
	want, err := jm.Map(rec(sensorJSON))
	if err != nil {
		t.Fatal(err)
	}
	r := rec("")
	r.Value = sensorProtoValue(t, 8)
	got, err := pm.Map(r)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Packed) != string(want.Packed) || got.Key != want.Key || got.Size != want.Size ||
		!got.EventTime().Equal(want.EventTime()) || got.Target.Table != want.Target.Table {
		t.Errorf("protobuf row %+v\n    json row %+v", got, want)
	}
}
