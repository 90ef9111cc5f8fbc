package mapper

import (
	"testing"

	"github.com/bucketsink/sink/batcher"
)

// BenchmarkMapSensorRetained maps sensor records while the last 100,000 rows stay live, as rows
// do in the pipeline until their batch is written (the byte budget holds tens of megabytes of
// them). Unlike BenchmarkMapSensor, whose rows die at once, the collector here marks every
// buffered row's objects, so the cost per record includes what the row costs the GC.
func BenchmarkMapSensorRetained(b *testing.B) {
	m := newMapper(b, nil)
	r := rec(sensorJSON)
	ring := make([]batcher.Row, 100_000)
	i := 0
	b.ReportAllocs()
	b.SetBytes(int64(len(sensorJSON)))
	for b.Loop() {
		row, err := m.Map(r)
		if err != nil {
			b.Fatal(err)
		}
		ring[i] = row
		if i++; i == len(ring) {
			i = 0
		}
	}
}
