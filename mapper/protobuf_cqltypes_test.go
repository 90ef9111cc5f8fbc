package mapper

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/config"
)

// protoNewer has a value for each newer CQL type the Protobuf codec feeds: a message for a UDT (its
// fields in another order, one the UDT has not, one with presence), a repeated float for a vector, a
// Duration and strings for a duration and a time, and a map with int32 keys.
const protoNewer = `syntax = "proto3";
package newer;
import "google/protobuf/duration.proto";

message R {
  string device_id = 1;
  string ts = 2;
  double temperature = 3;
  message Addr {
    int32 zip = 1;
    int64 extra = 2;
    optional string street = 3;
    repeated string tags = 4;
  }
  Addr home = 4;
  repeated float emb = 5;
  google.protobuf.Duration dur = 6;
  string durtext = 7;
  string at = 8;
  map<int32, double> v = 9;
  map<string, double> sv = 10;
}
`

func withProtoNewerColumns(tp *config.Topic) {
	tp.Codec = config.CodecProtobuf
	home := addressColumn
	home.Name, home.Field = "home", "home"
	tp.Columns = append(tp.Columns[:2:2], tp.Columns[3], home,
		config.Column{Name: "emb", Type: "vector<float, 2>", Field: "emb"},
		config.Column{Name: "dur", Type: "duration", Field: "dur"},
		config.Column{Name: "durtext", Type: "duration", Field: "durtext"},
		config.Column{Name: "at", Type: "time", Field: "at"},
		config.Column{Name: "v", Type: "map<int, double>", Field: "v"},
		config.Column{Name: "sv", Type: "map<bigint, double>", Field: "sv"})
}

// protoNewerValue is the message set builds, encoded with dynamicpb and proto.Marshal, framed for
// schema id 9 and message [0].
func protoNewerValue(t *testing.T, set func(m *dynamicpb.Message, f func(string) protoreflect.FieldDescriptor)) []byte {
	return protoNewerValueOf(t, 9, set)
}

// withProtoNewerColumnsJSON is withProtoNewerColumns read as JSON, for the row to compare with.
func withProtoNewerColumnsJSON(tp *config.Topic) {
	withProtoNewerColumns(tp)
	tp.Codec = config.CodecJSON
}

func protoNewerValueOf(t *testing.T, id int, set func(m *dynamicpb.Message, f func(string) protoreflect.FieldDescriptor)) []byte {
	t.Helper()
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
		Accessor: protocompile.SourceAccessorFromMap(map[string]string{"newer.proto": protoNewer})})}
	files, err := c.Compile(context.Background(), "newer.proto")
	if err != nil {
		t.Fatal(err)
	}
	md := files[0].Messages().ByName("R")
	m := dynamicpb.NewMessage(md)
	f := md.Fields().ByName
	m.Set(f("device_id"), protoreflect.ValueOfString("d"))
	m.Set(f("ts"), protoreflect.ValueOfString("2024-01-15T14:37:22Z"))
	m.Set(f("temperature"), protoreflect.ValueOfFloat64(1))
	set(m, func(name string) protoreflect.FieldDescriptor { return f(protoreflect.Name(name)) })
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return append(codec.AppendFrame(nil, id, []int{0}), b...)
}

func protoNewerMapper(t *testing.T) *Mapper {
	return protoNewerMapperOf(t, &staticRegistry{schemas: map[int]*codec.Schema{9: {ID: 9, Type: "PROTOBUF", Text: protoNewer}}})
}

func protoNewerMapperOf(t *testing.T, reg codec.Registry) *Mapper {
	c := baseConfig()
	tp := c.Topics["readings"]
	withProtoNewerColumns(&tp)
	c.Topics["readings"] = tp
	return registryMapper(t, c, reg)
}

