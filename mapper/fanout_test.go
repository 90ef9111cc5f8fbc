package mapper

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/config"
)

// fanoutConfig is baseConfig's sensor topic read by two more entries of its Kafka topic, in codec
// codecName: readings by site and hour (id site.id, the device as a clustering column, humidity
// required, offset write timestamps), and the battery by week and device (the event time from Kafka,
// the battery as double, a field the first entry reads as float).
func fanoutConfig(codecName string) *config.Config {
	c := baseConfig()
	r := c.Topics["readings"]
	r.Codec = codecName
	c.Topics["readings"] = r
	site := siteEntry(r)
	site.Bucket.EventBuckets = 4
	site.Columns[4].Required = true // humidity
	site.WriteTimestamp = config.WriteTimestampOffset
	c.Topics["by-site"] = site
	c.Topics["battery"] = config.Topic{
		Topic: r.Topic, Codec: codecName, Accept: r.Accept,
		ID:     []string{"device_id"},
		Time:   config.EventTime{Source: config.TimeSourceKafka},
		Bucket: config.Bucket{Width: "week"},
		Table:  "battery_by_device",
		Columns: []config.Column{
			{Name: "device_id", Type: "text", Field: "device_id"},
			{Name: "at", Type: "timestamp", Source: "event_time"},
			{Name: "battery", Type: "double", Field: "battery"},
		},
		Clustering: []config.Clustering{{Column: "at"}},
	}
	if codecName != config.CodecJSON {
		c.SchemaRegistry.URLs = []string{"http://registry.invalid"}
	}
	return c
}

// newFanoutMapper is the mapper of fanoutConfig.
func newFanoutMapper(t testing.TB, codecName string, reg codec.Registry) *Mapper {
	t.Helper()
	c := fanoutConfig(codecName)
	c.ApplyDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	var opts []Option
	if reg != nil {
		opts = append(opts, WithRegistry(reg))
	}
	m, err := New(c, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m
}

// checkMapAllIsMapEntry fails t when MapAll's outcome for an entry of r's topic differs from
// MapEntry's, the entry mapped alone: the same row (values, key, table) or the same error.
func checkMapAllIsMapEntry(t testing.TB, m *Mapper, r Record) []Mapped {
	t.Helper()
	all, err := m.MapAll(context.Background(), r, nil)
	if err != nil {
		t.Fatalf("%q: MapAll: %v", r.Value, err)
	}
	names := m.Entries(r.Topic)
	if len(all) != len(names) {
		t.Fatalf("%q: %d results for %d entries", r.Value, len(all), len(names))
	}
	for i, got := range all {
		if got.Entry != names[i] {
			t.Fatalf("result %d is entry %q, want %q", i, got.Entry, names[i])
		}
		row, err := m.MapEntry(context.Background(), got.Entry, r)
		if (err == nil) != (got.Err == nil) {
			t.Fatalf("%q: entry %s: MapAll says %v, MapEntry %v", r.Value, got.Entry, got.Err, err)
		}
		if err != nil {
			var a, b *RecordError
			if !errors.As(got.Err, &a) || !errors.As(err, &b) || a.Reason != b.Reason || a.Entry != got.Entry ||
				got.Err.Error() != err.Error() || Quoted(got.Err) != Quoted(err) {
				t.Fatalf("%q: entry %s: MapAll's error %v, MapEntry's %v", r.Value, got.Entry, got.Err, err)
			}
			continue
		}
		if string(got.Row.Packed) != string(row.Packed) || got.Row.Key != row.Key || got.Row.Target != row.Target ||
			got.Row.Size != row.Size || !got.Row.EventTime().Equal(row.EventTime()) || got.Row.Source() != row.Source() {
			t.Fatalf("%q: entry %s: MapAll's row %+v, MapEntry's %+v", r.Value, got.Entry, got.Row, row)
		}
		if got.Row.Target.Entry != got.Entry {
			t.Fatalf("entry %s: its row's target names entry %q", got.Entry, got.Row.Target.Entry)
		}
	}
	return all
}

// TestMapAllGivesEachEntryWhatItGivesAlone guards the shared decode of a topic read by several
// entries: for every record of the JSON differential seeds and every single edit of the sensor
// record (records the scan maps, records it leaves to fastjson, records no entry or only some
// entries can map), each entry's outcome in
// MapAll is the one it has mapped alone.
func TestMapAllGivesEachEntryWhatItGivesAlone(t *testing.T) {
	m := newFanoutMapper(t, config.CodecJSON, nil)
	if m.byKafka["sensor-readings"].scan == nil {
		t.Fatal("the topic has no shared scan plan")
	}
	rows := 0
	for _, v := range append(scanSeeds(), mutations(sensorJSON)...) {
		r := rec(v)
		r.Key = []byte("key")
		for _, got := range checkMapAllIsMapEntry(t, m, r) {
			if got.Err == nil {
				rows++
			}
		}
	}
	if rows == 0 {
		t.Fatal("no seed made a row")
	}
	// A tombstone (a null value): what it becomes is each entry's to say.
	tomb := rec("")
	tomb.Value = nil
	checkMapAllIsMapEntry(t, m, tomb)
}

// TestMapAllAvroGivesEachEntryWhatItGivesAlone is the same for Avro, with writer schemas that feed
// every entry, and one that lacks a field two of the entries read.
func TestMapAllAvroGivesEachEntryWhatItGivesAlone(t *testing.T) {
	noHumidity := strings.Replace(sensorAvro, `{"name": "humidity", "type": ["null", "double"]},`, ``, 1)
	reg := &staticRegistry{schemas: map[int]*codec.Schema{
		7: {ID: 7, Type: "AVRO", Text: sensorAvro},
		9: {ID: 9, Type: "AVRO", Text: noHumidity},
	}}
	m := newFanoutMapper(t, config.CodecAvro, reg)
	good := avroValue(t, sensorAvro, 7, sensorNative())
	nullHumidity := sensorNative()
	nullHumidity["humidity"] = nil
	withoutHumidity := sensorNative()
	delete(withoutHumidity, "humidity")
	for _, tc := range []struct {
		name  string
		value []byte
		rows  int
	}{
		{"every entry maps", good, 3},
		{"a field one entry requires is null", avroValue(t, sensorAvro, 7, nullHumidity), 2},
		{"the writer schema lacks a field two entries read", avroValue(t, noHumidity, 9, withoutHumidity), 1},
		{"body cut short", good[:len(good)-3], 0},
		{"not framed", []byte(sensorJSON), 0},
		{"unknown schema id", append(codec.AppendFrame(nil, 12345, nil), good[5:]...), 0},
		{"a tombstone", nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := 0
			for _, got := range checkMapAllIsMapEntry(t, m, Record{Topic: "sensor-readings", Partition: 1, Offset: 5, Value: tc.value, Timestamp: kafkaTS}) {
				if got.Err == nil {
					rows++
				}
			}
			if rows != tc.rows {
				t.Errorf("%d rows, want %d", rows, tc.rows)
			}
		})
	}
}

