package mapper

import (
	"errors"
	"maps"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/packed"
)

// latestMapper maps the sensor topic as a latest-value entry: no bucket, no clustering.
func latestMapper(t *testing.T, onTombstone string, mutate func(*config.Topic)) *Mapper {
	t.Helper()
	return newMapper(t, func(tp *config.Topic) {
		tp.Bucket = config.Bucket{Width: config.BucketNone}
		tp.Clustering = nil
		tp.OnTombstone = onTombstone
		if mutate != nil {
			mutate(tp)
		}
	})
}

func explainOK(t *testing.T, m *Mapper, r Record) Explanation {
	t.Helper()
	ex, err := m.Explain(r)
	if err != nil {
		t.Fatal(err)
	}
	return ex
}

func reading(ts string, temperature string) string {
	return `{"device_id":"dev-0042","ts":"` + ts + `","temperature":` + temperature + `}`
}

// TestLatestValueRowHasNoBucketAndIsWrittenAtItsEventTime: a latest-value row's partition key is its id
// alone (the routing key is the id's bytes), its INSERT binds no bucket column, and its write timestamp
// is the event time's millisecond plus a tie below it.
func TestLatestValueRowHasNoBucketAndIsWrittenAtItsEventTime(t *testing.T) {
	m := latestMapper(t, "", nil)
	ex := explainOK(t, m, rec(sensorJSON))
	if !ex.Latest || len(ex.PartitionKey) != 1 || ex.PartitionKey[0].Column != "device_id" {
		t.Fatalf("partition key %v (latest %v), want [device_id]", ex.PartitionKey, ex.Latest)
	}
	if want := "INSERT INTO telemetry.sensor_readings (device_id, reading_time, site_id, temperature, humidity, battery) VALUES (?, ?, ?, ?, ?, ?) USING TTL ? AND TIMESTAMP ?"; ex.CQL != want {
		t.Errorf("CQL\n %s\nwant\n %s", ex.CQL, want)
	}
	if ex.Row.Key != "dev-0042" {
		t.Errorf("routing key %q, want the id's bytes", ex.Row.Key)
	}
	ms := time.Date(2024, 1, 15, 14, 37, 22, 123e6, time.UTC).UnixMilli()
	if ts := ex.WriteTimestamp; ts < ms*1000 || ts > ms*1000+999 {
		t.Errorf("write timestamp %d, not within the event time's millisecond %d000..%d999", ts, ms, ms)
	}
	if vals := packed.Values(ex.Row.Packed); len(vals) != 8 {
		t.Errorf("%d values bound, want 6 columns, the TTL and the timestamp", len(vals))
	}
}

