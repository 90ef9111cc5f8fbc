package checks

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/bucketsink/sink/pipeline/metrics"
)

const (
	dashboardFile = "../grafana/sink.json"
	alertsFile    = "../prometheus/alerts.yaml"
	designFile    = "../../docs/DESIGN.md"
)

// exported maps each metric name the daemon exports to its type.
type exported map[string]string

// exportedMetrics is what the daemon registers (metrics.MetricNames), typed by the contract
// table of docs/DESIGN.md ("## Metrics"). The two must list the same names: a metric added to
// one and not the other fails here, before a dashboard or alert can depend on it.
func exportedMetrics(t *testing.T) exported {
	t.Helper()
	design := designMetrics(t)
	m := exported{}
	for _, name := range metrics.MetricNames() {
		typ, ok := design[name]
		if !ok {
			t.Errorf("the daemon exports %s, which docs/DESIGN.md does not list", name)
		}
		m[name] = typ
	}
	for name := range design {
		if _, ok := m[name]; !ok {
			t.Errorf("docs/DESIGN.md lists %s, which metrics.MetricNames does not export", name)
		}
	}
	return m
}

// designMetrics reads the metric table of docs/DESIGN.md, names and types.
func designMetrics(t *testing.T) exported {
	t.Helper()
	raw, err := os.ReadFile(designFile)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "\n## Metrics")
	if !ok {
		t.Fatalf("%s has no '## Metrics' section", designFile)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	row := regexp.MustCompile("(?m)^\\| `(sink_[a-z0-9_]+)` \\| (counter|gauge|histogram|summary) \\|")
	m := exported{}
	for _, match := range row.FindAllStringSubmatch(section, -1) {
		m[match[1]] = match[2]
	}
	if len(m) < 15 {
		t.Fatalf("parsed only %d metrics from %s; the table format changed?", len(m), designFile)
	}
	return m
}

// has says whether a series name is exported: a metric itself, or one of the _bucket, _sum and
// _count series of a histogram (and _sum, _count of a summary).
func (e exported) has(series string) bool {
	if _, ok := e[series]; ok {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(series, suffix)
		if !ok {
			continue
		}
		switch e[base] {
		case "histogram":
			return true
		case "summary":
			return suffix != "_bucket"
		}
	}
	return false
}

// grafanaVars replaces Grafana's built-in interval variables, which PromQL cannot parse, by a
// duration. Template variables such as $topic only appear inside label values (strings).
var grafanaVars = regexp.MustCompile(`\$\{?__(rate_interval|interval|range)(_ms|_s)?\}?`)

// promql is Prometheus's own PromQL parser with its default functions.
var promql = parser.NewParser(parser.Options{})

func parsePromQL(t *testing.T, where, query string) parser.Expr {
	t.Helper()
	expr, err := promql.ParseExpr(grafanaVars.ReplaceAllString(query, "5m"))
	if err != nil {
		t.Fatalf("%s: %q does not parse: %v", where, query, err)
	}
	return expr
}

// selectedMetrics lists the metric names an expression selects.
func selectedMetrics(expr parser.Expr) []string {
	var names []string
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		vs, ok := node.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		if vs.Name != "" {
			names = append(names, vs.Name)
			return nil
		}
		for _, m := range vs.LabelMatchers {
			if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
				names = append(names, m.Value)
			}
		}
		return nil
	})
	return names
}

type dashboard struct {
	UID        string  `json:"uid"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID      int     `json:"id"`
	Type    string  `json:"type"`
	Title   string  `json:"title"`
	Panels  []panel `json:"panels"` // a collapsed row's panels
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

// TestDashboardQueriesExportedMetrics parses every PromQL query of the Grafana dashboard with
// Prometheus's parser and checks that each metric it selects is one the daemon exports. It also
// checks that the dashboard covers what an operator needs to see.
func TestDashboardQueriesExportedMetrics(t *testing.T) {
	metrics := exportedMetrics(t)
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if d.UID == "" {
		t.Error("the dashboard has no uid; provisioning would give it a new one on every load")
	}

	queried := map[string]bool{}
	check := func(where, query string) {
		for _, name := range selectedMetrics(parsePromQL(t, where, query)) {
			queried[name] = true
			if !metrics.has(name) {
				t.Errorf("%s queries %s, which the daemon does not export", where, name)
			}
		}
	}
	var walk func([]panel)
	ids := map[int]bool{}
	walk = func(ps []panel) {
		for _, p := range ps {
			if ids[p.ID] {
				t.Errorf("panel id %d is used twice", p.ID)
			}
			ids[p.ID] = true
			if p.Type != "row" && len(p.Targets) == 0 {
				t.Errorf("panel %q has no query", p.Title)
			}
			for i, target := range p.Targets {
				if target.Expr == "" {
					t.Errorf("panel %q target %d has no expr", p.Title, i)
					continue
				}
				check("panel "+p.Title, target.Expr)
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)

	// label_values(metric, label) is Grafana syntax, not PromQL: check its metric by name.
	labelValues := regexp.MustCompile(`label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,`)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, _ := json.Marshal(v.Query)
		for _, m := range labelValues.FindAllStringSubmatch(string(q), -1) {
			queried[m[1]] = true
			if !metrics.has(m[1]) {
				t.Errorf("variable %s queries %s, which the daemon does not export", v.Name, m[1])
			}
		}
	}

	// What the dashboard must show (issue 7): throughput, write latency, batch sizes, retries,
	// dead letters, consumer and event-time lag, paused partitions, largest partitions.
	for _, want := range []string{
		"sink_records_written_total", "sink_records_consumed_total", "sink_write_duration_seconds_bucket",
		"sink_batch_rows_bucket", "sink_write_retries_total", "sink_records_dead_lettered_total",
		"sink_consumer_lag_records", "sink_event_time_lag_seconds", "sink_paused_partitions",
		"sink_largest_partition_rows", "sink_largest_partition_bytes",
	} {
		if !queried[want] {
			t.Errorf("the dashboard does not show %s", want)
		}
	}
}

// TestExportedMetricNames checks that the daemon's metric list and the design table agree, and
// guards the table's parser: a few names and types it must find.
func TestExportedMetricNames(t *testing.T) {
	m := exportedMetrics(t)
	for name, typ := range map[string]string{
		"sink_write_duration_seconds": "histogram", "sink_records_written_total": "counter", "sink_ready": "gauge",
	} {
		if m[name] != typ {
			t.Errorf("%s: type %q, want %s", name, m[name], typ)
		}
	}
	if !m.has("sink_batch_rows_bucket") || m.has("sink_ready_bucket") || m.has("sink_records_written") {
		t.Error("has() accepts or rejects the wrong series")
	}
}
