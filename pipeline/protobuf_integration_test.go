package pipeline

import (
	"context"
	"encoding/base64"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bufbuild/protocompile"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/codec/registry"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/internal/testenv"
	"github.com/bucketsink/sink/mapper"
	"github.com/bucketsink/sink/pipeline/deadletter"
)

// The Protobuf integration tests: the formats tests' event as a Protobuf message nested at index [1, 0] of its
// file, whose site message comes from another file through a schema reference. The records are encoded with
// dynamicpb and proto.Marshal; the sink decodes them with its own wire walker.

// itSiteProto is the referenced file, imported as it/common/site.proto.
const itSiteProto = `syntax = "proto3";
package it.common;
message Site { string id = 1; }
`

// itReadingProto holds the event as Batch.Reading, index [1, 0].
const itReadingProto = `syntax = "proto3";
package it.formats;
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";
import "it/common/site.proto";

message Heartbeat { int64 at = 1; }

message Batch {
  message Reading {
    string device_id = 1;
    google.protobuf.Timestamp ts = 2;
    double value = 3;
    string amount = 4;
    google.protobuf.Timestamp day = 5;
    string uid = 6;
    google.protobuf.StringValue note = 7;
    it.common.Site site = 8;
    uint32 seq = 9;
  }
  repeated Reading readings = 1;
}
`

const itSiteImport = "it/common/site.proto"

// readingFile compiles the event's file for the encoder.
func readingFile(t *testing.T) protoreflect.FileDescriptor {
	t.Helper()
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
		Accessor: protocompile.SourceAccessorFromMap(map[string]string{"reading.proto": itReadingProto, itSiteImport: itSiteProto})})}
	files, err := c.Compile(context.Background(), "reading.proto")
	if err != nil {
		t.Fatal(err)
	}
	return files[0]
}

// protobuf encodes e as Batch.Reading in the wire format of schema id id with message indexes idx.
func (e event) protobuf(t *testing.T, fd protoreflect.FileDescriptor, id int, idx []int) []byte {
	t.Helper()
	md := fd.Messages().ByName("Batch").Messages().ByName("Reading")
	m := dynamicpb.NewMessage(md)
	f := md.Fields().ByName
	m.Set(f("device_id"), protoreflect.ValueOfString(e.device))
	m.Set(f("ts"), protoreflect.ValueOfMessage(timestamppb.New(e.ts).ProtoReflect()))
	m.Set(f("value"), protoreflect.ValueOfFloat64(e.value))
	m.Set(f("amount"), protoreflect.ValueOfString(e.amount))
	m.Set(f("day"), protoreflect.ValueOfMessage(timestamppb.New(e.day).ProtoReflect()))
	m.Set(f("uid"), protoreflect.ValueOfString(e.uid))
	if e.note != nil {
		m.Set(f("note"), protoreflect.ValueOfMessage(wrapperspb.String(*e.note).ProtoReflect()))
	}
	site := m.Mutable(f("site")).Message()
	site.Set(site.Descriptor().Fields().ByName("id"), protoreflect.ValueOfString(e.site))
	m.Set(f("seq"), protoreflect.ValueOfUint32(uint32(e.i)))
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return append(codec.AppendFrame(nil, id, idx), b...)
}

