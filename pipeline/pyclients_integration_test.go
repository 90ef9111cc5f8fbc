package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"gopkg.in/inf.v0"

	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/internal/testenv"
	"github.com/bucketsink/sink/mapper"
	"github.com/bucketsink/sink/pipeline/deadletter"
)

// The Python client test: Confluent's own serializers (confluent-kafka from PyPI, in the environment
// scripts/pyclients makes) produce the events an outside client would, registering their schemas themselves,
// and the sink must read them as it reads the same events in plain JSON. The producer is
// testdata/pyclients/produce.py; its schemas (Avro, .proto files compiled by protoc at test time, JSON Schema)
// are beside it.

// pyColumns are the formats tests' columns (one per kind of value the serializers write, a nullable one, a
// nested field) and an enum's and a second timestamp's.
var pyColumns = append(slices.Clip(formatsColumns),
	config.Column{Name: "kind", Type: "text", Field: "kind"},
	config.Column{Name: "born", Type: "timestamp", Field: "born"})

// pyEvent is one event of the Python client test. Numbers are kept as the JSON text they are written with, so
// each codec is fed the exact value: a decimal with its scale, -0.0 with its sign.
type pyEvent struct {
	i      int
	device string
	ts     time.Time // the event time, microsecond precision
	value  string    // a JSON number
	amount string    // a JSON number with 3 decimals (the Avro schema's scale)
	day    string    // YYYY-MM-DD
	uid    string
	note   *string // nil: absent (JSON), null (Avro), unset (Protobuf)
	site   string
	kind   string    // a symbol of the Kind enum
	born   time.Time // millisecond precision
	// noAmount: written with the JSON Schema version that no longer declares amount (JSON Schema only).
	noAmount bool
}

// pyTime is how the events file writes times: RFC 3339 with six fraction digits, which every Python 3's
// datetime.fromisoformat reads.
const pyTime = "2006-01-02T15:04:05.000000Z07:00"

var pyEpoch = time.UnixMilli(0).UTC()

// pyEvents are n events over three partitions; the first ones hold the edge values: event times and
// timestamps on both sides of the epoch (negative milliseconds), dates from year 1 to 9999, -0.0, the largest
// and smallest doubles, decimals of both signs at the schema's precision, the nil and the all-ones UUID, an empty
// and a non-ASCII note. A Kafka timestamp is its event time plus a second, so even the 1969 events have one.
func pyEvents(from, n int) []pyEvent {
	kinds := []string{"KIND_UNSPECIFIED", "GAUGE", "COUNTER"}
	out := make([]pyEvent, 0, n)
	for i := from; i < from+n; i++ {
		e := pyEvent{i: i, device: fmt.Sprintf("dev-%02d", i%4),
			ts:    itBase.Add(time.Duration(i)*2*time.Second + 123456*time.Microsecond),
			value: fmt.Sprintf("%d.25", i), amount: fmt.Sprintf("%d.050", i),
			day: itBase.AddDate(0, 0, i).Format(time.DateOnly), uid: fmt.Sprintf("6ba7b810-9dad-41d1-80b4-%012d", i),
			site: fmt.Sprintf("site-%d", i%3), kind: kinds[i%3], born: pyEpoch.AddDate(0, 0, i).Add(time.Duration(i) * time.Millisecond)}
		if i%3 != 0 {
			note := fmt.Sprintf("note %d", i)
			e.note = &note
		}
		switch i {
		case 0:
			e.ts, e.value, e.amount, e.day = pyEpoch.Add(-time.Millisecond), "-0.0", "-0.050", "0001-01-01"
			e.uid, e.born = "00000000-0000-0000-0000-000000000000", time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
		case 1:
			e.ts, e.value, e.amount, e.day = pyEpoch, "0.0", "0.000", "1969-12-31"
			e.uid, e.born = "ffffffff-ffff-ffff-ffff-ffffffffffff", pyEpoch.Add(-time.Millisecond)
			empty := ""
			e.note = &empty
		case 2:
			e.ts, e.value, e.amount, e.day = pyEpoch.Add(time.Millisecond), "1.7976931348623157e+308", "999999999.999", "1970-01-01"
			e.born = pyEpoch.Add(time.Millisecond)
			note := "naïve ☃ 2"
			e.note = &note
		case 3:
			e.ts, e.value, e.amount, e.day = pyEpoch.Add(-999*time.Millisecond), "-273.15", "-999999999.999", "9999-12-31"
			e.born = time.Date(1969, 7, 20, 20, 17, 40, 0, time.UTC)
		case 4:
			e.value, e.amount, e.born = "4.9e-324", "0.001", time.Date(9999, 12, 31, 23, 59, 59, 999e6, time.UTC)
		case 5:
			e.value, e.born = "-1.5e-7", pyEpoch.Add(-time.Second)
		}
		out = append(out, e)
	}
	return out
}

