package mapper

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/config"
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
		if row.Packed == nil || row.Values != nil {
			t.Fatalf("sensor row not packed: Packed %d bytes, %d Values", len(row.Packed), len(row.Values))
		}
		infos := bindInfos()
		var bd Binder
		args := bd.Args(&row)
		vals := Values(row)
		if len(args) != len(infos) || len(vals) != len(infos) || NumValues(&row) != len(infos) {
			t.Fatalf("%d args, %d values, NumValues %d; want %d", len(args), len(vals), NumValues(&row), len(infos))
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
	var bd Binder
	args := bd.Args(&row)
	_, err = gocql.Marshal(gocql.NewNativeType(4, gocql.TypeBigInt, ""), args[0]) // device_id is text
	var bte *BindTypeError
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
	var bd Binder
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
			bd.Reserve(rows) // the same arguments whether or not the room was made first
		}
		for i := range rows {
			all = append(all, bd.Args(&rows[i]))
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
			bd.Args(&rows[i])
		}
		bd.Reset()
	}); allocs != 0 {
		t.Errorf("%v allocations per batch once warm, want 0", allocs)
	}
	// A fresh binder that reserved room allocates for the arguments once, not while binding. The race
	// detector and coverage instrumentation add allocations of their own.
	if testing.CoverMode() == "" && !raceEnabled {
		if allocs := testing.AllocsPerRun(20, func() {
			var fresh Binder
			fresh.Reserve(rows)
			for i := range rows {
				fresh.Args(&rows[i])
			}
		}); allocs != 2 {
			t.Errorf("%v allocations for a batch after Reserve, want 2 (arguments and values)", allocs)
		}
	}
}

// A topic with a column type the mapper does not encode keeps Values; pack refuses such a value.
func TestUnpackableTopicKeepsValues(t *testing.T) {
	m := newMapper(t, func(tp *config.Topic) {
		tp.Columns = append(tp.Columns, config.Column{Name: "ok", Type: "boolean", Field: "ok"})
	})
	row, err := m.Map(rec(`{"device_id":"d","ts":"2024-01-15T14:37:22Z","temperature":1,"ok":true}`))
	if err != nil {
		t.Fatal(err)
	}
	if row.Packed != nil || len(row.Values) != NumValues(&row) || Values(row)[6] != true {
		t.Fatalf("boolean topic: Packed %d bytes, Values %#v", len(row.Packed), row.Values)
	}
	var bd Binder
	if args := bd.Args(&row); &args[0] != &row.Values[0] {
		t.Error("the binder copied Values instead of binding them as they are")
	}
	var r batcher.Row
	if _, ok := pack(&r, []any{true}, nil, nil); ok || r.Packed != nil {
		t.Error("pack accepted a boxed boolean")
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
	var bd Binder
	b, err := gocql.Marshal(gocql.NewNativeType(4, gocql.TypeVarchar, ""), bd.Args(&row)[2])
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
		t.Fatalf("zero-time bucket: not packed (%d Values)", len(row.Values))
	}
	vals := Values(row)
	if b, ok := vals[6].(*encTimestamp); !ok || int64(binary.BigEndian.Uint64(b[:])) != (time.Time{}).UnixMilli() {
		t.Errorf("bucket value %#v, want the encoded instant 0001-01-01T00:00:00Z", vals[6])
	}
	if GoValue(vals[0]) != "d" || row.Key == "" {
		t.Errorf("device_id %#v, key %q", GoValue(vals[0]), row.Key)
	}
}
