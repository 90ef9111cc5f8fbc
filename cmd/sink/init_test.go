package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bucketsink/sink/draft"
)

var updateInit = flag.Bool("update-init", false, "rewrite the testdata/init golden files")

const initDir = "testdata/init"

// initGoldens are the drafts of the fixtures of testdata/init, each checked against its golden file.
var initGoldens = []struct {
	golden string
	args   []string // sink init's arguments; nil for the plain JSON sample
}{
	// The README's quick start: the writer schema of examples/avro-sensors.yaml.
	{"avro-sensors.golden.yaml", []string{"--topic", "sensor-readings-avro", "--id", "device_id", "--time", "ts", "--rate", "1",
		"--schema-file", initDir + "/avro-sensors.avsc"}},
	{"avro.golden.yaml", []string{"--topic", "sensor-readings", "--id", "deviceId", "--time", "ts", "--rate", "10",
		"--schema-file", initDir + "/readings.avsc", "--schema-type", "avro"}},
	// Hot entities: no width fits alone, so the plan's event buckets come with it.
	{"avro-hot.golden.yaml", []string{"--topic", "sensor-readings", "--id", "deviceId,site.id", "--time", "ts", "--rate", "5000/s",
		"--schema-file", initDir + "/readings.avsc", "--schema-type", "avro"}},
	// A nested message, a message of an imported file (a reference), well-known types.
	{"protobuf.golden.yaml", []string{"--topic", "sensor-readings-pb", "--id", "device_id", "--time", "ts", "--rate", "2/m",
		"--schema-file", initDir + "/reading.proto", "--schema-type", "protobuf"}},
	{"json_schema.golden.yaml", []string{"--topic", "sensor-readings-js", "--id", "device_id", "--time", "ts", "--rate", "1",
		"--schema-file", initDir + "/reading.schema.json", "--schema-type", "json", "--table", "readings_js", "--keyspace", "telemetry"}},
	{"json_sample.golden.yaml", nil},
}

// sampleRecords are the records of sample.jsonl, each stamped with its ts as Kafka would stamp it.
func sampleRecords(t *testing.T) []*kgo.Record {
	t.Helper()
	f, err := os.Open(filepath.Join(initDir, "sample.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var recs []*kgo.Record
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var v struct{ TS time.Time }
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, &kgo.Record{Value: bytes.Clone(sc.Bytes()), Timestamp: v.TS})
	}
	return recs
}

// draftSample drafts the sample of sample.jsonl as `sink init --sample` would from Kafka.
func draftSample(t *testing.T, o initOutput) (int, string, string) {
	t.Helper()
	in := draft.Input{Topic: "service-events", ID: []string{"device_id"}, Time: "ts"}
	sampled, err := sampleInput(&in, sampleRecords(t))
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if o.server.Brokers == nil {
		o.server = draft.Base{Brokers: []string{"127.0.0.1:9092"}, Hosts: []string{"127.0.0.1:9042"}, Keyspace: "sink"}
	}
	code := writeDraft(context.Background(), in, sampled, o, &out, &errOut)
	return code, out.String(), errOut.String()
}

func runInitCase(t *testing.T, args []string) (int, string, string) {
	t.Helper()
	if args == nil {
		return draftSample(t, initOutput{})
	}
	return runCmd(t, runInit, args...)
}

func TestInitDraftsMatchTheirGoldenFiles(t *testing.T) {
	for _, c := range initGoldens {
		t.Run(c.golden, func(t *testing.T) {
			code, out, errOut := runInitCase(t, c.args)
			if code != exitOK {
				t.Fatalf("exit %d, stderr:\n%s", code, errOut)
			}
			path := filepath.Join(initDir, c.golden)
			if *updateInit {
				if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update-init to write it)", err)
			}
			if out != string(want) {
				t.Errorf("draft differs from %s (-update-init rewrites it):\n%s", path, out)
			}
		})
	}
}

// Every golden draft passes `sink validate` as written, and `sink schema` prints its table.
func TestInitDraftsValidateAndHaveTheirTable(t *testing.T) {
	goldens, err := filepath.Glob(filepath.Join(initDir, "*.golden.yaml"))
	if err != nil || len(goldens) != len(initGoldens) {
		t.Fatalf("%d golden files, %d drafts (%v)", len(goldens), len(initGoldens), err)
	}
	for _, path := range goldens {
		t.Run(filepath.Base(path), func(t *testing.T) {
			if code, vout, verr := runCmd(t, runValidate, "--config", path); code != exitOK || !strings.HasPrefix(vout, "config OK: 1 topic") {
				t.Fatalf("validate: exit %d, stdout %q, stderr %q", code, vout, verr)
			}
			code, ddl, serr := runCmd(t, runSchema, "--config", path)
			if code != exitOK || !strings.Contains(ddl, "CREATE TABLE IF NOT EXISTS ") || !strings.Contains(ddl, "CLUSTERING ORDER BY (") {
				t.Fatalf("schema: exit %d, stdout:\n%s\nstderr %q", code, ddl, serr)
			}
		})
	}
}

