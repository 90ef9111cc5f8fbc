package protobuf

import (
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/packed"
)

const wellKnownMapsProto = `syntax = "proto3";
import "google/protobuf/timestamp.proto";
import "google/protobuf/duration.proto";
import "google/protobuf/wrappers.proto";
message M {
  map<string, google.protobuf.Timestamp> seen = 1;
  map<string, google.protobuf.Duration> spans = 2;
  map<string, google.protobuf.Int64Value> counts = 3;
}
`

// A map entry without its value field holds the value's default, and the default of a message value is the
// empty message: a Timestamp of 1970-01-01T00:00:00Z (not Go's zero time, year 1), a Duration and a wrapped
// integer of 0. That is what a writer that leaves the value out means, and what every Protobuf library reads.
func TestMapEntryWithoutItsValueHoldsTheEmptyMessage(t *testing.T) {
	s := &codec.Schema{ID: 130, Type: "PROTOBUF", Text: wellKnownMapsProto}
	fields := []codec.Field{
		{Path: []string{"seen"}, Column: "seen", Type: packed.MustTypes("map<text, timestamp>")[0]},
		{Path: []string{"spans"}, Column: "spans", Type: packed.MustTypes("map<text, bigint>")[0]},
		{Path: []string{"counts"}, Column: "counts", Type: packed.MustTypes("map<text, bigint>")[0]},
	}
	p := compile(t, s, fields)
	var msg []byte
	for num := protowire.Number(1); num <= 3; num++ {
		entry := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "a") // key only
		msg = protowire.AppendBytes(protowire.AppendTag(msg, num, protowire.BytesType), entry)
	}
	out := make([]codec.Value, len(fields))
	if _, err := p.Decode(framed([]int{0}, msg), out, nil); err != nil {
		t.Fatal(err)
	}
	// What protobuf-go reads from the same bytes.
	fd := p.(*plan).file
	m := dynamicpb.NewMessage(fd.Messages().Get(0))
	if err := proto.Unmarshal(msg, m); err != nil {
		t.Fatal(err)
	}
	key := protoreflect.ValueOfString("a").MapKey()
	get := func(name string) proto.Message {
		return m.Get(fd.Messages().Get(0).Fields().ByName(protoreflect.Name(name))).Map().Get(key).Message().Interface()
	}
	var ts timestamppb.Timestamp
	var d durationpb.Duration
	var n wrapperspb.Int64Value
	for name, into := range map[string]proto.Message{"seen": &ts, "spans": &d, "counts": &n} {
		raw, err := proto.Marshal(get(name))
		if err != nil {
			t.Fatal(err)
		}
		if err := proto.Unmarshal(raw, into); err != nil {
			t.Fatal(err)
		}
	}
	if !ts.AsTime().Equal(time.Unix(0, 0)) || d.AsDuration() != 0 || n.Value != 0 {
		t.Fatalf("protobuf-go reads %v %v %v", ts.AsTime(), d.AsDuration(), n.Value)
	}
	want := []any{map[string]any{"a": time.Unix(0, 0).UTC()}, map[string]any{"a": int64(0)}, map[string]any{"a": int64(0)}}
	for i, w := range want {
		b, err := packed.AppendValue(nil, fields[i].Type, w)
		if err != nil {
			t.Fatal(err)
		}
		if out[i].State != codec.Set || string(out[i].B) != string(b) {
			t.Errorf("%s: %x, want %x (%v)", fields[i].Column, out[i].B, b, w)
		}
	}
}
