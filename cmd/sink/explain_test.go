package main

import (
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

var updateExplain = flag.Bool("update-explain", false, "rewrite testdata/explain golden files")

const sensorRecord = `{"device_id":"dev-0042","ts":"2024-01-15T14:37:22.123Z","temperature":21.5,` +
	`"humidity":40.2,"battery":3.71,"site":{"id":"plant-1"}}`

// TestExplainGolden runs `sink explain` on records of each example and compares exit code and
// output with testdata/explain/<name>.golden (-update-explain rewrites them).
func TestExplainGolden(t *testing.T) {
	common := []string{"--timestamp", "2024-01-15T14:37:23.5Z", "--partition", "3", "--offset", "1207"}
	cases := []struct {
		name string
		args []string
	}{
		{"iot-sensors", []string{"--config", "../../examples/iot-sensors.yaml", "--topic", "readings", "--record", sensorRecord}},
		{"service-events", []string{"--config", "../../examples/service-events.yaml", "--topic", "service-events", "--key", "acme/billing",
			"--record", `{"tenant":"acme","service":"billing","type":"invoice.created","ts":1705329442123,"trace_id":"4bf92f3577b34da6"}`}},
		{"high-volume", []string{"--config", "../../examples/high-volume.yaml", "--topic", "firehose", "--record", sensorRecord}},
		{"metrics-slices", []string{"--config", "../../examples/metrics-slices.yaml", "--topic", "metrics", "--record", sensorRecord}},
		{"sensor-rollups", []string{"--config", "../../examples/sensor-rollups.yaml", "--topic", "readings", "--record", sensorRecord}},
		{"dead-letter-missing", []string{"--config", "../../examples/iot-sensors.yaml", "--topic", "readings",
			"--record", `{"device_id":"dev-0042","ts":"2024-01-15T14:37:22.123Z","humidity":40.2}`}},
		{"dead-letter-type", []string{"--config", "../../examples/iot-sensors.yaml", "--topic", "readings",
			"--record", `{"device_id":"dev-0042","ts":"2024-01-15T14:37:22.123Z","temperature":"warm"}`}},
		{"dead-letter-time", []string{"--config", "../../examples/service-events.yaml", "--topic", "service_events",
			"--record", `{"tenant":"acme","service":"billing","type":"x","ts":"2024-01-15T14:37:22Z"}`}},
		// Epoch seconds where the topic reads unix_ms: January 1970, outside the accept window.
		{"dead-letter-late", []string{"--config", "../../examples/service-events.yaml", "--topic", "service_events",
			"--record", `{"tenant":"acme","service":"billing","type":"x","ts":1705329442}`}},
		// A layout with its zone for the event time, unix_ns and unix_days columns, and a TTL from a
		// field cut to its max.
		{"formats", []string{"--config", "testdata/explain/formats.yaml", "--topic", "shipments",
			"--record", `{"parcel":"p-1","scanned":"15/01/2024 15:37:22","promised_ns":1705329442123456789,"shipped_days":19737,"keep_h":1000}`}},
		{"dead-letter-json", []string{"--config", "../../examples/iot-sensors.yaml", "--topic", "readings", "--record", `{"device_id":"dev-0042",`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCmd(t, runExplain, append(append([]string(nil), common...), tc.args...)...)
			if errOut != "" {
				t.Errorf("stderr: %s", errOut)
			}
			got := "exit " + strconv.Itoa(code) + "\n" + out
			golden := filepath.Join("testdata", "explain", tc.name+".golden")
			if *updateExplain {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update-explain to create it)", err)
			}
			if got != string(want) {
				t.Errorf("output differs from %s:\n%s", golden, got)
			}
		})
	}
}

func TestExplainUsage(t *testing.T) {
	cases := []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"--topic", "readings", "--record", "{}"}, exitUsage, "sink explain: --config is required\n"},
		{[]string{"--config", "../../examples/iot-sensors.yaml", "--record", "{}"}, exitUsage, "sink explain: --topic is required\n"},
		{[]string{"--config", "../../examples/iot-sensors.yaml", "--topic", "nope", "--record", "{}"}, exitUsage,
			"sink explain: --topic \"nope\" is neither a configured topic nor the Kafka topic of one; topics: [readings]\n"},
		{[]string{"--config", "../../examples/iot-sensors.yaml", "--topic", "readings", "--record", "{}", "--timestamp", "yesterday"}, exitUsage,
			"sink explain: --timestamp \"yesterday\" is not RFC 3339 with an offset (e.g. 2024-01-15T10:00:00Z)\n"},
		// Guards against a time before 1970 being explained as a record without a Kafka timestamp.
		{[]string{"--config", "../../examples/iot-sensors.yaml", "--topic", "readings", "--record", "{}", "--timestamp", "1969-12-31T23:59:59Z"}, exitUsage,
			"sink explain: --timestamp \"1969-12-31T23:59:59Z\" is before 1970, which no Kafka timestamp is (they count milliseconds from 1970-01-01T00:00:00Z); for a record without one, use --timestamp none\n"},
		{[]string{"--config", "../../examples/iot-sensors.yaml", "--topic", "readings", "--record", "@testdata/explain/does-not-exist.json"}, exitUsage,
			"sink explain: --record: open testdata/explain/does-not-exist.json: no such file or directory\n"},
		{[]string{"--config", "../../config/testdata/bad/clustering.yaml", "--topic", "readings", "--record", "{}"}, exitConfig, ""},
		{[]string{"--config", "../../examples/iot-sensors.yaml", "--topic", "readings", "--record", "{}", "--record-hex", "00"}, exitUsage,
			"sink explain: give exactly one of --record, --record-hex, --record-file, --tombstone and --from-kafka\n"},
		{[]string{"--config", "../../examples/iot-sensors.yaml", "--topic", "readings", "--record-hex", "7b7"}, exitUsage,
			"sink explain: --record-hex: encoding/hex: odd length hex string\n"},
		{[]string{"--config", "../../examples/iot-sensors.yaml", "--from-kafka", "sensor-readings/x/3"}, exitUsage,
			"sink explain: --from-kafka: \"sensor-readings/x/3\": the partition and the offset are numbers, not negative\n"},
	}
	for _, tc := range cases {
		code, _, errOut := runCmd(t, runExplain, tc.args...)
		if code != tc.code || (tc.err != "" && errOut != tc.err) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d, %q", tc.args, code, errOut, tc.code, tc.err)
		}
	}
}