// TestARecordOneEntryRefusesIsMappedByTheOthers guards per-entry verdicts: a record without the
// humidity by-site requires is refused by that entry alone, with its name in the error, and the
// other entries make their rows.
func TestARecordOneEntryRefusesIsMappedByTheOthers(t *testing.T) {
	m := newFanoutMapper(t, config.CodecJSON, nil)
	all, err := m.MapAll(context.Background(), rec(`{"device_id":"d","ts":"2024-01-15T14:37:22Z","temperature":1,"battery":3.5,"site":{"id":"s"}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, got := range all {
		if got.Entry != "by-site" {
			if got.Err != nil {
				t.Errorf("entry %s: %v", got.Entry, got.Err)
			}
			continue
		}
		var re *RecordError
		if !errors.As(got.Err, &re) || re.Entry != "by-site" || re.Reason != ReasonMap {
			t.Fatalf("by-site: %v, want its refusal with reason map", got.Err)
		}
		const want = `topic sensor-readings partition 3 offset 1207: topics.by-site: column humidity: field "humidity" is missing, and the column is required`
		if got.Err.Error() != want {
			t.Errorf("by-site's error says\n  %s\nwant\n  %s", got.Err, want)
		}
	}
}

// TestAnUndecodableRecordIsRefusedByEveryEntry: a value that is not JSON is each entry's refusal,
// with the same reason, and MapContext, which maps for one entry, says to use MapAll.
func TestAnUndecodableRecordIsRefusedByEveryEntry(t *testing.T) {
	m := newFanoutMapper(t, config.CodecJSON, nil)
	all, err := m.MapAll(context.Background(), rec(`{"device_id":`), []Mapped{{Entry: "earlier"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 4 || all[0].Entry != "earlier" {
		t.Fatalf("MapAll did not append to out: %+v", all)
	}
	for _, got := range all[1:] {
		var re *RecordError
		if !errors.As(got.Err, &re) || re.Reason != ReasonDecode || re.Entry != got.Entry {
			t.Errorf("entry %s: %v, want its refusal with reason decode", got.Entry, got.Err)
		}
	}
	if _, err := m.Map(rec(sensorJSON)); err == nil || !strings.Contains(err.Error(), "MapAll") {
		t.Errorf("Map of a topic with three entries: %v, want an error naming MapAll", err)
	}
	// A one-entry topic's error does not name its entry: today's form.
	_, err = newMapper(t, nil).Map(rec(`{"device_id":`))
	if re := (*RecordError)(nil); !errors.As(err, &re) || re.Entry != "readings" || strings.Contains(err.Error(), "topics.readings") {
		t.Errorf("one entry: %v, want a RecordError of entry readings in today's form", err)
	}
}

// TestMapAllReturnsAnUnansweringRegistryWithNothingAppended: the record waits, no entry refuses it.
func TestMapAllReturnsAnUnansweringRegistryWithNothingAppended(t *testing.T) {
	reg := &staticRegistry{schemas: map[int]*codec.Schema{7: {ID: 7, Type: "AVRO", Text: sensorAvro}}}
	m := newFanoutMapper(t, config.CodecAvro, reg)
	reg.down.Store(true)
	r := rec("")
	r.Value = avroValue(t, sensorAvro, 7, sensorNative())
	all, err := m.MapAll(context.Background(), r, nil)
	if ue := (*codec.UnavailableError)(nil); !errors.As(err, &ue) || len(all) != 0 {
		t.Fatalf("MapAll with the registry down: %d results, error %v; want none and an UnavailableError", len(all), err)
	}
	reg.down.Store(false)
	if all, err = m.MapAll(context.Background(), r, nil); err != nil || len(all) != 3 {
		t.Fatalf("MapAll with the registry back: %d results, error %v", len(all), err)
	}
}

// TestEntriesOfATopicShareOneDecodePlan: the fields the entries read in common are decoded once (the
// union holds each field, type and unit once), and a topic of one entry is left to its own plan.
func TestEntriesOfATopicShareOneDecodePlan(t *testing.T) {
	m := newFanoutMapper(t, config.CodecJSON, nil)
	f := m.byKafka["sensor-readings"]
	var names []string
	for i := range f.fields {
		names = append(names, f.fields[i].Name())
	}
	// In entry-name order: battery reads device_id and battery (double); by-site adds site.id,
	// temperature, humidity and ts; readings adds battery as float.
	if got, want := strings.Join(names, " "), "device_id battery site.id temperature humidity ts battery"; got != want {
		t.Errorf("the topic decodes %s, want %s", got, want)
	}
	if got := m.Entries("sensor-readings"); strings.Join(got, " ") != "battery by-site readings" {
		t.Errorf("Entries: %v", got)
	}
	if one := newMapper(t, nil).byKafka["sensor-readings"]; one.fields != nil || one.entries[0].shared {
		t.Error("a topic of one entry has a shared plan")
	}
}

// TestTheRowsOfARecordShareOneAllocation guards what a topic's further entries cost: the rows MapAll
// makes of one record from the shared values get one allocation between them (they got one each),
// and each row's values end where its own key starts, so that no row reaches into another's bytes.
func TestTheRowsOfARecordShareOneAllocation(t *testing.T) {
	m := newFanoutMapper(t, config.CodecJSON, nil)
	r := rec(sensorJSON)
	ctx := context.Background()
	out, err := m.MapAll(ctx, r, nil)
	if err != nil || len(out) != 3 {
		t.Fatalf("MapAll: %v %+v", err, out)
	}
	for _, got := range out {
		if got.Err != nil {
			t.Fatalf("entry %s: %v", got.Entry, got.Err)
		}
		if cap(got.Row.Packed) != len(got.Row.Packed) || got.Row.Key == "" ||
			unsafe.Pointer(unsafe.StringData(got.Row.Key)) != unsafe.Add(unsafe.Pointer(unsafe.SliceData(got.Row.Packed)), len(got.Row.Packed)) {
			t.Fatalf("entry %s: its values (len %d, cap %d) are not followed by its key", got.Entry, len(got.Row.Packed), cap(got.Row.Packed))
		}
	}
	checkMapAllIsMapEntry(t, m, r)
	if raceEnabled || testing.CoverMode() != "" {
		return // both add allocations of their own
	}
	if n := testing.AllocsPerRun(100, func() { out, _ = m.MapAll(ctx, r, out[:0]) }); n != 1 {
		t.Errorf("MapAll of a record three entries map: %v allocations, want 1", n)
	}
}

// TestConcurrentMapAll maps from several goroutines at once, the first record of a schema id
// included (the topic's shared plan and each entry's own are compiled on first sight): under -race
// it guards the shared state of a topic's entries.
func TestConcurrentMapAll(t *testing.T) {
	noHumidity := strings.Replace(sensorAvro, `{"name": "humidity", "type": ["null", "double"]},`, ``, 1)
	reg := &staticRegistry{schemas: map[int]*codec.Schema{
		7: {ID: 7, Type: "AVRO", Text: sensorAvro},
		9: {ID: 9, Type: "AVRO", Text: noHumidity},
	}}
	m := newFanoutMapper(t, config.CodecAvro, reg)
	withoutHumidity := sensorNative()
	delete(withoutHumidity, "humidity")
	values := [][]byte{avroValue(t, sensorAvro, 7, sensorNative()), avroValue(t, noHumidity, 9, withoutHumidity)}
	wantRows := []int{3, 1}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out []Mapped
			for i := range 200 {
				k := (g + i) % 2
				var err error
				out, err = m.MapAll(context.Background(), Record{Topic: "sensor-readings", Offset: int64(i), Value: values[k], Timestamp: kafkaTS}, out[:0])
				rows := 0
				for _, o := range out {
					if o.Err == nil {
						rows++
					}
				}
				if err != nil || rows != wantRows[k] {
					t.Errorf("schema %d: %d rows, error %v; want %d rows", k, rows, err, wantRows[k])
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestMapEntryRefusesAnEntryOfAnotherTopic: a split re-maps a row by its entry's name; an entry that
// does not read the record's topic is a refusal of reason map naming it, not a row of another table.
func TestMapEntryRefusesAnEntryOfAnotherTopic(t *testing.T) {
	m := newFanoutMapper(t, config.CodecJSON, nil)
	for _, entry := range []string{"nope", "by-site"} {
		r := rec(sensorJSON)
		if entry == "by-site" {
			r.Topic = "other-topic"
		}
		_, err := m.MapEntry(context.Background(), entry, r)
		var re *RecordError
		if !errors.As(err, &re) || re.Entry != entry || re.Reason != ReasonMap || !strings.Contains(err.Error(), "no entry topics."+entry+" reads this Kafka topic") {
			t.Errorf("MapEntry(%s) of %s: %v", entry, r.Topic, err)
		}
	}
}

// FuzzMapAllIsMapEntry: whatever the JSON value, each entry's outcome in MapAll is the one it has
// mapped alone (go test -fuzz FuzzMapAllIsMapEntry ./mapper -parallel 1).
func FuzzMapAllIsMapEntry(f *testing.F) {
	for _, v := range scanSeeds() {
		f.Add([]byte(v))
	}
	m := newFanoutMapper(f, config.CodecJSON, nil)
	f.Fuzz(func(t *testing.T, value []byte) {
		r := rec("")
		r.Value = value
		checkMapAllIsMapEntry(t, m, r)
	})
}

// TestMapAllDecodesAnEventTimeByItsOwnRules: an entry whose event time is a unix_ms number and another
// whose timestamp column reads the same field as text share no decoded slot: a record whose field is RFC
// 3339 text is refused by the first entry under MapAll exactly as under MapEntry (a split re-maps by
// MapEntry, and adding an entry must not change what a replay writes for another).
func TestMapAllDecodesAnEventTimeByItsOwnRules(t *testing.T) {
	c := baseConfig()
	r := c.Topics["readings"]
	r.Time.Format = "unix_ms"
	c.Topics["readings"] = r
	c.Topics["a-col"] = config.Topic{
		Topic: r.Topic, Codec: r.Codec, Accept: r.Accept,
		ID:     []string{"device_id"},
		Time:   config.EventTime{Source: config.TimeSourceKafka},
		Bucket: config.Bucket{Width: "1d"},
		Table:  "ts_by_device",
		Columns: []config.Column{
			{Name: "device_id", Type: "text", Field: "device_id"},
			{Name: "ts", Type: "timestamp", Field: "ts"},
		},
		Clustering: []config.Clustering{{Column: "ts"}},
	}
	c.ApplyDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	m, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{
		`{"device_id":"dev-1","ts":"2024-01-15T10:00:00Z","temperature":21.5}`,
		`{"device_id":"dev-1","ts":1705312800000,"temperature":21.5}`,
	} {
		checkMapAllIsMapEntry(t, m, Record{Topic: r.Topic, Partition: 0, Offset: 7, Value: []byte(v), Timestamp: time.Date(2024, 1, 15, 10, 0, 0, 0, time.UTC)})
	}
}
