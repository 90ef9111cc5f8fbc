package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bucketsink/sink/internal/testenv"
)

// initEvent is one event of the `sink init` end-to-end test, as the json codec reads it and as the Python
// producer (pipeline/testdata/pyclients/produce.py) takes it.
func initEvent(i int) (device string, kafkaTime time.Time, value []byte) {
	base := time.Date(2024, 1, 15, 14, 0, 0, 0, time.UTC)
	ts := base.Add(time.Duration(i)*2*time.Second + 123456*time.Microsecond)
	device = fmt.Sprintf("dev-%02d", i%4)
	note := ""
	if i%3 != 0 {
		note = fmt.Sprintf(`,"note":"note %d"`, i)
	}
	kinds := []string{"KIND_UNSPECIFIED", "GAUGE", "COUNTER"}
	value = fmt.Appendf(nil, `{"device_id":%q,"ts":%q,"value":%d.25,"amount":%d.050,"day":%q,"uid":"6ba7b810-9dad-41d1-80b4-%012d"%s,"site":{"id":"site-%d"},"kind":%q,"born":%q}`,
		device, ts.Format("2006-01-02T15:04:05.000000Z07:00"), i, i, base.AddDate(0, 0, i).Format(time.DateOnly), i, note, i%3, kinds[i%3],
		base.AddDate(-30, 0, i).Add(time.Duration(i)*time.Millisecond).Format("2006-01-02T15:04:05.000000Z07:00"))
	return device, ts.Add(time.Second), value
}

const initEvents = 24

// handColumns are the columns a person writes by hand for the events of each format: the types its schema
// gives each field (a Protobuf string stays text, a Timestamp day is a timestamp), and the names they would
// pick. The drafted table must hold the same rows under the same names.
var handColumns = map[string]string{
	"avro": `
      - {name: device_id, type: text, field: device_id}
      - {name: ts, type: timestamp, source: event_time}
      - {name: value, type: double, field: value}
      - {name: amount, type: decimal, field: amount}
      - {name: day, type: date, field: day}
      - {name: uid, type: uuid, field: uid}
      - {name: note, type: text, field: note}
      - {name: site_id, type: text, field: site.id}
      - {name: kind, type: text, field: kind}
      - {name: born, type: timestamp, field: born}`,
	"protobuf": `
      - {name: device_id, type: text, field: device_id}
      - {name: ts, type: timestamp, source: event_time}
      - {name: value, type: double, field: value}
      - {name: amount, type: text, field: amount}
      - {name: day, type: timestamp, field: day}
      - {name: uid, type: text, field: uid}
      - {name: note, type: text, field: note}
      - {name: site_id, type: text, field: site.id}
      - {name: kind, type: text, field: kind}
      - {name: born, type: timestamp, field: born}`,
	"json": `
      - {name: device_id, type: text, field: device_id}
      - {name: ts, type: timestamp, source: event_time}
      - {name: value, type: double, field: value}
      - {name: amount, type: double, field: amount}
      - {name: day, type: date, field: day}
      - {name: uid, type: uuid, field: uid}
      - {name: note, type: text, field: note}
      - {name: site_id, type: text, field: site.id}
      - {name: kind, type: text, field: kind}
      - {name: born, type: timestamp, field: born}`,
	"plain": `
      - {name: device_id, type: text, field: device_id}
      - {name: ts, type: timestamp, source: event_time}
      - {name: value, type: double, field: value}
      - {name: amount, type: double, field: amount}
      - {name: day, type: text, field: day}
      - {name: uid, type: text, field: uid}
      - {name: note, type: text, field: note}
      - {name: site_id, type: text, field: site.id}
      - {name: kind, type: text, field: kind}
      - {name: born, type: timestamp, field: born}`,
}

