package cassandra

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/internal/testenv"
	"github.com/bucketsink/sink/schema"
)

// exampleOnStack loads an example config and points it at the test Cassandra, in a fresh
// keyspace with one replica.
func exampleOnStack(t *testing.T, example string) (*config.Config, string) {
	t.Helper()
	cfg := loadExample(t, "../examples/"+example+".yaml")
	ks := testenv.Name(t, "schema")
	cfg.Cassandra.Hosts = testenv.Cassandra(t)
	cfg.Cassandra.LocalDC = ""
	// The examples show production settings (service-events turns on TLS for its password); the
	// plain test node speaks neither TLS nor authentication.
	cfg.Cassandra.TLS = config.TLS{}
	cfg.Cassandra.Keyspace = ks
	cfg.Cassandra.Replication = map[string]string{"class": "SimpleStrategy", "replication_factor": "1"}
	for name, tp := range cfg.Topics {
		tp.Keyspace = ks
		cfg.Topics[name] = tp
	}
	return cfg, ks
}

func connectForTest(t *testing.T, cfg *config.Config) *Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Connect(ctx, cfg.Cassandra)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// TestApplySchemaExamples applies every example's DDL twice (the second run must be a no-op that
// still passes the key check), then reads system_schema to confirm partition key, clustering
// order, TTL, gc_grace_seconds and the TWCS window.
func TestApplySchemaExamples(t *testing.T) {
	for _, example := range []string{"iot-sensors", "service-events", "high-volume", "metrics-slices", "device-latest", "sensor-rollups"} {
		t.Run(example, func(t *testing.T) {
			cfg, ks := exampleOnStack(t, example)
			s := connectForTest(t, cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			t.Cleanup(func() {
				_ = s.Driver().Query("DROP KEYSPACE IF EXISTS " + ks).Exec()
			})
			for range 2 {
				if err := ApplySchema(ctx, s, cfg, nil, schemaNow); err != nil {
					t.Fatal(err)
				}
			}
			tables, err := schema.Describe(cfg)
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range tables.Names() {
				tbl := tables[name]
				names := []string{tbl.Name}
				if _, sliced := tbl.Policy.Sliced(); sliced {
					sl := tbl.Policy.SliceIndex(schemaNow)
					names = []string{tbl.NameOfSlice(sl), tbl.NameOfSlice(sl + 1)}
				}
				for _, table := range names {
					checkOnServer(t, ctx, s, cfg.Topics[name], tbl, table)
				}
			}
			rollups, err := schema.DescribeRollups(cfg, tables)
			if err != nil {
				t.Fatal(err)
			}
			for name, rs := range rollups {
				for _, r := range rs {
					checkOnServer(t, ctx, s, cfg.Topics[name], r.Table, r.Table.Name)
				}
			}
		})
	}
}

func checkOnServer(t *testing.T, ctx context.Context, s *Session, tc config.Topic, tbl schema.Table, table string) {
	t.Helper()
	cols, err := ReadSchemaColumns(ctx, s, tbl.Keyspace, table)
	if err != nil {
		t.Fatal(err)
	}
	var pk, ck []string
	for _, want := range []string{"partition_key", "clustering"} {
		for pos := 0; ; pos++ {
			found := false
			for _, c := range cols {
				if c.Kind == want && c.Position == pos {
					if want == "partition_key" {
						pk = append(pk, c.Name)
					} else {
						ck = append(ck, c.Name+" "+c.Order)
					}
					found = true
				}
			}
			if !found {
				break
			}
		}
	}
	var wantCK []string
	for _, c := range tbl.Clustering {
		wantCK = append(wantCK, c.Name+" "+map[bool]string{true: "desc", false: "asc"}[c.Desc])
	}
	if strings.Join(pk, ",") != strings.Join(tbl.PartitionKey, ",") {
		t.Errorf("%s: partition key %v, want %v", table, pk, tbl.PartitionKey)
	}
	if strings.Join(ck, ",") != strings.Join(wantCK, ",") {
		t.Errorf("%s: clustering %v, want %v", table, ck, wantCK)
	}

	var ttl, gcGrace int
	var compaction map[string]string
	err = s.Driver().Query(`SELECT default_time_to_live, gc_grace_seconds, compaction FROM system_schema.tables `+
		`WHERE keyspace_name = ? AND table_name = ?`, tbl.Keyspace, table).ScanContext(ctx, &ttl, &gcGrace, &compaction)
	if err != nil {
		t.Fatalf("reading system_schema.tables for %s: %v", table, err)
	}
	if want := int(tbl.TTL / time.Second); ttl != want {
		t.Errorf("%s: default_time_to_live %d, want %d", table, ttl, want)
	}
	if want := int(time.Duration(tc.GCGrace) / time.Second); gcGrace != want {
		t.Errorf("%s: gc_grace_seconds %d, want %d", table, gcGrace, want)
	}
	if tbl.Latest {
		if !strings.HasSuffix(compaction["class"], "LeveledCompactionStrategy") {
			t.Errorf("%s: compaction %v, want leveled for a latest-value table", table, compaction)
		}
		return
	}
	unit, size := CompactionWindow(tbl.Policy.Width())
	if !strings.HasSuffix(compaction["class"], "TimeWindowCompactionStrategy") ||
		compaction["compaction_window_unit"] != unit || compaction["compaction_window_size"] != strconv.Itoa(size) {
		t.Errorf("%s: compaction %v, want TWCS %d %s", table, compaction, size, unit)
	}
}

// TestApplySchemaRejectsOtherKey guards against a table created earlier for another policy:
// CREATE TABLE IF NOT EXISTS leaves it alone, so apply must notice the key does not match.
func TestApplySchemaRejectsOtherKey(t *testing.T) {
	cfg, ks := exampleOnStack(t, "iot-sensors")
	s := connectForTest(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	t.Cleanup(func() { _ = s.Driver().Query("DROP KEYSPACE IF EXISTS " + ks).Exec() })
	for _, stmt := range []string{
		KeyspaceDDL(cfg, ks),
		"CREATE TABLE " + ks + ".sensor_readings (device_id text, bucket text, reading_time timestamp, site_id text, " +
			"temperature double, humidity double, battery double, day text, PRIMARY KEY ((device_id, bucket), reading_time))",
	} {
		if err := s.Driver().Query(stmt).ExecContext(ctx); err != nil {
			t.Fatal(err)
		}
	}
	err := ApplySchema(ctx, s, cfg, nil, schemaNow)
	want := "table " + ks + ".sensor_readings has partition key (device_id, bucket), but topics.readings needs (device_id, day)"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("apply over a table with another key:\n got %v\nwant %s...", err, want)
	}
}

// TestCheckSchema: `sink run`'s start check lists missing tables and refuses a table whose column type
// differs from the configured one (values are bound pre-encoded for the configured type).
func TestCheckSchema(t *testing.T) {
	cfg, ks := exampleOnStack(t, "iot-sensors")
	s := connectForTest(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	t.Cleanup(func() { _ = s.Driver().Query("DROP KEYSPACE IF EXISTS " + ks).Exec() })

	missing, err := CheckSchema(ctx, s, cfg, nil, schemaNow)
	if err != nil || len(missing) != 1 || missing[0] != ks+".sensor_readings" {
		t.Fatalf("no tables yet: missing %v, err %v; want [%s.sensor_readings], nil", missing, err, ks)
	}
	for _, stmt := range []string{
		KeyspaceDDL(cfg, ks),
		"CREATE TABLE " + ks + ".sensor_readings (device_id text, day text, reading_time timestamp, site_id text, " +
			"temperature float, humidity double, battery double, PRIMARY KEY ((device_id, day), reading_time)) " +
			"WITH CLUSTERING ORDER BY (reading_time DESC)",
	} {
		if err := s.Driver().Query(stmt).ExecContext(ctx); err != nil {
			t.Fatal(err)
		}
	}
	_, err = CheckSchema(ctx, s, cfg, nil, schemaNow)
	if err == nil || !strings.Contains(err.Error(), "temperature") || !strings.Contains(err.Error(), "float") {
		t.Fatalf("temperature is float in the table and double in the config: got %v, want an error naming the column and both types", err)
	}
	if err := s.Driver().Query("DROP TABLE " + ks + ".sensor_readings").ExecContext(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ApplySchema(ctx, s, cfg, nil, schemaNow); err != nil {
		t.Fatal(err)
	}
	if missing, err := CheckSchema(ctx, s, cfg, nil, schemaNow); err != nil || len(missing) != 0 {
		t.Fatalf("after apply: missing %v, err %v; want none", missing, err)
	}
}