// A message feeds a UDT, a repeated float a vector, a Duration and a string a duration, a string a
// time, a map<int32, V> and a map<string, V> a map of integer keys: the same packed row, so the same
// bound bytes (which the JSON tests compare with gocql's), as the JSON record of the same event.
func TestProtobufFeedsTheNewerCQLTypes(t *testing.T) {
	jm := newMapper(t, withProtoNewerColumnsJSON)
	pm := protoNewerMapper(t)
	full := protoNewerFull
	for _, c := range []struct {
		name string
		json string
		set  func(m *dynamicpb.Message, f func(string) protoreflect.FieldDescriptor)
	}{
		{"all set", protoNewerFullJSON, full},
		// An empty message: zip reads as its default 0 (no presence), street is missing (null), and
		// tags has no entries (missing, null).
		{"empty UDT message", `{` + protoNewerBase + `,"home":{"zip":0},"at":"00:00:00"}`,
			func(m *dynamicpb.Message, f func(string) protoreflect.FieldDescriptor) {
				m.Mutable(f("home"))
				m.Set(f("at"), protoreflect.ValueOfString("00:00:00"))
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			want, err := jm.Map(rec(c.json))
			if err != nil {
				t.Fatal(err)
			}
			r := rec("")
			r.Value = protoNewerValue(t, c.set)
			got, err := pm.Map(r)
			if err != nil {
				t.Fatal(err)
			}
			if string(got.Packed) != string(want.Packed) {
				t.Errorf("protobuf row %x\n     json row %x", got.Packed, want.Packed)
			}
		})
	}
}

const protoNewerBase = `"device_id":"d","ts":"2024-01-15T14:37:22Z","temperature":1`

// protoNewerFullJSON is the JSON record of protoNewerFull's event.
const protoNewerFullJSON = `{` + protoNewerBase + `,"home":{"street":"Main","zip":3,"tags":["a","b"]},"emb":[0.5,1],"dur":"-1h30m0.0000005s",` +
	`"durtext":"P1M2DT3H","at":"15:04:05.5","v":{"10":1.5,"-3":2},"sv":{"-7":4}}`

// protoNewerFull sets every newer-type field of a protoNewer message.
func protoNewerFull(m *dynamicpb.Message, f func(string) protoreflect.FieldDescriptor) {
	{
		home := m.Mutable(f("home")).Message()
		hf := home.Descriptor().Fields().ByName
		home.Set(hf("zip"), protoreflect.ValueOfInt32(3))
		home.Set(hf("extra"), protoreflect.ValueOfInt64(9))
		home.Set(hf("street"), protoreflect.ValueOfString("Main"))
		home.Mutable(hf("tags")).List().Append(protoreflect.ValueOfString("a"))
		home.Mutable(hf("tags")).List().Append(protoreflect.ValueOfString("b"))
		emb := m.Mutable(f("emb")).List()
		emb.Append(protoreflect.ValueOfFloat32(0.5))
		emb.Append(protoreflect.ValueOfFloat32(1))
		m.Set(f("dur"), protoreflect.ValueOfMessage(durationpb.New(-90*time.Minute-500*time.Nanosecond).ProtoReflect()))
		m.Set(f("durtext"), protoreflect.ValueOfString("P1M2DT3H"))
		m.Set(f("at"), protoreflect.ValueOfString("15:04:05.5"))
		v := m.Mutable(f("v")).Map()
		v.Set(protoreflect.ValueOfInt32(10).MapKey(), protoreflect.ValueOfFloat64(1.5))
		v.Set(protoreflect.ValueOfInt32(-3).MapKey(), protoreflect.ValueOfFloat64(2))
		m.Mutable(f("sv")).Map().Set(protoreflect.ValueOfString("-7").MapKey(), protoreflect.ValueOfFloat64(4))
	}
}

// A repeated field of another length than the vector's, a duration or time string that does not
// parse, a map key out of the key type's range: bad input, reason map, naming the column and field.
func TestProtobufNewerCQLTypesBadInput(t *testing.T) {
	pm := protoNewerMapper(t)
	for _, c := range []struct {
		name string
		set  func(m *dynamicpb.Message, f func(string) protoreflect.FieldDescriptor)
		want string
	}{
		{"short vector", func(m *dynamicpb.Message, f func(string) protoreflect.FieldDescriptor) {
			m.Mutable(f("emb")).List().Append(protoreflect.ValueOfFloat32(1))
		}, `column emb: field "emb": the repeated field has 1 elements; CQL vector<float, 2> takes exactly 2`},
		{"duration text", func(m *dynamicpb.Message, f func(string) protoreflect.FieldDescriptor) {
			m.Set(f("durtext"), protoreflect.ValueOfString("soon"))
		}, `column durtext: field "durtext": the value is not a duration`},
		{"time text", func(m *dynamicpb.Message, f func(string) protoreflect.FieldDescriptor) {
			m.Set(f("at"), protoreflect.ValueOfString("24:00:00"))
		}, `column at: field "at": the value is not a time of day`},
		{"string map key", func(m *dynamicpb.Message, f func(string) protoreflect.FieldDescriptor) {
			m.Mutable(f("sv")).Map().Set(protoreflect.ValueOfString("ten").MapKey(), protoreflect.ValueOfFloat64(4))
		}, `column sv: field "sv": the value is not a whole number in range for a CQL bigint map key`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := rec("")
			r.Value = protoNewerValue(t, c.set)
			_, err := pm.Map(r)
			var re *RecordError
			if !errors.As(err, &re) || re.Reason != ReasonMap || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want reason map with %q", err, c.want)
			}
		})
	}
}