// TestIntegrationInitThenSchemaThenRunWritesTheRowsOfAHandWrittenConfig: for an Avro, a Protobuf (the file's
// second message, a nested message, an enum of an imported file registered as a reference) and a JSON Schema
// topic produced by Confluent's Python serializers (which register their schemas themselves), and a plain JSON
// topic (sampled), `sink init --config` adds a drafted entry to a config holding a hand-written entry of the same
// topic, `sink schema --apply` creates both tables, and `sink run` fills them with the same rows.
func TestIntegrationInitThenSchemaThenRunWritesTheRowsOfAHandWrittenConfig(t *testing.T) {
	brokers, hosts, url := testenv.Kafka(t), testenv.Cassandra(t), testenv.Registry(t)
	python := testenv.PythonClients(t)
	for _, format := range []string{"avro", "protobuf", "json", "plain"} {
		t.Run(format, func(t *testing.T) {
			topic := testenv.Name(t, "init")
			testenv.CreateTopic(t, brokers, topic, 1)
			ks := testenv.Keyspace(t, hosts)
			if format == "plain" {
				produceInitJSON(t, brokers, topic)
			} else {
				produceInitPython(t, python, strings.Join(brokers, ","), url, topic, format)
			}
			codecName := map[string]string{"avro": "avro", "protobuf": "protobuf", "json": "json_schema", "plain": "json"}[format]
			// Given 1 row/s, or measured from the sample (a device every 8 s), with the row size: the width a person
			// picks with `sink plan` for each.
			width := "1d"
			if format == "plain" {
				width = "week"
			}
			dir := t.TempDir()
			hand := fmt.Sprintf(`kafka:
  brokers: %q
  group: %s
cassandra:
  hosts: %q
  keyspace: %s
  consistency: ONE
schema_registry:
  urls: [%q]
metrics:
  address: ""
topics:
  hand:
    topic: %s
    codec: %s
    id: [device_id]
    time: {source: field, field: ts}
    bucket: {width: %s}
    table: hand
    columns:%s
    clustering:
      - {column: ts, order: desc}
`, brokers, topic, hosts, ks, url, topic, codecName, width, handColumns[format])
			base := filepath.Join(dir, "hand.yaml")
			if err := os.WriteFile(base, []byte(hand), 0o600); err != nil {
				t.Fatal(err)
			}
			drafted := filepath.Join(dir, "sink.yaml")
			args := []string{"--config", base, "--topic", topic, "--id", "device_id", "--time", "ts", "--out", drafted}
			if format == "plain" {
				args = append(args, "--sample", "100")
			} else {
				args = append(args, "--rate", "1")
			}
			if code, _, errOut := runCmd(t, runInit, args...); code != exitOK {
				t.Fatalf("sink init: exit %d\n%s", code, errOut)
			}
			text, _ := os.ReadFile(drafted)
			if !strings.Contains(string(text), "    bucket: {width: "+width+"}\n    table: "+topicTable(topic)) {
				t.Fatalf("the drafted entry is not a %s table %s:\n%s", width, topicTable(topic), text)
			}
			if code, out, errOut := runCmd(t, runSchema, "--config", drafted, "--apply"); code != exitOK {
				t.Fatalf("sink schema --apply: exit %d\n%s\n%s", code, out, errOut)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan int, 1)
			var runErr bytes.Buffer
			go func() { done <- runRun(ctx, []string{"--config", drafted}, &bytes.Buffer{}, &runErr) }()
			session := testenv.Session(t, hosts, ks)
			deadline := time.Now().Add(2 * time.Minute)
			for count(t, session, "hand") < initEvents || count(t, session, topicTable(topic)) < initEvents {
				if time.Now().After(deadline) {
					cancel()
					<-done
					t.Fatalf("after 2 minutes: %d and %d rows, want %d each; sink run said:\n%s", count(t, session, "hand"),
						count(t, session, topicTable(topic)), initEvents, runErr.String())
				}
				select {
				case code := <-done:
					t.Fatalf("sink run exited %d early:\n%s", code, runErr.String())
				case <-time.After(200 * time.Millisecond):
				}
			}
			cancel()
			if code := <-done; code != exitOK {
				t.Errorf("sink run: exit %d\n%s", code, runErr.String())
			}
			want, got := rowsOf(t, session, "hand"), rowsOf(t, session, topicTable(topic))
			if !slices.Equal(got, want) || len(got) != initEvents {
				t.Errorf("the drafted table holds\n  %s\nthe hand-written one\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
			}
		})
	}
}

// topicTable is the table sink init names after a test's topic.
func topicTable(topic string) string { return strings.ReplaceAll(strings.ToLower(topic), "-", "_") }

func count(t *testing.T, s *gocql.Session, table string) int {
	t.Helper()
	var n int
	if err := s.Query("SELECT COUNT(*) FROM " + table).Scan(&n); err != nil {
		t.Fatalf("counting %s: %v", table, err)
	}
	return n
}

// rowsOf is every row of table as Cassandra's JSON of its columns, with the write time of value, sorted.
func rowsOf(t *testing.T, s *gocql.Session, table string) []string {
	t.Helper()
	iter := s.Query("SELECT JSON device_id, bucket, ts, value, amount, day, uid, note, site_id, kind, born, WRITETIME(value) AS wt FROM " + table).Iter()
	var out []string
	var row string
	for iter.Scan(&row) {
		out = append(out, row)
	}
	if err := iter.Close(); err != nil {
		t.Fatalf("reading %s: %v", table, err)
	}
	slices.Sort(out)
	return out
}

// produceInitJSON produces the events as plain JSON.
func produceInitJSON(t *testing.T, brokers []string, topic string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for i := range initEvents {
		device, at, value := initEvent(i)
		recs = append(recs, &kgo.Record{Key: []byte(device), Value: value, Timestamp: at})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing: %v", err)
	}
}

// produceInitPython produces the events through Confluent's Python serializer of format (avro, protobuf or json).
func produceInitPython(t *testing.T, python, brokers, registry, topic, format string) {
	t.Helper()
	var file bytes.Buffer
	enc := json.NewEncoder(&file)
	for i := range initEvents {
		device, at, value := initEvent(i)
		line := map[string]any{"key": device, "partition": 0, "timestamp": at.UnixMilli(), "value": json.RawMessage(value)}
		if err := enc.Encode(line); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	events := filepath.Join(dir, "events.jsonl")
	if err := os.WriteFile(events, file.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, filepath.Join("..", "..", "pipeline", "testdata", "pyclients", "produce.py"),
		"--bootstrap", brokers, "--registry", registry, "--topic", topic, "--format", format, "--events", events)
	cmd.Env = append(os.Environ(), "TMPDIR="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("produce.py --format %s: %v\n%s", format, err, stderr.Bytes())
	}
}

// TestIntegrationInitRefusesAnUnknownSubject: a subject the registry does not have is a usage error naming it
// and the flag that names another, not a failure to retry.
func TestIntegrationInitRefusesAnUnknownSubject(t *testing.T) {
	url := testenv.Registry(t)
	topic := testenv.Name(t, "nosubject")
	code, out, errOut := runCmd(t, runInit, "--registry", url, "--topic", topic, "--id", "device_id", "--time", "ts", "--rate", "1")
	want := fmt.Sprintf(`sink init: subject "%s-value": the schema registry has no such subject at %s; name the topic's value subject with --subject`, topic, url)
	if code != exitUsage || out != "" || strings.TrimSpace(errOut) != want {
		t.Errorf("exit %d, stdout %q, stderr %q; want %d and %q", code, out, errOut, exitUsage, want)
	}
}
