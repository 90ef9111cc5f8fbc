package rollup

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/packed"
	"github.com/bucketsink/sink/pipeline/metrics"
	"github.com/bucketsink/sink/routing"
)

// fakeStore keeps markers in memory and records what the worker did, in order.
type fakeStore struct {
	markers []Marker
	did     []string
	fail    string // a rollup whose computation fails
}

func (f *fakeStore) Due(_ context.Context, _ string, _ int32, upTo time.Time, limit int) ([]Marker, error) {
	var out []Marker
	for _, m := range f.markers {
		if !m.Due.After(upTo) && len(out) < limit {
			out = append(out, m)
		}
	}
	return out, nil
}

func (f *fakeStore) Done(_ context.Context, _ string, _ int32, m Marker) error {
	f.did = append(f.did, "done "+m.Rollup)
	f.markers = slices.DeleteFunc(f.markers, func(o Marker) bool {
		return o.Rollup == m.Rollup && o.Window.Equal(m.Window) && o.Timestamp <= m.Timestamp
	})
	return nil
}

func (f *fakeStore) Mark(_ context.Context, _ string, _ int32, m Marker) error {
	f.did = append(f.did, "mark "+m.Rollup)
	f.markers = append(f.markers, m)
	return nil
}

func (f *fakeStore) Recompute(_ context.Context, _, name string, _ []byte, _ time.Time) (int, error) {
	if name == f.fail {
		return 0, errors.New("unavailable")
	}
	f.did = append(f.did, "compute "+name)
	return 1, nil
}

func testEntry(t *testing.T) *Entry {
	t.Helper()
	c := &config.Config{
		Kafka:     config.Kafka{Brokers: []string{"127.0.0.1:9092"}},
		Cassandra: config.Cassandra{Hosts: []string{"127.0.0.1"}, Keyspace: "telemetry"},
		Topics: map[string]config.Topic{"readings": {
			Topic: "sensor-readings", ID: []string{"device_id"}, Time: config.EventTime{Field: "ts"},
			Bucket: config.Bucket{Width: "1d"}, Table: "readings",
			Columns: []config.Column{
				{Name: "device_id", Type: "text", Field: "device_id"},
				{Name: "reading_time", Type: "timestamp", Source: config.SourceEventTime},
				{Name: "temperature", Type: "double", Field: "temperature"},
			},
			Clustering: []config.Clustering{{Column: "reading_time"}},
			Rollups: []config.Rollup{
				{Name: "hourly", Width: "1h", Table: "readings_1h", Bucket: config.Bucket{Width: "month"},
					Aggregates: []config.Aggregate{{Column: "n", Fn: config.AggCount}}},
				{Name: "daily", Width: "1d", From: "hourly", Table: "readings_1d", Bucket: config.Bucket{Width: "year"},
					Aggregates: []config.Aggregate{{Column: "n", Fn: config.AggCount}}},
			},
		}},
	}
	c.ApplyDefaults()
	es, err := Entries(c)
	if err != nil {
		t.Fatal(err)
	}
	return es["readings"]
}

var hour = time.Date(2024, 1, 15, 14, 0, 0, 0, time.UTC)

// A marker whose record is not done yet waits (its raw row may not be written); a done one is
// computed, marks the coarser window at a later timestamp than its own, and only then is deleted; a
// failed computation keeps its marker.
func TestWorkerComputesOnlyDurableMarkersAndDeletesLast(t *testing.T) {
	e := testEntry(t)
	m := metrics.NewMetrics(prometheus.NewRegistry())
	st := &fakeStore{markers: []Marker{
		{Due: hour.Add(time.Hour), Rollup: "hourly", Entity: []byte("a"), Window: hour, Record: 10, Timestamp: 10},
		{Due: hour.Add(2 * time.Hour), Rollup: "hourly", Entity: []byte("b"), Window: hour.Add(time.Hour), Record: 50, Timestamp: 50},
	}}
	durable := int64(20)
	now := hour.Add(3 * time.Hour)
	w := &Worker{Store: st, Entries: []*Entry{e}, Partition: 2, Metrics: m, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Committed: func() int64 { return durable }}
	if err := w.pass(context.Background(), now); err != nil {
		t.Fatal(err)
	}
	if want := []string{"compute hourly", "mark daily", "done hourly"}; !slices.Equal(st.did, want) {
		t.Fatalf("did %v, want %v (the record at offset 50 is not done)", st.did, want)
	}
	if len(st.markers) != 2 || st.markers[0].Record != 50 || st.markers[1].Rollup != "daily" || st.markers[1].Timestamp <= 10 {
		t.Fatalf("markers left %+v: want the waiting one and the daily one, written after the hourly one", st.markers)
	}
	if got := testutil.ToFloat64(m.RollupPending.WithLabelValues("readings", "2")); got != 1 {
		t.Errorf("pending %v, want 1 (the record not done)", got)
	}

	durable, st.did, st.fail = 100, nil, "daily"
	if err := w.pass(context.Background(), now.Add(24*time.Hour)); err == nil {
		t.Fatal("a failed computation must fail the pass")
	}
	if !slices.Contains(st.did, "compute hourly") || slices.Contains(st.did, "done daily") {
		t.Fatalf("did %v: want the hourly window computed and the failed daily one kept", st.did)
	}
	if !slices.ContainsFunc(st.markers, func(m Marker) bool { return m.Rollup == "daily" }) {
		t.Fatalf("the failed daily marker is gone: %+v", st.markers)
	}
	if got := testutil.ToFloat64(m.RollupFailed.WithLabelValues("readings", "daily")); got != 1 {
		t.Errorf("failed %v, want 1", got)
	}
}

