package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bucketsink/sink/config"
)

// configJSON runs `sink config --format json` and decodes what it prints.
func configJSON(t *testing.T, args ...string) map[string]config.Setting {
	t.Helper()
	code, out, errOut := runCmd(t, runConfig, append(args, "--format", "json")...)
	if code != exitOK || errOut != "" {
		t.Fatalf("config %q: exit %d, stderr %q", args, code, errOut)
	}
	var r settingsReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("config %q: %v\n%s", args, err, out)
	}
	got := map[string]config.Setting{}
	for _, s := range r.Settings {
		got[s.Key] = s
	}
	return got
}

// TestConfigPrintsEveryKeyOfEveryExample: `sink config` on each file of examples/ lists every key the
// loader knows (each topic's under its name, each column's and clustering column's under its index)
// with a value and where it came from, in JSON and in the text table alike.
func TestConfigPrintsEveryKeyOfEveryExample(t *testing.T) {
	files, err := filepath.Glob("../../examples/*.yaml")
	if err != nil || len(files) < 9 {
		t.Fatalf("examples: %v, %v", files, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			got := configJSON(t, "--config", f)
			cfg, err := config.Check(t.Context(), f, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := 0
			for _, k := range config.Keys() {
				for _, name := range cfg.TopicNames() {
					if !strings.HasPrefix(k.Path, "topics.") && name != cfg.TopicNames()[0] {
						continue // a key outside topics, once
					}
					path := strings.Replace(k.Path, config.TopicPlaceholder, name, 1)
					list, rest, isList := strings.Cut(path, "[]")
					n := 1
					if isList {
						switch {
						case strings.HasSuffix(list, ".columns"):
							n = len(cfg.Topics[name].Columns)
						case strings.HasSuffix(list, ".clustering"):
							n = len(cfg.Topics[name].Clustering)
						case strings.HasSuffix(list, ".rollups"):
							n = len(cfg.Topics[name].Rollups)
						}
					}
					var paths []string
					for i := range n {
						p := path
						if isList {
							p = fmt.Sprintf("%s[%d]%s", list, i, rest)
						}
						// A rollup's aggregates and a UDT column's fields: a list inside the list.
						if inner, tail, nested := strings.Cut(p, "[]"); nested && strings.HasSuffix(inner, ".fields") {
							for j := range cfg.Topics[name].Columns[i].Fields {
								paths = append(paths, fmt.Sprintf("%s[%d]%s", inner, j, tail))
							}
							continue
						}
						if inner, tail, nested := strings.Cut(p, "[]"); nested {
							for j := range cfg.Topics[name].Rollups[i].Aggregates {
								paths = append(paths, fmt.Sprintf("%s[%d]%s", inner, j, tail))
							}
							continue
						}
						paths = append(paths, p)
					}
					for _, p := range paths {
						want++
						s, ok := got[p]
						switch {
						case !ok:
							t.Errorf("%s: not printed", p)
						case s.Source != config.FromDefault && s.Source != config.FromFile && s.Source != config.FromEnvironment:
							t.Errorf("%s: source %q", p, s.Source)
						case s.Source == config.FromDefault && !sameAsDefault(s.Value, k.Default) && !strings.HasPrefix(k.Path, "topics.") && k.Path != "writer.memory_limit":
							t.Errorf("%s: %q from the default, but the default is %q", p, s.Value, k.Default)
						}
					}
				}
			}
			if len(got) != want {
				t.Errorf("%d settings printed, %d keys expected", len(got), want)
			}
			if got["topics."+cfg.TopicNames()[0]+".table"].Source != config.FromFile {
				t.Errorf("the table of the first topic is not from the file: %+v", got["topics."+cfg.TopicNames()[0]+".table"])
			}
			code, text, _ := runCmd(t, runConfig, "--config", f)
			if lines := strings.Count(text, "\n"); code != exitOK || lines != want+1 {
				t.Errorf("text: exit %d, %d lines, want %d keys and a header", code, lines, want)
			}
		})
	}
}

// sameAsDefault: a key without a default (Keys says "") shows its zero value.
func sameAsDefault(value, dflt string) bool {
	if dflt == "" {
		switch value {
		case "", "0", "false", "[]", "{}", "0s", "0B":
			return true
		}
	}
	return value == dflt
}

