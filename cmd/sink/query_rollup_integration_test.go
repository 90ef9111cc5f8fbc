package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bucketsink/sink/cassandra"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/internal/testenv"
	"github.com/bucketsink/sink/rollup/recompute"
	"github.com/bucketsink/sink/schema"
)

// TestIntegrationQueryReadsARollupPageByPage: `sink query --rollup hourly` reads the rollup table's
// rows, one per window, oldest first a page at a time through the cursor, each with the count of its
// hour's raw rows; and a rollup the entry does not have is a configuration error naming the ones it has.
func TestIntegrationQueryReadsARollupPageByPage(t *testing.T) {
	hosts := testenv.Cassandra(t)
	ks := testenv.Name(t, "rollupq")
	yaml := fmt.Sprintf(`kafka: {brokers: ["127.0.0.1:9092"]}
cassandra: {hosts: ["%s"], keyspace: %s, replication: {class: SimpleStrategy, replication_factor: "1"}}
topics:
  readings:
    topic: sensor-readings
    id: [device_id]
    time: {field: ts}
    bucket: {width: 1d}
    table: readings
    columns:
      - {name: device_id, type: text, field: device_id}
      - {name: ts, type: timestamp, source: event_time}
      - {name: temperature, type: double, field: temperature}
    clustering: [{column: ts}]
    rollups:
      - name: hourly
        width: 1h
        table: readings_hourly
        bucket: {width: month}
        aggregates:
          - {column: n, fn: count}
          - {column: temp_max, fn: max, of: temperature}
`, strings.Join(hosts, `", "`), ks)
	path := filepath.Join(t.TempDir(), "sink.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := cassandra.Connect(ctx, cfg.Cassandra)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = s.Driver().Query("DROP KEYSPACE IF EXISTS " + ks).Exec()
		s.Close()
	})
	day := time.Date(2024, 1, 30, 0, 0, 0, 0, time.UTC)
	if err := cassandra.ApplySchema(ctx, s, cfg, nil, day); err != nil {
		t.Fatal(err)
	}
	tables, err := schema.Describe(cfg)
	if err != nil {
		t.Fatal(err)
	}
	raw := tables["readings"]
	rc, err := recompute.New(s.Driver(), cfg, "readings")
	if err != nil {
		t.Fatal(err)
	}
	// Hour h of the day holds h+1 rows, for the hours 3 to 12.
	var want []string
	for h := 3; h <= 12; h++ {
		start := day.Add(time.Duration(h) * time.Hour)
		for i := range h + 1 {
			at := start.Add(time.Duration(i) * time.Minute)
			args := []any{"dev-1", at, float64(i), raw.Policy.Value(raw.Policy.Index(at)), at.UnixMicro()}
			if err := s.Driver().Query(raw.Insert(raw.Name), args...).Exec(); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := rc.Recompute(ctx, "hourly", []any{"dev-1"}, start); err != nil {
			t.Fatal(err)
		}
		want = append(want, fmt.Sprintf("%s n=%d max=%d", start.Format(time.RFC3339), h+1, h))
	}

	args := []string{"--config", path, "--topic", "readings", "--rollup", "hourly", "--id", "dev-1",
		"--from", "2024-01-30T00:00:00Z", "--to", "2024-01-31T00:00:00Z", "--page-size", "4", "--format", "json"}
	var got []string
	for _, row := range queryJSONPages(t, args, func(cursor string) []string {
		return []string{"--config", path, "--topic", "readings", "--rollup", "hourly", "--id", "dev-1", "--page-size", "4", "--format", "json", "--cursor", cursor}
	}) {
		got = append(got, fmt.Sprintf("%s n=%v max=%v", row["window_start"], row["n"], row["temp_max"]))
	}
	if !slices.Equal(got, want) {
		t.Errorf("rollup rows, pages of 4 oldest first:\n got %v\nwant %v", got, want)
	}

	code, _, errOut := runCmd(t, runQuery, "--config", path, "--topic", "readings", "--rollup", "daily", "--id", "dev-1", "--last", "1d")
	if code != exitConfig || !strings.Contains(errOut, `no rollup "daily"; configured: hourly`) {
		t.Errorf("unknown rollup: exit %d, stderr %q; want %d naming the configured rollups", code, errOut, exitConfig)
	}
}
