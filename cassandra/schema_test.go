package cassandra

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bucketsink/sink/bucketer"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/schema"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// schemaNow is the fixed "now" of the golden files: sliced topics show this day's and the next
// day's table.
var schemaNow = time.Date(2024, 1, 15, 12, 0, 0, 0, time.UTC)

func loadExample(t *testing.T, path string) *config.Config {
	t.Helper()
	cfg, err := config.Load(path, nil)
	if err != nil {
		t.Fatalf("loading %s: %v", path, err)
	}
	return cfg
}

// TestSchemaGolden renders the DDL of every example config and compares it with its golden file
// (go test ./cassandra -run TestSchemaGolden -update rewrites them after a deliberate change).
func TestSchemaGolden(t *testing.T) {
	examples, err := filepath.Glob("../examples/*.yaml")
	if err != nil || len(examples) == 0 {
		t.Fatalf("no example configs found: %v", err)
	}
	for _, path := range examples {
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		t.Run(name, func(t *testing.T) {
			stmts, err := Schema(loadExample(t, path), nil, schemaNow)
			if err != nil {
				t.Fatal(err)
			}
			got := FormatDDL(stmts)
			golden := filepath.Join("testdata", "schema", name+".cql")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("DDL differs from %s:\n%s", golden, got)
			}
		})
	}
}

