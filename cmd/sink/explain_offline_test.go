package main

import (
	"context"
	"encoding/hex"
	"math"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/linkedin/goavro/v2"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/internal/testenv"
)

// siteSchema is the named type the offline writer schema takes from a reference.
const siteSchema = `{"type": "record", "name": "Site", "namespace": "sensors", "fields": [{"name": "id", "type": "string"}]}`

// offlineExample writes examples/avro-sensors.yaml with its registry at registryURL, its brokers at brokers
// and its Kafka topic kafkaTopic to a file, and returns its path and an Avro record of it framed with
// schema id 7.
func offlineExample(t *testing.T, registryURL, brokers, kafkaTopic string) (string, []byte) {
	t.Helper()
	example, err := os.ReadFile("../../examples/avro-sensors.yaml")
	if err != nil {
		t.Fatal(err)
	}
	yaml := strings.NewReplacer(
		`urls: ["http://schema-registry:8081"]`, `urls: ["`+registryURL+`"]`,
		`brokers: ["kafka-0.kafka:9092", "kafka-1.kafka:9092", "kafka-2.kafka:9092"]`, `brokers: ["`+brokers+`"]`,
		`topic: sensor-readings-avro`, `topic: `+kafkaTopic,
	).Replace(string(example))
	path := filepath.Join(t.TempDir(), "avro-sensors.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := goavro.NewCodec(exampleWriterSchema(t, string(example)))
	if err != nil {
		t.Fatal(err)
	}
	value, err := c.BinaryFromNative(codec.AppendFrame(nil, 7, nil), map[string]any{
		"device_id": "dev-0042", "ts": time.Date(2024, 1, 15, 14, 37, 22, 123456e3, time.UTC), "temperature": 21.5,
		"humidity": nil, "calibration": big.NewRat(12345, 10000), "reading_id": "0b6a1f6e-3f0c-4a53-9b8f-1f2a3b4c5d6e",
		"status": "DEGRADED", "site": map[string]any{"id": "plant-1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return path, value
}

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestExplainTakesTheWriterSchemaFromFiles: with --schema-file and --reference, an Avro record is explained
// with no registry to ask (the configured one does not listen): the writer schema, whose nested record is
// a named type of the reference, decodes the record as the registry's would.
func TestExplainTakesTheWriterSchemaFromFiles(t *testing.T) {
	path, value := offlineExample(t, "http://"+closedAddr(t), "127.0.0.1:9", "sensor-readings-avro")
	example, _ := os.ReadFile("../../examples/avro-sensors.yaml")
	full := exampleWriterSchema(t, string(example))
	// The writer schema with its Site record replaced by a reference to the named type.
	i := strings.Index(full, `{"type": "record", "name": "Site"`)
	if i < 0 {
		t.Fatal("the example's writer schema has no inline Site record")
	}
	j := i + strings.Index(full[i:], "]}") + len("]}")
	dir := t.TempDir()
	main, ref := filepath.Join(dir, "reading.avsc"), filepath.Join(dir, "site.avsc")
	if err := os.WriteFile(main, []byte(full[:i]+`"sensors.Site"`+full[j:]), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ref, []byte(siteSchema), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"--config", path, "--topic", "readings", "--timestamp", "2024-01-15T14:37:23Z", "--record-hex", hex.EncodeToString(value),
		"--schema-file", main, "--reference", "sensors.Site=" + ref}
	code, out, errOut := runCmd(t, runExplain, args...)
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, w := range []string{"dev-0042", "2024-01-15", "1.2345", "0b6a1f6e-3f0c-4a53-9b8f-1f2a3b4c5d6e", "'DEGRADED'", "'plant-1'"} {
		if !strings.Contains(out, w) {
			t.Errorf("the explanation does not show %q\n%s", w, out)
		}
	}
	// Without the reference the writer schema does not compile: the record's schema is at fault.
	code, out, errOut = runCmd(t, runExplain, args[:len(args)-2]...)
	if code != exitBadData || !strings.Contains(out, "dead letter (reason schema)") || !strings.Contains(out, "sensors.Site") {
		t.Errorf("without --reference: exit %d\n%s%s; want a dead letter with reason schema naming sensors.Site", code, out, errOut)
	}
	// A wrong --schema-type is said before anything is decoded.
	code, _, errOut = runCmd(t, runExplain, append(args, "--schema-type", "xml")...)
	if code != exitUsage || !strings.Contains(errOut, "--schema-type") {
		t.Errorf("--schema-type xml: exit %d, stderr %q; want a usage error naming the flag", code, errOut)
	}
}

// TestExplainFromAnUnreachableKafkaSaysSoAtOnce: --from-kafka against brokers that do not answer says
// that Kafka cannot be reached, within seconds, instead of waiting out the re-read and blaming the record.
func TestExplainFromAnUnreachableKafkaSaysSoAtOnce(t *testing.T) {
	brokers := closedAddr(t)
	path, _ := offlineExample(t, "http://"+closedAddr(t), brokers, "sensor-readings-avro")
	start := time.Now()
	code, out, errOut := runCmd(t, runExplain, "--config", path, "--from-kafka", "sensor-readings-avro/0/0")
	took := time.Since(start)
	if code != exitFailure || !strings.Contains(errOut, "cannot reach Kafka at "+brokers) || took > 15*time.Second {
		t.Errorf("exit %d after %s\nstdout %s\nstderr %s\nwant exit 1 within 15 s, saying Kafka at %s cannot be reached", code, took.Round(time.Millisecond), out, errOut, brokers)
	}
}

// TestExplainNamesTheRegistryThatAnswers404WithNoBody: a registry (or the proxy before it) answering 404
// with an empty body is reported with the URL asked and the status, not as "no response".
func TestExplainNamesTheRegistryThatAnswers404WithNoBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNotFound)
	}))
	defer srv.Close()
	path, value := offlineExample(t, srv.URL, "127.0.0.1:9", "sensor-readings-avro")
	code, out, errOut := runCmd(t, runExplain, "--config", path, "--topic", "readings", "--record-hex", hex.EncodeToString(value))
	if want := srv.URL + "/schemas/ids/7"; code != exitFailure || !strings.Contains(errOut, want) || !strings.Contains(errOut, "404 Not Found") ||
		!strings.Contains(errOut, "empty body") {
		t.Errorf("exit %d\nstdout %s\nstderr %s\nwant exit 1 naming %s, its 404 and the empty body", code, out, errOut, want)
	}
}

