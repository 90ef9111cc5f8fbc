package mapper

import (
	"context"
	"errors"
	"math/big"
	"testing"

	"github.com/linkedin/goavro/v2"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/packed"
)

// The filter of an envelope entry reads the change event as written (op, after.note; payload.op under
// JsonConverter's schema part), judged before the event is mapped, while each entry of the topic still
// reads its own row image (feed.alone).

// reasonOf is the reason of an entry's RecordError; "" when it mapped.
func reasonOf(err error) string {
	re := (*RecordError)(nil)
	if errors.As(err, &re) {
		return re.Reason
	}
	if err != nil {
		return "not a RecordError: " + err.Error()
	}
	return ""
}

func TestDebeziumWhereJudgesTheEventAsWritten(t *testing.T) {
	creates := accountsEntry(false)
	creates.Table = "accounts_created"
	creates.Where = &config.Where{Field: "op", Equals: new("c")}
	wrapped := accountsEntry(false)
	wrapped.Table = "accounts_created_wrapped"
	wrapped.Where = &config.Where{Field: "payload.op", Equals: new("c")}
	m := accountsMapper(t, map[string]config.Topic{"accounts": accountsEntry(true), "created": creates, "wrapped": wrapped})
	for _, tc := range []struct {
		fixture                  string
		accounts, created, wrapd string // each entry's reason, "" for a row
	}{
		{"create.json", "", "", ReasonFiltered},
		{"create.schema.json", "", ReasonFiltered, ""},
		{"update.json", "", ReasonFiltered, ReasonFiltered},
		{"update.schema.json", "", ReasonFiltered, ReasonFiltered},
		{"delete.json", "", ReasonFiltered, ReasonFiltered}, // judged before the delete (reason deleted)
	} {
		res, err := m.MapAll(context.Background(), change(fixture(t, tc.fixture)), nil)
		if err != nil || len(res) != 3 {
			t.Fatalf("%s: %v %+v", tc.fixture, err, res)
		}
		if got := [3]string{reasonOf(res[0].Err), reasonOf(res[1].Err), reasonOf(res[2].Err)}; got != [3]string{tc.accounts, tc.created, tc.wrapd} {
			t.Errorf("%s: reasons (accounts, created, wrapped) %q, want %q", tc.fixture, got, [3]string{tc.accounts, tc.created, tc.wrapd})
		}
		if res[1].Err == nil {
			// The row is the after image's, as without a filter.
			if got := packed.GoValue(packed.Values(res[1].Row.Packed)[0]); got != int64(42) || res[1].Row.Target.Table != "accounts_created" {
				t.Errorf("%s: created row id %v table %s", tc.fixture, got, res[1].Row.Target.Table)
			}
		}
	}
	// An event that is no JSON object is taken by the filter and refused by the entry's reading of it.
	res, err := m.MapAll(context.Background(), change([]byte(`[1]`)), nil)
	if err != nil || reasonOf(res[1].Err) != ReasonDecode {
		t.Errorf("not an object: %v %+v, want reason decode", err, res)
	}
}

// TestDebeziumWhereOnTheAvroEnvelope: under codec avro the filter reads the fields of the Envelope record
// (after.note through its union, op), and a registry-framed key feeds a column of source key, decoded per
// entry.
func TestDebeziumWhereOnTheAvroEnvelope(t *testing.T) {
	text := string(fixture(t, "envelope.avsc"))
	const keySchema = `{"type": "record", "name": "Key", "namespace": "pg.public.accounts", "fields": [{"name": "id", "type": "long"}, {"name": "tenant", "type": "string"}]}`
	reg := &staticRegistry{schemas: map[int]*codec.Schema{9: {ID: 9, Type: "AVRO", Text: text}, 11: {ID: 11, Type: "AVRO", Text: keySchema}}}
	firsts := accountsEntry(false)
	firsts.Codec, firsts.KeyCodec = config.CodecAvro, config.CodecAvro
	firsts.Table = "accounts_first"
	firsts.Where = &config.Where{All: []config.Where{{Field: "after.note", Equals: new("first")}, {Field: "op", OneOf: []string{"c", "u"}}}}
	firsts.Columns = append(firsts.Columns, config.Column{Name: "tenant", Type: "text", Source: config.SourceKey, Field: "tenant"})
	latest := accountsEntry(true)
	latest.Codec = config.CodecAvro
	c := &config.Config{
		Cassandra: config.Cassandra{Hosts: []string{"127.0.0.1"}, Keyspace: "shop"},
		Kafka:     config.Kafka{Brokers: []string{"127.0.0.1:9092"}},
		Topics:    map[string]config.Topic{"accounts": latest, "firsts": firsts},
	}
	m := registryMapper(t, c, reg)
	source := map[string]any{"version": "2.5.0.Final", "connector": "postgresql", "name": "pg", "ts_ms": int64(1700000000500),
		"db": "shop", "schema": "public", "table": "accounts", "txId": goavro.Union("long", int64(555)), "lsn": goavro.Union("long", int64(24023128))}
	row := func(note string) map[string]any {
		return map[string]any{"id": int64(42), "balance": big.NewRat(123456, 100), "opened_at": nil, "updated": nil, "birth": nil,
			"alarm": nil, "amount": nil, "note": goavro.Union("string", note)}
	}
	event := func(op string, before, after map[string]any) Record {
		native := map[string]any{"before": nil, "after": nil, "source": source, "op": op, "ts_ms": goavro.Union("long", int64(1700000000600))}
		if before != nil {
			native["before"] = goavro.Union("pg.public.accounts.Value", before)
		}
		if after != nil {
			native["after"] = goavro.Union("pg.public.accounts.Value", after)
		}
		r := change(avroValue(t, text, 9, native))
		r.Key = avroValue(t, keySchema, 11, map[string]any{"id": int64(42), "tenant": "acme"})
		return r
	}
	for _, tc := range []struct {
		name            string
		rec             Record
		accounts, first string
	}{
		{"create first", event("c", nil, row("first")), "", ""},
		{"update first", event("u", row("first"), row("first")), "", ""},
		{"create second", event("c", nil, row("second")), "", ReasonFiltered},
		{"snapshot first", event("r", nil, row("first")), "", ReasonFiltered},
		{"delete", event("d", row("first"), nil), "", ReasonFiltered},
	} {
		res, err := m.MapAll(context.Background(), tc.rec, nil)
		if err != nil || len(res) != 2 {
			t.Fatalf("%s: %v %+v", tc.name, err, res)
		}
		if got := [2]string{reasonOf(res[0].Err), reasonOf(res[1].Err)}; got != [2]string{tc.accounts, tc.first} {
			t.Errorf("%s: reasons (accounts, firsts) %q, want %q", tc.name, got, [2]string{tc.accounts, tc.first})
			continue
		}
		if res[1].Err == nil {
			vals := packed.Values(res[1].Row.Packed)
			if id, tenant := packed.GoValue(vals[0]), packed.GoValue(vals[11]); id != int64(42) || tenant != "acme" {
				t.Errorf("%s: firsts row id %v tenant %v (from the Avro key)", tc.name, id, tenant)
			}
		}
	}
	// A key that is not in the wire format is the entry's bad input, reason key, once its filter takes the event.
	rec := event("c", nil, row("first"))
	rec.Key = []byte("42")
	res, err := m.MapAll(context.Background(), rec, nil)
	if err != nil || reasonOf(res[0].Err) != "" || reasonOf(res[1].Err) != ReasonKey {
		t.Errorf("a key not in the wire format: %v %+v, want the firsts entry's reason key", err, res)
	}
}
