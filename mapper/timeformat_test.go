package mapper

import (
	"strings"
	"testing"
	"time"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/config"
)

// boundOf is the bound value of column col in ex.
func boundOf(t *testing.T, ex Explanation, col string) any {
	t.Helper()
	for _, v := range ex.Bound {
		if v.Column == col {
			return v.Value
		}
	}
	t.Fatalf("no bound value of column %s", col)
	return nil
}

// TestColumnTimeFormats maps a timestamp or date column in every format a column takes, at the
// boundaries of each (years 0000 and 9999, the unit's digits, the zone's offsets) and with the values
// each refuses, through the scan and the parsed tree alike (checkScan): a time reads back as the
// instant its format names, cut to Cassandra's milliseconds toward the past as an RFC 3339 time with
// the same digits is, and a refused one is bad input naming the column, the field and the format.
func TestColumnTimeFormats(t *testing.T) {
	ms := func(y int, mo time.Month, d, h, mi, s, msec int) time.Time {
		return time.Date(y, mo, d, h, mi, s, msec*1e6, time.UTC)
	}
	day := func(y int, mo time.Month, d int) time.Time { return time.Date(y, mo, d, 0, 0, 0, 0, time.UTC) }
	const paris = "02/01/2006 15:04:05"
	cases := []struct {
		typ, format, zone, value string
		want                     time.Time // zero: refused
		err                      string    // the refusal's words
	}{
		{"timestamp", "", "", `"2024-01-15T14:37:22.123Z"`, ms(2024, 1, 15, 14, 37, 22, 123), ""},
		{"timestamp", "", "", `1705329442123`, ms(2024, 1, 15, 14, 37, 22, 123), ""},
		{"timestamp", "rfc3339", "", `"2024-01-15T16:37:22.123+02:00"`, ms(2024, 1, 15, 14, 37, 22, 123), ""},
		{"timestamp", "rfc3339", "", `1705329442123`, time.Time{}, "is not RFC 3339 with an offset (e.g. 2024-01-15T10:00:00Z) for CQL timestamp"},
		{"timestamp", "rfc3339", "", `"2024-01-15T14:37:22"`, time.Time{}, "is not RFC 3339 with an offset"},
		{"timestamp", "unix_s", "", `1705329442`, ms(2024, 1, 15, 14, 37, 22, 0), ""},
		{"timestamp", "unix_s", "", `"1705329442"`, ms(2024, 1, 15, 14, 37, 22, 0), ""},
		{"timestamp", "unix_s", "", `1705329442.1239`, ms(2024, 1, 15, 14, 37, 22, 123), ""},
		{"timestamp", "unix_s", "", `-62167219200`, ms(0, 1, 1, 0, 0, 0, 0), ""},
		{"timestamp", "unix_s", "", `-62167219201`, time.Time{}, "is out of range for CQL timestamp (years 0000 to 9999)"},
		{"timestamp", "unix_s", "", `253402300799`, ms(9999, 12, 31, 23, 59, 59, 0), ""},
		{"timestamp", "unix_s", "", `253402300800`, time.Time{}, "is out of range for CQL timestamp (years 0000 to 9999)"},
		{"timestamp", "unix_s", "", `"2024-01-15T14:37:22Z"`, time.Time{}, "is not a unix_s number for CQL timestamp"},
		{"timestamp", "unix_s", "", `true`, time.Time{}, "is not a unix_s number for CQL timestamp"},
		{"timestamp", "unix_ms", "", `1705329442123`, ms(2024, 1, 15, 14, 37, 22, 123), ""},
		{"timestamp", "unix_ms", "", `253402300799999`, ms(9999, 12, 31, 23, 59, 59, 999), ""},
		{"timestamp", "unix_ms", "", `253402300800000`, time.Time{}, "is out of range for CQL timestamp"},
		{"timestamp", "unix_us", "", `1705329442123999`, ms(2024, 1, 15, 14, 37, 22, 123), ""},
		{"timestamp", "unix_ns", "", `1705329442123999999`, ms(2024, 1, 15, 14, 37, 22, 123), ""},
		{"timestamp", "unix_ns", "", `"1705329442123999999"`, ms(2024, 1, 15, 14, 37, 22, 123), ""},
		// Sub-millisecond digits are cut toward the past, as "1969-12-31T23:59:59.999999999Z" is.
		{"timestamp", "unix_ns", "", `-1`, ms(1969, 12, 31, 23, 59, 59, 999), ""},
		{"timestamp", "", "", `"1969-12-31T23:59:59.999999999Z"`, ms(1969, 12, 31, 23, 59, 59, 999), ""},
		{"timestamp", "unix_ns", "", `9223372036854775808`, time.Time{}, "is out of range for CQL timestamp"},
		{"timestamp", paris, "Europe/Paris", `"15/01/2024 15:37:22"`, ms(2024, 1, 15, 14, 37, 22, 0), ""}, // CET, +01:00
		{"timestamp", paris, "Europe/Paris", `"15/07/2024 16:37:22"`, ms(2024, 7, 15, 14, 37, 22, 0), ""}, // CEST, +02:00
		{"timestamp", paris, "UTC", `"15/07/2024 16:37:22"`, ms(2024, 7, 15, 16, 37, 22, 0), ""},
		{"timestamp", "2006-01-02 15:04:05.000", "America/New_York", `"2024-01-15 09:37:22.123"`, ms(2024, 1, 15, 14, 37, 22, 123), ""},
		{"timestamp", "2006-01-02 15:04:05 -0700", "", `"2024-01-15 16:37:22 +0200"`, ms(2024, 1, 15, 14, 37, 22, 0), ""},
		// Before railway time a zone's offset is its local mean time: Paris was 9m21s ahead of UTC.
		{"timestamp", paris, "Europe/Paris", `"01/01/0000 00:09:20"`, time.Time{}, "is out of range for CQL timestamp (years 0000 to 9999)"},
		{"timestamp", paris, "Europe/Paris", `"01/01/0000 00:09:21"`, ms(0, 1, 1, 0, 0, 0, 0), ""},
		{"timestamp", paris, "UTC", `"31/12/9999 23:59:59"`, ms(9999, 12, 31, 23, 59, 59, 0), ""},
		{"timestamp", paris, "America/New_York", `"31/12/9999 23:59:59"`, time.Time{}, "is out of range for CQL timestamp (years 0000 to 9999)"},
		{"timestamp", paris, "Europe/Paris", `"2024-01-15T14:37:22Z"`, time.Time{}, `is not in the layout "02/01/2006 15:04:05" for CQL timestamp`},
		{"timestamp", paris, "Europe/Paris", `"32/01/2024 15:37:22"`, time.Time{}, `is not in the layout`},
		{"timestamp", paris, "Europe/Paris", `1705329442`, time.Time{}, `is not a string in the layout "02/01/2006 15:04:05" for CQL timestamp`},
		{"date", "", "", `"2024-01-15"`, day(2024, 1, 15), ""},
		{"date", "unix_days", "", `19737`, day(2024, 1, 15), ""},
		{"date", "unix_days", "", `"19737"`, day(2024, 1, 15), ""},
		{"date", "unix_days", "", `19737.0`, day(2024, 1, 15), ""},
		{"date", "unix_days", "", `-1`, day(1969, 12, 31), ""},
		{"date", "unix_days", "", `-719528`, day(0, 1, 1), ""},
		{"date", "unix_days", "", `-719529`, time.Time{}, "is out of range for CQL date (years 0000 to 9999)"},
		{"date", "unix_days", "", `2932896`, day(9999, 12, 31), ""},
		{"date", "unix_days", "", `2932897`, time.Time{}, "is out of range for CQL date (years 0000 to 9999)"},
		{"date", "unix_days", "", `19737.5`, time.Time{}, "is not a whole number of days for CQL date"},
		{"date", "unix_days", "", `"2024-01-15"`, time.Time{}, "is not a unix_days number for CQL date"},
		{"date", "02/01/2006", "", `"15/01/2024"`, day(2024, 1, 15), ""},
		{"date", "02/01/2006", "", `"2024-01-15"`, time.Time{}, `is not in the layout "02/01/2006" for CQL date`},
	}
	for _, tc := range cases {
		name := tc.typ + " " + tc.format + " " + tc.zone + " " + tc.value
		m := newMapper(t, func(tp *config.Topic) {
			tp.Columns = append(tp.Columns, config.Column{Name: "at", Type: tc.typ, Field: "at", Format: tc.format, Zone: tc.zone})
		})
		r := rec(`{"device_id":"d","ts":"2024-01-15T14:37:22Z","temperature":1,"at":` + tc.value + `}`)
		checkScan(t, m, r)
		ex, err := m.Explain(r)
		if tc.want.IsZero() {
			if err == nil || !strings.Contains(err.Error(), `column at: field "at" `+tc.err) {
				t.Errorf("%s: %v, want an error saying %q", name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if got, ok := boundOf(t, ex, "at").(time.Time); !ok || !got.Equal(tc.want) {
			t.Errorf("%s: bound %v, want %v", name, boundOf(t, ex, "at"), tc.want)
		}
	}
}

// TestEventTimeLayoutWithZone reads the event time in a layout of a local time with its zone: the
// instant is the zone's, and the bucket is the UTC day of it (bucket arithmetic stays UTC), so an
// evening in New York lands in the next UTC day's bucket.
func TestEventTimeLayoutWithZone(t *testing.T) {
	m := newMapper(t, func(tp *config.Topic) {
		tp.Time.Format, tp.Time.Zone = "2006-01-02 15:04:05", "America/New_York"
	})
	for _, tc := range []struct {
		value, bucket string
		want          time.Time
	}{
		{"2024-01-15 09:37:22", "2024-01-15", time.Date(2024, 1, 15, 14, 37, 22, 0, time.UTC)},
		{"2024-01-15 21:00:00", "2024-01-16", time.Date(2024, 1, 16, 2, 0, 0, 0, time.UTC)},
		{"2024-07-15 21:00:00", "2024-07-16", time.Date(2024, 7, 16, 1, 0, 0, 0, time.UTC)},
	} {
		r := rec(`{"device_id":"d","ts":"` + tc.value + `","temperature":1}`)
		checkScan(t, m, r)
		ex, err := m.Explain(r)
		if err != nil {
			t.Errorf("%s: %v", tc.value, err)
			continue
		}
		if !ex.EventTime.Equal(tc.want) || boundOf(t, ex, "day") != tc.bucket {
			t.Errorf("%s: event time %s in bucket %v, want %s in %s", tc.value, ex.EventTime, boundOf(t, ex, "day"), tc.want, tc.bucket)
		}
	}
	_, err := m.Map(rec(`{"device_id":"d","ts":"2024-01-15T09:37:22Z","temperature":1}`))
	if err == nil || !strings.Contains(err.Error(), `event time: field "ts" is not in the layout "2006-01-02 15:04:05"`) {
		t.Errorf("a time in another layout: %v", err)
	}
}

// TestTimeFormatsOnAvro reads the formats from an Avro record: a long counting seconds, a string in a
// layout with its zone, an int counting days and a string holding days, each converted as the same
// JSON value is; a long refused by a text format is a schema problem, decided once for the schema.
func TestTimeFormatsOnAvro(t *testing.T) {
	const schema = `{"type": "record", "name": "R", "fields": [
		{"name": "device_id", "type": "string"},
		{"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
		{"name": "temperature", "type": "double"},
		{"name": "at_s", "type": "long"},
		{"name": "at_local", "type": "string"},
		{"name": "days", "type": "int"},
		{"name": "days_text", "type": "string"}
	]}`
	reg := &staticRegistry{schemas: map[int]*codec.Schema{7: {ID: 7, Type: "AVRO", Text: schema}}}
	cols := []config.Column{
		{Name: "at_s", Type: "timestamp", Field: "at_s", Format: "unix_s"},
		{Name: "at_local", Type: "timestamp", Field: "at_local", Format: "02/01/2006 15:04:05", Zone: "Europe/Paris"},
		{Name: "days", Type: "date", Field: "days", Format: "unix_days"},
		{Name: "days_text", Type: "date", Field: "days_text", Format: "unix_days"},
	}
	am := newAvroMapper(t, reg, func(tp *config.Topic) { tp.Columns = append(plainColumns(tp), cols...) })
	jm := newMapper(t, func(tp *config.Topic) { tp.Columns = append(plainColumns(tp), cols...) })
	native := map[string]any{
		"device_id": "d", "ts": time.Date(2024, 1, 15, 14, 37, 22, 0, time.UTC), "temperature": 1.0,
		"at_s": int64(1705329442), "at_local": "15/01/2024 15:37:22", "days": int32(19737), "days_text": "19737",
	}
	r := rec("")
	r.Value = avroValue(t, schema, 7, native)
	got, err := am.Explain(r)
	if err != nil {
		t.Fatal(err)
	}
	sameAsJSON(t, "avro", got, jm, `{"device_id":"d","ts":"2024-01-15T14:37:22Z","temperature":1,"at_s":1705329442,`+
		`"at_local":"15/01/2024 15:37:22","days":19737,"days_text":"19737"}`, cols)

	native["at_local"], native["days_text"] = "2024-01-15 15:37", "x"
	r.Value = avroValue(t, schema, 7, native)
	if _, err := am.Map(r); err == nil || !strings.Contains(Quoted(err), `"2024-01-15 15:37" is not in the layout "02/01/2006 15:04:05" for CQL timestamp`) {
		t.Errorf("a string in another layout: %v", err)
	}

	bad := newAvroMapper(t, reg, func(tp *config.Topic) {
		tp.Columns = append(plainColumns(tp), config.Column{Name: "at_s", Type: "timestamp", Field: "at_s", Format: "rfc3339"})
	})
	if _, err := bad.Map(r); err == nil || !strings.Contains(err.Error(), "is long, which cannot feed CQL timestamp (format rfc3339 reads a string") {
		t.Errorf("a long for an rfc3339 column: %v", err)
	}
}

// TestTimeFormatsOnProtobuf reads a unix_ms int64, a layout string and unix_days from a Protobuf
// message, as the same JSON values are read.
func TestTimeFormatsOnProtobuf(t *testing.T) {
	const proto = `syntax = "proto3";
message R {
  string device_id = 1;
  string ts = 2;
  double temperature = 3;
  int64 at_ms = 4;
  string at_local = 5;
  int32 days = 6;
}
`
	reg := &staticRegistry{schemas: map[int]*codec.Schema{9: {ID: 9, Type: "PROTOBUF", Text: proto}}}
	cols := []config.Column{
		{Name: "at_ms", Type: "timestamp", Field: "at_ms", Format: "unix_ms"},
		{Name: "at_local", Type: "timestamp", Field: "at_local", Format: "2006-01-02 15:04:05", Zone: "Asia/Tokyo"},
		{Name: "days", Type: "date", Field: "days", Format: "unix_days"},
	}
	c := baseConfig()
	tp := c.Topics["readings"]
	tp.Codec = config.CodecProtobuf
	tp.Columns = append(plainColumns(&tp), cols...)
	c.Topics["readings"] = tp
	pm := registryMapper(t, c, reg)
	jm := newMapper(t, func(tp *config.Topic) { tp.Columns = append(plainColumns(tp), cols...) })

	// Field by field: 1 device_id "d", 2 ts, 3 temperature 1.0, 4 at_ms, 5 at_local, 6 days.
	var body []byte
	str := func(num byte, s string) { body = append(append(body, num<<3|2, byte(len(s))), s...) }
	varint := func(num byte, x uint64) {
		body = append(body, num<<3)
		for ; x >= 0x80; x >>= 7 {
			body = append(body, byte(x)|0x80)
		}
		body = append(body, byte(x))
	}
	str(1, "d")
	str(2, "2024-01-15T14:37:22Z")
	body = append(body, 3<<3|1, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f) // 1.0
	varint(4, 1705329442123)
	str(5, "2024-01-15 23:37:22")
	varint(6, 19737)
	r := rec("")
	r.Value = append(codec.AppendFrame(nil, 9, []int{0}), body...)
	got, err := pm.Explain(r)
	if err != nil {
		t.Fatal(err)
	}
	sameAsJSON(t, "protobuf", got, jm, `{"device_id":"d","ts":"2024-01-15T14:37:22Z","temperature":1,"at_ms":1705329442123,`+
		`"at_local":"2024-01-15 23:37:22","days":19737}`, cols)
}

// TestHeaderTimeFormat converts a header's text in its column's layout and zone, as a field's.
func TestHeaderTimeFormat(t *testing.T) {
	m := newMapper(t, func(tp *config.Topic) {
		tp.Columns = append(tp.Columns, config.Column{Name: "sent", Type: "timestamp", Source: "header", Header: "sent",
			Format: "02/01/2006 15:04:05", Zone: "Europe/Paris"})
	})
	r := rec(`{"device_id":"d","ts":"2024-01-15T14:37:22Z","temperature":1}`)
	r.Headers = []Header{{Key: "sent", Value: []byte("15/01/2024 15:37:22")}}
	ex, err := m.Explain(r)
	if err != nil {
		t.Fatal(err)
	}
	if g := boundOf(t, ex, "sent").(time.Time); !g.Equal(time.Date(2024, 1, 15, 14, 37, 22, 0, time.UTC)) {
		t.Errorf("sent %v", g)
	}
}

// plainColumns are the sensor topic's id, event time and temperature columns, which a small writer
// schema feeds.
func plainColumns(tp *config.Topic) []config.Column {
	return []config.Column{tp.Columns[0], tp.Columns[1], tp.Columns[3]}
}

// sameAsJSON requires that the registry codec's explanation got binds cols as jm binds the same event
// in JSON, and that at_local is 2024-01-15T14:37:22Z.
func sameAsJSON(t *testing.T, codecName string, got Explanation, jm *Mapper, value string, cols []config.Column) {
	t.Helper()
	want, err := jm.Explain(rec(value))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cols {
		if g, w := boundOf(t, got, c.Name), boundOf(t, want, c.Name); g != w {
			t.Errorf("column %s: %s %v, json %v", c.Name, codecName, g, w)
		}
	}
	if g := boundOf(t, got, "at_local").(time.Time); !g.Equal(time.Date(2024, 1, 15, 14, 37, 22, 0, time.UTC)) {
		t.Errorf("at_local %v", g)
	}
}

// BenchmarkMapSensorTimeFormats maps a sensor record whose event time is a local time in a layout with
// its zone and which has a unix_ms column, a unix_days column and a ttl_field: the cost of the formats
// against BenchmarkMapSensor's RFC 3339.
func BenchmarkMapSensorTimeFormats(b *testing.B) {
	m := newMapper(b, func(tp *config.Topic) {
		tp.Time.Format, tp.Time.Zone = "2006-01-02 15:04:05.000", "Europe/Paris"
		tp.Columns = append(tp.Columns,
			config.Column{Name: "seen", Type: "timestamp", Field: "seen", Format: "unix_ms"},
			config.Column{Name: "day_of", Type: "date", Field: "day_of", Format: "unix_days"})
		tp.TTL, tp.TTLField = 0, &config.TTLField{Field: "keep", As: "duration", Max: config.Duration(30 * config.Day)}
	})
	const value = `{"device_id":"dev-0042","ts":"2024-01-15 15:37:22.123","temperature":21.5,"humidity":40.2,` +
		`"battery":3.71,"site":{"id":"plant-1"},"seen":1705329442123,"day_of":19737,"keep":86400}`
	r := rec(value)
	b.ReportAllocs()
	b.SetBytes(int64(len(value)))
	for b.Loop() {
		if _, err := m.Map(r); err != nil {
			b.Fatal(err)
		}
	}
}
