package bench

import (
	"context"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/gen"
	"github.com/bucketsink/sink/mapper"
	"github.com/bucketsink/sink/packed"
)

// sensorBatch maps n generated sensor records with the bench config's mapper into one batch, and
// returns the bind types of its INSERT as the server would report them: the table's columns in
// INSERT order, then the TTL (int) and the write timestamp (bigint).
func sensorBatch(tb testing.TB, n int) (*batcher.Batch, []gocql.TypeInfo) {
	tb.Helper()
	s := setup{
		Brokers: []string{"127.0.0.1:9092"}, Hosts: []string{"127.0.0.1:9042"}, Keyspace: "sinkbench",
		Topic: "bench_t_backlog", Table: "bench_t_sink", Group: "g", Metrics: "127.0.0.1:1", CommitInterval: time.Second,
	}
	_, cfg, err := s.write(tb.TempDir(), "sink", nil)
	if err != nil {
		tb.Fatal(err)
	}
	m, err := newMapper(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	g, err := gen.New(gen.Config{Entities: 1, Seed: 1, Start: time.Date(2024, 1, 15, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		tb.Fatal(err)
	}
	b := &batcher.Batch{}
	for i := range n {
		ev := g.Next()
		row, err := m.Map(mapper.Record{Topic: s.Topic, Partition: 0, Offset: int64(i), Key: ev.Key, Value: ev.Value, Timestamp: ev.Time})
		if err != nil {
			tb.Fatal(err)
		}
		b.Target, b.Key = row.Target, row.Key
		b.Rows = append(b.Rows, row)
		b.Bytes += int(row.Size)
	}
	table, ok := m.Table(topicName)
	if !ok {
		tb.Fatalf("no table for topics.%s", topicName)
	}
	var types []gocql.TypeInfo
	for _, c := range table.Columns {
		types = append(types, cqlType(tb, c.Type))
	}
	types = append(types, cqlType(tb, "int"), cqlType(tb, "bigint"))
	if got := packed.Count(b.Rows[0].Packed); got != len(types) {
		tb.Fatalf("a row binds %d values, the table shape gives %d types", got, len(types))
	}
	return b, types
}

// cqlType parses a CQL type name with the driver's own registry, as a prepared statement would.
func cqlType(tb testing.TB, name string) gocql.TypeInfo {
	tb.Helper()
	// The only exported parser of a CQL type name; the server is not needed for it.
	return gocql.NewNativeType(5, gocql.TypeCustom, name)
}

func TestDiscardWriterMarshalsEveryValue(t *testing.T) {
	b, types := sensorBatch(t, 10)
	w := newDiscardWriter(nil)
	w.types[b.Target] = types
	failed, err := w.Write(context.Background(), b)
	if err != nil || len(failed) != 0 {
		t.Fatalf("Write: %d failures, %v", len(failed), err)
	}
	if w.rows.Load() != 10 || w.bytes.Load() <= 0 {
		t.Errorf("counted %d rows and %d marshaled bytes, want 10 and > 0", w.rows.Load(), w.bytes.Load())
	}

	// A row whose value does not fit its column fails alone, as Cassandra's refusal would.
	vals := packed.Values(b.Rows[3].Packed)
	ts := make([]packed.Type, len(vals))
	for i, v := range vals {
		if pv, ok := v.(*packed.Value); ok {
			ts[i], vals[i] = pv.Type, packed.GoValue(pv)
		}
	}
	ts[len(types)-1], vals[len(types)-1] = packed.Scalar(packed.KText), "not a bigint"
	var perr error
	if b.Rows[3].Packed, _, perr = packed.Pack(ts, vals, nil); perr != nil {
		t.Fatal(perr)
	}
	failed, err = w.Write(context.Background(), b)
	if err != nil || len(failed) != 1 || failed[0].Row.Offset != 3 {
		t.Errorf("a bad value: %d failures (%v), err %v; want offset 3 alone", len(failed), failed, err)
	}
}

// BenchmarkMarshalSensorBatch is the marshal step of the write path: every bound value of a
// 100-row sensor batch marshaled against its column type, as the driver does before sending.
func BenchmarkMarshalSensorBatch(b *testing.B) {
	batch, types := sensorBatch(b, 100)
	w := newDiscardWriter(nil)
	w.types[batch.Target] = types
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := w.Write(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(batch.Rows)), "ns/row")
}
