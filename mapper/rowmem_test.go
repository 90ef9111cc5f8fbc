package mapper

import (
	"bytes"
	"fmt"
	"reflect"
	"runtime"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/bucketsink/sink/config"
)

// TestRowMemoryIsBoxing guards the premise of row memory: a value stored in a slot and boxed by
// boxAt is indistinguishable from the same value boxed by the compiler: same dynamic type, ==,
// reflect.DeepEqual, fmt, and gocql marshals it to the same bytes for every CQL type it binds.
func TestRowMemoryIsBoxing(t *testing.T) {
	l := newRowLayout(1, 1, 1, 2)
	ts := time.Date(2024, 1, 15, 14, 37, 22, 123456789, time.UTC)
	cases := []struct {
		put   func(m rowMem) any
		want  any
		types []gocql.Type
	}{
		{func(m rowMem) any { return m.putString(0, "dev-0042") }, "dev-0042", []gocql.Type{gocql.TypeVarchar, gocql.TypeAscii, gocql.TypeText}},
		{func(m rowMem) any { return m.putString(0, "") }, "", []gocql.Type{gocql.TypeVarchar}},
		{func(m rowMem) any { return m.putTime(0, ts) }, ts, []gocql.Type{gocql.TypeTimestamp, gocql.TypeDate}},
		{func(m rowMem) any { return m.putTime(0, time.Date(1969, 7, 20, 0, 0, 0, 0, time.UTC)) }, time.Date(1969, 7, 20, 0, 0, 0, 0, time.UTC), []gocql.Type{gocql.TypeTimestamp, gocql.TypeDate}},
		{func(m rowMem) any { return m.putInt64(0, -1705329442123456) }, int64(-1705329442123456), []gocql.Type{gocql.TypeBigInt, gocql.TypeCounter, gocql.TypeVarint}},
		{func(m rowMem) any { return m.putInt32(0, -2147483648) }, int32(-2147483648), []gocql.Type{gocql.TypeInt, gocql.TypeBigInt}},
		{func(m rowMem) any { return m.putInt16(0, -32768) }, int16(-32768), []gocql.Type{gocql.TypeSmallInt, gocql.TypeInt}},
		{func(m rowMem) any { return m.putInt8(0, -128) }, int8(-128), []gocql.Type{gocql.TypeTinyInt, gocql.TypeSmallInt}},
		{func(m rowMem) any { return m.putFloat64(0, 21.5) }, 21.5, []gocql.Type{gocql.TypeDouble}},
		{func(m rowMem) any { return m.putFloat32(0, 3.71) }, float32(3.71), []gocql.Type{gocql.TypeFloat}},
		{func(m rowMem) any { return m.putUUID(0, mustUUID("e7a1b2c0-b3a4-11ee-8c90-0242ac120002")) }, mustUUID("e7a1b2c0-b3a4-11ee-8c90-0242ac120002"), []gocql.Type{gocql.TypeUUID, gocql.TypeTimeUUID}},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%T %v", tc.want, tc.want), func(t *testing.T) {
			got := tc.put(l.alloc())
			if reflect.TypeOf(got) != reflect.TypeOf(tc.want) || got != tc.want || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %#v (%T), want %#v (%T)", got, got, tc.want, tc.want)
			}
			if g, w := fmt.Sprintf("%#v", got), fmt.Sprintf("%#v", tc.want); g != w {
				t.Errorf("fmt: %s, want %s", g, w)
			}
			for _, typ := range tc.types {
				info := gocql.NewNativeType(4, typ, "")
				g, gerr := gocql.Marshal(info, got)
				w, werr := gocql.Marshal(info, tc.want)
				if !bytes.Equal(g, w) || (gerr == nil) != (werr == nil) {
					t.Errorf("gocql.Marshal as %v: %x, %v; boxed value gives %x, %v", typ, g, gerr, w, werr)
				}
			}
		})
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
		if k.values[0] != k.id || k.values[2] != k.site || k.values[6] != k.key {
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
