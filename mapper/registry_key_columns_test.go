package mapper

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/packed"
)

// countingRegistry counts the schemas asked of it.
type countingRegistry struct {
	codec.Registry
	asked atomic.Int32
}

func (r *countingRegistry) Schema(ctx context.Context, id int) (*codec.Schema, error) {
	r.asked.Add(1)
	return r.Registry.Schema(ctx, id)
}

// keyColumnsMapper is the sensor topic (JSON values) whose key, in key_codec keyCodec, also gives two
// columns: key_device from the key field device_id, and key_site from site.id (not required).
func keyColumnsMapper(t *testing.T, keyCodec string, reg codec.Registry) *Mapper {
	t.Helper()
	c := baseConfig()
	tp := c.Topics["readings"]
	tp.KeyCodec = keyCodec
	tp.Columns = append(tp.Columns,
		config.Column{Name: "key_device", Type: "text", Source: config.SourceKey, Field: "device_id", Required: true},
		config.Column{Name: "key_site", Type: "text", Source: config.SourceKey, Field: "site.id"})
	c.Topics["readings"] = tp
	return registryMapper(t, c, reg)
}

// TestRegistryKeyFieldsFeedColumns guards source key with a field under key_codec avro, protobuf and
// json_schema: the key in the wire format is decoded by its writer schema as a value is, and its fields
// feed columns of an upsert, which explain marks as the key's. On main, config refuses a key column
// under a registry key codec.
func TestRegistryKeyFieldsFeedColumns(t *testing.T) {
	reg := keyRegistry()
	reg.schemas[28] = &codec.Schema{ID: 28, Type: "JSON", Text: `{"type": "object", "properties": {"device_id": {"type": "string"}, "site": {"type": "object"}}}`}
	for _, tc := range []struct {
		name, keyCodec string
		key            []byte
		site           any // key_site's value
	}{
		{"avro record", config.CodecAvro, avroValue(t, keySiteAvro, 24, map[string]any{"device_id": "dev-7", "site": map[string]any{"id": "plant-9"}}), "plant-9"},
		{"protobuf message", config.CodecProtobuf, protoKey(t, 25, "dev-7"), nil},
		{"json_schema object", config.CodecJSONSchema, jsonKey(28, `{"device_id": "dev-7", "site": {"id": "plant-9"}}`), "plant-9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keyReg := &countingRegistry{Registry: reg}
			m := keyColumnsMapper(t, tc.keyCodec, keyReg)
			if tc.keyCodec == config.CodecProtobuf {
				// The message has no site: a protobuf key of another shape.
				c := baseConfig()
				tp := c.Topics["readings"]
				tp.KeyCodec = tc.keyCodec
				tp.Columns = append(tp.Columns, config.Column{Name: "key_device", Type: "text", Source: config.SourceKey, Field: "device_id", Required: true})
				c.Topics["readings"] = tp
				m = registryMapper(t, c, keyReg)
			}
			r := rec(sensorJSON)
			r.Key = tc.key
			for range 3 {
				row, err := m.Map(r)
				if err != nil {
					t.Fatal(err)
				}
				vals := decoded(t, Values(row))
				if vals[6] != "dev-7" {
					t.Errorf("key_device: %v, want dev-7", vals[6])
				}
				if tc.site != nil && vals[7] != tc.site {
					t.Errorf("key_site: %v, want %v", vals[7], tc.site)
				}
			}
			if n := keyReg.asked.Load(); n != 1 {
				t.Errorf("the registry was asked %d times for three records of one key schema id, want once", n)
			}
			ex, err := m.Explain(r)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, v := range ex.Bound {
				if v.Column == "key_device" {
					found = v.From == `key field "device_id"`
				}
			}
			if !found {
				t.Errorf("explain does not mark key_device as the key field's: %+v", ex.Bound)
			}
		})
	}
}