// TestSchemaCommand checks that `sink schema` prints exactly the DDL of the cassandra package's
// golden files (the same rendering, at the same instant).
func TestSchemaCommand(t *testing.T) {
	for _, ex := range []string{"iot-sensors", "service-events", "high-volume", "metrics-slices"} {
		code, out, errOut := runCmd(t, runSchema, "--config", "../../examples/"+ex+".yaml", "--at", "2024-01-15T12:00:00Z")
		want, err := os.ReadFile("../../cassandra/testdata/schema/" + ex + ".cql")
		if err != nil {
			t.Fatal(err)
		}
		if code != exitOK || errOut != "" || out != string(want) {
			t.Errorf("%s: exit %d, stderr %q, output:\n%s", ex, code, errOut, out)
		}
	}
	code, out, _ := runCmd(t, runSchema, "--config", "../../examples/metrics-slices.yaml", "--topic", "metrics", "--at", "2024-03-31T23:00:00+00:00")
	if code != exitOK || !strings.Contains(out, "metrics.device_metrics_20240331 (") || !strings.Contains(out, "metrics.device_metrics_20240401 (") {
		t.Errorf("slices at --at: exit %d\n%s", code, out)
	}
	for _, args := range [][]string{
		{},
		{"--config", "../../examples/iot-sensors.yaml", "--at", "noon"},
		{"--config", "../../examples/iot-sensors.yaml", "--topic", "nope"},
		{"--config", "../../examples/iot-sensors.yaml", "extra"},
	} {
		if code, _, _ := runCmd(t, runSchema, args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
	if code, _, _ := runCmd(t, runSchema, "--config", "../../config/testdata/bad/clustering.yaml"); code != exitConfig {
		t.Errorf("bad config: exit %d, want %d", code, exitConfig)
	}
}

// TestExplainTimestampNoneIsARecordWithoutOne: --timestamp none explains a record produced without a
// Kafka timestamp (-1), the case a time before 1970 used to stand for by accident.
func TestExplainTimestampNoneIsARecordWithoutOne(t *testing.T) {
	code, out, errOut := runCmd(t, runExplain, "--config", "../../examples/iot-sensors.yaml", "--topic", "readings",
		"--record", sensorRecord, "--timestamp", "none")
	if code != exitBadData || !strings.Contains(out, "the record has no Kafka timestamp (-1)") {
		t.Errorf("exit %d, stdout %q, stderr %q; want a dead letter for the missing Kafka timestamp", code, out, errOut)
	}
}

// TestExplainSaysAnExpiredRecordIsSkipped guards explain against the pipeline: under ttl_from: event_time a
// record whose row would be born expired is skipped and committed by sink run, never dead-lettered, but
// explain called it a dead letter (reason expired) and exited 4, as for bad data.
func TestExplainSaysAnExpiredRecordIsSkipped(t *testing.T) {
	example, err := os.ReadFile("../../examples/iot-sensors.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(example), "\n    ttl: 90d\n", "\n    ttl: 90d\n    ttl_from: event_time\n", 1)
	if cfg == string(example) {
		t.Fatal("examples/iot-sensors.yaml has no `ttl: 90d` line to add ttl_from after")
	}
	path := filepath.Join(t.TempDir(), "expired.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	// The record's event time (2024-01-15) is more than 90 days before the Kafka timestamp now.
	code, out, errOut := runCmd(t, runExplain, "--config", path, "--topic", "readings", "--record", sensorRecord,
		"--timestamp", time.Now().UTC().Format(time.RFC3339))
	if code != exitOK || !strings.HasPrefix(out, "skipped (reason expired)") || strings.Contains(out, "dead letter") {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 0 and a skipped line", code, out, errOut)
	}
}
