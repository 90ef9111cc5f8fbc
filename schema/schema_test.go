package schema

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bucketsink/sink/config"
)

func load(t *testing.T, path string) *config.Config {
	t.Helper()
	cfg, err := config.Load(path, nil)
	if err != nil {
		t.Fatalf("loading %s: %v", path, err)
	}
	return cfg
}

func describeOne(t *testing.T, cfg *config.Config, topic string) Table {
	t.Helper()
	all, err := Describe(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := all.Get(topic)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// TestInsertBindsColumnsThenBucketThenTTLThenTimestamp: the INSERT binds the mapped columns in
// config order, the bucket column, then the TTL and the write timestamp, and NumValues counts them.
func TestInsertBindsColumnsThenBucketThenTTLThenTimestamp(t *testing.T) {
	tbl := describeOne(t, load(t, "../examples/iot-sensors.yaml"), "readings")
	const want = "INSERT INTO telemetry.sensor_readings (device_id, reading_time, site_id, temperature, humidity, battery, day) " +
		"VALUES (?, ?, ?, ?, ?, ?, ?) USING TTL ? AND TIMESTAMP ?"
	if got := tbl.Insert(tbl.Name); got != want {
		t.Errorf("Insert:\n got %s\nwant %s", got, want)
	}
	if n := tbl.NumValues(); n != 9 {
		t.Errorf("NumValues = %d, want 7 columns + TTL + timestamp = 9", n)
	}
	if !slices.Equal(tbl.PartitionKey, []string{"device_id", "day"}) || !slices.Equal(tbl.IDColumns(), []string{"device_id"}) {
		t.Errorf("partition key %v, id columns %v", tbl.PartitionKey, tbl.IDColumns())
	}
	if len(tbl.Clustering) != 1 || tbl.Clustering[0] != (Clustering{Name: "reading_time", Desc: true}) {
		t.Errorf("clustering %v", tbl.Clustering)
	}
	if last := tbl.Columns[len(tbl.Columns)-1]; last != (Column{Name: "day", Type: "text"}) || tbl.BucketColumn != "day" || tbl.EventBucketColumn != "" {
		t.Errorf("bucket column %v (%q), event bucket column %q", last, tbl.BucketColumn, tbl.EventBucketColumn)
	}
}

// TestInsertBindsOnlyWhatTheTopicHas: without a TTL the INSERT binds none, and with write_timestamp
// server it binds no timestamp, so the coordinator stamps the row.
func TestInsertBindsOnlyWhatTheTopicHas(t *testing.T) {
	cfg := load(t, "../examples/iot-sensors.yaml")
	tp := cfg.Topics["readings"]
	tp.TTL, tp.WriteTimestamp = 0, config.WriteTimestampServer
	cfg.Topics["readings"] = tp
	tbl := describeOne(t, cfg, "readings")
	if got := tbl.Insert("x"); !strings.HasSuffix(got, "VALUES (?, ?, ?, ?, ?, ?, ?)") || tbl.NumValues() != 7 {
		t.Errorf("Insert %q, NumValues %d; want no USING clause and 7 values", got, tbl.NumValues())
	}
	if tbl.DeterministicTimestamp() {
		t.Error("write_timestamp server reported as deterministic")
	}
}

// TestColumnTypesAreSpelledCanonically: varchar is text, case and spaces do not matter, and a map
// is written "map<text, T>", the spelling the DDL and the schema check compare.
func TestColumnTypesAreSpelledCanonically(t *testing.T) {
	cfg := load(t, "../examples/iot-sensors.yaml")
	tp := cfg.Topics["readings"]
	tp.Columns = append(tp.Columns,
		config.Column{Name: "note", Type: "VARCHAR", Field: "note"},
		config.Column{Name: "tags", Type: "list< varchar >", Field: "tags"},
		config.Column{Name: "attrs", Type: "Map<varchar,Int>", Field: "attrs"},
	)
	cfg.Topics["readings"] = tp
	tbl := describeOne(t, cfg, "readings")
	got := map[string]string{}
	for _, c := range tbl.Columns {
		got[c.Name] = c.Type
	}
	for name, want := range map[string]string{"note": "text", "tags": "list<text>", "attrs": "map<text, int>"} {
		if got[name] != want {
			t.Errorf("column %s is %q, want %q", name, got[name], want)
		}
	}
}

// TestEventBucketColumnEndsThePartitionKey: with event buckets, or with splits on, the event bucket
// column is the last column of the INSERT and of the partition key; SplitMax is the split cap.
func TestEventBucketColumnEndsThePartitionKey(t *testing.T) {
	for _, tc := range []struct {
		name         string
		eventBuckets int
		split        bool
		splitMax     int
	}{{"event buckets", 4, false, 0}, {"split", 1, true, 16}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := load(t, "../examples/iot-sensors.yaml")
			tp := cfg.Topics["readings"]
			tp.Bucket.EventBuckets, tp.Split.Enabled, tp.Split.MaxEventBuckets = tc.eventBuckets, tc.split, 16
			cfg.Topics["readings"] = tp
			tbl := describeOne(t, cfg, "readings")
			if !tbl.HasEventBucketColumn() || tbl.EventBucketColumn != config.DefaultEventBucketCol {
				t.Fatalf("no event bucket column: %+v", tbl)
			}
			if !slices.Equal(tbl.PartitionKey, []string{"device_id", "day", "event_bucket"}) || !slices.Equal(tbl.IDColumns(), []string{"device_id"}) {
				t.Errorf("partition key %v, id columns %v", tbl.PartitionKey, tbl.IDColumns())
			}
			if last := tbl.Columns[len(tbl.Columns)-1]; last != (Column{Name: "event_bucket", Type: "int"}) {
				t.Errorf("last column %v", last)
			}
			if tbl.SplitMax != tc.splitMax {
				t.Errorf("SplitMax %d, want %d", tbl.SplitMax, tc.splitMax)
			}
		})
	}
}

// TestDescribeRefusesAnInvalidConfig: the description is only derived from a config that validates.
func TestDescribeRefusesAnInvalidConfig(t *testing.T) {
	cfg := load(t, "../examples/iot-sensors.yaml")
	tp := cfg.Topics["readings"]
	tp.Table = "select"
	cfg.Topics["readings"] = tp
	if _, err := Describe(cfg); err == nil || !strings.Contains(err.Error(), "topics.readings.table") {
		t.Fatalf("Describe of a reserved table name: %v", err)
	}
}

// TestGetNamesTheConfiguredTopics: asking for a topic that is not configured names the ones that are.
func TestGetNamesTheConfiguredTopics(t *testing.T) {
	all, err := Describe(load(t, "../examples/iot-sensors.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = all.Get("nope")
	if err == nil || err.Error() != "topics.nope: no such topic; configured: readings" {
		t.Fatalf("Get(nope) = %v", err)
	}
}

// TestSchemaImportsOnlyConfigAndBucketer: the description is derived from configuration alone, so
// storage and decoding can both depend on it without depending on each other.
func TestSchemaImportsOnlyConfigAndBucketer(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range parsed.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if rest, ours := strings.CutPrefix(path, "github.com/bucketsink/sink/"); ours && rest != "config" && rest != "bucketer" {
				t.Errorf("%s imports %s; package schema may import config and bucketer only", f, path)
			}
		}
	}
}
