package mapper

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/linkedin/goavro/v2"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/packed"
)

// The change events of testdata/debezium (hand-written from Debezium's documented format; see its
// README), with and without JsonConverter's schema part.

const accountsTopic = "pg.public.accounts"

// accountsEntry is an envelope entry of the accounts table: latest-value, or bucketed by day.
func accountsEntry(latest bool) config.Topic {
	t := config.Topic{
		Topic:    accountsTopic,
		Envelope: config.EnvelopeDebezium,
		ID:       []string{"id"},
		Time:     config.EventTime{Source: config.TimeSourceChange},
		Table:    "accounts",
		Columns: []config.Column{
			{Name: "id", Type: "bigint", Field: "id"},
			{Name: "balance", Type: "decimal", Field: "balance"},
			{Name: "opened_at", Type: "timestamp", Field: "opened_at"},
			{Name: "updated", Type: "timestamp", Field: "updated"},
			{Name: "birth", Type: "date", Field: "birth"},
			{Name: "alarm", Type: "bigint", Field: "alarm"},
			{Name: "amount", Type: "decimal", Field: "amount"},
			{Name: "note", Type: "text", Field: "note"},
			{Name: "op", Type: "text", Source: config.SourceChange, Field: "op"},
			{Name: "lsn", Type: "bigint", Source: config.SourceChange, Field: "source.lsn"},
			{Name: "changed", Type: "timestamp", Source: config.SourceEventTime},
		},
		Accept: config.Accept{Before: math.MaxInt64, After: math.MaxInt64},
	}
	if latest {
		t.Bucket = config.Bucket{Width: config.BucketNone}
	} else {
		t.Table = "accounts_history"
		t.Bucket = config.Bucket{Width: "1d"}
		t.Clustering = []config.Clustering{{Column: "changed"}, {Column: "lsn"}}
	}
	return t
}

// accountsMapper maps the entries of entries (topics.<name> → entry).
func accountsMapper(t *testing.T, entries map[string]config.Topic) *Mapper {
	t.Helper()
	c := &config.Config{
		Kafka:     config.Kafka{Brokers: []string{"127.0.0.1:9092"}},
		Cassandra: config.Cassandra{Hosts: []string{"127.0.0.1"}, Keyspace: "shop"},
		Topics:    entries,
	}
	c.ApplyDefaults()
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	m, err := New(c)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m
}

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "debezium", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var dbzKafkaTS = time.UnixMilli(1700000003000).UTC()

func change(value []byte) Record {
	return Record{Topic: accountsTopic, Partition: 1, Offset: 5007, Value: value, Timestamp: dbzKafkaTS}
}

