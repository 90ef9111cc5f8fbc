package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/bucketsink/sink/bucketer"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/sizing"
)

func runCmd(t *testing.T, run func(context.Context, []string, io.Writer, io.Writer) int, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// The seed's sizing matrix, cell by cell: rate per entity, row size, then the daily, hourly
// and 10-minute partition sizes with their marks.
var seedMatrix = []struct {
	rate, rowBytes           string
	daily, hourly, tenMinute string
}{
	{"1", "100", "8.6 MB ✓", "360 KB", "60 KB"},
	{"10", "100", "86 MB ✓", "3.6 MB ✓", "600 KB"},
	{"100", "100", "860 MB ✗", "36 MB ✓", "6 MB ✓"},
	{"1000", "100", "8.6 GB ✗", "360 MB ✗", "60 MB ✓"},
	{"10000", "100", "86 GB ✗", "3.6 GB ✗", "600 MB ✗"},
	{"1", "1KB", "86 MB ✓", "3.6 MB ✓", "600 KB"},
	{"10", "1KB", "860 MB ✗", "36 MB ✓", "6 MB ✓"},
	{"100", "1KB", "8.6 GB ✗", "360 MB ✗", "60 MB ✓"},
}

func TestPlanReproducesSeedMatrix(t *testing.T) {
	for _, row := range seedMatrix {
		t.Run(row.rate+"/s×"+row.rowBytes, func(t *testing.T) {
			code, out, errOut := runCmd(t, runPlan, "--rate", row.rate, "--row-bytes", row.rowBytes, "--json")
			if code != exitOK && code != exitNoFit {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var raw struct {
				Candidates []map[string]any `json:"candidates"`
			}
			if err := json.Unmarshal([]byte(out), &raw); err != nil {
				t.Fatalf("decoding %s: %v", out, err)
			}
			cells := map[string]string{}
			for _, c := range raw.Candidates {
				cell := c["size"].(string)
				if m := c["size_mark"].(string); m != "" {
					cell += " " + m
				}
				cells[c["bucket"].(string)] = cell
			}
			for bucket, want := range map[string]string{"1d": row.daily, "1h": row.hourly, "10m": row.tenMinute} {
				if cells[bucket] != want {
					t.Errorf("%s: %q, want %q", bucket, cells[bucket], want)
				}
			}

			// The text table shows the same size and mark in the row of each granularity.
			_, text, _ := runCmd(t, runPlan, "--rate", row.rate, "--row-bytes", row.rowBytes)
			for bucket, want := range map[string]string{"1d": row.daily, "1h": row.hourly, "10m": row.tenMinute} {
				// "8.6 MB ✓" is the size column then the mark column, two spaces apart.
				cell := want
				if size, mark, ok := cutMark(want); ok {
					cell = size + "  " + mark
				}
				if line := lineStarting(text, bucket+" "); !strings.Contains(line, cell) {
					t.Errorf("text row %q lacks %q", line, cell)
				}
			}
		})
	}
}

// cutMark splits "8.6 MB ✓" into "8.6 MB" and "✓".
func cutMark(cell string) (size, mark string, ok bool) {
	i := strings.LastIndex(cell, " ")
	if m := cell[i+1:]; m == "✓" || m == "✗" {
		return cell[:i], m, true
	}
	return cell, "", false
}

func lineStarting(text, prefix string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

func TestPlanRecommendsAndExits(t *testing.T) {
	tests := []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"--rate", "1", "--row-bytes", "100"}, exitOK,
			[]string{"Recommended: 1d buckets: 86,400 rows and 8.6 MB per partition"}},
		// The matrix marks a daily 86 MB ✓; the 100,000-row rule still flags it.
		{[]string{"--rate", "10/s", "--row-bytes", "100"}, exitOK,
			[]string{"too big: over 100,000 rows", "Recommended: 1h buckets: 36,000 rows and 3.6 MB"}},
		{[]string{"--rate", "600/m", "--row-bytes", "1KB"}, exitOK, []string{"Recommended: 1h buckets: 36,000 rows and 36 MB"}},
		{[]string{"--rate", "10000", "--row-bytes", "1KB", "--entities", "50"}, exitNoFit,
			[]string{"1m buckets × 6 event buckets", "Recommended: 1m buckets × 8 event buckets: 75,000 rows and 75 MB",
				"50 entities: 500,000 rows/s in total"}},
		{[]string{"--rate", "1e7", "--row-bytes", "1KB"}, exitNoFit, []string{"No tabulated width fits within 1024 event buckets",
			"Recommended: 10s buckets × 1024 event buckets: 97,656 rows and 98 MB per partition (even 1m buckets would need 6000 event buckets, more than the 1024 a policy accepts"}},
		{[]string{"--rate", "1e12", "--row-bytes", "1KB"}, exitNoFit, []string{"No policy fits: even 1s buckets would need 10000000 event buckets, more than the 1024 a policy accepts"}},
		{[]string{"--rate", "1e12", "--row-bytes", "1KB", "--entities", "2"}, exitNoFit, []string{"2 entities: 2,000,000,000,000 rows/s in total, 170000 PB and 172,800,000,000,000,000 rows a day.\n"}},
		{[]string{"--config", "../../examples/high-volume.yaml", "--topic", "firehose", "--rate", "1000", "--row-bytes", "1000"}, exitOK,
			[]string{"Topic firehose (Kafka sensor-firehose): bucket width 10m, 8 event buckets, budget 100 MB", "75,000 rows, 75 MB: ✓ in target"}},
		{[]string{"--config", "../../examples/iot-sensors.yaml", "--rate", "10", "--row-bytes", "100"}, exitNoFit,
			[]string{"per partition: 864,000 rows, 86 MB: too big: over 100,000 rows", "over budget: use 1h buckets, or 9 event buckets at width 1d"}},
		{[]string{"--config", "../../examples/metrics-slices.yaml", "--rate", "1", "--row-bytes", "200"}, exitOK,
			[]string{"bucket width 1h", "3,600 rows, 720 KB: too small"}},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errOut := runCmd(t, runPlan, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\n%s%s", code, tc.code, out, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestPlanUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"--rate", "10"},
		{"--rate", "fast", "--row-bytes", "100"},
		{"--rate", "-1", "--row-bytes", "100"},
		{"--rate", "1e308", "--row-bytes", "100"},
		{"--rate", "10/week", "--row-bytes", "100"},
		{"--rate", "10", "--row-bytes", "0"},
		{"--rate", "10", "--row-bytes", "100", "--topic", "readings"},
		{"--rate", "10", "--row-bytes", "100", "--config", "../../examples/local.yaml", "--topic", "nope"},
		{"--rate", "10", "--row-bytes", "100", "extra"},
	} {
		if code, _, errOut := runCmd(t, runPlan, args...); code != exitUsage || errOut == "" {
			t.Errorf("plan %q: exit %d (stderr %q), want %d with a message", args, code, errOut, exitUsage)
		}
	}
	if code, _, _ := runCmd(t, runPlan, "--rate", "1", "--row-bytes", "1", "--config", "../../config/testdata/bad/width-7m.yaml"); code != exitConfig {
		t.Errorf("plan with an invalid config: exit %d, want %d", code, exitConfig)
	}
}

func TestParseRate(t *testing.T) {
	for in, want := range map[string]float64{"10": 10, "10/s": 10, "600/m": 10, "36000/h": 10, "86400/d": 1, "0.5": 0.5, " 3 / s ": 3} {
		if got, err := parseRate(in); err != nil || got != want {
			t.Errorf("parseRate(%q) = %g, %v; want %g", in, got, err, want)
		}
	}
}

// plan must never propose more event buckets than a policy accepts.
func TestEventBucketCapsAgree(t *testing.T) {
	if sizing.MaxEventBuckets != bucketer.MaxEventBuckets {
		t.Errorf("sizing.MaxEventBuckets %d != bucketer.MaxEventBuckets %d", sizing.MaxEventBuckets, bucketer.MaxEventBuckets)
	}
}

// TestPlanNeverSuggestsMoreEventBucketsThanValidateAccepts: every policy plan prints, recommended or
// judged, is one validate accepts. It used to tell a daily topic at 1,280 rows/s to use 1,106 event
// buckets, which validate then refuses (at most 1024).
func TestPlanNeverSuggestsMoreEventBucketsThanValidateAccepts(t *testing.T) {
	counts := regexp.MustCompile(`(\d[\d,]*) event buckets`)
	recommended := regexp.MustCompile(`Recommended: (\S+) buckets(?: × (\d+) event buckets)?:`)
	for _, args := range [][]string{
		{"--rate", "1280", "--row-bytes", "100", "--config", "../../examples/iot-sensors.yaml"},
		{"--rate", "1e5", "--row-bytes", "1KB", "--config", "../../examples/iot-sensors.yaml"},
		{"--rate", "2e6", "--row-bytes", "1KB"},
		{"--rate", "1e7", "--row-bytes", "1KB"},
		{"--rate", "1e12", "--row-bytes", "1KB"},
	} {
		_, out, _ := runCmd(t, runPlan, args...)
		for _, m := range counts.FindAllStringSubmatch(out, -1) {
			n, _ := strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
			// A count in a sentence saying it is too many is fine; a proposed one is not.
			if n > bucketer.MaxEventBuckets && !strings.Contains(out, m[0]+", more than") {
				t.Errorf("plan %q proposes %d event buckets:\n%s", args, n, out)
			}
		}
		rec := recommended.FindStringSubmatch(out)
		if rec == nil {
			continue // no policy fits at all, and plan says so
		}
		cfg, err := config.Load("../../examples/iot-sensors.yaml", nil)
		if err != nil {
			t.Fatal(err)
		}
		tp := cfg.Topics["readings"]
		tp.Bucket.Width, tp.Bucket.Layout, tp.Bucket.EventBuckets = rec[1], "", 1 // the width's own key layout
		if rec[2] != "" {
			tp.Bucket.EventBuckets, _ = strconv.Atoi(rec[2])
		}
		cfg.Topics["readings"] = tp
		if err := cfg.Validate(); err != nil {
			t.Errorf("plan %q recommends %s, which validate refuses: %v", args, rec[0], err)
		}
	}
	_, out, _ := runCmd(t, runPlan, "--rate", "1280", "--row-bytes", "100", "--config", "../../examples/iot-sensors.yaml")
	if want := "over budget: width 1d would need 1106 event buckets, more than the 1024 a policy accepts; use 1m buckets"; !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
}

// A rollup table's partition holds one row per window of its bucket, at any rate: plan counts them
// over the longest bucket and refuses a bucket that holds too many windows.
func TestPlanJudgesRollupPartitions(t *testing.T) {
	code, out, stderr := runCmd(t, runPlan, "--rate", "1", "--row-bytes", "100", "--config", "../../examples/sensor-rollups.yaml")
	if code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	for _, want := range []string{"rollup hourly: 1h windows in month partitions: 744 rows", "rollup daily: 1d windows in year partitions: 366 rows"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	b, err := os.ReadFile("../../examples/sensor-rollups.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// Ten-second windows in a month: 267,840 rows per partition.
	text := strings.Replace(string(b), "width: 1h\n", "width: 10s\n", 1)
	path := filepath.Join(t.TempDir(), "fine.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runCmd(t, runPlan, "--rate", "1", "--row-bytes", "100", "--config", path)
	if code != exitNoFit || !strings.Contains(out, "rollup hourly: 10s windows in month partitions: 267,840 rows") || !strings.Contains(out, "over budget") {
		t.Fatalf("exit %d (want %d), output:\n%s", code, exitNoFit, out)
	}
}