// A .proto's import path may be relative to a parent of its directory (the root its tree is compiled from),
// as the Python client tests' reading.proto imports it/pyclients/kind.proto.
func TestInitReadsProtoImportsFromTheRootOfTheirTree(t *testing.T) {
	code, out, errOut := runCmd(t, runInit, "--topic", "t", "--id", "device_id", "--time", "ts", "--rate", "1", "--schema-type", "protobuf",
		"--schema-file", "../../pipeline/testdata/pyclients/proto/it/pyclients/reading.proto")
	if code != exitOK || !strings.Contains(out, "message it.pyclients.Reading.") ||
		!strings.Contains(out, "- {name: kind, type: text, field: kind}  # enum") {
		t.Errorf("exit %d, stderr %q, stdout:\n%s", code, errOut, out)
	}
}

// With --config the draft is that file with the topic added: its servers and its other topics kept.
func TestInitMergesIntoAnExistingConfig(t *testing.T) {
	base := "../../examples/local.yaml"
	code, out, errOut := runCmd(t, runInit, "--config", base, "--topic", "readings", "--id", "deviceId", "--time", "ts",
		"--rate", "10", "--schema-file", initDir+"/readings.avsc", "--registry", "http://registry:8081")
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	orig, _ := os.ReadFile(base)
	if !strings.HasPrefix(out, string(orig[:bytes.Index(orig, []byte("topics:"))])) {
		t.Errorf("the merged config does not keep the file before its topics:\n%s", out)
	}
	path := filepath.Join(t.TempDir(), "sink.yaml")
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	// local.yaml has an entry named readings; the draft takes the next free name. It has no schema
	// registry either, so the draft brings the one it read the schema from.
	code, vout, verr := runCmd(t, runValidate, "--config", path)
	if want := "config OK: 2 topics (readings, readings_2)\n"; code != exitOK || !strings.HasPrefix(vout, want) {
		t.Fatalf("validate: exit %d, stdout %q (want %q), stderr %q", code, vout, want, verr)
	}
	if !strings.Contains(out, "schema_registry:\n  urls: [\"http://registry:8081\"]\n") {
		t.Errorf("no schema_registry block added:\n%s", out)
	}
}

func TestInitRefusals(t *testing.T) {
	avsc := initDir + "/readings.avsc"
	notRecord := filepath.Join(t.TempDir(), "string.avsc")
	if err := os.WriteFile(notRecord, []byte(`"string"`), 0o644); err != nil {
		t.Fatal(err)
	}
	noMessage := filepath.Join(t.TempDir(), "empty.proto")
	if err := os.WriteFile(noMessage, []byte("syntax = \"proto3\";\npackage x;\nenum E { A = 0; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	notObject := filepath.Join(t.TempDir(), "string.json")
	if err := os.WriteFile(notObject, []byte(`{"type": "string"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no such id field", []string{"--id", "device", "--time", "ts", "--schema-file", avsc},
			`--id "device": no such field in the schema; its fields: deviceId, ts, temperature`},
		{"no such nested field", []string{"--id", "deviceId", "--time", "site.when", "--schema-file", avsc},
			`--time "site.when": no such field in the schema`},
		{"a double as the event time", []string{"--id", "deviceId", "--time", "temperature", "--schema-file", avsc},
			`--time "temperature" is double (column type double), which cannot be an event time`},
		{"a date as the event time", []string{"--id", "deviceId", "--time", "day", "--schema-file", avsc},
			`--time "day" is int (date) (column type date), which cannot be an event time`},
		{"a union as the event time", []string{"--id", "deviceId", "--time", "reading", "--schema-file", avsc},
			`--time "reading" (union) cannot be an event time: a union of several types`},
		{"a collection as the id", []string{"--id", "tags", "--time", "ts", "--schema-file", avsc},
			`--id "tags" (array of string) cannot be an id: a collection cannot be part of a partition key`},
		{"the time field as the id", []string{"--id", "ts", "--time", "ts", "--schema-file", avsc}, `--id "ts" is also the --time field`},
		{"an Avro schema that is no record", []string{"--id", "a", "--time", "b", "--schema-file", notRecord},
			`schema file string.avsc cannot be drafted from: the writer schema is string, not a record`},
		{"a Protobuf file without a message", []string{"--id", "a", "--time", "b", "--schema-file", noMessage, "--schema-type", "protobuf"},
			`schema file empty.proto cannot be drafted from: the schema declares no message`},
		{"a JSON Schema that is no object", []string{"--id", "a", "--time", "b", "--schema-file", notObject, "--schema-type", "json"},
			`schema file string.json cannot be drafted from: the writer schema declares no properties of an object`},
		{"no rate", []string{"--id", "deviceId", "--time", "ts", "--schema-file", avsc, "--rate", ""}, "give --rate"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"--topic", "t", "--rate", "1"}, c.args...)
			code, out, errOut := runCmd(t, runInit, args...)
			if code != exitUsage || out != "" || !strings.Contains(errOut, c.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d and %q", code, out, errOut, exitUsage, c.want)
			}
		})
	}
}
