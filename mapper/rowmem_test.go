package mapper

import (
	"fmt"
	"runtime"
	"testing"

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
		values                []any
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
		rows = append(rows, kept{id, site, key, want, row.Values})
		if i%50 == 0 {
			runtime.GC()
		}
	}
	runtime.GC()
	for _, k := range rows {
		if GoValue(k.values[0]) != k.id || GoValue(k.values[2]) != k.site || GoValue(k.values[6]) != k.key {
			t.Fatalf("values %#v, want id %s, site %s, key %s", k.values[:7], k.id, k.site, k.key)
		}
	}
}

// TestMapAllocs holds the allocation budget of a sensor record: the row memory block and one
// byte allocation for its strings and key. More means a value is boxed the ordinary way again.
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
		if countAllocs && allocs > 2 {
			t.Errorf("%s: %.1f allocations per record, budget 2", tc.name, allocs)
		}
	}
}
