package pipeline

import (
	"context"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"github.com/linkedin/goavro/v2"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"gopkg.in/inf.v0"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/codec/registry"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/internal/testenv"
	"github.com/bucketsink/sink/mapper"
	"github.com/bucketsink/sink/pipeline/deadletter"
)

// The integration tests of the schema-registry formats (issue 24): the pipeline reads Avro and JSON
// Schema topics through the real registry of the stack (SINK_TEST_REGISTRY), Kafka and Cassandra. The
// Avro records are encoded with goavro, another library than the decoder's own.

// formatsColumns are the columns of every formats test table: one of each kind the logical types
// feed, a nullable one, and a nested field.
var formatsColumns = []config.Column{
	{Name: "device_id", Type: "text", Field: "device_id"},
	{Name: "ts", Type: "timestamp", Source: "event_time"},
	{Name: "value", Type: "double", Field: "value", Required: true},
	{Name: "amount", Type: "decimal", Field: "amount"},
	{Name: "day", Type: "date", Field: "day"},
	{Name: "uid", Type: "uuid", Field: "uid"},
	{Name: "note", Type: "text", Field: "note"},
	{Name: "site", Type: "text", Field: "site.id"},
}

// readingV1 is the writer schema the formats tests start with.
const readingV1 = `{"type": "record", "name": "Reading", "namespace": "it.formats", "fields": [
	{"name": "device_id", "type": "string"},
	{"name": "ts", "type": {"type": "long", "logicalType": "timestamp-micros"}},
	{"name": "value", "type": "double"},
	{"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 3}},
	{"name": "day", "type": {"type": "int", "logicalType": "date"}},
	{"name": "uid", "type": {"type": "string", "logicalType": "uuid"}},
	{"name": "note", "type": ["null", "string"], "default": null},
	{"name": "site", "type": {"type": "record", "name": "Site", "fields": [{"name": "id", "type": "string"}]}}
]}`

// readingV2 adds a field with a default: compatible both ways with readingV1.
var readingV2 = strings.Replace(readingV1, `{"name": "device_id", "type": "string"},`,
	`{"name": "device_id", "type": "string"}, {"name": "firmware", "type": "string", "default": "unknown"},`, 1)

// readingNoValue drops the configured field value: no topic reading it can use this schema.
var readingNoValue = strings.Replace(readingV1, `{"name": "value", "type": "double"},`, ``, 1)

// readingJSONSchema is the JSON Schema of the same event.
const readingJSONSchema = `{"type": "object", "additionalProperties": false, "properties": {
	"device_id": {"type": "string"}, "ts": {"type": "string"}, "value": {"type": "number"},
	"amount": {"type": "number"}, "day": {"type": "string"}, "uid": {"type": "string"},
	"note": {"type": "string"}, "site": {"type": "object", "properties": {"id": {"type": "string"}}}}}`

// event is one sensor event of the formats tests.
type event struct {
	i      int
	device string
	ts     time.Time // microsecond precision
	value  float64
	amount string // exact, 3 decimals
	day    time.Time
	uid    string
	note   *string // nil: absent (JSON) / null (Avro)
	site   string
}

func formatsEvents(from, n int) []event {
	out := make([]event, 0, n)
	for i := from; i < from+n; i++ {
		e := event{i: i, device: fmt.Sprintf("dev-%02d", i%5), ts: itBase.Add(time.Duration(i)*2*time.Second + 123456*time.Microsecond),
			value: float64(i) + 0.25, amount: fmt.Sprintf("%d.050", i), day: itBase.AddDate(0, 0, i),
			uid: fmt.Sprintf("6ba7b810-9dad-41d1-80b4-%012d", i), site: fmt.Sprintf("site-%d", i%3)}
		if i%3 != 0 {
			note := fmt.Sprintf("note %d", i)
			e.note = &note
		}
		out = append(out, e)
	}
	return out
}

