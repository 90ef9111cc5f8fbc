package mapper

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/big"
	"net"
	"reflect"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"gopkg.in/inf.v0"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/packed"
)

// bindInfos is the bind-marker type of every value of a sensor row (see baseConfig): the columns,
// the bucket, the TTL and the write timestamp.
func bindInfos() []gocql.TypeInfo {
	types := []gocql.Type{gocql.TypeVarchar, gocql.TypeTimestamp, gocql.TypeVarchar, gocql.TypeDouble, gocql.TypeDouble,
		gocql.TypeFloat, gocql.TypeVarchar, gocql.TypeInt, gocql.TypeBigInt}
	out := make([]gocql.TypeInfo, len(types))
	for i, t := range types {
		out[i] = gocql.NewNativeType(4, t, "")
	}
	return out
}

// A packed row binds exactly the bytes its values marshal to before packing, for present, absent
// (unset) and every bound value.
func TestPackedRowBindsTheSameBytes(t *testing.T) {
	m := newMapper(t, nil)
	for _, value := range []string{sensorJSON, `{"device_id":"d-1","ts":"2024-01-15T14:37:22Z","temperature":-3}`} {
		row, err := m.Map(rec(value))
		if err != nil {
			t.Fatal(err)
		}
		if row.Packed == nil {
			t.Fatalf("sensor row not packed")
		}
		infos := bindInfos()
		var bd packed.Binder
		args := bd.Args(row.Packed)
		vals := Values(row)
		if len(args) != len(infos) || len(vals) != len(infos) || packed.Count(row.Packed) != len(infos) {
			t.Fatalf("%d args, %d values, NumValues %d; want %d", len(args), len(vals), packed.Count(row.Packed), len(infos))
		}
		for i, info := range infos {
			if vals[i] == gocql.UnsetValue {
				if args[i] != gocql.UnsetValue {
					t.Errorf("value %d: unset before packing, bound as %#v", i, args[i])
				}
				continue
			}
			got, err := gocql.Marshal(info, args[i])
			if err != nil {
				t.Fatalf("value %d: %v", i, err)
			}
			want, err := gocql.Marshal(info, vals[i])
			if err != nil {
				t.Fatalf("value %d: %v", i, err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("value %d binds %x, want %x", i, got, want)
			}
		}
	}
}

// Binding a packed value to a bind marker of another type fails as binding the encoded value did.
func TestPackedValueRefusesAnotherType(t *testing.T) {
	m := newMapper(t, nil)
	row, err := m.Map(rec(sensorJSON))
	if err != nil {
		t.Fatal(err)
	}
	var bd packed.Binder
	args := bd.Args(row.Packed)
	_, err = gocql.Marshal(gocql.NewNativeType(4, gocql.TypeBigInt, ""), args[0]) // device_id is text
	var bte *packed.BindTypeError
	if !errors.As(err, &bte) || bte.Encoded != "text" || bte.Bound != gocql.TypeBigInt {
		t.Fatalf("text bound to bigint: %v, want a BindTypeError naming text and bigint", err)
	}
	if _, err := gocql.Marshal(gocql.NewNativeType(4, gocql.TypeText, ""), args[0]); err != nil {
		t.Errorf("text bound to a text marker: %v", err)
	}
}

// The binder's memory is reused after Reset, and arguments of several rows handed out before it
// stay intact while later rows are bound.
func TestBinderKeepsEarlierArguments(t *testing.T) {
	m := newMapper(t, nil)
	info := gocql.NewNativeType(4, gocql.TypeVarchar, "")
	var bd packed.Binder
	var rows []batcher.Row
	for _, id := range []string{"a", "bb", "ccc", "dddd", "eeeee", "ffffff", "g", "h", "i", "j"} {
		row, err := m.Map(rec(`{"device_id":"` + id + `","ts":"2024-01-15T14:37:22Z","temperature":1}`))
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, row)
	}
	for round := range 3 {
		var all [][]any
		if round == 1 {
			reserve(&bd, rows) // the same arguments whether or not the room was made first
		}
		for i := range rows {
			all = append(all, bd.Args(rows[i].Packed))
		}
		for i, args := range all {
			b, err := gocql.Marshal(info, args[0])
			if err != nil || string(b) != GoValue(Values(rows[i])[0]) {
				t.Fatalf("round %d row %d: device_id binds %q (%v)", round, i, b, err)
			}
		}
		bd.Reset()
	}
	if allocs := testing.AllocsPerRun(20, func() {
		for i := range rows {
			bd.Args(rows[i].Packed)
		}
		bd.Reset()
	}); allocs != 0 {
		t.Errorf("%v allocations per batch once warm, want 0", allocs)
	}
	// A fresh binder that reserved room allocates for the arguments once, not while binding. The race
	// detector and coverage instrumentation add allocations of their own.
	if testing.CoverMode() == "" && !raceEnabled {
		if allocs := testing.AllocsPerRun(20, func() {
			var fresh packed.Binder
			reserve(&fresh, rows)
			for i := range rows {
				fresh.Args(rows[i].Packed)
			}
		}); allocs != 2 {
			t.Errorf("%v allocations for a batch after Reserve, want 2 (arguments and values)", allocs)
		}
	}
}

// reserve makes room in bd for the arguments of rows, as the cassandra writer does.
func reserve(bd *packed.Binder, rows []batcher.Row) {
	n := 0
	for i := range rows {
		n += packed.Count(rows[i].Packed)
	}
	bd.Reserve(n)
}