// TestLatestValueLaterOffsetWinsWithinAMillisecond guards the tie rule: of two events of one entity in
// one millisecond from one Kafka partition, the later offset wins, whatever their content and their µs
// (the tie was a hash of the row: the older of two updates won about half the time, and with
// LogAppendTime a whole produce batch shares one millisecond); the same record replayed binds the same
// timestamp from any partition and Kafka timestamp; an event a millisecond later beats every event of
// the millisecond before, at any offsets. The one documented exception: a multiple of 1000 between the
// two offsets (999 then 1000).
func TestLatestValueLaterOffsetWinsWithinAMillisecond(t *testing.T) {
	m := latestMapper(t, "", nil)
	at := func(offset int64, ts, temperature string) Record {
		r := rec(reading(ts, temperature))
		r.Offset = offset
		return r
	}
	for _, pair := range [][2]int64{{0, 1}, {1, 999}, {998, 999}, {1000, 1001}, {1206, 1207}, {123_456_000, 123_456_999}} {
		// The earlier record has the later µs and the content a hash might prefer: only the offset counts.
		for _, temps := range [][2]string{{"21.5", "19"}, {"19", "21.5"}} {
			older := writeTSOf(t, m, at(pair[0], "2024-01-15T14:37:22.123999Z", temps[0]))
			newer := writeTSOf(t, m, at(pair[1], "2024-01-15T14:37:22.123001Z", temps[1]))
			if older/1000 != newer/1000 {
				t.Fatalf("timestamps %d and %d are not in one millisecond", older, newer)
			}
			if newer <= older {
				t.Errorf("offsets %d then %d in one millisecond: %d does not beat %d", pair[0], pair[1], newer, older)
			}
		}
	}
	// A replay, or the same record seen from other coordinates, binds the same timestamp.
	r := at(1207, "2024-01-15T14:37:22.123456Z", "21.5")
	first := writeTSOf(t, m, r)
	moved := r
	moved.Partition, moved.Timestamp = 0, kafkaTS.Add(time.Hour)
	if got := writeTSOf(t, m, moved); got != first {
		t.Errorf("the same record from another partition and Kafka timestamp: %d, first %d", got, first)
	}
	// A millisecond later wins at any offsets.
	if later := writeTSOf(t, m, at(1000, "2024-01-15T14:37:22.124Z", "1")); later <= writeTSOf(t, m, at(999, "2024-01-15T14:37:22.123999Z", "1")) {
		t.Errorf("an event a millisecond later at offset 1000 has %d, not above the millisecond before at 999", later)
	}
	// The documented exception: the tie is the offset mod 1000, so 1000 loses to 999 in one millisecond.
	if a, b := writeTSOf(t, m, at(999, "2024-01-15T14:37:22.123Z", "1")), writeTSOf(t, m, at(1000, "2024-01-15T14:37:22.123Z", "2")); b >= a {
		t.Errorf("offsets 999 and 1000 in one millisecond: %d and %d; the docs say 1000 loses (update them)", a, b)
	}
}

// TestLatestValueWriteTimestampOffset: under write_timestamp offset a latest-value entry writes its
// upserts and its tombstones' deletes at the record's offset, so along a partition the later record wins
// whatever the times and across a multiple of 1000: an upsert at 999 and a tombstone at 1000 of one
// millisecond (the tie would put the delete first), and a re-create at 1001 after it.
func TestLatestValueWriteTimestampOffset(t *testing.T) {
	m := latestMapper(t, config.OnTombstoneDelete, func(tp *config.Topic) { tp.WriteTimestamp = config.WriteTimestampOffset })
	upsert := func(offset int64, ts string) Explanation {
		r := rec(reading(ts, "1"))
		r.Offset = offset
		return explainOK(t, m, r)
	}
	ms := kafkaTS.UTC().Format(time.RFC3339Nano)
	up := upsert(999, ms)
	tomb := explainOK(t, m, Record{Topic: "sensor-readings", Partition: 3, Offset: 1000, Key: []byte("dev-0042"), Timestamp: kafkaTS})
	again := upsert(1001, kafkaTS.Add(-time.Hour).UTC().Format(time.RFC3339Nano)) // an earlier event time: the offset alone counts
	if up.WriteTimestamp != 999 || !tomb.Delete || tomb.WriteTimestamp != 1000 || tomb.WriteTimestampSource != config.WriteTimestampOffset || again.WriteTimestamp != 1001 {
		t.Errorf("upsert at %d, delete at %d (%s, delete %v), re-create at %d; want 999, 1000 (offset), 1001",
			up.WriteTimestamp, tomb.WriteTimestamp, tomb.WriteTimestampSource, tomb.Delete, again.WriteTimestamp)
	}
	if vals := packed.Values(tomb.Row.Packed); packed.GoValue(vals[0]) != int64(1000) {
		t.Errorf("the delete binds %v, want its offset", packed.GoValue(vals[0]))
	}
}