// TestDebeziumConversionsGolden holds every conversion of a Debezium encoding to its column to
// testdata/debezium/conversions.golden: each event of the fixtures, with and without the schema part,
// through a latest-value entry, each bound value with where it came from. Among them: MicroTimestamp
// 1700000000123456 is 2023-11-14T22:13:20.123456Z (bound to CQL's milliseconds), Decimal "AeJA" of scale
// 2 is 1234.56, "/2o=" -1.50, VariableScaleDecimal {3, "MDk="} 12.345, Date 19675 2023-11-14, MicroTime
// 45296789012 45296789012000 ns. Run with -update-golden to rewrite it.
func TestDebeziumConversionsGolden(t *testing.T) {
	m := accountsMapper(t, map[string]config.Topic{"accounts": accountsEntry(true)})
	var b strings.Builder
	for _, name := range []string{"create.schema.json", "read.schema.json", "update.schema.json", "delete.schema.json",
		"create.json", "read.json", "update.json", "delete.json"} {
		ex, err := m.Explain(change(fixture(t, name)))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		fmt.Fprintf(&b, "== %s: op %s (%s), event time %s, delete %v\n", name, ex.Op, ex.OpName, ex.EventTime.Format(time.RFC3339Nano), ex.Delete)
		for _, v := range ex.Bound {
			fmt.Fprintf(&b, "  %-10s %-9s %s", v.Column, v.Type, v.Literal())
			if v.From != "" {
				fmt.Fprintf(&b, "  (from %s)", v.From)
			}
			b.WriteString("\n")
		}
	}
	// The decoded values before they are bound, at the precision Debezium gives them.
	p := m.byName["accounts"]
	v := p.env.variant(schemaPart(t, fixture(t, "create.schema.json")))
	s := &scratch{}
	body := payloadOf(t, fixture(t, "create.schema.json"))
	vals, _, err := decodeValues(v.plan, "json", true, v.n, body, s)
	if err != nil {
		t.Fatal(err)
	}
	v.apply(vals, s)
	b.WriteString("== create.schema.json decoded\n")
	for i, c := range p.cols {
		slot := p.env.afterSlot[i]
		if slot < 0 {
			continue
		}
		x := vals[slot]
		var shown any
		switch {
		case c.typ.kind == kTimestamp || c.typ.kind == kDate:
			shown = x.T.Format(time.RFC3339Nano)
		case c.typ.kind == kText:
			shown = string(x.B)
		case c.direct:
			shown = x.N
		default:
			shown = packed.GoValue(&packed.Value{Type: c.typ.packed(), Wire: x.B})
		}
		fmt.Fprintf(&b, "  %-10s %v\n", c.name, shown)
	}
	golden := filepath.Join("testdata", "debezium", "conversions.golden")
	if *updateGolden {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != string(want) {
		t.Errorf("conversions differ from %s (-update-golden rewrites it):\n%s", golden, b.String())
	}
	for _, line := range []string{
		"updated    2023-11-14T22:13:20.123456Z",
		"balance    1234.56",
		"amount     12.345",
		"birth      2023-11-14T00:00:00Z",
		"alarm      45296789012000",
	} {
		if !strings.Contains(b.String(), line) {
			t.Errorf("the decoded values lack %q", line)
		}
	}
}

// schemaPart and payloadOf are the two halves of an event with JsonConverter's schema part.
func schemaPart(t *testing.T, b []byte) []byte { return member(t, b, "schema") }
func payloadOf(t *testing.T, b []byte) []byte  { return member(t, b, "payload") }

func member(t *testing.T, b []byte, name string) []byte {
	t.Helper()
	i := strings.Index(string(b), `"`+name+`": `)
	if i < 0 {
		t.Fatalf("no %s", name)
	}
	rest := b[i+len(name)+4:]
	depth := 0
	for j, c := range rest {
		switch c {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return rest[:j+1]
			}
		}
	}
	t.Fatalf("%s does not end", name)
	return nil
}

// TestDebeziumOpsOnALatestValueEntry: c, r and u upsert after, at the change's source time; d deletes
// the row its before names, at the delete's source time with the upserts' tie; the tombstone after it is
// skipped, never dead-lettered. Under write_timestamp event_time, set on purpose: an envelope entry's
// default is offset (TestDebeziumTransactionOrderedByOffset).
func TestDebeziumOpsOnALatestValueEntry(t *testing.T) {
	e := accountsEntry(true)
	e.WriteTimestamp = config.WriteTimestampEventTime
	m := accountsMapper(t, map[string]config.Topic{"accounts": e})
	for _, form := range []string{".schema.json", ".json"} {
		for _, tc := range []struct {
			event string
			ts    int64 // source.ts_ms
			note  any
		}{{"create", 1700000000500, "first"}, {"read", 1700000000400, "first"}, {"update", 1700000001500, nil}} {
			ex, err := m.Explain(change(fixture(t, tc.event+form)))
			if err != nil {
				t.Fatalf("%s%s: %v", tc.event, form, err)
			}
			if ex.Delete || ex.Op != tc.event[:1] {
				t.Errorf("%s%s: op %q delete %v", tc.event, form, ex.Op, ex.Delete)
			}
			if want := tc.ts*1000 + 7; ex.WriteTimestamp != want {
				t.Errorf("%s%s: write timestamp %d, want %d (source.ts_ms in µs + offset mod 1000)", tc.event, form, ex.WriteTimestamp, want)
			}
			vals := packed.Values(ex.Row.Packed)
			if got := packed.GoValue(vals[0]); got != int64(42) {
				t.Errorf("%s%s: id %v", tc.event, form, got)
			}
			if got := packed.GoValue(vals[7]); got != tc.note {
				t.Errorf("%s%s: note %#v, want %#v (a null is written null on a latest-value entry)", tc.event, form, got, tc.note)
			}
			if got := packed.GoValue(vals[8]); got != tc.event[:1] {
				t.Errorf("%s%s: op column %v", tc.event, form, got)
			}
		}
		ex, err := m.Explain(change(fixture(t, "delete"+form)))
		if err != nil {
			t.Fatalf("delete%s: %v", form, err)
		}
		if !ex.Delete || !ex.Row.Target.Delete || ex.Op != "d" {
			t.Fatalf("delete%s: not a delete: %+v", form, ex)
		}
		if want := int64(1700000002500*1000 + 7); ex.WriteTimestamp != want || ex.WriteTimestampSource != "event_time" {
			t.Errorf("delete%s: write timestamp %d (%s), want %d", form, ex.WriteTimestamp, ex.WriteTimestampSource, want)
		}
		if len(ex.PartitionKey) != 1 || ex.PartitionKey[0].Value != int64(42) || ex.PartitionKey[0].From != `before field "id"` {
			t.Errorf("delete%s: partition key %+v", form, ex.PartitionKey)
		}
		if ex.CQL != "DELETE FROM shop.accounts USING TIMESTAMP ? WHERE id = ?" {
			t.Errorf("delete%s: %s", form, ex.CQL)
		}
	}
	for _, value := range []string{"", `{"schema":null,"payload":null}`} {
		tomb := change([]byte(value))
		if value == "" {
			tomb.Value = nil
		}
		tomb.Key = fixture(t, "key.json")
		_, err := m.Map(tomb)
		if re := (*RecordError)(nil); !errors.As(err, &re) || re.Reason != ReasonTombstone || !Skipped(re.Reason) {
			t.Errorf("the tombstone %q after a delete: %v, want a skip of reason tombstone", value, err)
		}
	}
}