// A UDT from a scalar, a UDT field of a type that cannot feed it, a vector from a single field, a
// tuple column: every record of the message meets them with reason schema.
func TestProtobufNewerCQLTypesRefusedBySchema(t *testing.T) {
	reg := &staticRegistry{schemas: map[int]*codec.Schema{9: {ID: 9, Type: "PROTOBUF", Text: protoNewer}}}
	for _, c := range []struct {
		name string
		col  config.Column
		want string
	}{
		{"UDT from a string", config.Column{Name: "home", Type: "address", Field: "durtext", Fields: addressColumn.Fields},
			"a string field cannot feed the UDT address (a message can)"},
		{"UDT field of another type", config.Column{Name: "home", Type: "address", Field: "home",
			Fields: []config.UDTField{{Name: "zip", Type: "boolean"}}}, "field zip of the UDT address: a int32 field cannot feed a boolean column"},
		{"vector from a single field", config.Column{Name: "emb", Type: "vector<float, 1>", Field: "temperature"},
			"a single double cannot feed a vector<float, 1> column (a repeated field can)"},
		{"tuple", config.Column{Name: "pair", Type: "tuple<int, int>", Field: "emb"}, "a repeated field feeds only a list, set or vector column"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := baseConfig()
			tp := cfg.Topics["readings"]
			tp.Codec = config.CodecProtobuf
			tp.Columns = append(tp.Columns[:2:2], tp.Columns[3], c.col)
			cfg.Topics["readings"] = tp
			m := registryMapper(t, cfg, reg)
			r := rec("")
			r.Value = protoNewerValue(t, func(*dynamicpb.Message, func(string) protoreflect.FieldDescriptor) {})
			_, err := m.Map(r)
			var re *RecordError
			if !errors.As(err, &re) || re.Reason != ReasonSchema || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want reason schema with %q", err, c.want)
			}
		})
	}
}

// A UDT's message written twice merges as Protobuf merges it: the later scalar wins, repeated fields
// append, fields only the first has stay.
func TestProtobufUDTMessageWrittenTwiceMerges(t *testing.T) {
	jm, pm := newMapper(t, withProtoNewerColumnsJSON), protoNewerMapper(t)
	want, err := jm.Map(rec(`{` + protoNewerBase + `,"home":{"street":"Main","zip":4,"tags":["a","b"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	first := protoNewerValue(t, func(m *dynamicpb.Message, f func(string) protoreflect.FieldDescriptor) {
		home := m.Mutable(f("home")).Message()
		hf := home.Descriptor().Fields().ByName
		home.Set(hf("zip"), protoreflect.ValueOfInt32(3))
		home.Set(hf("street"), protoreflect.ValueOfString("Main"))
		home.Mutable(hf("tags")).List().Append(protoreflect.ValueOfString("a"))
	})
	second := protoNewerValue(t, func(m *dynamicpb.Message, f func(string) protoreflect.FieldDescriptor) {
		m.Clear(f("device_id"))
		m.Clear(f("ts"))
		m.Clear(f("temperature"))
		home := m.Mutable(f("home")).Message()
		hf := home.Descriptor().Fields().ByName
		home.Set(hf("zip"), protoreflect.ValueOfInt32(4))
		home.Mutable(hf("tags")).List().Append(protoreflect.ValueOfString("b"))
	})
	frame := len(codec.AppendFrame(nil, 9, []int{0}))
	r := rec("")
	r.Value = append(first, second[frame:]...) // two serialized messages concatenated: their merge
	got, err := pm.Map(r)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Packed) != string(want.Packed) {
		t.Errorf("protobuf row %x\n     json row %x", got.Packed, want.Packed)
	}
}