// TestConfigNamesTheVariableAndRedactsSecrets: a key set from the environment shows its variable; a
// password from a variable shows as [redacted], in the table and in JSON.
func TestConfigNamesTheVariableAndRedactsSecrets(t *testing.T) {
	t.Setenv("SINK_WRITER__LINGER", "25ms")
	t.Setenv("SINK_CASSANDRA__AUTH__USERNAME", "sink")
	t.Setenv("SINK_CASSANDRA__AUTH__PASSWORD", "hunter2")
	got := configJSON(t, "--config", "../../examples/local.yaml")
	if s := got["writer.linger"]; s.Value != "25ms" || s.Source != config.FromEnvironment || s.Env != "SINK_WRITER__LINGER" {
		t.Errorf("writer.linger: %+v", s)
	}
	if s := got["cassandra.auth.password"]; s.Value != "[redacted]" || s.Env != "SINK_CASSANDRA__AUTH__PASSWORD" {
		t.Errorf("cassandra.auth.password: %+v", s)
	}
	if s := got["kafka.group"]; s.Value != "sink-demo" || s.Source != config.FromFile {
		t.Errorf("kafka.group: %+v", s)
	}
	if s := got["writer.max_in_flight"]; s.Value != "64" || s.Source != config.FromDefault {
		t.Errorf("writer.max_in_flight: %+v", s)
	}
	_, text, _ := runCmd(t, runConfig, "--config", "../../examples/local.yaml")
	if strings.Contains(text, "hunter2") || !strings.Contains(text, "environment (SINK_WRITER__LINGER)") {
		t.Errorf("text output:\n%s", text)
	}
	if code, _, errOut := runCmd(t, runConfig, "--config", "../../config/testdata/bad/every-problem-at-once.yaml"); code != exitConfig || !strings.Contains(errOut, "6 problems") {
		t.Errorf("invalid config: exit %d, stderr %q", code, errOut)
	}
}

// TestDebugConfigIsServedWithTheOtherDebugEndpoints: /debug/config on the metrics port shows what
// `sink config --format json` shows; metrics.debug false turns it off with /debug/pprof/ and the
// pipeline's /debug/partitions, and leaves /metrics and the health endpoints alone.
func TestDebugConfigIsServedWithTheOtherDebugEndpoints(t *testing.T) {
	t.Setenv("SINK_CASSANDRA__AUTH__USERNAME", "sink")
	t.Setenv("SINK_CASSANDRA__AUTH__PASSWORD", "hunter2")
	cfg, code := loadConfig(t.Context(), "../../examples/local.yaml", &strings.Builder{})
	if cfg == nil {
		t.Fatalf("exit %d", code)
	}
	pipeline := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("pipeline " + r.URL.Path)) })
	get := func(mux *http.ServeMux, path string) (int, string) {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code, rec.Body.String()
	}

	on := metricsMux(cfg, prometheus.NewRegistry(), pipeline)
	status, body := get(on, "/debug/config")
	var r settingsReport
	if err := json.Unmarshal([]byte(body), &r); status != http.StatusOK || err != nil || len(r.Settings) != len(cfg.Settings()) {
		t.Fatalf("/debug/config: %d, %v, %d settings", status, err, len(r.Settings))
	}
	if strings.Contains(body, "hunter2") || !strings.Contains(body, `"[redacted]"`) {
		t.Errorf("/debug/config shows the password or no redaction:\n%s", body)
	}
	if status, _ := get(on, "/debug/pprof/"); status != http.StatusOK {
		t.Errorf("/debug/pprof/ with metrics.debug on: %d", status)
	}

	cfg.Metrics.Debug = false
	off := metricsMux(cfg, prometheus.NewRegistry(), pipeline)
	for _, path := range []string{"/debug/config", "/debug/pprof/", "/debug/partitions"} {
		if status, _ := get(off, path); status != http.StatusNotFound {
			t.Errorf("%s with metrics.debug off: %d, want 404", path, status)
		}
	}
	if status, _ := get(off, "/metrics"); status != http.StatusOK {
		t.Errorf("/metrics with metrics.debug off: %d", status)
	}
	if status, body := get(off, "/healthz"); status != http.StatusOK || body != "pipeline /healthz" {
		t.Errorf("/healthz with metrics.debug off: %d %q", status, body)
	}
}
