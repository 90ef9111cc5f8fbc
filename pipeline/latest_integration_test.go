package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"github.com/linkedin/goavro/v2"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/internal/testenv"
	"github.com/bucketsink/sink/mapper"
	"github.com/bucketsink/sink/pipeline/deadletter"
)

// TestIntegrationLatestValueOrderAndTombstones runs a latest-value entry with on_tombstone delete on the
// real stack. The events of one device arrive newest first, then older, then replayed: the row holds the
// newest event. A tombstone after them deletes the row; the same upserts replayed after it do not bring
// it back; a newer upsert does. Within one millisecond the later offset wins: of two updates, and of an
// upsert, a tombstone and a re-create (the re-create stays), and of an upsert and a tombstone (the row is
// deleted). A tombstone whose key does not fit the id is
// dead-lettered with reason key, and another entry's on_tombstone skip skips and counts its tombstone,
// committed.
func TestIntegrationLatestValueOrderAndTombstones(t *testing.T) {
	var skipTopic string
	s := newStackWith(t, 1, nil, func(c *config.Config) {
		tc := c.Topics["readings"]
		tc.Bucket = config.Bucket{Width: config.BucketNone}
		tc.Clustering = nil
		tc.OnTombstone = config.OnTombstoneDelete
		c.Topics["readings"] = tc

		skip := tc
		skipTopic = tc.Topic + "_skip"
		skip.Topic, skip.Table, skip.OnTombstone = skipTopic, "skipped", config.OnTombstoneSkip
		c.Topics["skipped"] = skip
	})
	base := time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond)
	at := func(sec int) time.Time { return base.Add(time.Duration(sec) * time.Second) }
	// upsert is an event of device at base+sec with the given value, its Kafka timestamp its event time.
	upsert := func(device string, sec int) *kgo.Record {
		v := fmt.Sprintf(`{"device_id":%q,"ts":%q,"value":%d}`, device, at(sec).Format(time.RFC3339Nano), sec)
		return &kgo.Record{Topic: s.topic, Key: []byte(device), Value: []byte(v), Timestamp: at(sec)}
	}
	// upsertValue is upsert with a value of its own.
	upsertValue := func(device string, sec, value int) *kgo.Record {
		v := fmt.Sprintf(`{"device_id":%q,"ts":%q,"value":%d}`, device, at(sec).Format(time.RFC3339Nano), value)
		return &kgo.Record{Topic: s.topic, Key: []byte(device), Value: []byte(v), Timestamp: at(sec)}
	}
	tombstone := func(key []byte, sec int) *kgo.Record {
		return &kgo.Record{Topic: s.topic, Key: key, Timestamp: at(sec)}
	}
	produce := s.produceCommitted
	// latest reads the device's row: its value and event time, or ok=false when there is none.
	latest := func(device string) (value float64, ts time.Time, ok bool) {
		t.Helper()
		err := s.session.Driver().Query("SELECT value, ts FROM "+s.ks+".readings WHERE device_id = ?", device).Scan(&value, &ts)
		if errors.Is(err, gocql.ErrNotFound) {
			return 0, time.Time{}, false
		}
		if err != nil {
			t.Fatal(err)
		}
		return value, ts.UTC(), true
	}
	want := func(step, device string, sec int) {
		t.Helper()
		v, ts, ok := latest(device)
		switch {
		case sec < 0 && ok:
			t.Errorf("%s: %s has a row (value %v at %s), want none", step, device, v, ts)
		case sec >= 0 && (!ok || v != float64(sec) || !ts.Equal(at(sec))):
			t.Errorf("%s: %s holds value %v at %s (row %v), want the event of %s", step, device, v, ts, ok, at(sec))
		}
	}
	wantValue := func(step, device string, sec, value int) {
		t.Helper()
		v, ts, ok := latest(device)
		if !ok || v != float64(value) || !ts.Equal(at(sec)) {
			t.Errorf("%s: %s holds value %v at %s (row %v), want value %d at %s", step, device, v, ts, ok, value, at(sec))
		}
	}

	m := s.start(nil)
	// Newest first, then older ones, then a replay of all three.
	produce(upsert("d1", 3), upsert("d1", 2), upsert("d1", 1), upsert("d2", 1))
	want("newest first", "d1", 3)
	produce(upsert("d1", 1), upsert("d1", 2), upsert("d1", 3), upsert("d1", 2))
	want("after a replay", "d1", 3)
	want("another device", "d2", 1)

	// The tombstone deletes the row; a key that is not UTF-8 text names no device.
	produce(tombstone([]byte("d1"), 10), tombstone([]byte{0xff, 0xfe}, 10))
	want("after the tombstone", "d1", -1)
	want("another device after the tombstone", "d2", 1)

	// Replayed upserts stay deleted; a newer one is written.
	produce(upsert("d1", 1), upsert("d1", 3), upsert("d1", 2))
	want("replayed after the tombstone", "d1", -1)
	produce(upsert("d1", 20))
	want("a newer upsert", "d1", 20)

	// One millisecond, one produce batch (as LogAppendTime stamps it): the later offset wins. Two
	// updates of each of eight devices (the tie was a hash of the row: the older won about half the
	// time), and for each an upsert, a tombstone and a re-create: the upsert before the tombstone is
	// deleted, the re-create after it stays (a delete at +999 erased it). Then an upsert and a tombstone
	// of one millisecond: deleted.
	var batch []*kgo.Record
	for i := range 8 {
		device := fmt.Sprintf("m%d", i)
		batch = append(batch, upsertValue(device, 30, 1), upsertValue(device, 30, 2))
		gone := "g" + device
		batch = append(batch, upsertValue(gone, 40, 1), tombstone([]byte(gone), 40), upsertValue(gone, 40, 3))
	}
	batch = append(batch, upsertValue("deleted", 50, 1), tombstone([]byte("deleted"), 50))
	if first := s.produced[0]; first/1000 != (first+int64(len(batch))-1)/1000 {
		t.Fatalf("offsets %d to %d straddle a multiple of 1000, where the tie wraps; produce fewer records before", first, first+int64(len(batch))-1)
	}
	produce(batch...)
	for i := range 8 {
		device := fmt.Sprintf("m%d", i)
		wantValue("two updates in one millisecond", device, 30, 2)
		wantValue("a re-create after a tombstone in its millisecond", "g"+device, 40, 3)
	}
	want("an upsert before a tombstone of its millisecond", "deleted", -1)

	// on_tombstone skip on the other entry: skipped, counted, committed.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.cl.ProduceSync(ctx, &kgo.Record{Topic: skipTopic, Key: []byte("d1")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	s.waitFor(time.Minute, "the skipped tombstone to be committed", func() bool {
		resp, err := s.adm.FetchOffsets(ctx, s.group)
		if err != nil {
			return false
		}
		var at int64
		resp.Each(func(o kadm.OffsetResponse) {
			if o.Topic == skipTopic && o.Partition == 0 {
				at = o.At
			}
		})
		return at == 1
	})
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	if n := testutil.ToFloat64(m.metrics.RecordsSkipped.WithLabelValues(skipTopic, mapper.ReasonTombstone)); n != 1 {
		t.Errorf("sink_records_skipped_total{reason=tombstone} = %v, want 1", n)
	}
	dls := s.dlqRecords()
	if len(dls) != 1 || header(dls[0], deadletter.HeaderReason) != mapper.ReasonKey {
		for _, r := range dls {
			t.Logf("dead letter: reason %q error %q", header(r, deadletter.HeaderReason), header(r, deadletter.HeaderError))
		}
		t.Errorf("%d dead letters, want one: the tombstone whose key is not text, with reason key", len(dls))
	}
}