// TestTombstoneDeletesTheEntityAtItsKafkaTimestamp: under on_tombstone delete, a tombstone is a DELETE row
// of the entry's delete target, in the same partition (routing key) as the entity's upserts, at the
// Kafka timestamp's millisecond plus its offset mod 1000, the upserts' rule: it shadows every upsert of
// an earlier millisecond and those of its own millisecond at earlier offsets of its partition, and
// spares a re-create produced after it in the same millisecond (the delete was at +999, which erased
// every such re-create) and every upsert of a later millisecond.
func TestTombstoneDeletesTheEntityAtItsKafkaTimestamp(t *testing.T) {
	m := latestMapper(t, config.OnTombstoneDelete, nil)
	tomb := Record{Topic: "sensor-readings", Partition: 3, Offset: 1300, Key: []byte("dev-0042"), Timestamp: kafkaTS}
	ex := explainOK(t, m, tomb)
	if !ex.Delete || !ex.Row.Target.Delete || ex.Row.Target.Entry != "readings" {
		t.Fatalf("tombstone: not a delete of entry readings (%+v)", ex)
	}
	if want := "DELETE FROM telemetry.sensor_readings USING TIMESTAMP ? WHERE device_id = ?"; ex.CQL != want {
		t.Errorf("CQL %q, want %q", ex.CQL, want)
	}
	del := kafkaTS.UnixMilli()*1000 + 300
	if ex.WriteTimestamp != del {
		t.Errorf("delete timestamp %d, want %d", ex.WriteTimestamp, del)
	}
	vals := packed.Values(ex.Row.Packed)
	if len(vals) != 2 || packed.GoValue(vals[0]) != del || packed.GoValue(vals[1]) != "dev-0042" {
		t.Errorf("bound %v, want the timestamp then the id", ex.Bound)
	}
	upsert := func(at time.Time, offset int64) Explanation {
		r := rec(reading(at.Format(time.RFC3339Nano), "1"))
		r.Offset = offset
		return explainOK(t, m, r)
	}
	if up := upsert(kafkaTS, 1299); up.Row.Key != ex.Row.Key {
		t.Errorf("the delete's routing key %q is not its upserts' %q", ex.Row.Key, up.Row.Key)
	}
	for _, tc := range []struct {
		what   string
		at     time.Time
		offset int64
		erased bool
	}{
		{"an upsert of the tombstone's millisecond before it", kafkaTS, 1299, true},
		{"an upsert of the tombstone's millisecond long before it", kafkaTS, 1000, true},
		{"a re-create of the tombstone's millisecond after it", kafkaTS, 1301, false},
		{"an upsert a millisecond before, at any offset", kafkaTS.Add(-time.Millisecond), 1999, true},
		{"an upsert a millisecond after, at any offset", kafkaTS.Add(time.Millisecond), 1000, false},
	} {
		if up := upsert(tc.at, tc.offset); (up.WriteTimestamp <= del) != tc.erased {
			t.Errorf("%s (offset %d): %d against the delete's %d, erased %v", tc.what, tc.offset, up.WriteTimestamp, del, !tc.erased)
		}
	}
}

