package checks

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"go.yaml.in/yaml/v3"

	"github.com/bucketsink/sink/config"
)

const (
	repoRoot          = "../.."
	composeFile       = "../../docker-compose.yml"
	composeSinkConfig = "../compose/sink.yaml"
	prometheusConfig  = "../prometheus/prometheus.yml"
)

// TestDockerComposeConfig runs `docker compose config` when the compose plugin is installed.
// It needs no Docker engine, only the client plugin; where the plugin is missing, the file is
// still checked by TestComposeFile with compose-go, the loader `docker compose` is built on.
func TestDockerComposeConfig(t *testing.T) {
	if exec.Command("docker", "compose", "version").Run() != nil {
		t.Log("the docker compose plugin is not installed; TestComposeFile validates the file with compose-go instead")
		return
	}
	out, err := exec.Command("docker", "compose", "-f", composeFile, "config", "--quiet").CombinedOutput()
	if err != nil {
		t.Fatalf("docker compose config: %v\n%s", err, out)
	}
}

// TestComposeFile loads docker-compose.yml with compose-go (the compose specification's schema,
// interpolation, merge keys, dependency consistency) and checks that the stack starts in order
// and fits together: health checks, start conditions, published ports, mounted files, the
// sink's config, and Prometheus scraping the sink's metrics port.
func TestComposeFile(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	opts, err := cli.NewProjectOptions([]string{composeFile},
		cli.WithWorkingDirectory(repoRoot),
		cli.WithName("sink"),
		cli.WithEnv(nil),
		cli.WithConsistency(true),
		cli.WithResolvedPaths(true),
	)
	if err != nil {
		t.Fatal(err)
	}
	p, err := opts.LoadProject(ctx)
	if err != nil {
		t.Fatalf("loading %s: %v", composeFile, err)
	}

	var names []string
	for n := range p.Services {
		names = append(names, n)
	}
	slices.Sort(names)
	want := []string{"cassandra", "generator", "grafana", "kafka", "prometheus", "registry", "schema", "sink"}
	if !slices.Equal(names, want) {
		t.Fatalf("services %v, want %v", names, want)
	}
	svc := func(name string) types.ServiceConfig { return p.Services[name] }

	for _, name := range []string{"kafka", "cassandra", "registry", "prometheus"} {
		hc := svc(name).HealthCheck
		if hc == nil || hc.Disable || len(hc.Test) < 2 {
			t.Errorf("service %s has no health check; the services after it would start too early", name)
		}
	}

	for service, deps := range map[string]map[string]string{
		"schema":    {"cassandra": types.ServiceConditionHealthy},
		"sink":      {"schema": types.ServiceConditionCompletedSuccessfully, "kafka": types.ServiceConditionHealthy},
		"generator": {"kafka": types.ServiceConditionHealthy},
		"grafana":   {"prometheus": types.ServiceConditionHealthy},
	} {
		for dep, cond := range deps {
			got, ok := svc(service).DependsOn[dep]
			if !ok || got.Condition != cond {
				t.Errorf("%s must wait for %s with condition %s; has %+v", service, dep, cond, got)
			}
		}
	}

	// scripts/stack up --docker starts only these three and expects them where the native stack is.
	for name, port := range map[string]string{"kafka": "9092", "cassandra": "9042", "registry": "8081"} {
		if !slices.ContainsFunc(svc(name).Ports, func(pc types.ServicePortConfig) bool {
			return pc.HostIP == "127.0.0.1" && pc.Published == port
		}) {
			t.Errorf("%s is not published on 127.0.0.1:%s: %+v", name, port, svc(name).Ports)
		}
	}
	kafkaEnv := svc("kafka").Environment
	if adv := kafkaEnv["KAFKA_ADVERTISED_LISTENERS"]; adv == nil ||
		!strings.Contains(*adv, "//kafka:9092") || !strings.Contains(*adv, "//127.0.0.1:9092") {
		t.Errorf("Kafka must advertise kafka:9092 to containers and 127.0.0.1:9092 to the host: %v", adv)
	}

	// Every bind-mounted file exists in the repository.
	for name, s := range p.Services {
		for _, v := range s.Volumes {
			if v.Type != types.VolumeTypeBind {
				continue
			}
			if _, err := os.Stat(v.Source); err != nil {
				t.Errorf("service %s mounts %s, which does not exist: %v", name, v.Source, err)
			}
		}
	}

	// The sink's config is valid and matches the rest of the stack.
	cfg, err := config.Load(composeSinkConfig, nil)
	if err != nil {
		t.Fatalf("config.Load %s: %v", composeSinkConfig, err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Validate %s: %v", composeSinkConfig, err)
	}
	for _, name := range []string{"schema", "sink"} {
		if !slices.ContainsFunc(svc(name).Volumes, func(v types.ServiceVolumeConfig) bool {
			return filepath.Base(v.Source) == "sink.yaml" && v.Target == "/etc/sink/config.yaml"
		}) {
			t.Errorf("service %s does not mount deploy/compose/sink.yaml at /etc/sink/config.yaml", name)
		}
	}
	if !slices.Equal(cfg.Kafka.Brokers, []string{"kafka:9092"}) {
		t.Errorf("the compose sink config uses brokers %v, want kafka:9092", cfg.Kafka.Brokers)
	}
	if g := svc("sink").StopGracePeriod; g == nil || time.Duration(*g) <= time.Duration(cfg.Writer.ShutdownTimeout) {
		t.Errorf("sink stop_grace_period %v must exceed writer.shutdown_timeout %v", g, time.Duration(cfg.Writer.ShutdownTimeout))
	}
	gen := strings.Join(svc("generator").Command, " ")
	for _, topic := range cfg.Topics {
		if !strings.Contains(gen, "--topic="+topic.Topic) {
			t.Errorf("the generator (%s) does not produce to %s, the topic the sink consumes", gen, topic.Topic)
		}
	}
	if !strings.Contains(gen, "--rate=200/s") || !strings.Contains(gen, "--brokers=kafka:9092") {
		t.Errorf("generator command %q", gen)
	}

	// Prometheus scrapes the sink's metrics port and loads the alert rules it mounts.
	_, port, _ := strings.Cut(cfg.Metrics.Address, ":")
	raw, err := os.ReadFile(prometheusConfig)
	if err != nil {
		t.Fatal(err)
	}
	var prom struct {
		RuleFiles     []string `yaml:"rule_files"`
		ScrapeConfigs []struct {
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal(raw, &prom); err != nil {
		t.Fatalf("%s: %v", prometheusConfig, err)
	}
	scraped := false
	for _, sc := range prom.ScrapeConfigs {
		for _, st := range sc.StaticConfigs {
			scraped = scraped || slices.Contains(st.Targets, "sink:"+port)
		}
	}
	if !scraped {
		t.Errorf("%s does not scrape sink:%s", prometheusConfig, port)
	}
	for _, rf := range prom.RuleFiles {
		if !slices.ContainsFunc(svc("prometheus").Volumes, func(v types.ServiceVolumeConfig) bool {
			return v.Target == rf && filepath.Base(v.Source) == "alerts.yaml"
		}) {
			t.Errorf("Prometheus loads %s, but deploy/prometheus/alerts.yaml is not mounted there", rf)
		}
	}
	if len(prom.RuleFiles) == 0 {
		t.Errorf("%s loads no rule files", prometheusConfig)
	}
}