func (e event) json() []byte {
	b := fmt.Appendf(nil, `{"device_id":%q,"ts":%q,"value":%v,"amount":%s,"day":%q,"uid":%q,"site":{"id":%q}`,
		e.device, e.ts.Format(time.RFC3339Nano), e.value, e.amount, e.day.Format(time.DateOnly), e.uid, e.site)
	if e.note != nil {
		b = fmt.Appendf(b, `,"note":%q`, *e.note)
	}
	return append(b, '}')
}

// avro encodes e with schema text (readingV1 or one of its versions) in the wire format of schema id id.
func (e event) avro(t *testing.T, text string, id int) []byte {
	t.Helper()
	c, err := goavro.NewCodec(text)
	if err != nil {
		t.Fatal(err)
	}
	amount, ok := new(big.Rat).SetString(e.amount)
	if !ok {
		t.Fatal(e.amount)
	}
	native := map[string]any{
		"device_id": e.device, "ts": e.ts, "value": e.value, "amount": amount, "day": e.day, "uid": e.uid,
		"note": nil, "site": map[string]any{"id": e.site}, "firmware": "2.0",
	}
	if e.note != nil {
		native["note"] = goavro.Union("string", *e.note)
	}
	v, err := c.BinaryFromNative(codec.AppendFrame(nil, id, nil), native)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// formatsTopic is a topic of the formats tests reading codec into its own table.
func formatsTopic(kafkaTopic, table, codecName, dlq string) config.Topic {
	return config.Topic{
		Topic: kafkaTopic, Codec: codecName, ID: []string{"device_id"},
		Time:    config.EventTime{Source: "field", Field: "ts", Format: "rfc3339"},
		Bucket:  config.Bucket{Width: "1h", Key: "text"},
		Table:   table,
		Columns: formatsColumns, Clustering: []config.Clustering{{Column: "ts", Order: "desc"}},
		DeadLetterTopic: dlq,
	}
}

// newFormatsStack is a stack whose topic readings is read with codec from the registry at url.
func newFormatsStack(t *testing.T, url, codecName string, extra func(s *config.Config)) *stack {
	t.Helper()
	return newStackWith(t, 3, nil, func(c *config.Config) {
		tp := formatsTopic(c.Topics["readings"].Topic, "readings", codecName, c.Topics["readings"].DeadLetterTopic)
		c.Topics["readings"] = tp
		c.SchemaRegistry = config.SchemaRegistry{URLs: []string{url}}
		if extra != nil {
			extra(c)
		}
	})
}

func newRegistry(t *testing.T, url string) *registry.Client {
	t.Helper()
	reg, err := registry.New(config.SchemaRegistry{URLs: []string{url}, Timeout: config.Duration(10 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// register registers text of type typ under subject and returns its id.
func register(t *testing.T, reg *registry.Client, subject string, typ sr.SchemaType, text string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ss, err := reg.SR().CreateSchema(ctx, subject, sr.Schema{Schema: text, Type: typ})
	if err != nil {
		t.Fatalf("registering %s: %v", subject, err)
	}
	return ss.ID
}

// produceEvents produces values (one per event, in order) to topic, each with its event's device as key,
// partition i % 3 and the Kafka timestamp ts + 1 s, and returns them as itRecords (bad: the expected
// dead-letter reason, "" for good ones).
func (s *stack) produceEvents(topic string, evs []event, value func(e event) []byte, bad func(e event) string) []*itRecord {
	s.t.Helper()
	krs := make([]*kgo.Record, len(evs))
	recs := make([]*itRecord, len(evs))
	for i, e := range evs {
		recs[i] = &itRecord{device: e.device, ts: e.ts.Truncate(time.Millisecond), value: value(e), partition: int32(e.i % 3)}
		if bad != nil {
			recs[i].bad = bad(e)
		}
		krs[i] = &kgo.Record{Topic: topic, Partition: recs[i].partition, Key: []byte(e.device), Value: recs[i].value,
			Timestamp: e.ts.Add(time.Second)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	results := s.cl.ProduceSync(ctx, krs...)
	if err := results.FirstErr(); err != nil {
		s.t.Fatalf("producing: %v", err)
	}
	index := make(map[*kgo.Record]*itRecord, len(krs))
	for i, kr := range krs {
		index[kr] = recs[i]
	}
	for _, res := range results {
		r := index[res.Record]
		r.offset = res.Record.Offset
	}
	if topic == s.topic {
		s.recsMu.Lock()
		for _, r := range recs {
			s.produced[r.partition] = max(s.produced[r.partition], r.offset+1)
		}
		s.recs = append(s.recs, recs...)
		s.recsMu.Unlock()
	}
	return recs
}

// tableRows reads every row of table, each as one line of text: its columns and the write timestamp.
func (s *stack) tableRows(table string) []string {
	s.t.Helper()
	iter := s.session.Driver().Query("SELECT device_id, bucket, ts, value, amount, day, uid, note, site, WRITETIME(value) FROM " +
		s.ks + "." + table).PageSize(5000).IterContext(context.Background())
	var out []string
	var (
		device, bucket, site string
		note                 *string
		ts, day              time.Time
		value                float64
		amount               *inf.Dec
		uid                  gocql.UUID
		wts                  int64
	)
	for iter.Scan(&device, &bucket, &ts, &value, &amount, &day, &uid, &note, &site, &wts) {
		n := "null"
		if note != nil {
			n = *note
		}
		out = append(out, fmt.Sprintf("%s|%s|%s|%v|%s|%s|%s|%s|%s|%d", device, bucket, ts.UTC().Format(time.RFC3339Nano),
			value, amount, day.Format(time.DateOnly), uid, n, site, wts))
	}
	if err := iter.Close(); err != nil {
		s.t.Fatalf("reading %s.%s: %v", s.ks, table, err)
	}
	slices.Sort(out)
	return out
}

// wantRows is what tableRows must read for evs, produced as recs: every value exactly as produced, and
// the write timestamp of write_timestamp kafka (the Kafka timestamp in microseconds plus offset mod 1000).
func (s *stack) wantRows(evs []event, recs []*itRecord) []string {
	var out []string
	for i, e := range evs {
		n := "null"
		if e.note != nil {
			n = *e.note
		}
		ts := e.ts.Truncate(time.Millisecond)
		out = append(out, fmt.Sprintf("%s|%s|%s|%v|%s|%s|%s|%s|%s|%d", e.device, s.policy.Text(s.policy.Index(ts)),
			ts.Format(time.RFC3339Nano), e.value, e.amount, e.day.Format(time.DateOnly), e.uid, n, e.site,
			e.ts.Add(time.Second).UnixMilli()*1000+recs[i].offset%1000))
	}
	slices.Sort(out)
	return out
}

func (s *stack) waitForRows(table string, n int) {
	s.t.Helper()
	s.waitFor(2*time.Minute, fmt.Sprintf("%d rows in %s", n, table), func() bool {
		var got int
		if err := s.session.Driver().Query("SELECT COUNT(*) FROM " + s.ks + "." + table).Scan(&got); err != nil {
			return false
		}
		return got >= n
	})
}

// TestIntegrationAvroAndJSONSchemaRowsEqualTheJSONRows: the same 60 events produced as JSON, as Avro
// (encoded by goavro) and as JSON Schema, each to its own topic and table, become identical rows (same
// partition, columns and write timestamp), and every value reads back exactly as produced: decimal with
// its scale, timestamp, date, uuid, and a nullable field left unset (null) when the event has none.
func TestIntegrationAvroAndJSONSchemaRowsEqualTheJSONRows(t *testing.T) {
	url := testenv.Registry(t)
	reg := newRegistry(t, url)
	var plainTopic, framedTopic string
	s := newFormatsStack(t, url, config.CodecAvro, func(c *config.Config) {
		plainTopic, framedTopic = c.Topics["readings"].Topic+"_json", c.Topics["readings"].Topic+"_jsonschema"
		c.Topics["plain"] = formatsTopic(plainTopic, "plain", config.CodecJSON, "")
		c.Topics["framed"] = formatsTopic(framedTopic, "framed", config.CodecJSONSchema, "")
	})
	subject := testenv.Name(t, "reading")
	avroID := register(t, reg, subject+"-value", sr.TypeAvro, readingV1)
	jsonID := register(t, reg, subject+"-json-value", sr.TypeJSON, readingJSONSchema)

	evs := formatsEvents(0, 60)
	recs := s.produceEvents(plainTopic, evs, event.json, nil)
	s.produceEvents(s.topic, evs, func(e event) []byte { return e.avro(t, readingV1, avroID) }, nil)
	s.produceEvents(framedTopic, evs, func(e event) []byte { return append(codec.AppendFrame(nil, jsonID, nil), e.json()...) }, nil)
	m := s.start(nil)
	for _, table := range []string{"plain", "readings", "framed"} {
		s.waitForRows(table, len(evs))
	}
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	want := s.wantRows(evs, recs) // the same offsets in each topic: the same partitions, in the same order
	for _, table := range []string{"plain", "readings", "framed"} {
		if got := s.tableRows(table); !slices.Equal(got, want) {
			t.Errorf("%s holds\n  %s\nwant\n  %s", table, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
	}
}

// TestIntegrationAvroSchemaEvolutionWithoutRestart: mid-stream a compatible new version of the writer
// schema is picked up by the running pipeline; a version without a configured field dead-letters exactly
// its own records with reason schema, naming the schema id, the field and the column, and the partition
// goes on with the records after them.
func TestIntegrationAvroSchemaEvolutionWithoutRestart(t *testing.T) {
	url := testenv.Registry(t)
	reg := newRegistry(t, url)
	s := newFormatsStack(t, url, config.CodecAvro, nil)
	subject := testenv.Name(t, "reading") + "-value"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, r := range reg.SR().SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatFull}, subject) {
		if r.Err != nil {
			t.Fatalf("setting FULL compatibility on %s: %v", subject, r.Err)
		}
	}
	v1 := register(t, reg, subject, sr.TypeAvro, readingV1)
	m := s.start(nil)
	s.produceEvents(s.topic, formatsEvents(0, 20), func(e event) []byte { return e.avro(t, readingV1, v1) }, nil)
	s.waitFor(2*time.Minute, "the v1 records", s.allCommitted)

	v2 := register(t, reg, subject, sr.TypeAvro, readingV2)
	if v2 == v1 {
		t.Fatal("the registry gave the compatible version the same id")
	}
	s.produceEvents(s.topic, formatsEvents(20, 20), func(e event) []byte { return e.avro(t, readingV2, v2) }, nil)
	s.waitFor(2*time.Minute, "the v2 records", s.allCommitted)

	// FULL compatibility refuses the version without value under the subject; a producer using another
	// subject (or a registry without checks) can still write it.
	noValue := register(t, reg, subject+"-novalue", sr.TypeAvro, readingNoValue)
	s.produceEvents(s.topic, formatsEvents(40, 10), func(e event) []byte { return e.avro(t, readingNoValue, noValue) },
		func(event) string { return mapper.ReasonSchema })
	s.produceEvents(s.topic, formatsEvents(50, 10), func(e event) []byte { return e.avro(t, readingV2, v2) }, nil)
	s.waitFor(2*time.Minute, "every record after the incompatible ones", s.allCommitted)
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	s.checkPlacement()
	s.checkDeadLetters(true)
	wantMsg := fmt.Sprintf(`schema id %d, field "value" (column value)`, noValue)
	for _, r := range s.dlqRecords() {
		if msg := header(r, deadletter.HeaderError); !strings.Contains(msg, wantMsg) {
			t.Errorf("dead letter error %q, want it to say %q", msg, wantMsg)
		}
	}
	var good []event
	var goodRecs []*itRecord
	for i, e := range formatsEvents(0, 60) {
		if r := s.recs[i]; r.bad == "" {
			good, goodRecs = append(good, e), append(goodRecs, r)
		}
	}
	if got, want := s.tableRows("readings"), s.wantRows(good, goodRecs); !slices.Equal(got, want) {
		t.Errorf("readings holds\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// TestIntegrationBadFramingAndBodiesAreDeadLetteredAndThePartitionGoesOn: a value with the wrong magic
// byte, framing cut short, an id the registry does not have and an Avro body shorter than its schema are
// each dead-lettered with their reason (decode, decode, schema, decode); the good records around them of
// the same partitions are written.
func TestIntegrationBadFramingAndBodiesAreDeadLetteredAndThePartitionGoesOn(t *testing.T) {
	url := testenv.Registry(t)
	reg := newRegistry(t, url)
	s := newFormatsStack(t, url, config.CodecAvro, nil)
	v1 := register(t, reg, testenv.Name(t, "reading")+"-value", sr.TypeAvro, readingV1)
	evs := formatsEvents(0, 48)
	kinds := []string{"magic", "framing", "unknown id", "short body"}
	s.produceEvents(s.topic, evs, func(e event) []byte {
		good := e.avro(t, readingV1, v1)
		if e.i%6 != 5 {
			return good
		}
		switch kinds[(e.i/6)%len(kinds)] {
		case "magic":
			return e.json()
		case "framing":
			return good[:3]
		case "unknown id":
			return append(codec.AppendFrame(nil, 1<<30+e.i, nil), good[5:]...)
		default:
			return good[:len(good)-4]
		}
	}, func(e event) string {
		if e.i%6 != 5 {
			return ""
		}
		if kinds[(e.i/6)%len(kinds)] == "unknown id" {
			return mapper.ReasonSchema
		}
		return mapper.ReasonDecode
	})
	m := s.start(nil)
	s.waitFor(2*time.Minute, "every record", s.allCommitted)
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	s.checkPlacement()
	s.checkDeadLetters(true)
	for _, r := range s.dlqRecords() {
		msg := header(r, deadletter.HeaderError)
		if !strings.Contains(msg, "wrong magic byte") && !strings.Contains(msg, "framing cut short") &&
			!strings.Contains(msg, "has no schema with this id") && !strings.Contains(msg, "shorter than its writer schema") {
			t.Errorf("dead letter error %q does not say what is wrong", msg)
		}
	}
}

// TestIntegrationRegistryOutageLosesNothingAndThePartitionResumes: the test's own registry is stopped
// for 30 s while records of a schema id the pipeline has not seen yet arrive. They wait (nothing is
// dead-lettered or skipped, the retries are counted), and once the registry serves again every record
// is written without a restart.
func TestIntegrationRegistryOutageLosesNothingAndThePartitionResumes(t *testing.T) {
	priv := testenv.StartPrivateRegistry(t)
	reg := newRegistry(t, priv.URL)
	s := newFormatsStack(t, priv.URL, config.CodecAvro, nil)
	subject := testenv.Name(t, "reading") + "-value"
	v1 := register(t, reg, subject, sr.TypeAvro, readingV1)
	v2 := register(t, reg, subject, sr.TypeAvro, readingV2)
	m := s.start(nil)
	s.produceEvents(s.topic, formatsEvents(0, 30), func(e event) []byte { return e.avro(t, readingV1, v1) }, nil)
	s.waitFor(2*time.Minute, "the records of the first schema", s.allCommitted)

	if err := priv.Stop(); err != nil {
		t.Fatal(err)
	}
	s.produceEvents(s.topic, formatsEvents(30, 30), func(e event) []byte { return e.avro(t, readingV2, v2) }, nil)
	time.Sleep(30 * time.Second)
	retries := testutil.ToFloat64(m.metrics.RegistryRetries.WithLabelValues(s.topic))
	if retries == 0 {
		t.Error("sink_schema_registry_retries_total is 0 after 30 s without a registry")
	}
	if s.allCommitted() {
		t.Error("every offset committed while the registry was down")
	}
	if err := priv.Start(); err != nil {
		t.Fatal(err)
	}
	s.waitFor(3*time.Minute, "every record after the registry came back", s.allCommitted)
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	s.checkPlacement()
	if dls := s.dlqRecords(); len(dls) != 0 {
		t.Errorf("%d dead letters, want none: the registry being down is not the records' fault", len(dls))
	}
	t.Logf("%v registry retries while it was down", retries)
}
