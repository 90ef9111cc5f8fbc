package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/reader/readertest"
)

// TestIntegrationQueryPagesThroughWhatRunWrote: rows written by the pipeline come back from `sink
// query` a page at a time, each page resumed with the cursor the previous one printed, newest first,
// every row once; the table format prints the cursor on stderr.
func TestIntegrationQueryPagesThroughWhatRunWrote(t *testing.T) {
	cfg := readertest.Config(t, map[string]config.Topic{
		"readings": readertest.Topic(config.Bucket{Width: "1d", Key: "text"}, "desc", "device_id")})
	day := time.Date(2024, 1, 30, 0, 0, 0, 0, time.UTC)
	var seq int64
	f := readertest.NewFixture(t, cfg, readertest.Series("readings", []string{"dev-1"}, day, day.AddDate(0, 0, 4), 5*time.Hour, &seq), []time.Time{day})

	path := filepath.Join(t.TempDir(), "sink.yaml")
	yaml := fmt.Sprintf(`kafka: {brokers: [%s]}
cassandra: {hosts: [%s], keyspace: %s, consistency: ONE}
topics:
  readings:
    topic: %s
    id: [device_id]
    time: {source: field, field: ts}
    bucket: {width: 1d}
    table: readings
    columns:
      - {name: device_id, type: text, field: device_id}
      - {name: ts, type: timestamp, source: event_time}
      - {name: seq, type: bigint, field: seq, required: true}
    clustering: [{column: ts, order: desc}]
`, strings.Join(cfg.Kafka.Brokers, ", "), strings.Join(cfg.Cassandra.Hosts, ", "), cfg.Cassandra.Keyspace, cfg.Topics["readings"].Topic)
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	from, to := "2024-02-03T00:00:00Z", "2024-01-30T12:00:00Z"
	args := []string{"--config", path, "--topic", "readings", "--id", "dev-1", "--from", from, "--to", to, "--page-size", "4", "--format", "json"}
	var got []int64
	for _, row := range queryJSONPages(t, args, func(cursor string) []string {
		return []string{"--config", path, "--topic", "readings", "--id", "dev-1", "--page-size", "4", "--format", "json", "--cursor", cursor}
	}) {
		got = append(got, int64(row["seq"].(float64)))
	}
	fromT, _ := time.Parse(time.RFC3339, from)
	toT, _ := time.Parse(time.RFC3339, to)
	if want := f.Expected("readings", []string{"dev-1"}, fromT, toT); !slices.Equal(got, want) || len(want) < 10 {
		t.Errorf("pages of 4 newest first: got %v, want %v", got, want)
	}

	code, out, errOut := runCmd(t, runQuery, "--config", path, "--topic", "readings", "--id", "dev-1", "--from", from, "--to", to, "--page-size", "2")
	if code != exitOK || !strings.HasPrefix(out, "device_id") || strings.Count(out, "\n") != 3 || !strings.Contains(errOut, "next page: --cursor ") {
		t.Errorf("table format: exit %d, stdout %q, stderr %q; want a header, 2 rows, the cursor on stderr", code, out, errOut)
	}
}

// TestIntegrationQueryPrintsTheLatestRowOfEachID: on a latest-value table written by the pipeline, `sink
// query --id A --id B --id C` prints the newest row of each entity given, in that order, and nothing for
// one never written.
func TestIntegrationQueryPrintsTheLatestRowOfEachID(t *testing.T) {
	cfg := readertest.Config(t, map[string]config.Topic{"latest": readertest.LatestTopic("device_id")})
	base := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	ev := func(id string, sec int, seq int64) readertest.Event {
		return readertest.At("latest", id, base, sec, seq)
	}
	readertest.NewFixture(t, cfg, []readertest.Event{ev("dev-2", 2, 22), ev("dev-1", 5, 15), ev("dev-1", 1, 11), ev("dev-2", 1, 21)}, []time.Time{base})

	path := filepath.Join(t.TempDir(), "sink.yaml")
	yaml := fmt.Sprintf(`kafka: {brokers: [%s]}
cassandra: {hosts: [%s], keyspace: %s, consistency: ONE}
topics:
  latest:
    topic: %s
    id: [device_id]
    time: {source: field, field: ts}
    bucket: none
    table: latest
    columns:
      - {name: device_id, type: text, field: device_id}
      - {name: ts, type: timestamp, source: event_time}
      - {name: seq, type: bigint, field: seq, required: true}
`, strings.Join(cfg.Kafka.Brokers, ", "), strings.Join(cfg.Cassandra.Hosts, ", "), cfg.Cassandra.Keyspace, cfg.Topics["latest"].Topic)
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd(t, runQuery, "--config", path, "--topic", "latest", "--id", "dev-1", "--id", "dev-9", "--id", "dev-2", "--format", "csv")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "dev-1,") || !strings.HasSuffix(lines[1], ",15") ||
		!strings.HasPrefix(lines[2], "dev-2,") || !strings.HasSuffix(lines[2], ",22") {
		t.Errorf("rows:\n%s\nwant the header, dev-1's newest (seq 15), dev-2's (seq 22)", out)
	}
}

// queryJSONPages runs `sink query` with args (a --format json query), then with next(cursor) for as
// long as a page has a cursor, and returns the values of every row of every page, in order.
func queryJSONPages(t *testing.T, args []string, next func(cursor string) []string) []map[string]any {
	t.Helper()
	var rows []map[string]any
	for pages := 0; ; pages++ {
		if pages > 50 {
			t.Fatal("the cursor does not advance")
		}
		code, out, errOut := runCmd(t, runQuery, args...)
		if code != exitOK || errOut != "" {
			t.Fatalf("page %d: exit %d, stderr %q; want 0 and nothing on stderr (the JSON document holds the cursor)", pages, code, errOut)
		}
		var page struct {
			Rows []struct {
				Values map[string]any `json:"values"`
			} `json:"rows"`
			Cursor string `json:"cursor"`
		}
		if err := json.Unmarshal([]byte(out), &page); err != nil {
			t.Fatalf("page %d: %v in %s", pages, err, out)
		}
		for _, r := range page.Rows {
			rows = append(rows, r.Values)
		}
		if page.Cursor == "" {
			return rows
		}
		args = next(page.Cursor)
	}
}