// TestEveryTopicIsPacked: a topic with a column of a type the mapper used to box (boolean, blob,
// inet, decimal, varint, the collections) is packed like any other, and binds gocql's bytes.
func TestEveryTopicIsPacked(t *testing.T) {
	cols := []config.Column{
		{Name: "ok", Type: "boolean", Field: "ok"}, {Name: "b", Type: "blob", Field: "b"},
		{Name: "ip", Type: "inet", Field: "ip"}, {Name: "d", Type: "decimal", Field: "d"},
		{Name: "n", Type: "varint", Field: "n"}, {Name: "l", Type: "list<int>", Field: "l"},
		{Name: "tags", Type: "set<text>", Field: "tags"}, {Name: "m", Type: "map<text, double>", Field: "m"},
	}
	m := newMapper(t, func(tp *config.Topic) { tp.Columns = append(tp.Columns, cols...) })
	row, err := m.Map(rec(`{"device_id":"d","ts":"2024-01-15T14:37:22Z","temperature":1,"ok":true,"b":"aGk=",` +
		`"ip":"10.0.0.1","d":"-12.50","n":-129,"l":[1,-2],"tags":["a","b"],"m":{"x":1.5}}`))
	if err != nil {
		t.Fatal(err)
	}
	if row.Packed == nil || packed.Count(row.Packed) != len(row.Target.Columns)+2 {
		t.Fatalf("row with boxed-type columns: Packed %x", row.Packed)
	}
	want := []any{true, []byte("hi"), net.IP{10, 0, 0, 1}, inf.NewDec(-1250, 2), big.NewInt(-129),
		[]any{int32(1), int32(-2)}, []any{"a", "b"}, map[string]any{"x": 1.5}}
	var bd packed.Binder
	args := bd.Args(row.Packed)
	for i, c := range cols {
		typ, err := gocqlType(c.Type)
		if err != nil {
			t.Fatal(err)
		}
		got, err := gocql.Marshal(typ, args[6+i])
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		if wantB, err := gocql.Marshal(typ, want[i]); err != nil || !bytes.Equal(got, wantB) {
			t.Errorf("%s binds %x, gocql gives %x (%v) for %#v", c.Name, got, wantB, err, want[i])
		}
	}
}

// An empty text binds as an empty value, not as null: the packed bytes must come back as an empty,
// non-nil slice.
func TestPackedEmptyTextIsNotNull(t *testing.T) {
	m := newMapper(t, nil)
	row, err := m.Map(rec(`{"device_id":"d","ts":"2024-01-15T14:37:22Z","temperature":1,"site":{"id":""}}`))
	if err != nil {
		t.Fatal(err)
	}
	var bd packed.Binder
	b, err := gocql.Marshal(gocql.NewNativeType(4, gocql.TypeVarchar, ""), bd.Args(row.Packed)[2])
	if err != nil || b == nil || len(b) != 0 {
		t.Fatalf("empty site_id binds %#v (%v), want an empty non-nil value", b, err)
	}
}

// TestZeroTimeBucketIsTheInstantNotEmpty: an event on 0001-01-01 under a timestamp bucket key has a
// bucket that starts at the zero time.Time, which gocql would send as an empty value (a partition
// key Cassandra refuses). The mapper encodes it as the instant, and the row packs like any other.
func TestZeroTimeBucketIsTheInstantNotEmpty(t *testing.T) {
	m := newMapper(t, func(tp *config.Topic) { tp.Bucket.Key, tp.Bucket.Layout = "timestamp", "" })
	row, err := m.Map(rec(`{"device_id":"d","ts":"0001-01-01T05:00:00Z","temperature":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if row.Packed == nil {
		t.Fatalf("zero-time bucket: not packed")
	}
	vals := Values(row)
	if b, ok := vals[6].(*packed.Value); !ok || b.Type.Kind != kTimestamp || int64(binary.BigEndian.Uint64(b.Wire)) != (time.Time{}).UnixMilli() {
		t.Errorf("bucket value %#v, want the encoded instant 0001-01-01T00:00:00Z", vals[6])
	}
	if GoValue(vals[0]) != "d" || row.Key == "" {
		t.Errorf("device_id %#v, key %q", GoValue(vals[0]), row.Key)
	}
}

// TestMapColumnKeepsTheFirstOfDuplicateKeys: a JSON object with a key twice writes one map entry,
// the first value, as a plain field given twice reads its first (it used to keep the last there, so a
// record with a key twice read one occurrence in a field and the other in a map); the entries are in
// key order.
func TestMapColumnKeepsTheFirstOfDuplicateKeys(t *testing.T) {
	m := newMapper(t, func(tp *config.Topic) {
		tp.Columns = append(tp.Columns, config.Column{Name: "m", Type: "map<text, int>", Field: "m"})
	})
	row, err := m.Map(rec(`{"device_id":"d","ts":"2024-01-15T14:37:22Z","temperature":1,"m":{"y":2,"x":1,"y":3}}`))
	if err != nil {
		t.Fatal(err)
	}
	v := Values(row)[6]
	if got, want := GoValue(v), map[string]any{"x": int32(1), "y": int32(2)}; !reflect.DeepEqual(got, want) {
		t.Errorf("map %#v, want %#v", got, want)
	}
	want := []byte{0, 0, 0, 2, 0, 0, 0, 1, 'x', 0, 0, 0, 4, 0, 0, 0, 1, 0, 0, 0, 1, 'y', 0, 0, 0, 4, 0, 0, 0, 2}
	if got := v.(*packed.Value).Wire; !bytes.Equal(got, want) {
		t.Errorf("map bytes %x, want %x", got, want)
	}
}
