package cassandra

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/schema"
)

// newerTypesTable is iot-sensors' readings with a UDT, a tuple, a vector, a time, a duration and a
// map with int keys.
func newerTypesTable(t *testing.T) (*config.Config, schema.Table) {
	t.Helper()
	cfg := loadExample(t, "../examples/iot-sensors.yaml")
	tp := cfg.Topics["readings"]
	tp.Columns = append(tp.Columns,
		config.Column{Name: "home", Type: "Address", Field: "home", Fields: []config.UDTField{
			{Name: "street", Type: "varchar"}, {Name: "zip", Type: "int"}, {Name: "tags", Type: "list< text >"}}},
		config.Column{Name: "pair", Type: "tuple<int, varchar>", Field: "pair"},
		config.Column{Name: "emb", Type: "vector<float, 3>", Field: "emb"},
		config.Column{Name: "at", Type: "time", Field: "at"},
		config.Column{Name: "span", Type: "duration", Field: "span"},
		config.Column{Name: "counts", Type: "map<int, text>", Field: "counts"},
	)
	cfg.Topics["readings"] = tp
	tables, err := schema.Describe(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, tables["readings"]
}

// TestSchemaCreatesTheUDTBeforeItsTable: `sink schema` creates each UDT once, before the tables, and
// the columns frozen but the vector, time and duration; the INSERT binds a tuple element by element.
func TestSchemaCreatesTheUDTBeforeItsTable(t *testing.T) {
	cfg, tbl := newerTypesTable(t)
	stmts, err := Schema(cfg, nil, schemaNow)
	if err != nil {
		t.Fatal(err)
	}
	wantType := "CREATE TYPE IF NOT EXISTS telemetry.address (street text, zip int, tags list<text>)"
	if len(stmts) < 3 || stmts[1] != wantType || !strings.HasPrefix(stmts[2], "CREATE TABLE") {
		t.Fatalf("statements:\n%s\nwant the keyspace, then %s, then the table", strings.Join(stmts, "\n"), wantType)
	}
	for _, want := range []string{"home frozen<address>,", "pair frozen<tuple<int, text>>,", "emb vector<float, 3>,",
		"at time,", "span duration,", "counts frozen<map<int, text>>,"} {
		if !strings.Contains(stmts[2], want) {
			t.Errorf("the table lacks %q:\n%s", want, stmts[2])
		}
	}
	ins := tbl.Insert(tbl.Name)
	if !strings.Contains(ins, "(?, ?, ?, ?, ?, ?, ?, (?, ?), ?, ?, ?, ?, ?)") {
		t.Errorf("insert %s: want the tuple bound as (?, ?)", ins)
	}
	if n := tbl.NumValues(); n != strings.Count(ins, "?") {
		t.Errorf("NumValues %d, the insert has %d markers", n, strings.Count(ins, "?"))
	}
}

// TestCheckTableAcceptsTheNewerTypes: the start-up check takes the types as system_schema spells them
// (frozen at every depth of a tuple), and refuses a UDT column of another type, and a UDT whose fields
// differ, naming both lists.
func TestCheckTableAcceptsTheNewerTypes(t *testing.T) {
	_, tbl := newerTypesTable(t)
	cols := append(iotColumns(),
		SchemaColumn{"home", "regular", -1, "none", "frozen<address>"},
		SchemaColumn{"pair", "regular", -1, "none", "frozen<tuple<int, text>>"},
		SchemaColumn{"emb", "regular", -1, "none", "vector<float, 3>"},
		SchemaColumn{"at", "regular", -1, "none", "time"},
		SchemaColumn{"span", "regular", -1, "none", "duration"},
		SchemaColumn{"counts", "regular", -1, "none", "frozen<map<int, text>>"},
	)
	if err := CheckTable(tbl, "sensor_readings", cols); err != nil {
		t.Fatalf("the table as created: %v", err)
	}
	other := append([]SchemaColumn(nil), cols...)
	other[len(other)-4] = SchemaColumn{"emb", "regular", -1, "none", "vector<float, 4>"}
	if err := CheckTable(tbl, "sensor_readings", other); err == nil || !strings.Contains(err.Error(), "column emb is vector<float, 4>, but topics.readings writes it as vector<float, 3>") {
		t.Errorf("a vector of another dimension: %v", err)
	}
	home := tbl.Columns[tbl.Index("home")]
	if err := CheckUDT(tbl, home, []string{"street", "zip", "tags"}, []string{"text", "int", "frozen<list<text>>"}); err != nil {
		t.Errorf("the UDT as created: %v", err)
	}
	err := CheckUDT(tbl, home, []string{"street", "zip"}, []string{"text", "text"})
	if err == nil || !strings.Contains(err.Error(), "type telemetry.address has fields (street text, zip text), but topics.readings column home needs (street text, zip int, tags list<text>)") {
		t.Errorf("a UDT of other fields: %v", err)
	}
	if err := CheckUDT(tbl, home, nil, nil); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("no UDT: %v", err)
	}
}

// TestIntegrationSchemaRefusesAnExistingUDTOfOtherFields: a UDT already in the keyspace with other
// fields (CREATE TYPE IF NOT EXISTS leaves it) makes `sink schema --apply` fail, naming both lists.
func TestIntegrationSchemaRefusesAnExistingUDTOfOtherFields(t *testing.T) {
	cfg, ks := exampleOnStack(t, "iot-sensors")
	tp := cfg.Topics["readings"]
	tp.Columns = append(tp.Columns, config.Column{Name: "home", Type: "address", Field: "home",
		Fields: []config.UDTField{{Name: "street", Type: "text"}, {Name: "zip", Type: "int"}}})
	cfg.Topics["readings"] = tp
	s := connectForTest(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	t.Cleanup(func() { _ = s.Driver().Query("DROP KEYSPACE IF EXISTS " + ks).Exec() })
	if err := s.Driver().Query(KeyspaceDDL(cfg, ks)).ExecContext(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Driver().Query("CREATE TYPE " + ks + ".address (street text)").ExecContext(ctx); err != nil {
		t.Fatal(err)
	}
	err := ApplySchema(ctx, s, cfg, nil, schemaNow)
	if err == nil || !strings.Contains(err.Error(), "type "+ks+".address has fields (street text), but topics.readings column home needs (street text, zip int)") {
		t.Fatalf("ApplySchema: %v, want the UDT's fields refused", err)
	}
	if err := s.Driver().Query("ALTER TYPE " + ks + ".address ADD zip int").ExecContext(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ApplySchema(ctx, s, cfg, nil, schemaNow); err != nil {
		t.Fatalf("after the type is altered to agree: %v", err)
	}
}