// TestIntegrationExplainFromKafkaSaysWhatIsMissing: on the stack's Kafka, --from-kafka names at once an
// offset past the end of the partition's log, a partition the topic does not have, and a topic Kafka does
// not have.
func TestIntegrationExplainFromKafkaSaysWhatIsMissing(t *testing.T) {
	brokers := testenv.Kafka(t)
	topic := testenv.Name(t, "avro")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stackTopic(t, ctx, brokers, topic)
	for _, tc := range []struct{ topic, coords, want string }{
		{topic, topic + "/0/0", topic + "/0/0 is past the end of the log (its next offset is 0)"},
		{topic, topic + "/5/0", "topic " + topic + " has 1 partitions, no partition 5"},
		{topic + "-none", topic + "-none/0/0", topic + "-none"},
	} {
		path, _ := offlineExample(t, "http://"+closedAddr(t), strings.Join(brokers, `", "`), tc.topic)
		start := time.Now()
		code, out, errOut := runCmd(t, runExplain, "--config", path, "--from-kafka", tc.coords)
		if took := time.Since(start); code != exitFailure || !strings.Contains(errOut, tc.want) || took > 15*time.Second {
			t.Errorf("%s: exit %d after %s\n%s%s\nwant exit 1 within 15 s saying %q", tc.coords, code, took.Round(time.Millisecond), out, errOut, tc.want)
		}
	}
}

// TestExplainTakesAProtobufSchemaAndItsImportFromFiles: a Protobuf record is explained offline from its
// `.proto` file and the file it imports, given under its import path.
func TestExplainTakesAProtobufSchemaAndItsImportFromFiles(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"reading.proto": `syntax = "proto3";
package sensors;
import "common/site.proto";
message Reading {
  string device_id = 1;
  int64 ts_ms = 2;
  double temperature = 3;
  common.Site site = 4;
}
`,
		"site.proto": "syntax = \"proto3\";\npackage common;\nmessage Site { string id = 1; }\n",
		"sink.yaml": `kafka: {brokers: ["127.0.0.1:9"]}
cassandra: {hosts: ["127.0.0.1"], keyspace: telemetry}
schema_registry: {urls: ["http://` + closedAddr(t) + `"]}
topics:
  readings:
    topic: readings-proto
    codec: protobuf
    id: [device_id]
    time: {source: field, field: ts_ms, format: unix_ms}
    bucket: {width: 1d}
    table: readings
    columns:
      - {name: device_id, type: text, field: device_id}
      - {name: reading_time, type: timestamp, source: event_time}
      - {name: temperature, type: double, field: temperature}
      - {name: site_id, type: text, field: site.id}
    clustering: [{column: reading_time, order: desc}]
`,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	site := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "plant-1")
	body := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "dev-0042")
	body = protowire.AppendVarint(protowire.AppendTag(body, 2, protowire.VarintType), uint64(time.Date(2024, 1, 15, 14, 37, 22, 123e6, time.UTC).UnixMilli()))
	body = protowire.AppendFixed64(protowire.AppendTag(body, 3, protowire.Fixed64Type), math.Float64bits(21.5))
	body = protowire.AppendBytes(protowire.AppendTag(body, 4, protowire.BytesType), site)
	value := append(codec.AppendFrame(nil, 12, []int{0}), body...)
	code, out, errOut := runCmd(t, runExplain, "--config", filepath.Join(dir, "sink.yaml"), "--topic", "readings", "--record-hex", hex.EncodeToString(value),
		"--schema-file", filepath.Join(dir, "reading.proto"), "--reference", "common/site.proto="+filepath.Join(dir, "site.proto"))
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, w := range []string{"'dev-0042'", "'2024-01-15T14:37:22.123Z'", "21.5", "'plant-1'"} {
		if !strings.Contains(out, w) {
			t.Errorf("the explanation does not show %s\n%s", w, out)
		}
	}
}
