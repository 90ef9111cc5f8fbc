package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func splitPlanConfig(t *testing.T, maxEventBuckets string) string {
	t.Helper()
	yaml := `
kafka: {brokers: ["127.0.0.1:9092"]}
cassandra: {hosts: ["127.0.0.1"], keyspace: telemetry}
topics:
  readings:
    id: [device_id]
    time: {field: ts}
    bucket: {width: 1h}
    split: {enabled: true, max_event_buckets: ` + maxEventBuckets + `}
    table: readings
    columns:
      - {name: device_id, type: text, field: device_id}
      - {name: ts, type: timestamp, source: event_time}
    clustering:
      - {column: ts}
`
	path := filepath.Join(t.TempDir(), "split.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestPlanReportsTheSplitsARateNeeds: at 100 rows/s of 1 KB an hourly partition holds 360 MB and
// 360,000 rows; with split on, plan says the entity is split into 8 event buckets (each at most
// half the budget: 45 MB, 45,000 rows) and exits 0 while 8 is within max_event_buckets, 5 when not.
func TestPlanReportsTheSplitsARateNeeds(t *testing.T) {
	code, out, errOut := runCmd(t, runPlan, "--config", splitPlanConfig(t, "64"), "--rate", "100", "--row-bytes", "1KB")
	if code != exitOK {
		t.Fatalf("exit %d with splits that fit; want %d\n%s%s", code, exitOK, out, errOut)
	}
	if !strings.Contains(out, "split at write time into up to 8 event buckets (max_event_buckets 64)") {
		t.Errorf("plan does not report the split:\n%s", out)
	}
	code, out, _ = runCmd(t, runPlan, "--config", splitPlanConfig(t, "4"), "--rate", "100", "--row-bytes", "1KB", "--json")
	if code != exitNoFit {
		t.Fatalf("exit %d with splits over the cap; want %d\n%s", code, exitNoFit, out)
	}
	var got struct {
		Topic struct {
			OverBudget        bool  `json:"over_budget"`
			SplitEventBuckets int   `json:"split_event_buckets"`
			SplitFits         *bool `json:"split_fits"`
		} `json:"topic"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if !got.Topic.OverBudget || got.Topic.SplitEventBuckets != 8 || got.Topic.SplitFits == nil || *got.Topic.SplitFits {
		t.Errorf("JSON topic %+v; want over budget, 8 event buckets needed, split_fits false", got.Topic)
	}
	// A rate that fits one partition needs no split and says nothing about it.
	code, out, _ = runCmd(t, runPlan, "--config", splitPlanConfig(t, "64"), "--rate", "1", "--row-bytes", "100")
	if code != exitOK || strings.Contains(out, "split") {
		t.Errorf("a small rate: exit %d, output mentions a split:\n%s", code, out)
	}
}
