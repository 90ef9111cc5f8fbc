package mapper

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
	"net"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"gopkg.in/inf.v0"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/bucketer"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/packed"
)

// baseConfig is a daily-bucketed sensor topic like examples/iot-sensors.yaml.
func baseConfig() *config.Config {
	c := &config.Config{
		Kafka:     config.Kafka{Brokers: []string{"127.0.0.1:9092"}},
		Cassandra: config.Cassandra{Hosts: []string{"127.0.0.1"}, Keyspace: "telemetry"},
		Topics: map[string]config.Topic{
			"readings": {
				Topic:  "sensor-readings",
				ID:     []string{"device_id"},
				Time:   config.EventTime{Source: "field", Field: "ts", Format: "rfc3339"},
				Bucket: config.Bucket{Width: "1d", Column: "day", Key: "text", Layout: "2006-01-02"},
				Table:  "sensor_readings",
				Columns: []config.Column{
					{Name: "device_id", Type: "text", Field: "device_id"},
					{Name: "reading_time", Type: "timestamp", Source: "event_time"},
					{Name: "site_id", Type: "text", Field: "site.id"},
					{Name: "temperature", Type: "double", Field: "temperature", Required: true},
					{Name: "humidity", Type: "double", Field: "humidity"},
					{Name: "battery", Type: "float", Field: "battery"},
				},
				Clustering: []config.Clustering{{Column: "reading_time", Order: "desc"}},
				TTL:        config.Duration(90 * 24 * time.Hour),
				// No accept window: the tests map event times of any year against one Kafka timestamp;
				// TestAcceptWindow sets one.
				Accept: config.Accept{Before: math.MaxInt64, After: math.MaxInt64},
			},
		},
	}
	return c
}

func newMapper(t testing.TB, mutate func(*config.Topic)) *Mapper {
	t.Helper()
	c := baseConfig()
	if mutate != nil {
		tp := c.Topics["readings"]
		mutate(&tp)
		c.Topics["readings"] = tp
	}
	c.ApplyDefaults()
	m, err := New(c)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m
}

const sensorJSON = `{"device_id":"dev-0042","ts":"2024-01-15T14:37:22.123Z","temperature":21.5,` +
	`"humidity":40.2,"battery":3.71,"site":{"id":"plant-1"}}`

var kafkaTS = time.Date(2024, 1, 15, 14, 37, 23, 0, time.UTC)

func rec(value string) Record {
	return Record{Topic: "sensor-readings", Partition: 3, Offset: 1207, Value: []byte(value), Timestamp: kafkaTS}
}

