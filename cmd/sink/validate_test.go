package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestValidateExamples(t *testing.T) {
	for file, want := range map[string]string{
		"../../examples/local.yaml":          "config OK: 1 topic (readings)\n",
		"../../examples/iot-sensors.yaml":    "config OK: 1 topic (readings)\n",
		"../../examples/service-events.yaml": "config OK: 1 topic (service_events)\n",
		"../../examples/high-volume.yaml":    "config OK: 1 topic (firehose)\n",
		"../../examples/metrics-slices.yaml": "config OK: 1 topic (metrics)\n",
	} {
		code, out, errOut := runCmd(t, runValidate, "--config", file)
		if code != exitOK || out != want || errOut != "" {
			t.Errorf("validate %s: exit %d, stdout %q, stderr %q; want 0 and %q", file, code, out, errOut, want)
		}
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	code, out, errOut := runCmd(t, runValidate, "--config", "../../config/testdata/bad/clustering.yaml")
	if code != exitConfig || out != "" {
		t.Fatalf("exit %d stdout %q, want %d and nothing on stdout", code, out, exitConfig)
	}
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "topics.readings.clustering[0].order: ") ||
		lines[4] != "../../config/testdata/bad/clustering.yaml: 4 problems" {
		t.Errorf("stderr:\n%s\nwant 4 problems, one per line, then the count", errOut)
	}
}

func TestValidateUsage(t *testing.T) {
	for _, args := range [][]string{{}, {"--config"}, {"--config", "a.yaml", "b"}, {"--nope"}} {
		if code, _, _ := runCmd(t, runValidate, args...); code != exitUsage {
			t.Errorf("validate %q: exit %d, want %d", args, code, exitUsage)
		}
	}
	if code, _, errOut := runCmd(t, runValidate, "--config", "does-not-exist.yaml"); code != exitConfig || !strings.Contains(errOut, "does-not-exist.yaml") {
		t.Errorf("missing file: exit %d, stderr %q", code, errOut)
	}
}

// TestValidatePrintsWarningsOfAValidConfig: SASL PLAIN without TLS is valid (a trusted network) but
// sends the password in clear; validate says so on a line of its own after "config OK", exit 0.
func TestValidatePrintsWarningsOfAValidConfig(t *testing.T) {
	b, err := os.ReadFile("../../examples/local.yaml")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "plain.yaml")
	yaml := strings.Replace(string(b), "kafka:\n", "kafka:\n  sasl: {mechanism: PLAIN, username: sink, password: secret}\n", 1)
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd(t, runValidate, "--config", path)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != exitOK || errOut != "" || len(lines) != 2 || lines[0] != "config OK: 1 topic (readings)" ||
		!strings.HasPrefix(lines[1], "warning: kafka.sasl.mechanism: PLAIN without kafka.tls sends the password in clear") {
		t.Errorf("exit %d, stdout:\n%s\nstderr %q; want exit 0, config OK and one warning", code, out, errOut)
	}
}

// TestValidateFormatJSON: --format json prints one object for machines, valid or not, each problem
// split into its key, the variable that set it and what is wrong, and keeps the exit codes.
func TestValidateFormatJSON(t *testing.T) {
	code, out, errOut := runCmd(t, runValidate, "--config", "../../examples/local.yaml", "--format", "json")
	var ok validateReport
	if err := json.Unmarshal([]byte(out), &ok); err != nil || code != exitOK || errOut != "" {
		t.Fatalf("valid config: exit %d, %v, stdout %s, stderr %q", code, err, out, errOut)
	}
	if !ok.Valid || len(ok.Topics) != 1 || ok.Topics[0] != "readings" || len(ok.Problems) != 0 {
		t.Errorf("valid config: %+v", ok)
	}

	t.Setenv("SINK_WRITER__LINGER", "5")
	code, out, errOut = runCmd(t, runValidate, "--config", "../../config/testdata/bad/every-problem-at-once.yaml", "--format", "json")
	var bad validateReport
	if err := json.Unmarshal([]byte(out), &bad); err != nil || code != exitConfig || errOut != "" {
		t.Fatalf("bad config: exit %d, %v, stdout %s, stderr %q", code, err, out, errOut)
	}
	keys := map[string]reportProblem{}
	for _, p := range bad.Problems {
		keys[p.Key] = p
	}
	if bad.Valid || len(bad.Problems) != 7 {
		t.Errorf("bad config: valid %v, %d problems, want 7: %+v", bad.Valid, len(bad.Problems), bad.Problems)
	}
	for _, k := range []string{"writer.lingr", "writer.max_in_flight", "writer.commit_interval", "cassandra.auth.password_file",
		"kafka.start_offset", "topics.readings.consistency", "writer.linger"} {
		if _, found := keys[k]; !found {
			t.Errorf("no problem with key %q in %+v", k, bad.Problems)
		}
	}
	if p := keys["writer.linger"]; p.Env != "SINK_WRITER__LINGER" || !strings.Contains(p.Problem, "without a unit") {
		t.Errorf("writer.linger: %+v; want it from SINK_WRITER__LINGER", p)
	}

	code, out, _ = runCmd(t, runValidate, "--config", "does-not-exist.yaml", "--format", "json")
	var missing validateReport
	if err := json.Unmarshal([]byte(out), &missing); err != nil || code != exitConfig || len(missing.Problems) != 1 || missing.Problems[0].Key != "" {
		t.Errorf("missing file: exit %d, %v, %+v", code, err, missing)
	}
}
