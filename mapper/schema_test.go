package mapper_test

import (
	"slices"
	"testing"
	"time"

	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/mapper"
	"github.com/bucketsink/sink/packed"
	"github.com/bucketsink/sink/schema"
)

// TestRowsBindTheSchemaTable: a row's target is its table as package schema describes it (the
// INSERT `sink schema` checks the table against, the columns in the same order), for a plain and
// a sliced topic, so the statements and the DDL cannot drift apart.
func TestRowsBindTheSchemaTable(t *testing.T) {
	const value = `{"device_id":"dev-1","ts":"2024-01-15T14:37:22.123Z","temperature":21.5,"humidity":40.2,"battery":3.7,"site":{"id":"p1"}}`
	for _, slice := range []string{"", "1d"} {
		cfg, err := config.Load("../examples/local.yaml", nil)
		if err != nil {
			t.Fatal(err)
		}
		tp := cfg.Topics["readings"]
		tp.Bucket.Width, tp.Bucket.Slice = "1h", slice
		tp.Bucket.Key, tp.Bucket.Layout = "number", ""
		if slice != "" {
			tp.Bucket.MissingSlice = config.MissingSliceCreate
		}
		cfg.Topics["readings"] = tp
		m, err := mapper.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		tables, err := schema.Describe(cfg)
		if err != nil {
			t.Fatal(err)
		}
		tbl := tables["readings"]
		row, err := m.Map(mapper.Record{Topic: tp.Topic, Value: []byte(value), Timestamp: time.Date(2024, 1, 15, 14, 37, 23, 0, time.UTC)})
		if err != nil {
			t.Fatal(err)
		}
		want := tbl.Name
		if slice != "" {
			want = tbl.NameOfSlice(tbl.Policy.SliceIndex(time.Date(2024, 1, 15, 14, 37, 22, 0, time.UTC)))
			if want == tbl.Name {
				t.Fatalf("slice %q: the slice's table is the topic's own %s", slice, want)
			}
		}
		if row.Target.Table != want || row.Target.Insert != tbl.Insert(want) || !slices.Equal(row.Target.Columns, tbl.InsertColumns()) {
			t.Errorf("slice %q: row target %s %q %v; schema says %s %q %v", slice,
				row.Target.Table, row.Target.Insert, row.Target.Columns, want, tbl.Insert(want), tbl.InsertColumns())
		}
		if n := packed.Count(row.Packed); n != tbl.NumValues() {
			t.Errorf("slice %q: the row binds %d values, the table's INSERT %d", slice, n, tbl.NumValues())
		}
		if got, _ := m.Table("readings"); got.Insert(want) != tbl.Insert(want) {
			t.Errorf("slice %q: Mapper.Table disagrees with schema.Describe", slice)
		}
	}
}