// TestDebeziumTransactionOrderedByOffset: an update and then a delete of one row in one database
// transaction share source.ts_ms; at offsets 999 and 1000 the upserts' tie (offset mod 1000) would put
// the delete (tie 0) below the update (tie 999), and the deleted row would come back. write_timestamp
// offset, an envelope latest-value entry's default, writes each at its offset: the delete wins.
func TestDebeziumTransactionOrderedByOffset(t *testing.T) {
	update := []byte(`{"before":null,"after":{"id":42,"balance":"1.00","note":"x"},"source":{"ts_ms":1700000001500,"lsn":9},"op":"u"}`)
	del := []byte(`{"before":{"id":42},"after":null,"source":{"ts_ms":1700000001500,"lsn":10},"op":"d"}`)
	at := func(value []byte, offset int64) Record {
		r := change(value)
		r.Offset = offset
		return r
	}
	for _, tc := range []struct {
		wts        string // "": the default
		deleteWins bool
	}{{"", true}, {config.WriteTimestampOffset, true}, {config.WriteTimestampEventTime, false}} {
		e := accountsEntry(true)
		e.WriteTimestamp = tc.wts
		m := accountsMapper(t, map[string]config.Topic{"accounts": e})
		u, err := m.Explain(at(update, 999))
		if err != nil {
			t.Fatalf("%q: update: %v", tc.wts, err)
		}
		d, err := m.Explain(at(del, 1000))
		if err != nil || !d.Delete {
			t.Fatalf("%q: delete: %v %+v", tc.wts, err, d)
		}
		if tc.wts != config.WriteTimestampEventTime {
			if u.WriteTimestamp != 999 || d.WriteTimestamp != 1000 || d.WriteTimestampSource != config.WriteTimestampOffset {
				t.Errorf("%q: update at %d, delete at %d (%s), want 999 and 1000 (offset)", tc.wts, u.WriteTimestamp, d.WriteTimestamp, d.WriteTimestampSource)
			}
		}
		// Cassandra lets a deletion win a tie of timestamps.
		if wins := d.WriteTimestamp >= u.WriteTimestamp; wins != tc.deleteWins {
			t.Errorf("write_timestamp %q: update at %d, delete at %d: the delete wins %v, want %v", tc.wts, u.WriteTimestamp, d.WriteTimestamp, wins, tc.deleteWins)
		}
	}
}