func (e pyEvent) partition() int32     { return int32(e.i % 3) }
func (e pyEvent) kafkaTime() time.Time { return e.ts.Add(time.Second) }
func (e pyEvent) rowTime() time.Time   { return e.ts.Truncate(time.Millisecond) }
func (e pyEvent) valueFloat() float64  { v, _ := strconv.ParseFloat(e.value, 64); return v }
func (e pyEvent) bornText() string     { return e.born.Format(pyTime) }
func (e pyEvent) tsText() string       { return e.ts.Format(pyTime) }

// orNull is a nullable text column as pyRow and pyRows write it.
func orNull(p *string) string {
	if p == nil {
		return "null"
	}
	return *p
}

// json is the event as the json codec reads it, and as the producer's "value".
func (e pyEvent) json() []byte {
	b := fmt.Appendf(nil, `{"device_id":%q,"ts":%q,"value":%s`, e.device, e.tsText(), e.value)
	if !e.noAmount {
		b = fmt.Appendf(b, `,"amount":%s`, e.amount)
	}
	b = fmt.Appendf(b, `,"day":%q,"uid":%q`, e.day, e.uid)
	if e.note != nil {
		b = fmt.Appendf(b, `,"note":%q`, *e.note)
	}
	return fmt.Appendf(b, `,"site":{"id":%q},"kind":%q,"born":%q}`, e.site, e.kind, e.bornText())
}

// pyRow is the row an event must become, in the form pyRows reads rows: every column, and the write timestamp
// of write_timestamp kafka (the Kafka timestamp in microseconds plus the offset mod 1000).
func (s *stack) pyRow(e pyEvent, offset int64) string {
	ts := e.rowTime()
	return fmt.Sprintf("%s|%s|%s|%v|%s|%s|%s|%s|%s|%s|%s|%d", e.device, s.policy.Text(s.policy.Index(ts)),
		ts.Format(time.RFC3339Nano), e.valueFloat(), e.amount, e.day, e.uid, orNull(e.note), e.site, e.kind,
		e.born.Format(time.RFC3339Nano), e.kafkaTime().UnixMilli()*1000+offset%1000)
}

// pyRows reads every row of table in the form of pyRow, sorted.
func (s *stack) pyRows(table string) []string {
	s.t.Helper()
	iter := s.session.Driver().Query("SELECT device_id, bucket, ts, value, amount, day, uid, note, site, kind, born, WRITETIME(value) FROM " +
		s.ks + "." + table).PageSize(5000).IterContext(context.Background())
	var (
		out                        []string
		device, bucket, site, kind string
		note                       *string
		ts, day, born              time.Time
		value                      float64
		amount                     *inf.Dec
		uid                        gocql.UUID
		wts                        int64
	)
	for iter.Scan(&device, &bucket, &ts, &value, &amount, &day, &uid, &note, &site, &kind, &born, &wts) {
		out = append(out, fmt.Sprintf("%s|%s|%s|%v|%s|%s|%s|%s|%s|%s|%s|%d", device, bucket, ts.UTC().Format(time.RFC3339Nano),
			value, amount, day.UTC().Format(time.DateOnly), uid, orNull(note), site, kind, born.UTC().Format(time.RFC3339Nano), wts))
	}
	if err := iter.Close(); err != nil {
		s.t.Fatalf("reading %s.%s: %v", s.ks, table, err)
	}
	slices.Sort(out)
	return out
}