// TestTombstoneKeyNamesTheEntity guards the key rule: one id column read from a field takes the key's
// text in the column's type; several take a JSON object of their fields; a key that does not fit, no
// key, or no Kafka timestamp is bad input with reason key.
func TestTombstoneKeyNamesTheEntity(t *testing.T) {
	tomb := func(key string) Record {
		r := Record{Topic: "sensor-readings", Partition: 3, Offset: 1300, Key: []byte(key), Timestamp: kafkaTS}
		if key == "<none>" {
			r.Key = nil
		}
		return r
	}
	intID := latestMapper(t, config.OnTombstoneDelete, func(tp *config.Topic) {
		tp.Columns[0] = config.Column{Name: "device_id", Type: "int", Field: "device.n"}
	})
	composite := latestMapper(t, config.OnTombstoneDelete, func(tp *config.Topic) {
		tp.ID = []string{"site_id", "device_id"}
	})
	fromKey := latestMapper(t, config.OnTombstoneDelete, func(tp *config.Topic) {
		tp.Columns[0] = config.Column{Name: "device_id", Type: "text", Source: config.SourceKafkaKey}
	})
	for _, tc := range []struct {
		name string
		m    *Mapper
		key  string
		want []any // the id values; nil: refused with reason key
	}{
		{"int", intID, "42", []any{int32(42)}},
		{"int not a number", intID, "forty-two", nil},
		{"int out of range", intID, "99999999999", nil},
		{"composite", composite, `{"device_id":"dev-1","site":{"id":"plant-1"}}`, []any{"plant-1", "dev-1"}},
		{"composite missing a field", composite, `{"device_id":"dev-1"}`, nil},
		{"composite not JSON", composite, "plant-1/dev-1", nil},
		{"no key", intID, "<none>", nil},
		{"kafka_key source", fromKey, `{"not":"parsed"}`, []any{`{"not":"parsed"}`}},
		{"kafka_key not UTF-8", fromKey, "\xff", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex, err := tc.m.Explain(tomb(tc.key))
			if tc.want == nil {
				var re *RecordError
				if !errors.As(err, &re) || re.Reason != ReasonKey {
					t.Fatalf("got %v, want a refusal with reason key", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range tc.want {
				if got := ex.PartitionKey[i].Value; got != v {
					t.Errorf("id %d = %#v, want %#v", i, got, v)
				}
			}
		})
	}
	noTime := tomb("42")
	noTime.Timestamp = time.UnixMilli(-1)
	var re *RecordError
	if _, err := intID.Map(noTime); !errors.As(err, &re) || re.Reason != ReasonKey || !strings.Contains(err.Error(), "no Kafka timestamp") {
		t.Errorf("a tombstone without a Kafka timestamp: %v, want reason key", err)
	}
}

// TestTombstoneSkipIsASkipReason: on_tombstone skip refuses the record with ReasonTombstone, which is a
// skip reason (the pipeline commits and counts it), while a plain refusal is not.
func TestTombstoneSkipIsASkipReason(t *testing.T) {
	for _, bucketed := range []bool{true, false} {
		var m *Mapper
		if bucketed {
			m = newMapper(t, func(tp *config.Topic) { tp.OnTombstone = config.OnTombstoneSkip })
		} else {
			m = latestMapper(t, config.OnTombstoneSkip, nil)
		}
		r := rec("")
		r.Value = nil
		_, err := m.Map(r)
		var re *RecordError
		if !errors.As(err, &re) || re.Reason != ReasonTombstone || !Skipped(re.Reason) {
			t.Errorf("bucketed %v: %v, want a skip with reason tombstone", bucketed, err)
		}
	}
	if Skipped(ReasonDecode) || Skipped(ReasonKey) || !Skipped(ReasonExpired) {
		t.Error("Skipped: only expired and tombstone are skip reasons")
	}
}

// TestLatestValueWriteTimestampProperties checks the write timestamp rule over many records: it lies in
// the event time's millisecond whatever the digits below it; it is the same for the same record from
// any partition and Kafka timestamp and whatever its content; of two records of one millisecond the
// later offset (less than 1000 later) has the higher timestamp unless a multiple of 1000 lies between
// them; and a delete
// follows the same rule at its Kafka timestamp.
func TestLatestValueWriteTimestampProperties(t *testing.T) {
	m := latestMapper(t, config.OnTombstoneDelete, nil)
	rng := rand.New(rand.NewPCG(26, 3))
	ms := time.Date(2024, 1, 15, 14, 37, 22, 123e6, time.UTC)
	upsert := func(offset int64) (Record, int64) {
		at := ms.Add(time.Duration(rng.IntN(1000)) * time.Microsecond)
		r := rec(reading(at.Format(time.RFC3339Nano), strconv.FormatFloat(rng.Float64()*100, 'f', 3, 64)))
		r.Offset = offset
		ts := writeTSOf(t, m, r)
		if ts/1000 != ms.UnixMilli() {
			t.Fatalf("offset %d at %s: write timestamp %d, not in its millisecond", offset, at.Format(time.RFC3339Nano), ts)
		}
		return r, ts
	}
	for i := range 300 {
		o1 := rng.Int64N(1 << 40)
		o2 := o1 + 1 + rng.Int64N(999) // less than 1000 apart: at most one multiple of 1000 between
		r, ts1 := upsert(o1)
		_, ts2 := upsert(o2)
		if wraps := o2/1000 != o1/1000; (ts2 > ts1) == wraps {
			t.Fatalf("pair %d: offsets %d and %d (a multiple of 1000 between: %v): timestamps %d and %d", i, o1, o2, wraps, ts1, ts2)
		}
		r.Partition, r.Timestamp = int32(rng.IntN(12)), kafkaTS.Add(time.Duration(rng.IntN(1000))*time.Second)
		if again := writeTSOf(t, m, r); again != ts1 {
			t.Fatalf("pair %d: %d from other coordinates, %d first", i, again, ts1)
		}
		tomb := Record{Topic: "sensor-readings", Partition: 3, Offset: o2, Key: []byte("dev-0042"), Timestamp: ms}
		if del := writeTSOf(t, m, tomb); del != ts2-ts2%1000+o2%1000 {
			t.Fatalf("pair %d: a tombstone at offset %d of the same millisecond: %d, want the upsert rule's %d", i, o2, del, ts2)
		}
	}
}

// TestTombstoneOfASharedTopicIsEachEntrysToSay guards the seam with the fan-out: a tombstone of a Kafka
// topic read by three entries becomes, per entry, what that entry's on_tombstone says (a refusal, a skip,
// a delete row of the entry's delete target), the same from MapAll as from MapEntry.
func TestTombstoneOfASharedTopicIsEachEntrysToSay(t *testing.T) {
	c := baseConfig()
	r := c.Topics["readings"] // on_tombstone dead_letter (the default)
	skip := siteEntry(r)
	skip.OnTombstone = config.OnTombstoneSkip
	c.Topics["by-site"] = skip
	latest := r
	latest.Table, latest.Bucket, latest.Clustering, latest.OnTombstone = "latest", config.Bucket{Width: config.BucketNone}, nil, config.OnTombstoneDelete
	c.Topics["latest"] = latest
	c.ApplyDefaults()
	m, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	tomb := Record{Topic: "sensor-readings", Partition: 3, Offset: 1300, Key: []byte("dev-0042"), Timestamp: kafkaTS}
	all := checkMapAllIsMapEntry(t, m, tomb)
	reasons := map[string]string{}
	for _, got := range all {
		var re *RecordError
		switch {
		case got.Err == nil && got.Row.Target.Delete && got.Row.Target.Entry == "latest":
			reasons[got.Entry] = "delete"
		case errors.As(got.Err, &re):
			reasons[got.Entry] = re.Reason
		}
	}
	if want := map[string]string{"latest": "delete", "by-site": ReasonTombstone, "readings": ReasonDecode}; !maps.Equal(reasons, want) {
		t.Errorf("outcomes %v, want %v", reasons, want)
	}
}

// TestEveryEntrysRowNamesItsRecordsCoordinates guards where a row's Kafka topic comes from (its
// Target, one per entry and one more for a latest-value entry's deletes): every entry of a shared topic
// maps a record, a tombstone too, to rows that name the record's topic, partition and offset, and the
// time they were mapped at. A Target without its topic leaves the rows without an owner to acknowledge
// them, and their dead letters without a source.
func TestEveryEntrysRowNamesItsRecordsCoordinates(t *testing.T) {
	c := baseConfig()
	latest := c.Topics["readings"]
	latest.Table, latest.Bucket, latest.Clustering, latest.OnTombstone = "latest", config.Bucket{Width: config.BucketNone}, nil, config.OnTombstoneDelete
	c.Topics["latest"] = latest
	c.Topics["by-site"] = siteEntry(c.Topics["readings"])
	c.ApplyDefaults()
	m, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	want := batcher.Source{Topic: "sensor-readings", Partition: 3, Offset: 1300}
	for _, r := range []Record{
		{Topic: want.Topic, Partition: want.Partition, Offset: want.Offset, Value: []byte(sensorJSON), Timestamp: kafkaTS},
		{Topic: want.Topic, Partition: want.Partition, Offset: want.Offset, Key: []byte("dev-0042"), Timestamp: kafkaTS},
	} {
		rows := 0
		for _, got := range checkMapAllIsMapEntry(t, m, r) {
			if got.Err != nil {
				continue // the bucketed entries refuse the tombstone
			}
			rows++
			if src := got.Row.Source(); src != want {
				t.Errorf("entry %s (delete %v): row of %+v, want %+v", got.Entry, got.Row.Target.Delete, src, want)
			}
		}
		if want := map[bool]int{false: 3, true: 1}[r.Value == nil]; rows != want {
			t.Errorf("%d rows of %q, want %d", rows, r.Value, want)
		}
	}
}

// TestLatestValueRowClearsWhatTheNewestEventLacks: a latest-value row is the newest event's whole row: a
// column the event has no value for is bound null, not left unset, which would keep an older event's
// value there (two events' columns mixed in one row).
func TestLatestValueRowClearsWhatTheNewestEventLacks(t *testing.T) {
	m := latestMapper(t, "", nil)
	ex := explainOK(t, m, rec(reading("2024-01-15T14:37:22.123Z", "21.5"))) // no humidity, battery, site
	vals := packed.Values(ex.Row.Packed)
	for i, col := range []string{"site_id", "humidity", "battery"} {
		at := []int{2, 4, 5}[i]
		if v := vals[at]; v != nil {
			t.Errorf("column %s bound %v, want null", col, v)
		}
	}
}

// TestTextKeyInTheWireFormatIsRefusedNotADeleteOfNothing guards against deletes that silently miss: a key
// framed by a registry serializer (magic byte 0, a schema id, the body), read under the default
// key_codec text, would name the entity "\x00\x00\x00\x00\x07dev-0042" and delete nothing. It is bad
// input with reason key, saying to set key_codec, on a JSON topic as on an Avro one; a key that is only
// named by its bytes (source kafka_key) is deleted as its upserts wrote it.
func TestTextKeyInTheWireFormatIsRefusedNotADeleteOfNothing(t *testing.T) {
	framed := append([]byte{0, 0, 0, 0, 7}, "dev-0042"...)
	avroValues := keyedMapper(t, config.KeyCodecText, keyRegistry(), func(tp *config.Topic) { tp.Codec = config.CodecAvro })
	for _, tc := range []struct {
		name string
		m    *Mapper
		key  []byte
		want string
	}{
		{"json topic", latestMapper(t, config.OnTombstoneDelete, nil), framed, "schema id 7"},
		{"avro topic", avroValues, framed, "schema id 7"},
		{"short", avroValues, []byte{0, 'd'}, "starts with byte 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tomb := Record{Topic: "sensor-readings", Partition: 3, Offset: 1300, Key: tc.key, Timestamp: kafkaTS}
			_, err := tc.m.Map(tomb)
			var re *RecordError
			if !errors.As(err, &re) || re.Reason != ReasonKey {
				t.Fatalf("got %v, want a refusal with reason key", err)
			}
			if msg := err.Error(); !strings.Contains(msg, tc.want) || !strings.Contains(msg, "set key_codec") {
				t.Errorf("message %q: want it to say %q and to set key_codec", msg, tc.want)
			}
		})
	}
	fromKey := keyedMapper(t, config.KeyCodecText, keyRegistry(), func(tp *config.Topic) {
		tp.Codec = config.CodecAvro
		tp.Columns[0] = config.Column{Name: "device_id", Type: "blob", Source: config.SourceKafkaKey}
	})
	ex, err := fromKey.Explain(Record{Topic: "sensor-readings", Partition: 3, Offset: 1300, Key: framed, Timestamp: kafkaTS})
	if err != nil {
		t.Fatalf("a framed key of a kafka_key id column: %v, want a delete by its bytes", err)
	}
	if !ex.Delete || ex.Row.Key != string(framed) {
		t.Errorf("delete %v of routing key %q, want the key's bytes %q", ex.Delete, ex.Row.Key, framed)
	}
}