// TestDebeziumDeleteTakesTheKeyWhenBeforeLacksTheID: a delete whose before is null (or lacks the id)
// names its row by the Kafka key, a JSON object with or without the schema part.
func TestDebeziumDeleteTakesTheKeyWhenBeforeLacksTheID(t *testing.T) {
	m := accountsMapper(t, map[string]config.Topic{"accounts": accountsEntry(true)})
	for _, key := range []string{"key.json", "key.schema.json"} {
		r := change([]byte(`{"before":null,"after":null,"source":{"ts_ms":1700000002500,"lsn":9},"op":"d","ts_ms":1700000002600}`))
		r.Key = fixture(t, key)
		ex, err := m.Explain(r)
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		if !ex.Delete || ex.PartitionKey[0].Value != int64(42) || !strings.HasPrefix(ex.PartitionKey[0].From, `key field "id"`) {
			t.Errorf("%s: %+v", key, ex.PartitionKey)
		}
	}
	r := change([]byte(`{"before":null,"after":null,"source":{"ts_ms":1700000002500},"op":"d"}`))
	_, err := m.Map(r)
	if re := (*RecordError)(nil); !errors.As(err, &re) || re.Reason != ReasonMap || !strings.Contains(err.Error(), "neither before nor the Kafka key names the row") {
		t.Errorf("a delete with neither: %v", err)
	}
}

// TestDebeziumOpsOnABucketedEntry: c, r, u write a row of history; d is skipped (on_delete skip, the
// default: reason deleted) or dead-lettered (on_delete dead_letter); the tombstone is skipped either way.
func TestDebeziumOpsOnABucketedEntry(t *testing.T) {
	for _, onDelete := range []string{"", config.OnDeleteDeadLetter} {
		e := accountsEntry(false)
		e.OnDelete = onDelete
		m := accountsMapper(t, map[string]config.Topic{"history": e})
		for _, name := range []string{"create.schema.json", "read.json", "update.schema.json"} {
			ex, err := m.Explain(change(fixture(t, name)))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if ex.Delete || ex.Table != "accounts_history" || ex.Clustering[1].Value == nil {
				t.Errorf("%s: %+v", name, ex)
			}
		}
		_, err := m.Map(change(fixture(t, "delete.schema.json")))
		re := (*RecordError)(nil)
		if !errors.As(err, &re) {
			t.Fatalf("on_delete %q: the delete event mapped: %v", onDelete, err)
		}
		if onDelete == "" && (re.Reason != ReasonDeleted || !Skipped(re.Reason)) {
			t.Errorf("on_delete skip: %v (reason %s), want a skip of reason deleted", err, re.Reason)
		}
		if onDelete != "" && (re.Reason != ReasonMap || Skipped(re.Reason) || !strings.Contains(err.Error(), "on_delete is dead_letter")) {
			t.Errorf("on_delete dead_letter: %v (reason %s), want a dead letter", err, re.Reason)
		}
		if _, err := m.Map(change(nil)); !errors.As(err, &re) || re.Reason != ReasonTombstone {
			t.Errorf("on_delete %q: tombstone: %v", onDelete, err)
		}
	}
}

// TestDebeziumDeleteAsARowOfBefore: on_delete row writes a delete event as a row of its before image,
// at the delete's time, its op column saying d.
func TestDebeziumDeleteAsARowOfBefore(t *testing.T) {
	e := accountsEntry(false)
	e.OnDelete = config.OnDeleteRow
	m := accountsMapper(t, map[string]config.Topic{"history": e})
	ex, err := m.Explain(change(fixture(t, "delete.schema.json")))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range ex.Bound[:11] {
		got = append(got, v.Column+"="+v.Literal()+" "+v.From)
	}
	want := `id=42 before field "id"|balance=0.00 before field "balance"|opened_at=unset before field "opened_at"|` +
		`updated=unset before field "updated"|birth=unset before field "birth"|alarm=unset before field "alarm"|` +
		`amount=unset before field "amount"|note=unset before field "note"|op='d' change field "op"|` +
		`lsn=24023300 change field "source.lsn"|changed='2023-11-14T22:13:22.500Z' `
	if strings.Join(got, "|") != want || ex.Delete {
		t.Errorf("the delete's row:\n got %s\nwant %s", strings.Join(got, "|"), want)
	}
}