// pyLine is one line of the producer's events file.
type pyLine struct {
	Key       any             `json:"key"` // text, or an object of the --key-schema
	Partition int32           `json:"partition"`
	Timestamp int64           `json:"timestamp"`
	Value     json.RawMessage `json:"value"`
	Schema    string          `json:"schema,omitempty"`
}

// produceJSON produces evs as plain JSON (the reference the other formats are held to) and returns their offsets.
func (s *stack) produceJSON(topic string, evs []pyEvent) []int64 {
	s.t.Helper()
	krs := make([]*kgo.Record, len(evs))
	for i, e := range evs {
		krs[i] = &kgo.Record{Topic: topic, Partition: e.partition(), Key: []byte(e.device), Value: e.json(), Timestamp: e.kafkaTime()}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.cl.ProduceSync(ctx, krs...).FirstErr(); err != nil {
		s.t.Fatalf("producing: %v", err)
	}
	offsets := make([]int64, len(krs))
	for i, kr := range krs {
		offsets[i] = kr.Offset
	}
	return offsets
}

// producePython runs testdata/pyclients/produce.py with python to produce evs to topic in format (avro,
// protobuf or json) and returns the offset of each event's record. Keys are the devices' text.
func producePython(python, brokers, registry, topic, format string, evs []pyEvent) ([]int64, error) {
	return producePythonKeyed(python, brokers, registry, topic, format, evs, "", nil)
}

// producePythonKeyed is producePython whose keys, with keySchema (an Avro schema file of testdata/pyclients),
// are key(e), serialized by AvroSerializer.
func producePythonKeyed(python, brokers, registry, topic, format string, evs []pyEvent, keySchema string, key func(pyEvent) any) ([]int64, error) {
	dir, err := os.MkdirTemp("", "pyclients-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	var file bytes.Buffer
	enc := json.NewEncoder(&file)
	for _, e := range evs {
		l := pyLine{Key: e.device, Partition: e.partition(), Timestamp: e.kafkaTime().UnixMilli(), Value: e.json()}
		if key != nil {
			l.Key = key(e)
		}
		if e.noAmount {
			l.Schema = "reading-noamount.schema.json"
		}
		if err := enc.Encode(l); err != nil {
			return nil, err
		}
	}
	events := filepath.Join(dir, "events.jsonl")
	if err := os.WriteFile(events, file.Bytes(), 0o600); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args := []string{filepath.Join("testdata", "pyclients", "produce.py"), "--bootstrap", brokers,
		"--registry", registry, "--topic", topic, "--format", format, "--events", events}
	if keySchema != "" {
		args = append(args, "--key-schema", keySchema)
	}
	cmd := exec.CommandContext(ctx, python, args...)
	cmd.Env = append(os.Environ(), "TMPDIR="+dir) // protoc's generated classes go there, removed with it
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("produce.py --format %s: %w\n%s", format, err, stderr.Bytes())
	}
	offsets := make([]int64, len(evs))
	seen := 0
	for line := range strings.SplitSeq(strings.TrimSpace(stdout.String()), "\n") {
		var r struct {
			Line      int   `json:"line"`
			Partition int32 `json:"partition"`
			Offset    int64 `json:"offset"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil || r.Line < 0 || r.Line >= len(evs) {
			return nil, fmt.Errorf("produce.py --format %s printed %q", format, line)
		}
		if r.Partition != evs[r.Line].partition() {
			return nil, fmt.Errorf("produce.py --format %s: line %d went to partition %d, not %d", format, r.Line, r.Partition, evs[r.Line].partition())
		}
		offsets[r.Line] = r.Offset
		seen++
	}
	if seen != len(evs) {
		return nil, fmt.Errorf("produce.py --format %s reported %d of %d records", format, seen, len(evs))
	}
	return offsets, nil
}

// readBack reads topic from its start to its end and returns the records by partition and offset.
func (s *stack) readBack(topic string) map[[2]int64]*kgo.Record {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ends, err := s.adm.ListEndOffsets(ctx, topic)
	if err != nil {
		s.t.Fatal(err)
	}
	var want int64
	ends.Each(func(o kadm.ListedOffset) { want += o.Offset })
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.cfg.Kafka.Brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		s.t.Fatal(err)
	}
	defer cl.Close()
	out := make(map[[2]int64]*kgo.Record)
	for int64(len(out)) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			s.t.Fatalf("read %d of %d records of %s", len(out), want, topic)
		}
		fs.EachRecord(func(r *kgo.Record) { out[[2]int64{int64(r.Partition), r.Offset}] = r })
	}
	return out
}

// TestIntegrationConfluentPythonSerializersRowsEqualTheJSONRows: the same 36 events produced as plain JSON and,
// by confluent-kafka's own SerializingProducer, through its AvroSerializer, its ProtobufSerializer (classes
// protoc generated from .proto files at test time: the message second in its file, a nested message, an enum
// from an imported file registered as a schema reference, Timestamps) and its JSONSerializer, each registering
// its schema itself, become identical rows in four tables, every value as produced: decimals with their scale,
// event times and timestamps on both sides of the epoch, dates from year 1 to 9999, uuids, -0.0, a nullable
// field left unset. Then the JSON Schema producer registers a version that no longer declares the configured
// field amount: its records are dead-lettered with reason schema, none of them becomes a row.
func TestIntegrationConfluentPythonSerializersRowsEqualTheJSONRows(t *testing.T) {
	url := testenv.Registry(t)
	python := testenv.PythonClients(t)
	topics := map[string]string{} // table → Kafka topic
	s := newStackWith(t, 3, nil, func(c *config.Config) {
		base := c.Topics["readings"].Topic
		for _, e := range []struct{ table, codec string }{
			{"readings", config.CodecJSONSchema}, {"plain", config.CodecJSON}, {"avro", config.CodecAvro}, {"protobuf", config.CodecProtobuf},
		} {
			// Every table's bad records go to the stack's dead-letter topic, so a format the sink refuses shows
			// there at once instead of stopping its partitions.
			topic := base + "_" + e.table
			if e.table == "readings" {
				topic = base
			}
			tp := formatsTopic(topic, e.table, e.codec, c.Topics["readings"].DeadLetterTopic)
			tp.Columns = pyColumns
			c.Topics[e.table] = tp
			topics[e.table] = topic
		}
		c.SchemaRegistry = config.SchemaRegistry{URLs: []string{url}}
	})
	evs := pyEvents(0, 36)
	dropped := pyEvents(36, 6)
	for i := range dropped {
		dropped[i].noAmount = true
	}

	offsets := map[string][]int64{"plain": s.produceJSON(topics["plain"], evs)}
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		errs []error
	)
	for table, format := range map[string]string{"avro": "avro", "protobuf": "protobuf", "readings": "json"} {
		wg.Go(func() {
			in := evs
			if table == "readings" {
				in = append(slices.Clone(evs), dropped...)
			}
			got, err := producePython(python, strings.Join(s.cfg.Kafka.Brokers, ","), url, topics[table], format, in)
			mu.Lock()
			defer mu.Unlock()
			offsets[table], errs = got, append(errs, err)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}

	// The JSON Schema topic is the stack's own: what it produced is what allCommitted and checkDeadLetters hold
	// the sink to, each record with its value as the serializer framed it.
	written := s.readBack(s.topic)
	for i, e := range append(slices.Clone(evs), dropped...) {
		o := offsets["readings"][i]
		kr := written[[2]int64{int64(e.partition()), o}]
		if kr == nil {
			t.Fatalf("record %d/%d of event %d is not in %s", e.partition(), o, e.i, s.topic)
		}
		if len(kr.Value) < 5 || kr.Value[0] != 0 {
			t.Fatalf("JSONSerializer wrote %q: not the Confluent wire format", kr.Value)
		}
		r := &itRecord{device: e.device, ts: e.rowTime(), value: kr.Value, partition: e.partition(), offset: o}
		if e.noAmount {
			r.bad = mapper.ReasonSchema
		}
		s.recs = append(s.recs, r)
		s.produced[r.partition] = max(s.produced[r.partition], o+1)
	}

	m := s.start(nil)
	s.waitFor(3*time.Minute, "every record of the four topics", func() bool { return s.caughtUp(slices.Collect(maps.Values(topics))) })
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}

	var want []string
	for i, e := range evs {
		want = append(want, s.pyRow(e, offsets["plain"][i]))
	}
	slices.Sort(want)
	dls := make(map[string][]*kgo.Record) // by source topic
	for _, r := range s.dlqRecords() {
		topic := header(r, deadletter.HeaderSourceTopic)
		dls[topic] = append(dls[topic], r)
	}
	for _, table := range []string{"plain", "avro", "protobuf", "readings"} {
		t.Run(table, func(t *testing.T) {
			if !slices.Equal(offsets[table][:len(evs)], offsets["plain"]) {
				t.Fatalf("the records have offsets %v, the JSON ones %v: the write timestamps cannot match", offsets[table], offsets["plain"])
			}
			if got := s.pyRows(table); !slices.Equal(got, want) {
				t.Errorf("%s holds %d rows, want %d; rows it lacks:\n  %s\nrows it should not hold:\n  %s", table, len(got), len(want),
					strings.Join(minus(want, got), "\n  "), strings.Join(minus(got, want), "\n  "))
			}
			if table == "readings" {
				return // its dead letters are the next subtest's
			}
			if n := len(dls[topics[table]]); n > 0 {
				r := dls[topics[table]][0]
				t.Errorf("%d of its records dead-lettered, the first with reason %s: %s", n, header(r, deadletter.HeaderReason), header(r, deadletter.HeaderError))
			}
		})
	}
	t.Run("json_schema_version_without_amount", func(t *testing.T) {
		bad := make(map[[2]int64]*itRecord)
		for _, r := range s.recs {
			if r.bad != "" {
				bad[[2]int64{int64(r.partition), r.offset}] = r
			}
		}
		for _, r := range dls[s.topic] {
			p, _ := strconv.ParseInt(header(r, deadletter.HeaderSourcePartition), 10, 32)
			o, _ := strconv.ParseInt(header(r, deadletter.HeaderSourceOffset), 10, 64)
			src := bad[[2]int64{p, o}]
			reason, msg := header(r, deadletter.HeaderReason), header(r, deadletter.HeaderError)
			switch {
			case src == nil:
				t.Errorf("dead letter of %d/%d, a record of the first version: reason %s: %s", p, o, reason, msg)
				continue
			case reason != src.bad || !strings.Contains(msg, `"amount"`):
				t.Errorf("dead letter of %d/%d: reason %q error %q, want reason %q naming the field amount", p, o, reason, msg, src.bad)
			case !bytes.Equal(r.Value, src.value) || string(r.Key) != src.device:
				t.Errorf("dead letter of %d/%d: key/value %q/%q, want the original %q/%q", p, o, r.Key, r.Value, src.device, src.value)
			}
			delete(bad, [2]int64{p, o})
		}
		for k, r := range bad {
			t.Errorf("record %d/%d of the version without amount is not dead-lettered: %s", k[0], k[1], r.value[5:])
		}
	})
}

// minus is the rows of a that b lacks (both sorted, rows unique).
func minus(a, b []string) []string {
	var out []string
	for _, r := range a {
		if _, found := slices.BinarySearch(b, r); !found {
			out = append(out, r)
		}
	}
	return out
}

// caughtUp reports whether the group has committed the end offset of every partition of topics.
func (s *stack) caughtUp(topics []string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ends, err := s.adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return false
	}
	committed, err := s.adm.FetchOffsets(ctx, s.group)
	if err != nil {
		return false
	}
	done := true
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err == nil && o.Offset == 0 {
			return // nothing to commit
		}
		if c, ok := committed.Lookup(o.Topic, o.Partition); o.Err != nil || !ok || c.At != o.Offset {
			done = false
		}
	})
	return done
}