// produceCommitted produces krs (to partition 0 of the stack's topic, or to other topics) and waits until
// every record of the stack's topic is committed.
func (s *stack) produceCommitted(krs ...*kgo.Record) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res := s.cl.ProduceSync(ctx, krs...)
	if err := res.FirstErr(); err != nil {
		s.t.Fatalf("producing: %v", err)
	}
	for _, r := range res {
		if r.Record.Topic == s.topic {
			s.produced[0] = max(s.produced[0], r.Record.Offset+1)
		}
	}
	s.waitFor(time.Minute, "every record to be committed", s.allCommitted)
}

// TestIntegrationAvroKeyedTombstoneDeletesTheRow runs a latest-value entry of an Avro topic whose keys
// are Avro too (key_codec avro, the key schema registered under <topic>-key in the real registry): an
// Avro-keyed upsert writes the row, an Avro-keyed tombstone deletes it, and a tombstone whose key names a
// schema id the registry does not have is dead-lettered with reason key, the partition going on.
func TestIntegrationAvroKeyedTombstoneDeletesTheRow(t *testing.T) {
	url := testenv.Registry(t)
	s := newFormatsStack(t, url, config.CodecAvro, func(c *config.Config) {
		tp := c.Topics["readings"]
		tp.Bucket, tp.Clustering = config.Bucket{Width: config.BucketNone}, nil
		tp.OnTombstone, tp.KeyCodec = config.OnTombstoneDelete, config.CodecAvro
		c.Topics["readings"] = tp
	})
	reg := newRegistry(t, url)
	valueID := register(t, reg, s.topic+"-value", sr.TypeAvro, readingV1)
	const keySchema = `{"type": "record", "name": "DeviceKey", "namespace": "it.keys", "fields": [{"name": "device_id", "type": "string"}]}`
	keyID := register(t, reg, s.topic+"-key", sr.TypeAvro, keySchema)
	kc, err := goavro.NewCodec(keySchema)
	if err != nil {
		t.Fatal(err)
	}
	key := func(id int, device string) []byte {
		b, err := kc.BinaryFromNative(codec.AppendFrame(nil, id, nil), map[string]any{"device_id": device})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	rows := func(device string) int {
		var n int
		if err := s.session.Driver().Query("SELECT COUNT(*) FROM "+s.ks+".readings WHERE device_id = ?", device).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	m := s.start(nil)
	evs := formatsEvents(0, 2) // dev-00 and dev-01
	var ups []*kgo.Record
	for _, e := range evs {
		ups = append(ups, &kgo.Record{Topic: s.topic, Key: key(keyID, e.device), Value: e.avro(t, readingV1, valueID), Timestamp: e.ts})
	}
	s.produceCommitted(ups...)
	if rows("dev-00") != 1 || rows("dev-01") != 1 {
		t.Fatalf("after the Avro-keyed upserts: %d and %d rows, want one each", rows("dev-00"), rows("dev-01"))
	}
	const unknownID = 1<<31 - 7 // an id no registry of the stack hands out
	later := evs[1].ts.Add(time.Second)
	s.produceCommitted(
		&kgo.Record{Topic: s.topic, Key: key(keyID, "dev-00"), Timestamp: later},
		&kgo.Record{Topic: s.topic, Key: key(unknownID, "dev-01"), Timestamp: later},
	)
	if rows("dev-00") != 0 {
		t.Error("the Avro-keyed tombstone did not delete dev-00's row")
	}
	if rows("dev-01") != 1 {
		t.Error("dev-01's row is gone, though its tombstone's key names no schema the registry has")
	}
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	dls := s.dlqRecords()
	if len(dls) != 1 || header(dls[0], deadletter.HeaderReason) != mapper.ReasonKey ||
		!strings.Contains(header(dls[0], deadletter.HeaderError), "no schema with this id") {
		for _, r := range dls {
			t.Logf("dead letter: reason %q error %q", header(r, deadletter.HeaderReason), header(r, deadletter.HeaderError))
		}
		t.Errorf("%d dead letters, want one: the tombstone whose key's schema id is unknown, with reason key", len(dls))
	}
}