// TestDebeziumLatestAndHistoryFromOneTopic: MapAll maps a change for both entries of one topic: an
// upsert in each table; a delete in the latest-value table and a skip in the history.
func TestDebeziumLatestAndHistoryFromOneTopic(t *testing.T) {
	m := accountsMapper(t, map[string]config.Topic{"accounts": accountsEntry(true), "history": accountsEntry(false)})
	res, err := m.MapAll(context.Background(), change(fixture(t, "create.schema.json")), nil)
	if err != nil || len(res) != 2 || res[0].Err != nil || res[1].Err != nil {
		t.Fatalf("create: %v %+v", err, res)
	}
	if res[0].Row.Target.Table != "accounts" || res[1].Row.Target.Table != "accounts_history" {
		t.Errorf("tables %s, %s", res[0].Row.Target.Table, res[1].Row.Target.Table)
	}
	res, err = m.MapAll(context.Background(), change(fixture(t, "delete.json")), nil)
	if err != nil || len(res) != 2 || res[0].Err != nil || !res[0].Row.Target.Delete {
		t.Fatalf("delete: %v %+v", err, res)
	}
	if re := (*RecordError)(nil); !errors.As(res[1].Err, &re) || re.Reason != ReasonDeleted {
		t.Errorf("delete in history: %v", res[1].Err)
	}
}

// TestDebeziumBadEnvelopes: an event without op, with an op Debezium does not write for a row, a
// create without after, a value that is no JSON object: bad input (reason decode) naming the record.
func TestDebeziumBadEnvelopes(t *testing.T) {
	m := accountsMapper(t, map[string]config.Topic{"accounts": accountsEntry(true)})
	for _, tc := range []struct{ value, want string }{
		{`{"before":null,"after":{"id":1},"source":{"ts_ms":1}}`, "it has no op"},
		{`{"schema":null,"payload":{"after":{"id":1},"source":{"ts_ms":1}}}`, "it has no op"},
		{`{"op":"x","after":{"id":1},"source":{"ts_ms":1}}`, "not an op Debezium writes for a row"},
		{`{"op":7,"after":{"id":1},"source":{"ts_ms":1}}`, "op is a string"},
		{`{"op":"t","source":{"ts_ms":1}}`, "a truncate event (op t) names no row"},
		{`{"op":"c","after":null,"source":{"ts_ms":1}}`, "op c has no after"},
		{`{"op":"u","source":{"ts_ms":1}}`, "op u has no after"},
		{`[1,2]`, "not a JSON object"},
		{`{"schema":{},"payload":[1]}`, "its payload is not a JSON object"},
	} {
		_, err := m.Map(change([]byte(tc.value)))
		re := (*RecordError)(nil)
		if !errors.As(err, &re) || re.Reason != ReasonDecode || !strings.Contains(err.Error(), tc.want) ||
			!strings.HasPrefix(err.Error(), "topic pg.public.accounts partition 1 offset 5007: ") {
			t.Errorf("%s: %v, want reason decode and %q", tc.value, err, tc.want)
		}
	}
	// A schema part that cannot feed a column: reason schema.
	bad := strings.Replace(string(fixture(t, "create.schema.json")), `"name": "io.debezium.time.Date"`, `"name": "org.apache.kafka.connect.data.Decimal", "parameters": {"scale": "x"}`, -1)
	_, err := m.Map(change([]byte(bad)))
	if re := (*RecordError)(nil); !errors.As(err, &re) || re.Reason != ReasonSchema || !strings.Contains(err.Error(), `after field "birth"`) {
		t.Errorf("a schema with a bad scale: %v", err)
	}
}

// TestDebeziumSchemaVariantsAreKept: one compile per distinct schema part, bounded.
func TestDebeziumSchemaVariantsAreKept(t *testing.T) {
	m := accountsMapper(t, map[string]config.Topic{"accounts": accountsEntry(true)})
	e := m.byName["accounts"].env
	for range 3 {
		if _, err := m.Map(change(fixture(t, "create.schema.json"))); err != nil {
			t.Fatal(err)
		}
	}
	if len(e.schemas) != 1 {
		t.Errorf("%d variants after three records of one schema", len(e.schemas))
	}
	for i := range maxSchemaVariants + 5 {
		e.variant([]byte(fmt.Sprintf(`{"type":"struct","fields":[],"name":"v%d"}`, i)))
	}
	if len(e.schemas) != maxSchemaVariants {
		t.Errorf("%d variants kept, want at most %d", len(e.schemas), maxSchemaVariants)
	}
}