// TestRegistryKeyThatCannotGiveTheFieldIsBadInput: a registry-framed key that cannot be decoded, or
// whose writer schema lacks the field, is bad input, reason key, naming the key field; no key leaves a
// column that needs no value unset; a registry that does not answer is no fault of the record's.
func TestRegistryKeyThatCannotGiveTheFieldIsBadInput(t *testing.T) {
	reg := keyRegistry()
	m := keyColumnsMapper(t, config.CodecAvro, reg)
	for _, tc := range []struct {
		name string
		key  []byte
		want string
	}{
		{"a primitive key has no fields", avroValue(t, `"string"`, 21, "dev-7"), `schema id 21`},
		{"a schema without the field", avroValue(t, keyRecordAvro, 23, map[string]any{"device_id": "dev-7"}), `no field "site"`},
		{"not in the wire format", []byte("dev-7"), "magic byte"},
		{"an unknown schema id", codec.AppendFrame(nil, 99, nil), "schema id 99"},
		{"a body short of its schema", codec.AppendFrame(nil, 24, nil), "avro"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rec(sensorJSON)
			r.Key = tc.key
			_, err := m.Map(r)
			var re *RecordError
			if !errors.As(err, &re) || re.Reason != ReasonKey {
				t.Fatalf("got %v, want a refusal with reason key", err)
			}
			if msg := err.Error(); !strings.Contains(msg, `key field "device_id" (column key_device)`) || !strings.Contains(msg, tc.want) {
				t.Errorf("the message must name the key field and say why (%q): %s", tc.want, msg)
			}
		})
	}
	t.Run("no key", func(t *testing.T) {
		c := baseConfig()
		tp := c.Topics["readings"]
		tp.KeyCodec = config.CodecAvro
		tp.Columns = append(tp.Columns, config.Column{Name: "key_site", Type: "text", Source: config.SourceKey, Field: "site.id"})
		c.Topics["readings"] = tp
		row, err := registryMapper(t, c, reg).Map(rec(sensorJSON))
		if err != nil {
			t.Fatal(err)
		}
		if v := packed.Values(row.Packed)[6]; v != gocql.UnsetValue {
			t.Errorf("key_site of a record without a key: %v, want unset", v)
		}
		if _, err := m.Map(rec(sensorJSON)); err == nil || !strings.Contains(err.Error(), "is missing") {
			t.Errorf("a required key column of a record without a key: %v", err)
		}
	})
	t.Run("registry down", func(t *testing.T) {
		down := keyRegistry()
		down.down.Store(true)
		r := rec(sensorJSON)
		r.Key = avroValue(t, keySiteAvro, 24, map[string]any{"device_id": "dev-7", "site": map[string]any{"id": "s"}})
		_, err := keyColumnsMapper(t, config.CodecAvro, down).Map(r)
		var ue *codec.UnavailableError
		if !errors.As(err, &ue) || isRecordError(err) {
			t.Errorf("got %v, want the registry's unavailability, no record error", err)
		}
	})
}

// TestADeletingEntryReadsKeyColumnsOnUpserts: an entry that deletes by its registry-framed key also takes
// a non-id column from a field of that key on its upserts, and still deletes by its tombstones.
func TestADeletingEntryReadsKeyColumnsOnUpserts(t *testing.T) {
	m := keyedMapper(t, config.CodecAvro, keyRegistry(), func(tp *config.Topic) {
		tp.Columns = append(tp.Columns, config.Column{Name: "key_site", Type: "text", Source: config.SourceKey, Field: "site.id"})
	})
	key := avroValue(t, keySiteAvro, 24, map[string]any{"device_id": "dev-0042", "site": map[string]any{"id": "plant-3"}})
	r := rec(sensorJSON)
	r.Key = key
	row, err := m.Map(r)
	if err != nil {
		t.Fatal(err)
	}
	if v := decoded(t, Values(row))[6]; v != "plant-3" {
		t.Errorf("key_site: %v, want plant-3", v)
	}
	del, err := m.Map(tombstoneOf(key))
	if err != nil || !del.Target.Delete {
		t.Fatalf("the tombstone: %+v, %v; want a delete", del, err)
	}
	if v := decoded(t, Values(del))[1]; v != "dev-0042" {
		t.Errorf("deleted entity: %v", v)
	}
}
