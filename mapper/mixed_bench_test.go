package mapper

import (
	"testing"

	"github.com/bucketsink/sink/config"
)

// mixedColumns are a column of each type the mapper boxed before every row was packed: boolean,
// blob, inet, decimal, varint and the three collections.
var mixedColumns = []config.Column{
	{Name: "ok", Type: "boolean", Field: "ok"}, {Name: "payload", Type: "blob", Field: "payload"},
	{Name: "ip", Type: "inet", Field: "ip"}, {Name: "price", Type: "decimal", Field: "price"},
	{Name: "count", Type: "varint", Field: "count"}, {Name: "levels", Type: "list<int>", Field: "levels"},
	{Name: "tags", Type: "set<text>", Field: "tags"}, {Name: "attrs", Type: "map<text, double>", Field: "attrs"},
}

const mixedJSON = `{"device_id":"dev-0042","ts":"2024-01-15T14:37:22.123Z","temperature":21.5,"site":{"id":"plant-1"},` +
	`"ok":true,"payload":"aGVsbG8gd29ybGQ=","ip":"10.1.2.3","price":"1234.50","count":98765432109876,` +
	`"levels":[1,2,3,4],"tags":["indoor","calibrated"],"attrs":{"gain":1.5,"offset":-0.25}}`

// BenchmarkMapMixedTypes maps a sensor record that also carries a value of every boxed-before type.
func BenchmarkMapMixedTypes(b *testing.B) {
	m := newMapper(b, func(tp *config.Topic) { tp.Columns = append(tp.Columns, mixedColumns...) })
	r := rec(mixedJSON)
	if _, err := m.Map(r); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(mixedJSON)))
	for b.Loop() {
		if _, err := m.Map(r); err != nil {
			b.Fatal(err)
		}
	}
}