// BenchmarkMapDebezium maps an update event of the accounts table through a latest-value entry, with
// JsonConverter's schema part (its conversions kept per schema part) and without it.
func BenchmarkMapDebezium(b *testing.B) {
	for _, name := range []string{"update.schema.json", "update.json"} {
		b.Run(strings.TrimSuffix(name, ".json"), func(b *testing.B) {
			c := &config.Config{
				Kafka:     config.Kafka{Brokers: []string{"127.0.0.1:9092"}},
				Cassandra: config.Cassandra{Hosts: []string{"127.0.0.1"}, Keyspace: "shop"},
				Topics:    map[string]config.Topic{"accounts": accountsEntry(true)},
			}
			c.ApplyDefaults()
			m, err := New(c)
			if err != nil {
				b.Fatal(err)
			}
			value, err := os.ReadFile(filepath.Join("testdata", "debezium", name))
			if err != nil {
				b.Fatal(err)
			}
			r := change(value)
			b.ReportAllocs()
			b.SetBytes(int64(len(value)))
			for b.Loop() {
				if _, err := m.Map(r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestDebeziumAvroEnvelope: Debezium's envelope in Avro under the registry (Confluent's AvroConverter)
// maps as the JSON one does: after for c, u, r with Debezium's logical types read by their connect.name
// (MicroTimestamp, Date, MicroTime, VariableScaleDecimal; Connect's Decimal by Avro's decimal), a delete
// from before, the tombstone skipped, and an event without after refused.
func TestDebeziumAvroEnvelope(t *testing.T) {
	text := string(fixture(t, "envelope.avsc"))
	reg := &staticRegistry{schemas: map[int]*codec.Schema{9: {ID: 9, Type: "AVRO", Text: text}}}
	e := accountsEntry(true)
	e.Codec = config.CodecAvro
	c := &config.Config{
		Kafka:     config.Kafka{Brokers: []string{"127.0.0.1:9092"}},
		Cassandra: config.Cassandra{Hosts: []string{"127.0.0.1"}, Keyspace: "shop"},
		Topics:    map[string]config.Topic{"accounts": e},
	}
	m := registryMapper(t, c, reg)
	row := map[string]any{
		"id": int64(42), "balance": big.NewRat(123456, 100),
		"opened_at": goavro.Union("string", "2023-11-14T22:13:20.123456Z"),
		"updated":   goavro.Union("long", int64(1700000000123456)),
		"birth":     goavro.Union("int", int32(19675)),
		"alarm":     goavro.Union("long", int64(45296789012)),
		"amount":    goavro.Union("io.debezium.data.VariableScaleDecimal", map[string]any{"scale": int32(3), "value": []byte{0x30, 0x39}}),
		"note":      goavro.Union("string", "first"),
	}
	source := map[string]any{"version": "2.5.0.Final", "connector": "postgresql", "name": "pg", "ts_ms": int64(1700000000500),
		"db": "shop", "schema": "public", "table": "accounts", "txId": goavro.Union("long", int64(555)), "lsn": goavro.Union("long", int64(24023128))}
	event := func(op string, before, after map[string]any) []byte {
		native := map[string]any{"before": nil, "after": nil, "source": source, "op": op, "ts_ms": goavro.Union("long", int64(1700000000600))}
		if before != nil {
			native["before"] = goavro.Union("pg.public.accounts.Value", before)
		}
		if after != nil {
			native["after"] = goavro.Union("pg.public.accounts.Value", after)
		}
		return avroValue(t, text, 9, native)
	}
	ex, err := m.Explain(change(event("c", nil, row)))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range ex.Bound {
		got = append(got, v.Column+"="+v.Literal())
	}
	want := "id=42 balance=1234.56 opened_at='2023-11-14T22:13:20.123Z' updated='2023-11-14T22:13:20.123Z' birth='2023-11-14' " +
		"alarm=45296789012000 amount=12.345 note='first' op='c' lsn=24023128 changed='2023-11-14T22:13:20.500Z' [timestamp]=5007"
	if strings.Join(got, " ") != want {
		t.Errorf("create:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
	pk := map[string]any{"id": int64(42), "balance": big.NewRat(0, 1), "opened_at": nil, "updated": nil, "birth": nil, "alarm": nil, "amount": nil, "note": nil}
	ex, err = m.Explain(change(event("d", pk, nil)))
	if err != nil || !ex.Delete || ex.PartitionKey[0].Value != int64(42) || ex.WriteTimestamp != 5007 {
		t.Errorf("delete: %v %+v", err, ex)
	}
	for _, tc := range []struct {
		value []byte
		want  string
	}{
		{event("u", nil, nil), "op u has no after"},
		{event("x", nil, row), `not an op Debezium writes for a row`},
	} {
		_, err := m.Map(change(tc.value))
		if re := (*RecordError)(nil); !errors.As(err, &re) || re.Reason != ReasonDecode || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v", tc.want, err)
		}
	}
	if _, err := m.Map(change(nil)); !errors.As(err, new(*RecordError)) || !strings.Contains(err.Error(), "tombstone that follows a Debezium delete") {
		t.Errorf("tombstone: %v", err)
	}
}

// TestDebeziumMessagesNameTheImage: a value that does not fit, or a missing id, is named by the part of
// the event it was read from (after field, before field, change field).
func TestDebeziumMessagesNameTheImage(t *testing.T) {
	m := accountsMapper(t, map[string]config.Topic{"accounts": accountsEntry(true)})
	for _, tc := range []struct{ value, want string }{
		{`{"op":"c","after":{"id":1,"balance":"x"},"source":{"ts_ms":1}}`, `column balance: after field "balance"`},
		{`{"op":"u","after":{"balance":"1"},"source":{"ts_ms":1}}`, `column id: after field "id" is missing, and an id column needs a value`},
		{`{"op":"c","after":{"id":1},"source":{"ts_ms":1,"lsn":"x"}}`, `column lsn: change field "source.lsn"`},
		{`{"op":"c","after":{"id":1},"source":{}}`, `event time: field "source.ts_ms" is missing`},
		{`{"op":"d","before":{"id":"x"},"source":{"ts_ms":1}}`, `column id: before field "id"`},
		// Without the schema part a Decimal in Debezium's precise encoding (base64) has no scale to read it by.
		{`{"op":"c","after":{"id":1,"balance":"AeJA"},"source":{"ts_ms":1}}`, `column balance: after field "balance" is not a number for CQL decimal`},
	} {
		_, err := m.Map(change([]byte(tc.value)))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.value, err, tc.want)
		}
	}
}

// FuzzDebeziumEnvelope maps any value through a latest-value and a bucketed envelope entry: each gives a
// row or a *RecordError, never a panic, and a row only for an event with an op.
func FuzzDebeziumEnvelope(f *testing.F) {
	for _, name := range []string{"create.schema.json", "update.json", "delete.schema.json", "delete.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", "debezium", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"op":"c","after":{"id":1,"birth":-99999999999},"source":{"ts_ms":1}}`))
	f.Add([]byte(`{"schema":{"type":"struct","fields":[{"field":"after","type":"struct","fields":[{"field":"amount","name":"io.debezium.data.VariableScaleDecimal","type":"struct"}]}]},"payload":{"op":"c","after":{"id":1,"amount":{"value":"AQ=="}},"source":{"ts_ms":1}}}`))
	c := &config.Config{
		Kafka:     config.Kafka{Brokers: []string{"127.0.0.1:9092"}},
		Cassandra: config.Cassandra{Hosts: []string{"127.0.0.1"}, Keyspace: "shop"},
		Topics:    map[string]config.Topic{"accounts": accountsEntry(true), "history": accountsEntry(false)},
	}
	c.ApplyDefaults()
	m, err := New(c)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, value []byte) {
		res, err := m.MapAll(context.Background(), change(value), nil)
		if err != nil {
			t.Fatalf("%q: %v", value, err)
		}
		for _, r := range res {
			if re := (*RecordError)(nil); r.Err != nil && !errors.As(r.Err, &re) {
				t.Fatalf("%q: %s: %v is no RecordError", value, r.Entry, r.Err)
			}
			if r.Err == nil && !strings.Contains(string(value), `"op"`) {
				t.Fatalf("%q: %s mapped an event without an op", value, r.Entry)
			}
		}
	})
}