// Each raw row adds one marker per rollup made of raw rows (none for one made from a finer rollup),
// naming the row's entity and window, due at the window's end plus grace, at the record's offset.
func TestMarkersOfARawRow(t *testing.T) {
	e := testEntry(t)
	key := rowKey("dev-1", "2024-01-15")
	at := hour.Add(17 * time.Minute)
	row := batcher.Row{Key: string(key), Offset: 77, Partition: 2, EventMicros: at.UnixMicro()}
	ms, err := e.Markers(nil, &row, &Scratch{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 1 || e.Parts() != 1 {
		t.Fatalf("%d markers, %d parts; want one (daily is made of hourly)", len(ms), e.Parts())
	}
	if ms[0].Offset != 77 || ms[0].Partition != 2 || ms[0].Target.Table != "sink_rollup_pending" || !ms[0].Target.Bookkeeping {
		t.Fatalf("marker %+v", ms[0])
	}
	var got []any
	for _, v := range packed.Values(ms[0].Packed) {
		got = append(got, packed.GoValue(v))
	}
	entity, _, _ := routing.KeyParts(string(key), 1)
	want := []any{"readings", int32(2), hour.Add(time.Hour + time.Minute), "hourly", []byte(entity), hour, int64(77), int64(77)}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("marker values %v, want %v", got, want)
	}
}

// A raw row's markers are on the record path of every row of an entry with rollups: each costs one
// allocation (its own copy of values and key), never a boxed value per column. Guards against the
// marker costing as much CPU as mapping the record, as when every value went through an interface.
func TestMarkersCostOneAllocationEach(t *testing.T) {
	e := testEntry(t)
	key := rowKey("dev-1", "2024-01-15")
	row := batcher.Row{Key: string(key), Offset: 77, Partition: 2, EventMicros: hour.Add(17 * time.Minute).UnixMicro()}
	var w Scratch
	dst := make([]batcher.Row, 0, 4)
	allocs := testing.AllocsPerRun(100, func() {
		var err error
		if dst, err = e.Markers(dst[:0], &row, &w, nil); err != nil {
			t.Fatal(err)
		}
	})
	if want := float64(e.Parts()); allocs > want {
		t.Fatalf("%v allocations for %d markers, want at most %v", allocs, e.Parts(), want)
	}
}

// rowKey is the composite routing key of a raw row of these components.
func rowKey(components ...string) []byte {
	var key []byte
	for _, c := range components {
		key = append(binary.BigEndian.AppendUint16(key, uint16(len(c))), c...)
		key = append(key, 0)
	}
	return key
}

// readBack is marker row r as the worker reads it from the pending table.
func readBack(t *testing.T, r *batcher.Row) Marker {
	t.Helper()
	var v []any
	for _, x := range packed.Values(r.Packed) {
		v = append(v, packed.GoValue(x))
	}
	return Marker{Due: v[2].(time.Time), Rollup: v[3].(string), Entity: v[4].([]byte), Window: v[5].(time.Time),
		Record: v[6].(int64), Timestamp: v[7].(int64)}
}

// A record whose window's marker stands writes none and relies on it: the worker takes the marker
// only once that record is committed too, and once taken it no longer stands, so the next record of
// the window writes its own, at its own offset, which the delete of the taken one leaves alone. The
// worker knows the marker it read back from Cassandra by the same identity the records gave it.
// Guards against a window computed before the raw row of a record that relied on its marker, which
// would lose that row from the rollup for good.
func TestAStandingMarkerIsTakenOnlyOnceItsLastRecordIsCommitted(t *testing.T) {
	e := testEntry(t)
	key := string(rowKey("dev-1", "2024-01-15"))
	at := hour.Add(17 * time.Minute).UnixMicro()
	marker := func(offset int64) batcher.Row {
		ms, err := e.Markers(nil, &batcher.Row{Key: key, Offset: offset, Partition: 2, EventMicros: at}, &Scratch{}, nil)
		if err != nil || len(ms) != 1 {
			t.Fatalf("markers %v, %v", ms, err)
		}
		return ms[0]
	}
	s := &Standing{}
	first := marker(10)
	if s.Rely(Identity(&first), 10) {
		t.Fatal("the first record of a window relied on a marker nobody wrote")
	}
	later := marker(30)
	if !s.Rely(Identity(&later), 30) {
		t.Fatal("a later record of the window did not rely on the standing marker")
	}

	st := &fakeStore{markers: []Marker{readBack(t, &first)}}
	committed := int64(20)
	w := &Worker{Store: st, Entries: []*Entry{e}, Partition: 2, Metrics: metrics.NewMetrics(prometheus.NewRegistry()),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Committed: func() int64 { return committed }, Standing: s}
	now := hour.Add(3 * time.Hour)
	if err := w.pass(context.Background(), now); err != nil {
		t.Fatal(err)
	}
	if len(st.did) != 0 {
		t.Fatalf("did %v while the record at offset 30, which relies on the marker, is not committed", st.did)
	}
	committed = 31
	if err := w.pass(context.Background(), now); err != nil {
		t.Fatal(err)
	}
	if want := []string{"compute hourly", "mark daily", "done hourly"}; !slices.Equal(st.did, want) {
		t.Fatalf("did %v, want %v once every record relying on the marker is committed", st.did, want)
	}
	next := marker(40)
	if s.Rely(Identity(&next), 40) || s.Len() != 1 {
		t.Fatalf("a record after the marker was taken relied on it (%d standing)", s.Len())
	}
}

// Standing remembers at most standingMax markers; past it a record writes its marker as if none
// stood, and a marker it does not remember is taken as before. Guards against an unbounded map.
func TestStandingIsBounded(t *testing.T) {
	s := &Standing{}
	for i := range standingMax + 10 {
		if s.Rely(binary.BigEndian.AppendUint32(nil, uint32(i)), int64(i)) {
			t.Fatalf("marker %d stood before it was written", i)
		}
	}
	if s.Len() != standingMax {
		t.Fatalf("%d markers remembered, want %d", s.Len(), standingMax)
	}
	past := binary.BigEndian.AppendUint32(nil, uint32(standingMax+5))
	if s.Rely(past, 1<<40) || !s.Take(past, 0) {
		t.Fatal("a marker past the bound stood, or was held back")
	}
	var none *Standing
	if none.Rely(past, 1) || !none.Take(past, 0) {
		t.Fatal("a nil Standing must remember nothing and take every marker")
	}
}

// Markers leaves out a marker that stands, without packing a row for it: the later records of a
// window cost a look-up, not an allocation. Guards against a record that relies on a marker paying for
// one anyway.
func TestAStandingMarkerIsLeftOutWithoutAnAllocation(t *testing.T) {
	e := testEntry(t)
	key := string(rowKey("dev-1", "2024-01-15"))
	at := hour.Add(17 * time.Minute).UnixMicro()
	st, s := &Standing{}, &Scratch{}
	ms, err := e.Markers(nil, &batcher.Row{Key: key, Offset: 5, Partition: 2, EventMicros: at}, s, st)
	if err != nil || len(ms) != 1 {
		t.Fatalf("the first record of a window: markers %v, %v; want its one", ms, err)
	}
	row := batcher.Row{Key: key, Offset: 6, Partition: 2, EventMicros: at}
	dst := make([]batcher.Row, 0, 4)
	allocs := testing.AllocsPerRun(100, func() {
		row.Offset++
		if dst, err = e.Markers(dst[:0], &row, s, st); err != nil || len(dst) != 0 {
			t.Fatalf("a later record of the window: markers %v, %v; want none", dst, err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations for a marker that stands, want 0", allocs)
	}
}

// Cassandra counts a marker's row as its partition (29 bytes), its row (21), its clustering values
// (due, rollup, entity, window start) and its one cell (20 bytes and the record's offset), and
// batcher.DataSize says the same: markers join requests up to the cap like any row. Guards against
// the pending table's rows counted at five times their size, as a target without a shape is.
func TestAMarkerIsCountedAsCassandraCountsIt(t *testing.T) {
	e := testEntry(t)
	key := rowKey("dev-1", "2024-01-15")
	ms, err := e.Markers(nil, &batcher.Row{Key: string(key), Offset: 77, Partition: 2, EventMicros: hour.UnixMicro()}, &Scratch{}, nil)
	if err != nil || len(ms) != 1 {
		t.Fatalf("markers %v, %v", ms, err)
	}
	entity, _, _ := routing.KeyParts(string(key), 1)
	want := 29 + 21 + (8 + len("hourly") + len(entity) + 8) + (20 + 8)
	b := &batcher.Batch{Target: ms[0].Target, Rows: ms, Bytes: int(ms[0].Size), Partitions: 1}
	if got := batcher.DataSize(b); got != want {
		t.Fatalf("DataSize of a marker %d, want %d", got, want)
	}
}