// registerProtobuf registers the site file and then the reading file referencing it (as .proto text, or as
// base64 FileDescriptorProtos, the form Confluent's Python serializer registers), and returns the reading's id.
func registerProtobuf(t *testing.T, reg *registry.Client, subject string, descriptors bool) int {
	t.Helper()
	site, reading := itSiteProto, itReadingProto
	if descriptors {
		fd := readingFile(t)
		encode := func(f protoreflect.FileDescriptor) string {
			raw, err := proto.Marshal(protodesc.ToFileDescriptorProto(f))
			if err != nil {
				t.Fatal(err)
			}
			return base64.StdEncoding.EncodeToString(raw)
		}
		site, reading = encode(fd.Imports().Get(2).FileDescriptor), encode(fd)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ss, err := reg.SR().CreateSchema(ctx, subject+"-site", sr.Schema{Schema: site, Type: sr.TypeProtobuf})
	if err != nil {
		t.Fatalf("registering the site file: %v", err)
	}
	ss, err = reg.SR().CreateSchema(ctx, subject+"-value", sr.Schema{Schema: reading, Type: sr.TypeProtobuf,
		References: []sr.SchemaReference{{Name: itSiteImport, Subject: ss.Subject, Version: ss.Version}}})
	if err != nil {
		t.Fatalf("registering the reading file: %v", err)
	}
	return ss.ID
}

// TestIntegrationProtobufRowsEqualTheJSONRows: the same 60 events produced as JSON and as Protobuf, the
// message nested at index [1, 0] and its site message coming through a schema reference, registered once as
// .proto text and once as base64 descriptors, become identical rows in three tables (same partition, columns
// and write timestamp), every value exactly as produced: a decimal from a string with its scale, timestamps, a
// date from a Timestamp at midnight, a uuid, and an unset wrapper left unset (null).
func TestIntegrationProtobufRowsEqualTheJSONRows(t *testing.T) {
	url := testenv.Registry(t)
	reg := newRegistry(t, url)
	var plainTopic, descTopic string
	s := newFormatsStack(t, url, config.CodecProtobuf, func(c *config.Config) {
		plainTopic, descTopic = c.Topics["readings"].Topic+"_json", c.Topics["readings"].Topic+"_desc"
		c.Topics["plain"] = formatsTopic(plainTopic, "plain", config.CodecJSON, "")
		c.Topics["described"] = formatsTopic(descTopic, "described", config.CodecProtobuf, "")
	})
	subject := testenv.Name(t, "reading")
	textID := registerProtobuf(t, reg, subject, false)
	descID := registerProtobuf(t, reg, subject+"-desc", true)
	fd := readingFile(t)

	evs := formatsEvents(0, 60)
	recs := s.produceEvents(plainTopic, evs, event.json, nil)
	s.produceEvents(s.topic, evs, func(e event) []byte { return e.protobuf(t, fd, textID, []int{1, 0}) }, nil)
	s.produceEvents(descTopic, evs, func(e event) []byte { return e.protobuf(t, fd, descID, []int{1, 0}) }, nil)
	m := s.start(nil)
	for _, table := range []string{"plain", "readings", "described"} {
		s.waitForRows(table, len(evs))
	}
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	want := s.wantRows(evs, recs)
	for _, table := range []string{"plain", "readings", "described"} {
		if got := s.tableRows(table); !slices.Equal(got, want) {
			t.Errorf("%s holds\n  %s\nwant\n  %s", table, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
	}
}

// TestIntegrationProtobufIndexPastTheFileIsDeadLettered: records whose message indexes name a message the
// file does not have ([2], [1, 1]) are dead-lettered with reason decode, saying so; the good records around
// them in the same partitions are written.
func TestIntegrationProtobufIndexPastTheFileIsDeadLettered(t *testing.T) {
	url := testenv.Registry(t)
	reg := newRegistry(t, url)
	s := newFormatsStack(t, url, config.CodecProtobuf, nil)
	id := registerProtobuf(t, reg, testenv.Name(t, "reading"), false)
	fd := readingFile(t)
	bad := func(e event) bool { return e.i%5 == 4 }
	s.produceEvents(s.topic, formatsEvents(0, 40), func(e event) []byte {
		idx := []int{1, 0}
		if bad(e) {
			idx = [][]int{{2}, {1, 1}}[e.i/5%2]
		}
		return e.protobuf(t, fd, id, idx)
	}, func(e event) string {
		if bad(e) {
			return mapper.ReasonDecode
		}
		return ""
	})
	m := s.start(nil)
	s.waitFor(2*time.Minute, "every record", s.allCommitted)
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	s.checkPlacement()
	s.checkDeadLetters(true)
	for _, r := range s.dlqRecords() {
		if msg := header(r, deadletter.HeaderError); !strings.Contains(msg, "is past the") {
			t.Errorf("dead letter error %q does not say the index is past the file's messages", msg)
		}
	}
}
