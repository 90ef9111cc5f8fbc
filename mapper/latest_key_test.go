package mapper

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/config"
)

// The writer schemas of the registry-framed keys these tests delete by.
const (
	keyRecordAvro = `{"type": "record", "name": "DeviceKey", "namespace": "sensors", "fields": [
		{"name": "device_id", "type": "string"}]}`
	keySiteAvro = `{"type": "record", "name": "SiteKey", "namespace": "sensors", "fields": [
		{"name": "device_id", "type": "string"},
		{"name": "site", "type": {"type": "record", "name": "Site", "fields": [{"name": "id", "type": "string"}]}}]}`
	keyProto = `syntax = "proto3";
package sensors;
message DeviceKey { string device_id = 1; }
`
)

// keyRegistry serves the key schemas of the tests by id.
func keyRegistry() *staticRegistry {
	return &staticRegistry{schemas: map[int]*codec.Schema{
		21: {ID: 21, Type: "AVRO", Text: `"string"`},
		22: {ID: 22, Type: "AVRO", Text: `"long"`},
		23: {ID: 23, Type: "AVRO", Text: keyRecordAvro},
		24: {ID: 24, Type: "AVRO", Text: keySiteAvro},
		25: {ID: 25, Type: "PROTOBUF", Text: keyProto},
		26: {ID: 26, Type: "JSON", Text: `{"type": "string"}`},
		27: {ID: 27, Type: "JSON", Text: `{"type": "object", "properties": {"device_id": {"type": "string"}}}`},
	}}
}

// keyedMapper is latestMapper with on_tombstone delete and key_codec keyCodec, its key schemas from reg.
func keyedMapper(t *testing.T, keyCodec string, reg codec.Registry, mutate func(*config.Topic)) *Mapper {
	t.Helper()
	c := baseConfig()
	tp := c.Topics["readings"]
	tp.Bucket, tp.Clustering = config.Bucket{Width: config.BucketNone}, nil
	tp.OnTombstone, tp.KeyCodec = config.OnTombstoneDelete, keyCodec
	if mutate != nil {
		mutate(&tp)
	}
	c.Topics["readings"] = tp
	return registryMapper(t, c, reg)
}

// protoKey is a DeviceKey message of keyProto, encoded by dynamicpb and proto.Marshal and framed for
// schema id id, message index [0].
func protoKey(t *testing.T, id int, deviceID string) []byte {
	t.Helper()
	c := protocompile.Compiler{Resolver: &protocompile.SourceResolver{
		Accessor: protocompile.SourceAccessorFromMap(map[string]string{"key.proto": keyProto})}}
	files, err := c.Compile(context.Background(), "key.proto")
	if err != nil {
		t.Fatal(err)
	}
	md := files[0].Messages().ByName("DeviceKey")
	m := dynamicpb.NewMessage(md)
	m.Set(md.Fields().ByName("device_id"), protoreflect.ValueOfString(deviceID))
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return append(codec.AppendFrame(nil, id, []int{0}), b...)
}

// jsonKey is body framed for JSON Schema id id.
func jsonKey(id int, body string) []byte { return append(codec.AppendFrame(nil, id, nil), body...) }

func tombstoneOf(key []byte) Record {
	return Record{Topic: "sensor-readings", Partition: 3, Offset: 1300, Key: key, Timestamp: kafkaTS}
}

