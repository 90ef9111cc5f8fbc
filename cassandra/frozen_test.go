package cassandra

import (
	"strings"
	"testing"

	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/schema"
)

// collectionTable is iot-sensors' readings with a list, a set and a map column, under write_timestamp wts.
func collectionTable(t *testing.T, wts string) (*config.Config, schema.Table) {
	t.Helper()
	cfg := loadExample(t, "../examples/iot-sensors.yaml")
	tp := cfg.Topics["readings"]
	tp.WriteTimestamp = wts
	tp.Columns = append(tp.Columns,
		config.Column{Name: "tags", Type: "list<text>", Field: "tags"},
		config.Column{Name: "codes", Type: "set<int>", Field: "codes"},
		config.Column{Name: "attrs", Type: "map<text, double>", Field: "attrs"},
	)
	cfg.Topics["readings"] = tp
	tables, err := schema.Describe(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tbl := tables["readings"]
	return cfg, tbl
}

// TestSchemaFreezesCollections: `sink schema` creates every collection column frozen, the one form a
// replay or a retried batch at the same write timestamp overwrites instead of appending to.
func TestSchemaFreezesCollections(t *testing.T) {
	cfg, _ := collectionTable(t, "kafka")
	stmts, err := SchemaDDL(cfg, "readings", schemaNow)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"tags frozen<list<text>>,", "codes frozen<set<int>>,", "attrs frozen<map<text, double>>,"} {
		if !strings.Contains(stmts[0], want) {
			t.Errorf("DDL lacks %q:\n%s", want, stmts[0])
		}
	}
}

// TestCheckTableRefusesNonFrozenListUnderDeterministicWriteTimestamp: the startup check refuses an
// existing table whose list column is not frozen when rows are written at a deterministic timestamp
// (a replay would double every list), saying why and what to do; a non-frozen set or map (idempotent
// at the same timestamp), a frozen list, and any list under write_timestamp server pass.
func TestCheckTableRefusesNonFrozenListUnderDeterministicWriteTimestamp(t *testing.T) {
	cols := func(list, set, m string) []SchemaColumn {
		return append(iotColumns(),
			SchemaColumn{"tags", "regular", -1, "none", list},
			SchemaColumn{"codes", "regular", -1, "none", set},
			SchemaColumn{"attrs", "regular", -1, "none", m},
		)
	}
	frozen := cols("frozen<list<text>>", "frozen<set<int>>", "frozen<map<text, double>>")
	loose := cols("list<text>", "set<int>", "map<text, double>")
	looseSetMap := cols("frozen<list<text>>", "set<int>", "map<text, double>")
	for _, wts := range []string{"kafka", "event_time"} {
		_, tbl := collectionTable(t, wts)
		if err := CheckTable(tbl, "sensor_readings", frozen); err != nil {
			t.Errorf("%s, frozen collections: %v", wts, err)
		}
		if err := CheckTable(tbl, "sensor_readings", looseSetMap); err != nil {
			t.Errorf("%s, non-frozen set and map: %v", wts, err)
		}
		err := CheckTable(tbl, "sensor_readings", loose)
		want := "table telemetry.sensor_readings column tags is a list<text> that is not frozen: with write_timestamp " + wts +
			" a replay or a retried batch writes a row again at the same timestamp, and Cassandra then keeps both copies of the list's elements"
		if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "make it frozen<list<text>>") {
			t.Errorf("%s, non-frozen list:\n got %v\nwant %s...", wts, err, want)
		}
	}
	_, tbl := collectionTable(t, "server")
	if err := CheckTable(tbl, "sensor_readings", loose); err != nil {
		t.Errorf("server, non-frozen list: %v", err)
	}
	// A frozen collection of another element type is still the wrong type.
	wrong := cols("frozen<list<int>>", "frozen<set<int>>", "frozen<map<text, double>>")
	if err := CheckTable(tbl, "sensor_readings", wrong); err == nil || !strings.Contains(err.Error(), "column tags is frozen<list<int>>, but topics.readings writes it as list<text>") {
		t.Errorf("frozen list of another type: %v", err)
	}
}
