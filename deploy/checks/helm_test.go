package checks

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/bucketsink/sink/config"
)

// helmVersion is the helm release the checks run. It is built from source through the Go
// module proxy (no helm binary is assumed on the machine); bump it deliberately.
const helmVersion = "v3.21.4"

const chartDir = "../helm/sink"

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

var (
	helmOnce sync.Once
	helmBin  string
	helmErr  error
	helmHome string
)

// TestMain removes the helm build directory after all tests.
func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if helmHome != "" {
		os.RemoveAll(helmHome)
	}
	os.Exit(code)
}

// helm runs the pinned helm with args and returns its stdout; stderr comes back in the error.
// The binary is built once per test run (go install into a temporary GOBIN), and helm's
// config, cache and data homes point into the same temporary directory so the user's own
// helm setup neither leaks in nor gets written to.
func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	helmOnce.Do(func() {
		helmHome, helmErr = os.MkdirTemp("", "sink-checks-helm-")
		if helmErr != nil {
			return
		}
		cmd := exec.Command("go", "install", "helm.sh/helm/v3/cmd/helm@"+helmVersion)
		cmd.Env = append(os.Environ(), "GOBIN="+filepath.Join(helmHome, "bin"))
		if out, err := cmd.CombinedOutput(); err != nil {
			helmErr = fmt.Errorf("building helm %s with the Go toolchain: %w\n%s", helmVersion, err, out)
			return
		}
		helmBin = filepath.Join(helmHome, "bin", "helm")
	})
	if helmErr != nil {
		t.Fatal(helmErr)
	}
	cmd := exec.Command(helmBin, args...)
	cmd.Env = append(os.Environ(),
		"HELM_CONFIG_HOME="+filepath.Join(helmHome, "config"),
		"HELM_CACHE_HOME="+filepath.Join(helmHome, "cache"),
		"HELM_DATA_HOME="+filepath.Join(helmHome, "data"),
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// valueSets are the value files under testdata/values, each rendered against a golden file.
func valueSets(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("testdata/values/*.yaml")
	if err != nil || len(files) < 3 {
		t.Fatalf("want at least three value sets in testdata/values, found %v (%v)", files, err)
	}
	return files
}

func render(t *testing.T, valuesFile string) (string, error) {
	t.Helper()
	return helm(t, "template", "sink", chartDir, "--namespace", "streaming", "-f", valuesFile)
}

func TestHelmLintStrict(t *testing.T) {
	if out, err := helm(t, "lint", "--strict", chartDir); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, vf := range valueSets(t) {
		if out, err := helm(t, "lint", "--strict", chartDir, "-f", vf); err != nil {
			t.Errorf("with %s: %v\n%s", vf, err, out)
		}
	}
}

func TestHelmTemplateGolden(t *testing.T) {
	for _, vf := range valueSets(t) {
		name := strings.TrimSuffix(filepath.Base(vf), ".yaml")
		t.Run(name, func(t *testing.T) {
			out, err := render(t, vf)
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "golden", name+".yaml")
			if *update {
				if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if out != string(want) {
				t.Errorf("rendering with %s differs from %s (go test -update rewrites it after review):\n%s",
					vf, golden, lineDiff(string(want), out))
			}
		})
	}
}

// TestRenderedManifests checks what the chart promises, on every value set: the consumer-group
// rollout, the grace period above the flush deadline, probes on the metrics port, the
// hardened security context, and passwords only as Secret references.
func TestRenderedManifests(t *testing.T) {
	for _, vf := range valueSets(t) {
		t.Run(filepath.Base(vf), func(t *testing.T) {
			out, err := render(t, vf)
			if err != nil {
				t.Fatal(err)
			}
			docs := manifests(t, out)
			dep := find(t, docs, "Deployment")
			var d struct {
				Spec struct {
					Strategy struct {
						RollingUpdate struct {
							MaxSurge       any `yaml:"maxSurge"`
							MaxUnavailable any `yaml:"maxUnavailable"`
						} `yaml:"rollingUpdate"`
					} `yaml:"strategy"`
					Template struct {
						Spec struct {
							Grace      int `yaml:"terminationGracePeriodSeconds"`
							Containers []struct {
								Ports []struct {
									Name string `yaml:"name"`
									Port int    `yaml:"containerPort"`
								} `yaml:"ports"`
								Liveness  probe `yaml:"livenessProbe"`
								Readiness probe `yaml:"readinessProbe"`
								Env       []struct {
									Name      string         `yaml:"name"`
									Value     *string        `yaml:"value"`
									ValueFrom map[string]any `yaml:"valueFrom"`
								} `yaml:"env"`
								SecurityContext struct {
									ReadOnlyRoot *bool `yaml:"readOnlyRootFilesystem"`
									NoEscalation *bool `yaml:"allowPrivilegeEscalation"`
									NonRoot      *bool `yaml:"runAsNonRoot"`
									Capabilities struct {
										Drop []string `yaml:"drop"`
									} `yaml:"capabilities"`
								} `yaml:"securityContext"`
							} `yaml:"containers"`
							PodSecurity struct {
								Seccomp struct {
									Type string `yaml:"type"`
								} `yaml:"seccompProfile"`
							} `yaml:"securityContext"`
						} `yaml:"spec"`
					} `yaml:"template"`
				} `yaml:"spec"`
			}
			decodeInto(t, dep, &d)
			if ru := d.Spec.Strategy.RollingUpdate; ru.MaxSurge != 0 || ru.MaxUnavailable != 1 {
				t.Errorf("rolling update maxSurge %v maxUnavailable %v, want 0 and 1", ru.MaxSurge, ru.MaxUnavailable)
			}
			cfg := loadRenderedConfig(t, docs)
			shutdown := time.Duration(cfg.Writer.ShutdownTimeout)
			// sink run exits within shutdown_timeout + 12 s of SIGTERM (docs/PIPELINE.md, "Shutdown").
			if grace := time.Duration(d.Spec.Template.Spec.Grace) * time.Second; grace < shutdown+13*time.Second {
				t.Errorf("terminationGracePeriodSeconds %v leaves no second above the longest stop, writer.shutdown_timeout %v + 12 s", grace, shutdown)
			}
			c := d.Spec.Template.Spec.Containers[0]
			if len(c.Ports) != 1 || c.Ports[0].Name != "metrics" || !strings.HasSuffix(cfg.Metrics.Address, fmt.Sprintf(":%d", c.Ports[0].Port)) {
				t.Errorf("container ports %+v do not match metrics.address %q", c.Ports, cfg.Metrics.Address)
			}
			if c.Liveness.HTTPGet.Path != "/healthz" || c.Readiness.HTTPGet.Path != "/readyz" ||
				c.Liveness.HTTPGet.Port != "metrics" || c.Readiness.HTTPGet.Port != "metrics" {
				t.Errorf("probes liveness %+v readiness %+v, want /healthz and /readyz on the metrics port", c.Liveness, c.Readiness)
			}
			sc := c.SecurityContext
			if sc.ReadOnlyRoot == nil || !*sc.ReadOnlyRoot || sc.NoEscalation == nil || *sc.NoEscalation ||
				sc.NonRoot == nil || !*sc.NonRoot || !slices.Equal(sc.Capabilities.Drop, []string{"ALL"}) ||
				d.Spec.Template.Spec.PodSecurity.Seccomp.Type != "RuntimeDefault" {
				t.Errorf("security context not hardened: %+v, seccomp %q", sc, d.Spec.Template.Spec.PodSecurity.Seccomp.Type)
			}
			for _, e := range c.Env {
				if strings.Contains(e.Name, "PASSWORD") && (e.Value != nil || e.ValueFrom["secretKeyRef"] == nil) {
					t.Errorf("env %s is not a Secret reference", e.Name)
				}
			}
			raw := configYAML(t, docs)
			if strings.Contains(strings.ToLower(raw), "password:") {
				t.Errorf("the ConfigMap carries a password:\n%s", raw)
			}
		})
	}
}

type probe struct {
	HTTPGet struct {
		Path string `yaml:"path"`
		Port string `yaml:"port"`
	} `yaml:"httpGet"`
}

// TestRenderedConfigValidates loads the ConfigMap's config.yaml of every value set with the
// daemon's own loader, with the environment the Deployment gives the container (each Secret
// reference stands in as a placeholder), and validates it: what the chart renders is what
// `sink validate` accepts.
func TestRenderedConfigValidates(t *testing.T) {
	for _, vf := range valueSets(t) {
		t.Run(filepath.Base(vf), func(t *testing.T) {
			out, err := render(t, vf)
			if err != nil {
				t.Fatal(err)
			}
			loadRenderedConfig(t, manifests(t, out))
		})
	}
}

func loadRenderedConfig(t *testing.T, docs []map[string]any) *config.Config {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(configYAML(t, docs)), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path, containerEnv(t, docs))
	if err != nil {
		t.Fatalf("config.Load of the rendered ConfigMap: %v", err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Validate of the rendered ConfigMap: %v", err)
	}
	return cfg
}

// containerEnv is the sink container's environment as NAME=VALUE, Secret references replaced
// by a placeholder, so config.Load sees the same SINK_ overrides the pod will.
func containerEnv(t *testing.T, docs []map[string]any) []string {
	t.Helper()
	var d struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Env []struct {
							Name      string         `yaml:"name"`
							Value     string         `yaml:"value"`
							ValueFrom map[string]any `yaml:"valueFrom"`
						} `yaml:"env"`
					} `yaml:"containers"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	decodeInto(t, find(t, docs, "Deployment"), &d)
	var env []string
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		v := e.Value
		if e.ValueFrom != nil {
			v = "from-secret"
			if strings.HasSuffix(e.Name, "__URLS") { // validated as URLs
				v = "https://from-secret.example:8081"
			}
		}
		env = append(env, e.Name+"="+v)
	}
	return env
}

func configYAML(t *testing.T, docs []map[string]any) string {
	t.Helper()
	cm := find(t, docs, "ConfigMap")
	data, _ := cm["data"].(map[string]any)
	raw, ok := data["config.yaml"].(string)
	if !ok {
		t.Fatal("the ConfigMap has no data.config.yaml")
	}
	return raw
}

// TestSchemaRejectsBadValues renders every file under testdata/bad; each must fail, and the
// message must contain what the file's first line promises (`# want: ...`), so a value set
// rejected for the wrong reason does not pass.
func TestSchemaRejectsBadValues(t *testing.T) {
	files, _ := filepath.Glob("testdata/bad/*.yaml")
	if len(files) < 5 {
		t.Fatalf("want at least five bad value sets, found %d", len(files))
	}
	schemaRejections := 0
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".yaml"), func(t *testing.T) {
			content, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			first, _, _ := strings.Cut(string(content), "\n")
			want, ok := strings.CutPrefix(first, "# want: ")
			if !ok {
				t.Fatalf("%s must start with '# want: <part of the error>'", f)
			}
			out, err := render(t, f)
			if err == nil {
				t.Fatalf("rendering with %s succeeded; want an error containing %q\n%s", f, want, out)
			}
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("error does not contain %q:\n%v", want, err)
			}
			if strings.Contains(err.Error(), "don't meet the specifications of the schema") {
				schemaRejections++
			}
		})
	}
	if schemaRejections < 5 {
		t.Errorf("only %d bad value sets were rejected by values.schema.json; want at least five", schemaRejections)
	}
}