// TestRegistryKeyNamesTheEntity guards key_codec avro, protobuf and json_schema: a tombstone's
// registry-framed key is decoded by its writer schema from the registry, as a value is; a primitive key
// is a lone id field's value, a record or message key gives the fields at their paths, converted by the
// value path's rules; every key that does not fit is bad input with reason key, its message saying why.
func TestRegistryKeyNamesTheEntity(t *testing.T) {
	reg := keyRegistry()
	avroText := keyedMapper(t, config.CodecAvro, reg, nil)
	avroInt := keyedMapper(t, config.CodecAvro, reg, func(tp *config.Topic) {
		tp.Columns[0] = config.Column{Name: "device_id", Type: "int", Field: "device.n"}
	})
	avroSite := keyedMapper(t, config.CodecAvro, reg, func(tp *config.Topic) { tp.ID = []string{"site_id", "device_id"} })
	avroUUID := keyedMapper(t, config.CodecAvro, reg, func(tp *config.Topic) {
		tp.Columns[0] = config.Column{Name: "device_id", Type: "uuid", Field: "device_id"}
	})
	protobuf := keyedMapper(t, config.CodecProtobuf, reg, nil)
	jsonSchema := keyedMapper(t, config.CodecJSONSchema, reg, nil)
	for _, tc := range []struct {
		name string
		m    *Mapper
		key  []byte
		want []any  // the id values; nil: refused with reason key
		says string // what the refusal says
	}{
		{"avro string", avroText, avroValue(t, `"string"`, 21, "dev-1"), []any{"dev-1"}, ""},
		{"avro long into int", avroInt, avroValue(t, `"long"`, 22, int64(42)), []any{int32(42)}, ""},
		{"avro long out of range for int", avroInt, avroValue(t, `"long"`, 22, int64(3_000_000_000)), nil,
			`column device_id: field "device.n": 3000000000 is out of range for CQL int`},
		{"avro record", avroText, avroValue(t, keyRecordAvro, 23, map[string]any{"device_id": "dev-2"}), []any{"dev-2"}, ""},
		{"avro record, two id fields", avroSite, avroValue(t, keySiteAvro, 24, map[string]any{"device_id": "dev-3", "site": map[string]any{"id": "plant-1"}}),
			[]any{"plant-1", "dev-3"}, ""},
		{"avro primitive for two id fields", avroSite, avroValue(t, `"string"`, 21, "dev-1"), nil, "not a record"},
		{"avro record without the id field", avroInt, avroValue(t, keyRecordAvro, 23, map[string]any{"device_id": "dev-2"}), nil,
			`the writer schema has no field "device"`},
		{"avro string for a uuid", avroUUID, avroValue(t, `"string"`, 21, "dev-1"), nil, "not a UUID"},
		{"protobuf message", protobuf, protoKey(t, 25, "dev-4"), []any{"dev-4"}, ""},
		{"json_schema scalar", jsonSchema, jsonKey(26, `"dev-5"`), []any{"dev-5"}, ""},
		{"json_schema object", jsonSchema, jsonKey(27, `{"device_id":"dev-6"}`), []any{"dev-6"}, ""},
		{"json_schema not JSON", jsonSchema, jsonKey(26, `dev-5`), nil, "not JSON"},
		{"unknown schema id", avroText, avroValue(t, `"string"`, 99, "dev-1"), nil, "the schema registry has no schema with this id"},
		{"a schema of another codec", protobuf, avroValue(t, `"string"`, 21, "dev-1"), nil, "not a Protobuf one"},
		{"a text key", avroText, []byte("dev-1"), nil, "wrong magic byte 0x64"},
		{"an empty key", avroText, []byte{}, nil, "the Kafka key is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex, err := tc.m.Explain(tombstoneOf(tc.key))
			if tc.want == nil {
				var re *RecordError
				if !errors.As(err, &re) || re.Reason != ReasonKey || !strings.Contains(Quoted(err), tc.says) {
					t.Fatalf("got %v, want a refusal with reason key saying %q", err, tc.says)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !ex.Delete || ex.KeyCodec != tc.m.byName["readings"].key.codecName || ex.KeySchemaID == 0 {
				t.Errorf("delete %v, key codec %q, key schema id %d", ex.Delete, ex.KeyCodec, ex.KeySchemaID)
			}
			for i, v := range tc.want {
				if got := ex.PartitionKey[i].Value; got != v {
					t.Errorf("id %d = %#v, want %#v", i, got, v)
				}
			}
		})
	}
}

// TestRegistryKeyInTheHeaderFormIsRefusedSayingSo: a key whose writer schema id is in the
// __key_schema_id header (the newer clients' form) is bad input with reason key, the message naming the
// header, whatever the key's bytes hold.
func TestRegistryKeyInTheHeaderFormIsRefusedSayingSo(t *testing.T) {
	m := keyedMapper(t, config.CodecAvro, keyRegistry(), nil)
	r := tombstoneOf(avroValue(t, `"string"`, 21, "dev-1"))
	r.KeySchemaIDHeader = true
	_, err := m.Map(r)
	var re *RecordError
	if !errors.As(err, &re) || re.Reason != ReasonKey || !strings.Contains(err.Error(), "__key_schema_id header") {
		t.Errorf("got %v, want a refusal with reason key naming the header", err)
	}
}

// TestRegistryKeyDeletesTheRowItsUpsertsWrite: a tombstone with an Avro key routes to the partition of
// the entity's upserts (the same routing key), and binds the same id value.
func TestRegistryKeyDeletesTheRowItsUpsertsWrite(t *testing.T) {
	m := keyedMapper(t, config.CodecAvro, keyRegistry(), nil)
	up := explainOK(t, m, rec(sensorJSON))
	del := explainOK(t, m, tombstoneOf(avroValue(t, keyRecordAvro, 23, map[string]any{"device_id": "dev-0042"})))
	if !del.Delete || del.Row.Key != up.Row.Key || del.PartitionKey[0].Value != up.PartitionKey[0].Value {
		t.Errorf("delete %+v\n does not name the upsert's partition %+v", del.PartitionKey, up.PartitionKey)
	}
}

// TestRegistryKeyWaitsWhileTheRegistryIsDown: a key schema the registry cannot serve yet is no fault of
// the record: the error is no *RecordError and wraps *codec.UnavailableError (the pipeline waits and
// asks again); once served, the key's plan is kept, so the next tombstone of that id needs no registry.
func TestRegistryKeyWaitsWhileTheRegistryIsDown(t *testing.T) {
	reg := keyRegistry()
	m := keyedMapper(t, config.CodecAvro, reg, nil)
	tomb := tombstoneOf(avroValue(t, `"string"`, 21, "dev-1"))
	reg.down.Store(true)
	_, err := m.Map(tomb)
	var re *RecordError
	var ue *codec.UnavailableError
	if errors.As(err, &re) || !errors.As(err, &ue) {
		t.Fatalf("registry down: %v, want an unavailable error that is no record error", err)
	}
	if _, err := m.MapAll(context.Background(), tomb, nil); !errors.As(err, &ue) {
		t.Errorf("MapAll, registry down: %v, want the unavailable error (the record waits)", err)
	}
	reg.down.Store(false)
	if _, err := m.Map(tomb); err != nil {
		t.Fatalf("registry up: %v", err)
	}
	reg.down.Store(true)
	if _, err := m.Map(tomb); err != nil {
		t.Errorf("registry down again, the key's schema cached: %v", err)
	}
}

// TestRegistryKeyCodecLeavesAKafkaKeyIDAsItIs: when no id column is read from a field (the id is the
// kafka_key, as the upserts write it), a registry key codec has nothing to decode: the tombstone deletes
// by the key's bytes, whatever its writer schema (a primitive one, a record, an id the registry does not
// have) and while the registry is down, and names the partition its upserts wrote.
func TestRegistryKeyCodecLeavesAKafkaKeyIDAsItIs(t *testing.T) {
	reg := keyRegistry()
	m := keyedMapper(t, config.CodecAvro, reg, func(tp *config.Topic) {
		tp.Columns[0] = config.Column{Name: "device_id", Type: "blob", Source: config.SourceKafkaKey}
	})
	for _, down := range []bool{false, true} {
		reg.down.Store(down)
		for name, key := range map[string][]byte{
			"primitive":      avroValue(t, `"string"`, 21, "dev-1"),
			"record":         avroValue(t, keyRecordAvro, 23, map[string]any{"device_id": "dev-2"}),
			"unknown schema": avroValue(t, `"string"`, 99, "dev-3"),
		} {
			up := rec(sensorJSON)
			up.Key = key
			upsert := explainOK(t, m, up)
			del, err := m.Explain(tombstoneOf(key))
			if err != nil || !del.Delete || del.Row.Key != upsert.Row.Key || del.KeySchemaID != 0 ||
				string(del.PartitionKey[0].Value.([]byte)) != string(key) {
				t.Errorf("%s key, registry down %v: %v, %+v; want the delete of the upsert's partition, by the key's bytes", name, down, err, del.PartitionKey)
			}
		}
	}
}

// TestAKeyAndAValueOfOneSchemaIDKeepTheirOwnPlans: a registry gives one id to one schema text whatever the
// subject, so a key and a value may name the same id (here the key is the whole reading); the key's plan
// (the id fields) and the value's (every column) of that id are kept apart, in either order of first sight.
func TestAKeyAndAValueOfOneSchemaIDKeepTheirOwnPlans(t *testing.T) {
	const id = 30
	key := avroValue(t, sensorAvro, id, sensorNative())
	for _, keyFirst := range []bool{false, true} {
		reg := keyRegistry()
		reg.schemas[id] = &codec.Schema{ID: id, Type: "AVRO", Text: sensorAvro}
		m := keyedMapper(t, config.CodecAvro, reg, func(tp *config.Topic) { tp.Codec = config.CodecAvro })
		up := rec("")
		up.Key, up.Value = key, key
		var upsert, del Explanation
		if keyFirst {
			del = explainOK(t, m, tombstoneOf(key))
			upsert = explainOK(t, m, up)
		} else {
			upsert = explainOK(t, m, up)
			del = explainOK(t, m, tombstoneOf(key))
		}
		bound := map[string]any{}
		for _, v := range upsert.Bound {
			bound[v.Column] = v.Value
		}
		if !del.Delete || del.KeySchemaID != id || del.Row.Key != upsert.Row.Key || bound["site_id"] != "plant-1" || bound["temperature"] != 21.5 {
			t.Errorf("key first %v: delete %+v of key schema %d, upsert %+v; want the upsert's partition deleted", keyFirst, del.PartitionKey, del.KeySchemaID, upsert.PartitionKey)
		}
	}
}
