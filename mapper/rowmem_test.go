package mapper

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/config"
)

// TestRowBlockSize pins what a buffered sensor row costs in its block: its values, two string
// headers and 36 bytes of fixed-width encodings (a timestamp, two doubles, a float, the write
// timestamp). With the Go values boxed in place it was 232 bytes, a 240-byte size class.
func TestRowBlockSize(t *testing.T) {
	m := newMapper(t, nil)
	p := m.byName["readings"]
	if got, want := p.mem.typ.Size(), uintptr(9*16+2*16+40); got != want {
		t.Errorf("sensor row block is %d bytes, want %d", got, want)
	}
	if p.mem.nbytes != 8+8+8+4+8 {
		t.Errorf("fixed part %d bytes, want 36", p.mem.nbytes)
	}
}

// TestRowsOwnTheirMemory guards finishRow: string values and keys must not alias the pooled
// scratch the next record reuses, and must survive collections.
func TestRowsOwnTheirMemory(t *testing.T) {
	m := newMapper(t, func(tp *config.Topic) {
		tp.Columns = append(tp.Columns, config.Column{Name: "k", Type: "text", Source: "kafka_key"})
	})
	type kept struct {
		id, site, key, rowKey string
		row                   batcher.Row
	}
	var rows []kept
	for i := range 200 {
		id, site, key := fmt.Sprintf("dev-%d", i), fmt.Sprintf("site-%d", i*7), fmt.Sprintf("key-%d", i*13)
		r := rec(`{"device_id":"` + id + `","ts":"2024-01-15T14:37:22Z","temperature":1,"site":{"id":"` + site + `"}}`)
		r.Key = []byte(key)
		row, err := m.Map(r)
		if err != nil {
			t.Fatal(err)
		}
		want := "\x00" + string(rune(len(id))) + id + "\x00\x00\x0a2024-01-15\x00"
		if row.Key != want {
			t.Fatalf("key %q, want %q", row.Key, want)
		}
		rows = append(rows, kept{id, site, key, want, row})
		if i%50 == 0 {
			runtime.GC()
		}
	}
	runtime.GC()
	for _, k := range rows {
		vals := Values(k.row)
		if GoValue(vals[0]) != k.id || GoValue(vals[2]) != k.site || GoValue(vals[6]) != k.key || k.row.Key != k.rowKey {
			t.Fatalf("values %#v and key %q, want id %s, site %s, key %s, routing key %q", vals[:7], k.row.Key, k.id, k.site, k.key, k.rowKey)
		}
	}
}

// TestMapAllocs holds the allocation budget of a sensor record: one, the packed row with its key
// (packed.go). More means a value is boxed the ordinary way again, or the row memory block is no
// longer the scratch's.
func TestMapAllocs(t *testing.T) {
	// The race detector and coverage instrumentation add allocations of their own.
	countAllocs := testing.CoverMode() == "" && !raceEnabled
	for _, tc := range []struct {
		name   string
		mutate func(*config.Topic)
	}{
		{"sensor", nil},
		{"sensor with event buckets", func(tp *config.Topic) { tp.Bucket.EventBuckets = 4 }},
		{"write timestamp event_time", func(tp *config.Topic) { tp.WriteTimestamp = config.WriteTimestampEventTime }},
	} {
		m := newMapper(t, tc.mutate)
		r := rec(sensorJSON)
		allocs := testing.AllocsPerRun(200, func() {
			if _, err := m.Map(r); err != nil {
				t.Fatal(err)
			}
		})
		if countAllocs && allocs > 1 {
			t.Errorf("%s: %.1f allocations per record, budget 1", tc.name, allocs)
		}
	}
}