func TestSchemaDDLSlices(t *testing.T) {
	cfg := loadExample(t, "../examples/metrics-slices.yaml")
	stmts, err := SchemaDDL(cfg, "metrics", time.Date(2024, 1, 31, 23, 59, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if len(stmts) != 2 ||
		!strings.HasPrefix(stmts[0], "CREATE TABLE IF NOT EXISTS metrics.device_metrics_20240131 (") ||
		!strings.HasPrefix(stmts[1], "CREATE TABLE IF NOT EXISTS metrics.device_metrics_20240201 (") {
		t.Errorf("slice tables:\n%s", strings.Join(stmts, "\n"))
	}
	if _, err := SchemaDDL(cfg, "nope", schemaNow); err == nil || err.Error() != "topics.nope: no such topic; configured: metrics" {
		t.Errorf("unknown topic: %v", err)
	}
}

func TestKeyspaceDDL(t *testing.T) {
	cfg := &config.Config{}
	if got, want := KeyspaceDDL(cfg, "ks"), "CREATE KEYSPACE IF NOT EXISTS ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': '1'}"; got != want {
		t.Errorf("default:\n got %s\nwant %s", got, want)
	}
	cfg.Cassandra.Replication = map[string]string{"dc2": "3", "class": "NetworkTopologyStrategy", "dc1": "3"}
	if got, want := KeyspaceDDL(cfg, "ks"), "CREATE KEYSPACE IF NOT EXISTS ks WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': '3', 'dc2': '3'}"; got != want {
		t.Errorf("NTS:\n got %s\nwant %s", got, want)
	}
}

func TestCompactionWindow(t *testing.T) {
	cases := []struct {
		width string
		unit  string
		size  int
	}{
		{"1m", "MINUTES", 1}, {"10m", "MINUTES", 10}, {"90m", "MINUTES", 90}, {"1h", "HOURS", 1},
		{"6h", "HOURS", 6}, {"1d", "DAYS", 1}, {"2d", "DAYS", 2}, {"30s", "MINUTES", 1},
		{"week", "DAYS", 7}, {"month", "DAYS", 30}, {"year", "DAYS", 365},
	}
	for _, tc := range cases {
		w, err := bucketer.ParseWidth(tc.width)
		if err != nil {
			t.Fatalf("%s: %v", tc.width, err)
		}
		if u, s := CompactionWindow(w); u != tc.unit || s != tc.size {
			t.Errorf("%s: %s %d, want %s %d", tc.width, u, s, tc.unit, tc.size)
		}
	}
}

// iotColumns is the system_schema.columns of examples/iot-sensors.yaml's readings table.
func iotColumns() []SchemaColumn {
	return []SchemaColumn{
		{"device_id", "partition_key", 0, "none", "text"},
		{"day", "partition_key", 1, "none", "text"},
		{"reading_time", "clustering", 0, "desc", "timestamp"},
		{"site_id", "regular", -1, "none", "text"},
		{"temperature", "regular", -1, "none", "double"},
		{"humidity", "regular", -1, "none", "double"},
		{"battery", "regular", -1, "none", "double"},
	}
}

func TestCheckTable(t *testing.T) {
	cfg := loadExample(t, "../examples/iot-sensors.yaml")
	tables, err := schema.Describe(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tbl := tables["readings"]
	good := iotColumns()
	if err := CheckTable(tbl, "sensor_readings", good); err != nil {
		t.Errorf("matching table: %v", err)
	}
	edit := func(f func(c []SchemaColumn) []SchemaColumn) []SchemaColumn {
		return f(append([]SchemaColumn(nil), good...))
	}
	const fix = "the table was created for another policy; drop it (if its data can go) or set topics.readings.table to a new table"
	cases := []struct {
		name string
		cols []SchemaColumn
		want string
	}{
		{"missing", nil, "table telemetry.sensor_readings does not exist after CREATE TABLE IF NOT EXISTS; check the keyspace and permissions"},
		{"other bucket column", edit(func(c []SchemaColumn) []SchemaColumn { c[1].Name = "bucket"; return c }),
			"table telemetry.sensor_readings has partition key (device_id, bucket), but topics.readings needs (device_id, day); " + fix},
		{"key order", edit(func(c []SchemaColumn) []SchemaColumn { c[0].Position, c[1].Position = 1, 0; return c }),
			"table telemetry.sensor_readings has partition key (day, device_id), but topics.readings needs (device_id, day); " + fix},
		{"ascending", edit(func(c []SchemaColumn) []SchemaColumn { c[2].Order = "asc"; return c }),
			"table telemetry.sensor_readings has clustering (reading_time ASC), but topics.readings needs (reading_time DESC); " + fix},
		{"missing column", edit(func(c []SchemaColumn) []SchemaColumn { return c[:6] }),
			"table telemetry.sensor_readings has no column battery (double) that topics.readings writes; add it with ALTER TABLE telemetry.sensor_readings ADD battery double"},
		{"type", edit(func(c []SchemaColumn) []SchemaColumn { c[4].Type = "float"; return c }),
			"table telemetry.sensor_readings column temperature is float, but topics.readings writes it as double; " + fix},
	}
	for _, tc := range cases {
		err := CheckTable(tbl, "sensor_readings", tc.cols)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s:\n got %v\nwant %s", tc.name, err, tc.want)
		}
	}
}

// The table created on demand for a late record's slice is the one `sink schema --at` creates for
// that slice: same name, same statement.
func TestSliceTableDDLMatchesSchemaForThatSlice(t *testing.T) {
	cfg := loadExample(t, "../examples/metrics-slices.yaml")
	topic := cfg.TopicNames()[0]
	late := time.Date(2019, 3, 2, 23, 59, 0, 0, time.UTC)
	table, stmt, err := SliceTableDDL(cfg, topic, late)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(table, "_20190302") || !strings.Contains(stmt, "CREATE TABLE IF NOT EXISTS "+table+" (") {
		t.Fatalf("table %q, statement %q; want the slice of 2019-03-02", table, stmt)
	}
	all, err := Schema(cfg, []string{topic}, late)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(all, stmt) {
		t.Fatalf("statement not among `sink schema --at %s`:\n%s\nwant one of\n%s", late.Format(time.RFC3339), stmt, strings.Join(all, "\n"))
	}
	cfg.Topics[topic] = func(tp config.Topic) config.Topic { tp.Bucket.Slice = ""; return tp }(cfg.Topics[topic])
	if _, _, err := SliceTableDDL(cfg, topic, late); err == nil {
		t.Fatal("an unsliced topic got a slice table")
	}
}