// TestReadmeListsEveryValue keeps the chart README's table in step with values.yaml: every
// value (down to the level users set) has a row.
func TestReadmeListsEveryValue(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(raw, &values); err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(chartDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	// Below these, values are free-form objects documented as a whole.
	whole := map[string]bool{
		"config": true, "resources": true, "podSecurityContext": true, "securityContext": true,
		"probes.liveness": true, "probes.readiness": true, "probes.startup": true,
	}
	var paths []string
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			p := strings.TrimPrefix(prefix+"."+k, ".")
			if sub, ok := v.(map[string]any); ok && len(sub) > 0 && !whole[p] {
				walk(p, sub)
				continue
			}
			paths = append(paths, p)
		}
	}
	walk("", values)
	if len(paths) < 40 {
		t.Fatalf("found only %d values; the walk is broken", len(paths))
	}
	for _, p := range paths {
		if !bytes.Contains(readme, []byte("| `"+p+"` |")) {
			t.Errorf("README.md has no row for value %s", p)
		}
	}
}

// manifests splits helm's output into its documents.
func manifests(t *testing.T, out string) []map[string]any {
	t.Helper()
	var docs []map[string]any
	dec := yaml.NewDecoder(strings.NewReader(out))
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("helm output is not YAML: %v", err)
		}
		if doc != nil {
			docs = append(docs, doc)
		}
	}
}

func find(t *testing.T, docs []map[string]any, kind string) map[string]any {
	t.Helper()
	for _, d := range docs {
		if d["kind"] == kind {
			return d
		}
	}
	t.Fatalf("no %s rendered", kind)
	return nil
}

func decodeInto(t *testing.T, doc map[string]any, dst any) {
	t.Helper()
	raw, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, dst); err != nil {
		t.Fatal(err)
	}
}

// lineDiff shows the first differing lines, enough to see what changed.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	shown := 0
	for i := 0; i < max(len(w), len(g)) && shown < 20; i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d:\n  want %q\n  got  %q\n", i+1, wl, gl)
			shown++
		}
	}
	return b.String()
}
