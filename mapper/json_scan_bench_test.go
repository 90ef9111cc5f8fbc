package mapper

import (
	"strings"
	"testing"

	jsonc "github.com/bucketsink/sink/codec/json"
)

// BenchmarkScanSensor is the single-pass scan of a sensor record alone (codec/json's Scanner of
// the topic's field paths), the part of BenchmarkMapSensor that replaced fastjson's parse and
// lookups (codec/json BenchmarkTreeSensor).
func BenchmarkScanSensor(b *testing.B) {
	p := newMapper(b, nil).byName["readings"]
	sc := jsonc.NewScanner()
	for i := range p.fields {
		sc.Add(p.fields[i].Path)
	}
	raw := make([]jsonc.Raw, sc.Slots())
	v := []byte(sensorJSON)
	b.ReportAllocs()
	b.SetBytes(int64(len(v)))
	for b.Loop() {
		if !sc.Scan(v, raw) {
			b.Fatal("not handled")
		}
	}
}

// BenchmarkMapSensorFallback maps a sensor record the scan leaves to the parsed tree (its device_id
// has an escape): the cost of a record on the tree's path, scan attempt included.
func BenchmarkMapSensorFallback(b *testing.B) {
	m := newMapper(b, nil)
	r := rec(strings.Replace(sensorJSON, `"dev-0042"`, `"dev-\u0030042"`, 1))
	b.ReportAllocs()
	b.SetBytes(int64(len(r.Value)))
	for b.Loop() {
		if _, err := m.Map(r); err != nil {
			b.Fatal(err)
		}
	}
}