func TestMapSensorRecord(t *testing.T) {
	m := newMapper(t, nil)
	row, err := m.Map(rec(sensorJSON))
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Date(2024, 1, 15, 14, 37, 22, 123e6, time.UTC)
	want := []any{"dev-0042", ts, "plant-1", 21.5, 40.2, float32(3.71), "2024-01-15",
		int32(90 * 24 * 3600), kafkaTS.UnixMicro() + 207}
	if got := decoded(t, Values(row)); !reflect.DeepEqual(got, want) {
		t.Errorf("values\n got %#v\nwant %#v", got, want)
	}
	const insert = "INSERT INTO telemetry.sensor_readings (device_id, reading_time, site_id, temperature, humidity, battery, day) " +
		"VALUES (?, ?, ?, ?, ?, ?, ?) USING TTL ? AND TIMESTAMP ?"
	if row.Target.Insert != insert {
		t.Errorf("insert\n got %s\nwant %s", row.Target.Insert, insert)
	}
	if row.Target.Keyspace != "telemetry" || row.Target.Table != "sensor_readings" || row.Target.Consistency != "LOCAL_QUORUM" {
		t.Errorf("target = %+v", row.Target)
	}
	// Composite routing key: (len, bytes, 0) for device_id then day.
	wantKey := "\x00\x08dev-0042\x00\x00\x0a2024-01-15\x00"
	if row.Key != wantKey {
		t.Errorf("key = %q, want %q", row.Key, wantKey)
	}
	if row.Target.Topic != "sensor-readings" || row.Partition != 3 || row.Offset != 1207 {
		t.Errorf("source = %+v", row.Source())
	}
	if !row.EventTime().Equal(ts) {
		t.Errorf("event time = %v", row.EventTime())
	}
	// 9 values: 8+10+7+8+8+4+10+4+8 bytes, each with a 4-byte length, plus the row overhead.
	if wantSize := rowOverhead + 9*4 + 8 + 8 + 7 + 8 + 8 + 4 + 10 + 4 + 8; int(row.Size) != wantSize {
		t.Errorf("size = %d, want %d", row.Size, wantSize)
	}
	// What Cassandra counts of the row in a batch (batcher.DataSize), by hand: the row's liveness with
	// its TTL (8 + 4 + 8) and its deletion (13), the clustering time (8), a cell (20 and the value) for
	// each of site_id (7), temperature (8), humidity (8) and battery (4); the partition's empty static
	// row and deletion, 29. The partition key, the TTL and the write timestamp count nothing.
	if got, want := batcher.DataSize(&batcher.Batch{Target: row.Target, Key: row.Key, Rows: []batcher.Row{row}, Bytes: int(row.Size), Partitions: 1}),
		20+13+8+(20+7)+(20+8)+(20+8)+(20+4)+29; got != want {
		t.Errorf("DataSize = %d, want %d", got, want)
	}
	// The same table maps to the same *Target every time: the batcher groups by the pointer.
	row2, err := m.Map(rec(strings.Replace(sensorJSON, "2024-01-15T14", "2024-01-16T14", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if row2.Target != row.Target {
		t.Error("a second row of the same table got a different *Target")
	}
}

// TestRoutingKeyMatchesGocql checks Row.Key against the bytes gocql itself builds for routing:
// each component marshalled by gocql, framed as createRoutingKey frames a composite key.
func TestRoutingKeyMatchesGocql(t *testing.T) {
	cases := []struct {
		name   string
		idType string
		idJSON string
		idVal  any
		key    string
	}{
		{"text id, text bucket", "text", `"dev-1"`, "dev-1", "text"},
		{"int id, int bucket", "int", `42`, int32(42), "int"},
		{"bigint id, number bucket", "bigint", `-7`, int64(-7), "number"},
		{"uuid id, timestamp bucket", "uuid", `"0b6a1f6e-3f0c-4a53-9b8f-1f2a3b4c5d6e"`, mustUUID("0b6a1f6e-3f0c-4a53-9b8f-1f2a3b4c5d6e"), "timestamp"},
		{"date id, date bucket", "date", `"1969-07-20"`, time.Date(1969, 7, 20, 0, 0, 0, 0, time.UTC), "date"},
		{"varint id", "varint", `-129`, big.NewInt(-129), "text"},
		{"decimal id", "decimal", `-1.50`, inf.NewDec(-150, 2), "text"},
		{"inet id", "inet", `"10.0.0.1"`, net.ParseIP("10.0.0.1").To4(), "text"},
		{"boolean id", "boolean", `true`, true, "text"},
		{"double id", "double", `2.5`, 2.5, "text"},
		{"blob id", "blob", `"AAEC"`, []byte{0, 1, 2}, "text"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newMapper(t, func(tp *config.Topic) {
				tp.Columns[0].Type = tc.idType
				tp.Bucket.Key = tc.key
				tp.Bucket.Layout = ""
				tp.Bucket.EventBuckets = 4
			})
			row, err := m.Map(rec(`{"device_id":` + tc.idJSON + `,"ts":"2024-01-15T14:37:22Z","temperature":1}`))
			if err != nil {
				t.Fatal(err)
			}
			p := m.byName["readings"]
			bucketVal := Values(row)[len(p.cols)]
			ebVal := Values(row)[len(p.cols)+1]
			var want []byte
			for _, c := range []struct {
				typ gocql.Type
				v   any
			}{{typeOf(tc.idType), tc.idVal}, {typeOf(p.policy.CQLType()), bucketVal}, {gocql.TypeInt, ebVal}} {
				b, err := gocql.Marshal(gocql.NewNativeType(4, c.typ, ""), c.v)
				if err != nil {
					t.Fatalf("gocql.Marshal(%v): %v", c.v, err)
				}
				want = binary.BigEndian.AppendUint16(want, uint16(len(b)))
				want = append(want, b...)
				want = append(want, 0)
			}
			if row.Key != string(want) {
				t.Errorf("key\n got %x\nwant %x", row.Key, want)
			}
		})
	}
}

func typeOf(name string) gocql.Type {
	return map[string]gocql.Type{
		"text": gocql.TypeVarchar, "int": gocql.TypeInt, "bigint": gocql.TypeBigInt, "uuid": gocql.TypeUUID,
		"date": gocql.TypeDate, "timestamp": gocql.TypeTimestamp, "varint": gocql.TypeVarint,
		"decimal": gocql.TypeDecimal, "inet": gocql.TypeInet, "boolean": gocql.TypeBoolean,
		"double": gocql.TypeDouble, "blob": gocql.TypeBlob,
	}[name]
}

func TestRowKeyIdentifiesPartition(t *testing.T) {
	m := newMapper(t, nil)
	key := func(id, ts string) string {
		t.Helper()
		row, err := m.Map(rec(`{"device_id":"` + id + `","ts":"` + ts + `","temperature":1}`))
		if err != nil {
			t.Fatal(err)
		}
		return row.Key
	}
	a := key("dev-1", "2024-01-15T00:00:00Z")
	if b := key("dev-1", "2024-01-15T23:59:59Z"); a != b {
		t.Error("two records of one device and day got different keys")
	}
	if b := key("dev-2", "2024-01-15T00:00:00Z"); a == b {
		t.Error("two devices got the same key")
	}
	if b := key("dev-1", "2024-01-16T00:00:00Z"); a == b {
		t.Error("two days got the same key")
	}
	// Framing keeps ("ab", "c") and ("a", "bc")-like splits apart.
	if key("dev-1", "2024-01-15T00:00:00Z") == key("dev-12024-01-15", "2024-01-15T00:00:00Z") {
		t.Error("ambiguous key framing")
	}
}

func TestEventBucketHashContract(t *testing.T) {
	m := newMapper(t, func(tp *config.Topic) {
		tp.ID = []string{"device_id", "site_id"}
		tp.Bucket.EventBuckets = 16
	})
	// By default the clustering values feed the hash: the id is already in the partition key, so
	// hashing it would put every row of an entity in the same event bucket and split nothing.
	seen := map[int32]bool{}
	for _, ts := range []string{"2024-01-15T00:00:00.000Z", "2024-01-15T00:00:01.000Z", "2024-01-15T00:00:02.000Z",
		"2024-01-15T00:00:03.000Z", "2024-01-15T00:00:04.000Z", "2024-01-15T00:00:05.000Z"} {
		row, err := m.Map(rec(`{"device_id":"dev-1","site":{"id":"plant-1"},"ts":"` + ts + `","temperature":1}`))
		if err != nil {
			t.Fatal(err)
		}
		want := int32(bucketer.EventBucket([]byte(ts), 16))
		got := GoValue(Values(row)[7])
		if got != want {
			t.Errorf("%s: event bucket %v, want %v", ts, got, want)
		}
		seen[got.(int32)] = true
	}
	if len(seen) < 2 {
		t.Errorf("six rows of one entity all landed in event bucket %v: the event bucket splits nothing", seen)
	}
	// A non-text hash column hashes its canonical text.
	m = newMapper(t, func(tp *config.Topic) {
		tp.Bucket.EventBuckets = 8
		tp.Bucket.EventBucketField = "reading_time"
	})
	row, err := m.Map(rec(sensorJSON))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := GoValue(Values(row)[7]), int32(bucketer.EventBucket([]byte("2024-01-15T14:37:22.123Z"), 8)); got != want {
		t.Errorf("event bucket %v, want %v", got, want)
	}
}

func TestWriteTimestampAndTTL(t *testing.T) {
	ts := time.Date(2024, 1, 15, 14, 37, 22, 123456789, time.UTC)
	cases := []struct {
		wts    string
		ttl    time.Duration
		insert string
		tail   []any
	}{
		{"kafka", 0, " USING TIMESTAMP ?", []any{kafkaTS.UnixMicro() + 207}},
		{"event_time", time.Hour, " USING TTL ? AND TIMESTAMP ?", []any{int32(3600), ts.UnixMicro()}},
		{"server", time.Hour, " USING TTL ?", []any{int32(3600)}},
		{"server", 0, "", nil},
	}
	for _, tc := range cases {
		m := newMapper(t, func(tp *config.Topic) {
			tp.WriteTimestamp = tc.wts
			tp.TTL = config.Duration(tc.ttl)
		})
		row, err := m.Map(rec(`{"device_id":"d","ts":"2024-01-15T14:37:22.123456789Z","temperature":1}`))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(row.Target.Insert, "VALUES (?, ?, ?, ?, ?, ?, ?)"+tc.insert) {
			t.Errorf("%s/%v: insert %s", tc.wts, tc.ttl, row.Target.Insert)
		}
		if got := decoded(t, Values(row)[7:]); !reflect.DeepEqual(got, tc.tail) && !(len(got) == 0 && tc.tail == nil) {
			t.Errorf("%s/%v: tail %#v, want %#v", tc.wts, tc.ttl, got, tc.tail)
		}
	}
}

func TestMissingOptionalColumnIsUnset(t *testing.T) {
	m := newMapper(t, nil)
	row, err := m.Map(rec(`{"device_id":"d","ts":"2024-01-15T14:37:22Z","temperature":1,"humidity":null}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{2, 4, 5} { // site_id missing, humidity null, battery missing
		if Values(row)[i] != gocql.UnsetValue {
			t.Errorf("value %d = %#v, want gocql.UnsetValue", i, Values(row)[i])
		}
	}
}

func TestMissingOptionalColumnOnProtocol3IsNull(t *testing.T) {
	c := baseConfig()
	c.Cassandra.ProtocolVersion = 3
	c.ApplyDefaults()
	m, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	row, err := m.Map(rec(`{"device_id":"d","ts":"2024-01-15T14:37:22Z","temperature":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if Values(row)[2] != nil {
		t.Errorf("missing site_id = %#v, want nil: protocol 3 has no unset values", Values(row)[2])
	}
	var bd packed.Binder // packed as null, bound as nil
	if args := bd.Args(row.Packed); row.Packed == nil || args[2] != nil {
		t.Errorf("missing site_id binds %#v (packed %v), want nil", args[2], row.Packed != nil)
	}
}

func TestSlicedTargets(t *testing.T) {
	m := newMapper(t, func(tp *config.Topic) {
		tp.Bucket = config.Bucket{Width: "10m", Key: "int", Slice: "1d", Column: "bucket"}
		tp.Table = "metrics"
	})
	at := func(ts string) *Record {
		r := rec(`{"device_id":"d","ts":"` + ts + `","temperature":1}`)
		return &r
	}
	r1, err := m.Map(*at("2024-01-15T00:05:00Z"))
	if err != nil {
		t.Fatal(err)
	}
	r2, _ := m.Map(*at("2024-01-15T23:55:00Z"))
	r3, _ := m.Map(*at("2024-01-16T00:00:00Z"))
	r4, _ := m.Map(*at("2024-01-15T12:00:00Z"))
	if r1.Target.Table != "metrics_20240115" || r3.Target.Table != "metrics_20240116" {
		t.Errorf("tables %s, %s", r1.Target.Table, r3.Target.Table)
	}
	if r1.Target != r2.Target || r1.Target != r4.Target {
		t.Error("one slice got more than one *Target")
	}
	if !strings.HasPrefix(r3.Target.Insert, "INSERT INTO telemetry.metrics_20240116 (") {
		t.Errorf("insert %s", r3.Target.Insert)
	}
	if got := decoded(t, Values(r1)[6:7])[0]; got != int64(202401150000) {
		t.Errorf("bucket value %#v", got)
	}
}

func TestSources(t *testing.T) {
	m := newMapper(t, func(tp *config.Topic) {
		tp.Columns = append(tp.Columns,
			config.Column{Name: "k", Type: "text", Source: "kafka_key"},
			config.Column{Name: "kb", Type: "blob", Source: "kafka_key"},
			config.Column{Name: "kts", Type: "timestamp", Source: "kafka_timestamp"},
			config.Column{Name: "kt", Type: "text", Source: "kafka_topic"},
			config.Column{Name: "kp", Type: "int", Source: "kafka_partition"},
			config.Column{Name: "kp64", Type: "bigint", Source: "kafka_partition"},
			config.Column{Name: "ko", Type: "bigint", Source: "kafka_offset"},
			config.Column{Name: "raw", Type: "text", Source: "raw"},
			config.Column{Name: "id", Type: "timeuuid", Source: "timeuuid"},
		)
	})
	r := rec(`{"device_id":"d","ts":"2024-01-15T14:37:22Z","temperature":1}`)
	r.Key = []byte("dev-key")
	row, err := m.Map(r)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := timeUUID(time.Date(2024, 1, 15, 14, 37, 22, 0, time.UTC), "sensor-readings", 3, 1207)
	want := []any{"dev-key", []byte("dev-key"), kafkaTS, "sensor-readings", int32(3), int64(3), int64(1207), string(r.Value), u}
	if got := decoded(t, Values(row)[6:15]); !reflect.DeepEqual(got, want) {
		t.Errorf("sources\n got %#v\nwant %#v", got, want)
	}
	r.Key = nil
	row, err = m.Map(r)
	if err != nil {
		t.Fatal(err)
	}
	if Values(row)[6] != gocql.UnsetValue {
		t.Errorf("nil key: %#v, want unset", Values(row)[6])
	}
}

func TestEventTimeFormats(t *testing.T) {
	want := time.Date(2024, 1, 15, 14, 37, 22, 123456789, time.UTC)
	cases := []struct {
		format, value string
		want          time.Time
	}{
		{"rfc3339", `"2024-01-15T14:37:22.123456789Z"`, want},
		{"rfc3339", `"2024-01-15T16:37:22.123456789+02:00"`, want},
		{"unix_s", `1705329442`, want.Truncate(time.Second)},
		{"unix_s", `1705329442.123456789`, want},
		{"unix_s", `"1705329442"`, want.Truncate(time.Second)},
		{"unix_ms", `1705329442123`, want.Truncate(time.Millisecond)},
		{"unix_ms", `1705329442123.456789`, want},
		{"unix_ms", `1.705329442123e12`, want.Truncate(time.Millisecond)},
		{"unix_us", `1705329442123456`, want.Truncate(time.Microsecond)},
		{"unix_ns", `1705329442123456789`, want},
		{"unix_ns", `"1705329442123456789"`, want},
		{"unix_s", `-86400`, time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC)},
	}
	for _, tc := range cases {
		m := newMapper(t, func(tp *config.Topic) { tp.Time.Format = tc.format })
		r := rec(`{"device_id":"d","ts":` + tc.value + `,"temperature":1}`)
		ex, err := m.Explain(r) // the event time as parsed; the row keeps it to the microsecond
		if err != nil {
			t.Errorf("%s %s: %v", tc.format, tc.value, err)
			continue
		}
		if !ex.EventTime.Equal(tc.want) || ex.EventTime.Location() != time.UTC {
			t.Errorf("%s %s: %v, want %v", tc.format, tc.value, ex.EventTime, tc.want)
		}
		if row, err := m.Map(r); err != nil || !row.EventTime().Equal(tc.want.Truncate(time.Microsecond)) {
			t.Errorf("%s %s: row event time %v (%v), want %v", tc.format, tc.value, row.EventTime(), err, tc.want.Truncate(time.Microsecond))
		}
	}
	m := newMapper(t, func(tp *config.Topic) { tp.Time = config.EventTime{Source: "kafka"} })
	row, err := m.Map(rec(`{"device_id":"d","temperature":1}`))
	if err != nil || !row.EventTime().Equal(kafkaTS) {
		t.Errorf("kafka time: %v, %v", row.EventTime(), err)
	}
}

func TestConversions(t *testing.T) {
	ts := time.Date(2024, 1, 15, 14, 37, 22, 0, time.UTC)
	cases := []struct {
		typ, json string
		want      any
	}{
		{"text", `"héllo"`, "héllo"},
		{"text", `12.50`, "12.50"},
		{"text", `true`, "true"},
		{"text", `{"a":[1,2]}`, `{"a":[1,2]}`},
		{"varchar", `"x"`, "x"},
		{"ascii", `"plain"`, "plain"},
		{"int", `42`, int32(42)},
		{"int", `-2147483648`, int32(-2147483648)},
		{"int", `"17"`, int32(17)},
		{"int", `12.0`, int32(12)},
		{"int", `1e3`, int32(1000)},
		{"bigint", `9223372036854775807`, int64(9223372036854775807)},
		{"smallint", `-32768`, int16(-32768)},
		{"tinyint", `127`, int8(127)},
		{"float", `3.71`, float32(3.71)},
		{"double", `-2.5e-3`, -0.0025},
		{"double", `"21.5"`, 21.5},
		{"boolean", `true`, true},
		{"boolean", `"false"`, false},
		{"timestamp", `"2024-01-15T15:37:22+01:00"`, ts},
		{"timestamp", `1705329442000`, ts},
		{"date", `"2024-01-15"`, time.Date(2024, 1, 15, 0, 0, 0, 0, time.UTC)},
		{"uuid", `"0B6A1F6E-3F0C-4A53-9B8F-1F2A3B4C5D6E"`, mustUUID("0b6a1f6e-3f0c-4a53-9b8f-1f2a3b4c5d6e")},
		{"timeuuid", `"e7a1b2c0-b3a4-11ee-8c90-0242ac120002"`, mustUUID("e7a1b2c0-b3a4-11ee-8c90-0242ac120002")},
		{"blob", `"aGVsbG8="`, []byte("hello")},
		{"blob", `"aGVsbG8"`, []byte("hello")},
		{"inet", `"192.168.1.10"`, net.IP{192, 168, 1, 10}},
		{"inet", `"2001:db8::1"`, net.ParseIP("2001:db8::1")},
		{"decimal", `123.4500`, inf.NewDec(1234500, 4)},
		{"decimal", `1.5e-3`, inf.NewDec(15, 4)},
		{"decimal", `"12345678901234567890.123"`, inf.NewDecBig(mustBig("12345678901234567890123"), 3)},
		{"varint", `123456789012345678901234567890`, mustBig("123456789012345678901234567890")},
		{"varint", `1.2e3`, big.NewInt(1200)},
		{"list<int>", `[1,2,3]`, []any{int32(1), int32(2), int32(3)}},
		{"set<text>", `["a","b"]`, []any{"a", "b"}},
		{"map<text, double>", `{"x":1.5,"y":2}`, map[string]any{"x": 1.5, "y": 2.0}},
	}
	for _, tc := range cases {
		t.Run(tc.typ+" "+tc.json, func(t *testing.T) {
			m := newMapper(t, func(tp *config.Topic) {
				tp.Columns = append(tp.Columns, config.Column{Name: "v", Type: tc.typ, Field: "v"})
			})
			row, err := m.Map(rec(`{"device_id":"d","ts":"2024-01-15T14:37:22Z","temperature":1,"v":` + tc.json + `}`))
			if err != nil {
				t.Fatal(err)
			}
			bound := Values(row)[6]
			if got := decoded(t, Values(row)[6:7])[0]; !equalValue(got, tc.want) {
				t.Errorf("got %#v, want %#v", got, tc.want)
			}
			// Whatever we bind, gocql must marshal it into the column type, to the bytes of the
			// Go value the column's type stands for.
			typ, err := gocqlType(tc.typ)
			if err != nil {
				t.Fatal(err)
			}
			got, err := gocql.Marshal(typ, bound)
			if err != nil {
				t.Fatalf("gocql cannot marshal %#v as %s: %v", bound, tc.typ, err)
			}
			// gocql writes a map's entries in Go's random map order; the packed form sorts them.
			if _, ok := bound.(*packed.Value); ok && !strings.HasPrefix(tc.typ, "map<") {
				if want, err := gocql.Marshal(typ, tc.want); err != nil || !bytes.Equal(got, want) {
					t.Errorf("bound bytes %x, gocql gives %x, %v for %#v", got, want, err, tc.want)
				}
			}
		})
	}
}

// gocqlType builds gocql's TypeInfo for a CQL type name.
func gocqlType(name string) (gocql.TypeInfo, error) {
	ct, err := parseType(config.Column{Type: name})
	if err != nil {
		return nil, err
	}
	native := map[kind]gocql.Type{
		kText: gocql.TypeVarchar, kASCII: gocql.TypeAscii, kInt: gocql.TypeInt, kBigint: gocql.TypeBigInt,
		kSmallint: gocql.TypeSmallInt, kTinyint: gocql.TypeTinyInt, kFloat: gocql.TypeFloat, kDouble: gocql.TypeDouble,
		kBoolean: gocql.TypeBoolean, kTimestamp: gocql.TypeTimestamp, kDate: gocql.TypeDate, kUUID: gocql.TypeUUID,
		kTimeUUID: gocql.TypeTimeUUID, kBlob: gocql.TypeBlob, kInet: gocql.TypeInet, kDecimal: gocql.TypeDecimal,
		kVarint: gocql.TypeVarint,
	}
	if ct.collection() {
		return gocql.NewNativeType(4, gocql.TypeCustom, strings.ReplaceAll(ct.name, " ", "")), nil
	}
	return gocql.NewNativeType(4, native[ct.kind], ""), nil
}

func mustBig(s string) *big.Int {
	n, ok := new(big.Int).SetString(s, 10)
	if !ok {
		panic(s)
	}
	return n
}

// decoded returns vals with every pre-encoded value replaced by what gocql unmarshals its bytes
// to, the Go type the mapper bound before it encoded (string, int64, int32, ..., time.Time,
// gocql.UUID); other values as they are. It goes through gocql, not GoValue.
func decoded(t testing.TB, vals []any) []any {
	t.Helper()
	out := make([]any, len(vals))
	for i, v := range vals {
		out[i] = v
		pv, ok := v.(*packed.Value)
		if !ok {
			continue
		}
		k := pv.Type.Kind
		var dst any
		switch k {
		case kText, kASCII:
			dst = new(string)
		case kBigint:
			dst = new(int64)
		case kInt:
			dst = new(int32)
		case kSmallint:
			dst = new(int16)
		case kTinyint:
			dst = new(int8)
		case kFloat:
			dst = new(float32)
		case kDouble:
			dst = new(float64)
		case kTimestamp, kDate:
			dst = new(time.Time)
		case kUUID, kTimeUUID:
			dst = new(gocql.UUID)
		default:
			// Collections, boolean, blob, inet, decimal, varint: as packed.GoValue reads them.
			out[i] = packed.GoValue(v)
			continue
		}
		info := gocql.NewNativeType(4, packed.CQLType(k), "")
		b, err := gocql.Marshal(info, v)
		if err != nil {
			t.Fatalf("value %d: %v", i, err)
		}
		if err := gocql.Unmarshal(info, b, dst); err != nil {
			t.Fatalf("value %d: %v", i, err)
		}
		out[i] = reflect.ValueOf(dst).Elem().Interface()
	}
	return out
}

func equalValue(a, b any) bool {
	switch x := a.(type) {
	case *inf.Dec:
		y, ok := b.(*inf.Dec)
		return ok && x.Cmp(y) == 0 && x.Scale() == y.Scale()
	case *big.Int:
		y, ok := b.(*big.Int)
		return ok && x.Cmp(y) == 0
	case net.IP:
		y, ok := b.(net.IP)
		return ok && x.Equal(y) && len(x) == len(y)
	case time.Time:
		y, ok := b.(time.Time)
		return ok && x.Equal(y)
	}
	return reflect.DeepEqual(a, b)
}

func TestMapErrors(t *testing.T) {
	extra := []config.Column{
		{Name: "i", Type: "int", Field: "i"},
		{Name: "ti", Type: "tinyint", Field: "ti"},
		{Name: "f", Type: "float", Field: "f"},
		{Name: "b", Type: "boolean", Field: "b"},
		{Name: "tsv", Type: "timestamp", Field: "tsv"},
		{Name: "d", Type: "date", Field: "d"},
		{Name: "u", Type: "uuid", Field: "u"},
		{Name: "tu", Type: "timeuuid", Field: "tu"},
		{Name: "bl", Type: "blob", Field: "bl"},
		{Name: "ip", Type: "inet", Field: "ip"},
		{Name: "a", Type: "ascii", Field: "a"},
		{Name: "vi", Type: "varint", Field: "vi"},
		{Name: "dec", Type: "decimal", Field: "dec"},
		{Name: "li", Type: "list<int>", Field: "li"},
		{Name: "mp", Type: "map<text, int>", Field: "mp"},
	}
	m := newMapper(t, func(tp *config.Topic) { tp.Columns = append(tp.Columns, extra...) })
	const good = `"device_id":"d","ts":"2024-01-15T14:37:22Z","temperature":1`
	const prefix = "topic sensor-readings partition 3 offset 1207: "
	cases := []struct {
		value, reason, msg string
	}{
		{``, "decode", "decoding JSON: the record value is empty (0 bytes), not a JSON object"},
		{`[1,2]`, "decode", "decoding JSON: the value is a JSON array, not an object"},
		{`{"device_id":`, "decode", "decoding JSON: cannot parse JSON: cannot parse object: cannot parse object value: cannot parse empty string; unparsed tail: \"\""},
		{`{"ts":"2024-01-15T14:37:22Z","temperature":1}`, "map", `column device_id: field "device_id" is missing, and an id column needs a value`},
		{`{"device_id":null,"ts":"2024-01-15T14:37:22Z","temperature":1}`, "map", `column device_id: field "device_id" is null, and an id column needs a value`},
		{`{"device_id":"d","ts":"2024-01-15T14:37:22Z"}`, "map", `column temperature: field "temperature" is missing, and the column is required`},
		{`{"device_id":"d","temperature":1}`, "map", `event time: field "ts" is missing`},
		{`{"device_id":"d","ts":null,"temperature":1}`, "map", `event time: field "ts" is null`},
		{`{"device_id":"d","ts":"2024-01-15 14:37:22","temperature":1}`, "map", `event time: field "ts" is "2024-01-15 14:37:22", not RFC 3339 with an offset (e.g. 2024-01-15T10:00:00Z)`},
		{`{"device_id":"d","ts":"2024-01-15T14:37:22","temperature":1}`, "map", `event time: field "ts" is "2024-01-15T14:37:22", not RFC 3339 with an offset (e.g. 2024-01-15T10:00:00Z)`},
		{`{"device_id":"d","ts":1705329442,"temperature":1}`, "map", `event time: field "ts" is 1705329442, not RFC 3339 with an offset (e.g. 2024-01-15T10:00:00Z)`},
		{`{` + good + `,"humidity":"abc"}`, "map", `column humidity: field "humidity" is "abc", not a number for CQL double`},
		{`{` + good + `,"humidity":"NaN"}`, "map", `column humidity: field "humidity" is "NaN", not a number for CQL double`},
		{`{` + good + `,"humidity":[1]}`, "map", `column humidity: field "humidity" is [1], not a number for CQL double`},
		{`{` + good + `,"i":1.5}`, "map", `column i: field "i" is 1.5, not a whole number for CQL int`},
		{`{` + good + `,"i":2147483648}`, "map", `column i: field "i" is 2147483648, out of range for CQL int (-2147483648 to 2147483647)`},
		{`{` + good + `,"i":1e30}`, "map", `column i: field "i" is 1e30, out of range for CQL int (-2147483648 to 2147483647)`},
		{`{` + good + `,"ti":128}`, "map", `column ti: field "ti" is 128, out of range for CQL tinyint (-128 to 127)`},
		{`{` + good + `,"f":1e39}`, "map", `column f: field "f" is 1e39, out of range for CQL float`},
		{`{` + good + `,"b":1}`, "map", `column b: field "b" is 1, not true or false for CQL boolean`},
		{`{` + good + `,"tsv":"yesterday"}`, "map", `column tsv: field "tsv" is "yesterday", not RFC 3339 with an offset, nor epoch milliseconds, for CQL timestamp`},
		{`{` + good + `,"tsv":1e300}`, "map", `column tsv: field "tsv" is 1e300, out of range for CQL timestamp (years 0000 to 9999)`},
		{`{` + good + `,"d":"2024-02-30"}`, "map", `column d: field "d" is "2024-02-30", not a date (YYYY-MM-DD) for CQL date`},
		{`{` + good + `,"u":"not-a-uuid"}`, "map", `column u: field "u" is "not-a-uuid", not a UUID (8-4-4-4-12 hex digits) for CQL uuid`},
		{`{` + good + `,"tu":"0b6a1f6e-3f0c-4a53-9b8f-1f2a3b4c5d6e"}`, "map", `column tu: field "tu" is "0b6a1f6e-3f0c-4a53-9b8f-1f2a3b4c5d6e", not a version 1 UUID for CQL timeuuid`},
		{`{` + good + `,"bl":"***"}`, "map", `column bl: field "bl" is "***", not base64 for CQL blob`},
		{`{` + good + `,"ip":"999.1.1.1"}`, "map", `column ip: field "ip" is "999.1.1.1", not an IP address for CQL inet`},
		{`{` + good + `,"a":"é"}`, "map", `column a: field "a" is "é", not ASCII for CQL ascii`},
		{`{` + good + `,"vi":1.5}`, "map", `column vi: field "vi" is 1.5, not a whole number for CQL varint`},
		{`{` + good + `,"dec":1e9999}`, "map", `column dec: field "dec" is 1e9999, out of range for CQL decimal (exponent too large)`},
		{`{` + good + `,"li":[1,"x"]}`, "map", `column li: field "li" element 1 is "x", not a number for CQL int`},
		{`{` + good + `,"li":[1,null]}`, "map", `column li: field "li" element 1 is null, and CQL collections cannot hold nulls`},
		{`{` + good + `,"li":{"a":1}}`, "map", `column li: field "li" is {"a":1}, not a JSON array for CQL list<int>`},
		{`{` + good + `,"mp":{"a":true}}`, "map", `column mp: field "mp" key "a" is true, not a number for CQL int`},
		{`{"device_id":"` + strings.Repeat("d", 70000) + `","ts":"2024-01-15T14:37:22Z","temperature":1}`, "map",
			"column device_id: the value is 70000 bytes; Cassandra limits a partition key value to 65535"},
		{`{` + good + `,"site":{"id":"` + strings.Repeat("x", 100) + `"},"humidity":"` + strings.Repeat("y", 100) + `"}`, "map",
			`column humidity: field "humidity" is "` + strings.Repeat("y", 63) + `..., not a number for CQL double`},
	}
	for _, tc := range cases {
		_, err := m.Map(rec(tc.value))
		var re *RecordError
		if !errors.As(err, &re) {
			t.Errorf("%s: error %v, want *RecordError", tc.value, err)
			continue
		}
		if re.Reason != tc.reason || Quoted(err) != prefix+tc.msg {
			t.Errorf("%s:\n got [%s] %s\nwant [%s] %s", tc.value, re.Reason, Quoted(err), tc.reason, prefix+tc.msg)
		}
	}

	_, err := m.Map(Record{Topic: "other", Partition: 1, Offset: 2, Value: []byte(`{}`)})
	if !errors.Is(err, ErrUnknownTopic) {
		t.Errorf("unknown topic: %v", err)
	}
	r := rec(`{` + good + `}`)
	r.Timestamp = time.Time{}
	if _, err := m.Map(r); err == nil || err.Error() != prefix+"write timestamp: the record has no Kafka timestamp (-1); write_timestamp kafka needs one" {
		t.Errorf("no Kafka timestamp: %v", err)
	}
}

// A tombstone (Kafka's null value) and an empty value are different producer mistakes, and the
// dead-letter reason says which one it was.
func TestTombstoneAndEmptyValueReasonsSaySo(t *testing.T) {
	m := newMapper(t, nil)
	const prefix = "topic sensor-readings partition 3 offset 1207: "
	for _, tc := range []struct {
		name  string
		value []byte
		msg   string
	}{
		{"tombstone", nil, "decoding JSON: the record value is null (a tombstone), not a JSON object"},
		{"empty", []byte{}, "decoding JSON: the record value is empty (0 bytes), not a JSON object"},
	} {
		r := rec("")
		r.Value = tc.value
		_, err := m.Map(r)
		var re *RecordError
		if !errors.As(err, &re) || re.Reason != ReasonDecode || err.Error() != prefix+tc.msg {
			t.Errorf("%s: got %v, want [decode] %s", tc.name, err, prefix+tc.msg)
		}
	}
}

// Cassandra refuses text that is not UTF-8 with "String didn't validate.", naming nothing; the mapper
// catches it first and names the column, the field and the byte, on both the scan and the fastjson path.
func TestInvalidUTF8IsNamedByColumnFieldAndOffset(t *testing.T) {
	m := newMapper(t, func(tp *config.Topic) {
		tp.Columns = append(tp.Columns,
			config.Column{Name: "tags", Type: "list<text>", Field: "tags"},
			config.Column{Name: "labels", Type: "map<text, int>", Field: "labels"},
		)
	})
	raw := newMapper(t, func(tp *config.Topic) {
		tp.Columns = append(tp.Columns, config.Column{Name: "body", Type: "text", Source: "raw"})
	})
	key := newMapper(t, func(tp *config.Topic) {
		tp.Columns = append(tp.Columns, config.Column{Name: "k", Type: "text", Source: "kafka_key"})
	})
	const good = `"device_id":"d","ts":"2024-01-15T14:37:22Z","temperature":1`
	const prefix = "topic sensor-readings partition 3 offset 1207: "
	const rawValue = `{` + good + `,"x":"\xff"}`
	cases := []struct {
		name string
		m    *Mapper
		r    Record
		msg  string
	}{
		{"nested field", m, rec(withBytes(`{` + good + `,"site":{"id":"ab\xffc"}}`)),
			`column site_id: field "site.id" is not valid UTF-8 for CQL text: byte 0xff at offset 2 of 4`},
		{"truncated sequence", m, rec(withBytes(`{` + good + `,"site":{"id":"\xe2\x82"}}`)),
			`column site_id: field "site.id" is not valid UTF-8 for CQL text: byte 0xe2 at offset 0 of 2`},
		{"id column", m, rec(withBytes(`{"device_id":"d\xc0\xaf","ts":"2024-01-15T14:37:22Z","temperature":1}`)),
			`column device_id: field "device_id" is not valid UTF-8 for CQL text: byte 0xc0 at offset 1 of 3`},
		{"list element", m, rec(withBytes(`{` + good + `,"tags":["ok","\xfe"]}`)),
			`column tags: field "tags" element 1 is not valid UTF-8 for CQL text: byte 0xfe at offset 0 of 1`},
		{"map key", m, rec(withBytes(`{` + good + `,"labels":{"a\xff":1}}`)),
			`column labels: field "labels" key "a\xff" is not valid UTF-8 for CQL text: byte 0xff at offset 1 of 2`},
		{"raw value", raw, rec(withBytes(rawValue)),
			fmt.Sprintf("column body: the record value is not valid UTF-8 for CQL text: byte 0xff at offset %d of %d",
				strings.Index(rawValue, `\x`), len(rawValue)-3)},
		{"kafka key", key, Record{Topic: "sensor-readings", Partition: 3, Offset: 1207, Key: []byte("k\xff"),
			Value: []byte(`{` + good + `}`), Timestamp: kafkaTS},
			`column k: the Kafka key is not valid UTF-8 for CQL text: byte 0xff at offset 1 of 2`},
	}
	for _, tc := range cases {
		_, err := tc.m.Map(tc.r)
		var re *RecordError
		if !errors.As(err, &re) || re.Reason != ReasonMap || Quoted(err) != prefix+tc.msg {
			t.Errorf("%s:\n got %v\nwant [map] %s", tc.name, Quoted(err), prefix+tc.msg)
		}
	}
	// Valid multi-byte text still maps, by the scan as before.
	if _, err := m.Map(rec(`{` + good + `,"site":{"id":"Zürich ✓"}}`)); err != nil {
		t.Errorf("valid UTF-8: %v", err)
	}
}

// withBytes turns each \xNN of s into that byte, so a test can write bytes that are not UTF-8.
func withBytes(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && s[i+1] == 'x' {
			if n, err := strconv.ParseUint(s[i+2:i+4], 16, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func TestEventTimeErrors(t *testing.T) {
	const prefix = "topic sensor-readings partition 3 offset 1207: "
	cases := []struct{ format, value, msg string }{
		{"unix_ms", `"soon"`, `event time: field "ts" is "soon", not a unix_ms number`},
		{"unix_ms", `true`, `event time: field "ts" is true, not a unix_ms number`},
		{"unix_s", `1e30`, `event time: field "ts" is 1e30, out of range for unix_s (years 0000 to 9999)`},
		{"unix_s", `253402300800`, `event time: field "ts" is 253402300800, out of range for unix_s (years 0000 to 9999)`},
		{"rfc3339", `"0000-01-01T00:30:00+01:00"`, `event time: field "ts" is "0000-01-01T00:30:00+01:00", out of range (years 0000 to 9999)`},
	}
	for _, tc := range cases {
		m := newMapper(t, func(tp *config.Topic) { tp.Time.Format = tc.format })
		_, err := m.Map(rec(`{"device_id":"d","ts":` + tc.value + `,"temperature":1}`))
		if err == nil || Quoted(err) != prefix+tc.msg {
			t.Errorf("%s %s:\n got %v\nwant %s", tc.format, tc.value, Quoted(err), prefix+tc.msg)
		}
	}
	m := newMapper(t, func(tp *config.Topic) { tp.Time = config.EventTime{Source: "kafka"} })
	r := rec(`{"device_id":"d","temperature":1}`)
	r.Timestamp = time.Time{}
	if _, err := m.Map(r); err == nil || err.Error() != prefix+"event time: the record has no Kafka timestamp (-1), and time.source kafka takes the event time from it" {
		t.Errorf("kafka time missing: %v", err)
	}
}

func TestTimeUUID(t *testing.T) {
	at := time.Date(2024, 1, 15, 14, 37, 22, 123456700, time.UTC)
	u, ok := timeUUID(at, "sensor-readings", 3, 1207)
	if !ok {
		t.Fatal("not ok")
	}
	if u.Version() != 1 || u.Variant() != gocql.VariantIETF {
		t.Errorf("version %d variant %d", u.Version(), u.Variant())
	}
	if !u.Time().Equal(at) {
		t.Errorf("time %v, want %v", u.Time(), at)
	}
	if u[10]&1 != 1 {
		t.Error("multicast bit of the node is not set")
	}
	again, _ := timeUUID(at, "sensor-readings", 3, 1207)
	if again != u {
		t.Error("same record, different UUID: a replay would write a second row")
	}
	// Different offsets of one partition at the same instant never collide.
	seen := map[gocql.UUID]int64{}
	for off := int64(0); off < 200000; off++ {
		x, _ := timeUUID(at, "sensor-readings", 3, off)
		if prev, dup := seen[x]; dup {
			t.Fatalf("offsets %d and %d share %v", prev, off, x)
		}
		seen[x] = off
	}
	other, _ := timeUUID(at, "sensor-readings", 4, 1207)
	if other == u {
		t.Error("another partition, same offset and instant: same UUID")
	}
	if _, ok := timeUUID(time.Date(1500, 1, 1, 0, 0, 0, 0, time.UTC), "t", 0, 0); ok {
		t.Error("a time before 1582 made a UUID")
	}
	if _, ok := timeUUID(time.Date(5300, 1, 1, 0, 0, 0, 0, time.UTC), "t", 0, 0); ok {
		t.Error("a time after 5236 made a UUID")
	}
}

func TestConcurrentMap(t *testing.T) {
	m := newMapper(t, func(tp *config.Topic) { tp.Bucket.EventBuckets = 4 })
	want, err := m.Map(rec(sensorJSON))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				day := 10 + (g+i)%5
				r := rec(strings.Replace(sensorJSON, "2024-01-15", "2024-01-"+itoa(day), 1))
				row, err := m.Map(r)
				if err != nil {
					errs <- err.Error()
					return
				}
				if day == 15 && (row.Key != want.Key || !reflect.DeepEqual(Values(row), Values(want))) {
					errs <- "a concurrent mapping differs from the sequential one"
					return
				}
				if _, err := m.Map(rec(`{"device_id":1`)); err == nil {
					errs <- "bad JSON mapped"
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func itoa(n int) string { return string(rune('0'+n/10)) + string(rune('0'+n%10)) }

func FuzzMap(f *testing.F) {
	f.Add([]byte(sensorJSON), []byte("k"))
	f.Add([]byte(`{"device_id":"d","ts":"2024-01-15T14:37:22Z","temperature":"1e400","v":[1,{"a":null}]}`), []byte(nil))
	f.Add([]byte(`{"device_id":{"x":1},"ts":"9999-12-31T23:59:59.999999999-23:59","temperature":-0}`), []byte{})
	f.Add([]byte(`{"device_id":"d","ts":"2024-01-15T14:37:22Z","temperature":1,"tags":["a",1e5,"x"],"n":-1.5e-7}`), []byte{0xff})
	m := newMapper(f, func(tp *config.Topic) {
		tp.Bucket.EventBuckets = 4
		tp.Columns = append(tp.Columns,
			config.Column{Name: "tags", Type: "set<text>", Field: "tags"},
			config.Column{Name: "n", Type: "decimal", Field: "n"},
			config.Column{Name: "vi", Type: "varint", Field: "n"},
			config.Column{Name: "k", Type: "ascii", Source: "kafka_key"},
			config.Column{Name: "id", Type: "timeuuid", Source: "timeuuid"},
		)
	})
	f.Fuzz(func(t *testing.T, value, key []byte) {
		r := rec(string(value))
		r.Key = key
		row, err := m.Map(r)
		if err != nil {
			var re *RecordError
			if !errors.As(err, &re) || (re.Reason != ReasonDecode && re.Reason != ReasonMap) {
				t.Fatalf("error %v is not a RecordError with a reason", err)
			}
			return
		}
		if row.Target == nil || len(Values(row)) != len(row.Target.Columns)+2 || row.Key == "" {
			t.Fatalf("malformed row %+v", row)
		}
		ex, err := m.Explain(r)
		if err != nil || ex.Row.Key != row.Key {
			t.Fatalf("Explain disagrees with Map: %v", err)
		}
		for _, v := range ex.Bound {
			_ = v.Literal()
		}
	})
}

func BenchmarkMapSensor(b *testing.B) {
	benchMap(b, newMapper(b, nil))
}

func BenchmarkMapSensorParallel(b *testing.B) {
	m := newMapper(b, func(tp *config.Topic) { tp.Bucket.EventBuckets = 4 })
	r := rec(sensorJSON)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := m.Map(r); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func mustUUID(s string) gocql.UUID {
	u, err := gocql.ParseUUID(s)
	if err != nil {
		panic(err)
	}
	return u
}

// TestRowOwnsItsMemory: once Map returns, the row refers to nothing of the record. The pipeline hands
// the record's memory back to franz-go for the next fetch right after mapping (the worker in
// pipeline/worker.go recycles it into pipeline/consumer/pools.go), so a value still pointing into
// it would be overwritten under the row. Every source that carries record
// bytes is covered, on the single-pass scan and on the fastjson path (an escaped string sends the
// record there).
func TestRowOwnsItsMemory(t *testing.T) {
	m := newMapper(t, func(tp *config.Topic) {
		tp.Columns = append(tp.Columns,
			config.Column{Name: "k", Type: "text", Source: "kafka_key"},
			config.Column{Name: "kb", Type: "blob", Source: "kafka_key"},
			config.Column{Name: "raw", Type: "text", Source: "raw"},
			config.Column{Name: "note", Type: "text", Field: "note"},
			config.Column{Name: "tag", Type: "ascii", Field: "tag"},
		)
	})
	for _, note := range []string{`plain`, `esc\"aped`} {
		value := `{"device_id":"dev-0042","ts":"2024-01-15T14:37:22.123Z","temperature":21.5,"site":{"id":"plant-1"},` +
			`"note":"` + note + `","tag":"t-1"}`
		r := rec(value)
		r.Key = []byte("dev-key")
		row, err := m.Map(r)
		if err != nil {
			t.Fatal(err)
		}
		want := decoded(t, Values(row))
		for i, v := range want {
			if b, ok := v.([]byte); ok {
				want[i] = bytes.Clone(b) // a blob is bound as []byte, not encoded
			}
		}
		key := strings.Clone(row.Key)
		for i := range r.Value {
			r.Value[i] = 0xff
		}
		for i := range r.Key {
			r.Key[i] = 0xff
		}
		if got := decoded(t, Values(row)); !reflect.DeepEqual(got, want) {
			t.Errorf("note %s: the row changed with the record's bytes\n got %#v\nwant %#v", note, got, want)
		}
		if row.Key != key {
			t.Errorf("note %s: the routing key changed with the record's bytes: %q, was %q", note, row.Key, key)
		}
	}
}

// TestAcceptWindowDeadLettersLateAndFutureRecords: an event time further before or after its record's
// Kafka timestamp than the topic's accept window allows is bad input with reason late or future, and the
// message names both times; inside the window, and without a Kafka timestamp to compare, records map.
func TestAcceptWindowDeadLettersLateAndFutureRecords(t *testing.T) {
	window := func(tp *config.Topic) {
		tp.Accept = config.Accept{Before: config.Duration(7 * 24 * time.Hour), After: config.Duration(time.Hour)}
	}
	m := newMapper(t, window)
	at := func(d time.Duration) Record {
		return rec(`{"device_id":"d","ts":"` + kafkaTS.Add(d).Format(time.RFC3339Nano) + `","temperature":1}`)
	}
	const prefix = "topic sensor-readings partition 3 offset 1207: "
	for _, tc := range []struct {
		name   string
		m      *Mapper
		r      Record
		reason string
	}{
		{"six days late", m, at(-6 * 24 * time.Hour), ""},
		{"eight days late", m, at(-8 * 24 * time.Hour), ReasonLate},
		{"59 minutes ahead", m, at(59 * time.Minute), ""},
		{"two hours ahead", m, at(2 * time.Hour), ReasonFuture},
		// Epoch seconds configured as milliseconds: January 1970.
		{"seconds read as unix_ms", newMapper(t, func(tp *config.Topic) { window(tp); tp.Time.Format = "unix_ms" }),
			rec(`{"device_id":"d","ts":1705329442,"temperature":1}`), ReasonLate},
		// The event time is the Kafka timestamp: nothing to compare.
		{"time from kafka", newMapper(t, func(tp *config.Topic) { window(tp); tp.Time = config.EventTime{Source: "kafka"} }),
			rec(`{"device_id":"d","temperature":1}`), ""},
	} {
		_, err := tc.m.Map(tc.r)
		var re *RecordError
		switch {
		case tc.reason == "" && err != nil:
			t.Errorf("%s: %v, want a row", tc.name, err)
		case tc.reason != "" && (!errors.As(err, &re) || re.Reason != tc.reason):
			t.Errorf("%s: %v, want reason %s", tc.name, err, tc.reason)
		}
	}

	_, err := m.Map(at(-8*24*time.Hour - 90*time.Second))
	want := prefix + "event time 2024-01-07T14:35:53Z is 8d1m30s before the record's Kafka timestamp 2024-01-15T14:37:23Z; " +
		"accept.before allows 7d (check the producer's clock and time.format, or widen topics.readings.accept.before)"
	if err == nil || err.Error() != want {
		t.Errorf("late record:\n got %v\nwant %s", err, want)
	}
	_, err = m.Map(at(26 * time.Hour))
	want = prefix + "event time 2024-01-16T16:37:23Z is 1d2h after the record's Kafka timestamp 2024-01-15T14:37:23Z; " +
		"accept.after allows 1h (check the producer's clock and time.format, or widen topics.readings.accept.after)"
	if err == nil || err.Error() != want {
		t.Errorf("future record:\n got %v\nwant %s", err, want)
	}

	// Without a Kafka timestamp (none, or Kafka's -1) the window has nothing to compare.
	noTS := newMapper(t, func(tp *config.Topic) { window(tp); tp.WriteTimestamp = config.WriteTimestampEventTime })
	for _, ts := range []time.Time{{}, time.UnixMilli(-1)} {
		r := at(-400 * 24 * time.Hour)
		r.Timestamp = ts
		if _, err := noTS.Map(r); err != nil {
			t.Errorf("Kafka timestamp %v: %v, want a row", ts, err)
		}
	}
}

// TestAcceptWindowMessageSaysADistanceBeyondDurationsRange: an event time so far from its Kafka timestamp
// that time.Time.Sub saturates (year 1 against today) is reported as such, not as 106751d23h47m16s...
func TestAcceptWindowMessageSaysADistanceBeyondDurationsRange(t *testing.T) {
	if got := distance(math.MaxInt64); got != "more than 292 years" {
		t.Errorf("distance(MaxInt64) = %q", got)
	}
	if got := distance(90 * time.Minute); got != "1h30m" {
		t.Errorf("distance(90m) = %q, want 1h30m", got)
	}
}
