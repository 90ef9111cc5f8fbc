package checks

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

// TestAlertRules loads deploy/prometheus/alerts.yaml with Prometheus's own rule-file parser,
// which validates every expression, duration, label and annotation template the way the
// Prometheus server does at load time, and then checks what the rules select and cover.
func TestAlertRules(t *testing.T) {
	groups, errs := rulefmt.ParseFile(alertsFile, false, model.UTF8Validation, promql, slog.New(slog.DiscardHandler))
	for _, err := range errs {
		t.Errorf("%s: %v", alertsFile, err)
	}
	if len(errs) > 0 {
		t.FailNow()
	}
	metrics := exportedMetrics(t)
	alerts := map[string]rulefmt.Rule{}
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			alerts[r.Alert] = r
			expr := parsePromQL(t, "alert "+r.Alert, r.Expr)
			for _, name := range selectedMetrics(expr) {
				// up is Prometheus's own scrape health, the only way to see a sink that is gone.
				if name != "up" && !metrics.has(name) {
					t.Errorf("alert %s uses %s, which the daemon does not export", r.Alert, name)
				}
			}
			if r.Labels["severity"] == "" || r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("alert %s needs a severity label and summary and description annotations", r.Alert)
			}
		}
	}

	// The conditions issue 7 asks for, each by the metric it must watch.
	for alert, metric := range map[string]string{
		"SinkConsumerLagGrowing":  "sink_consumer_lag_records",
		"SinkDeadLetters":         "sink_records_dead_lettered_total",
		"SinkPartitionOverBudget": "sink_largest_partition_bytes",
		// Issue 18: a partition over budget even after splitting.
		"SinkPartitionOverBudgetAfterSplit": "sink_partitions_over_budget",
		"SinkWritesFailing":                 "sink_records_failed_total",
		"SinkNotReady":                      "sink_ready",
		"SinkPartitionStuck":                "sink_stuck_partitions",
	} {
		r, ok := alerts[alert]
		if !ok {
			t.Errorf("no alert %s", alert)
			continue
		}
		if !strings.Contains(r.Expr, metric) {
			t.Errorf("alert %s does not watch %s: %s", alert, metric, r.Expr)
		}
	}

	// The budget comparison matches each ranked partition to its topic's single budget series:
	// without on(topic) the rank label keeps the sides apart, and without group_left the match
	// is one-to-one and fails at evaluation as soon as a topic exports two ranks.
	budget := parsePromQL(t, "SinkPartitionOverBudget", alerts["SinkPartitionOverBudget"].Expr)
	be, ok := budget.(*parser.BinaryExpr)
	if !ok || be.VectorMatching == nil || !be.VectorMatching.On ||
		strings.Join(be.VectorMatching.MatchingLabels, ",") != "topic" ||
		be.VectorMatching.Card != parser.CardManyToOne {
		t.Errorf("SinkPartitionOverBudget must compare `> on (topic) group_left` against the budget: %s", budget)
	}
}
