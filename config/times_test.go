package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTimeFormatsAndTTLFieldLoad loads formats, zones and a ttl_field from YAML and the environment: a
// named format in any case is stored lower case, a layout keeps its case (Jan is not jan), and the
// ttl_field's keys are keys like any other (an environment variable sets one).
func TestTimeFormatsAndTTLFieldLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sink.yaml")
	err := os.WriteFile(path, []byte(`
kafka: {brokers: ["127.0.0.1:9092"]}
cassandra: {hosts: ["127.0.0.1"], keyspace: ks}
topics:
  parcels:
    id: [parcel]
    time: {field: scanned, format: "Jan _2 2006 15:04:05", zone: Europe/Paris}
    bucket: {width: 1d}
    table: parcels
    columns:
      - {name: parcel, type: text, field: parcel}
      - {name: at, type: timestamp, source: event_time}
      - {name: promised, type: timestamp, field: promised, format: UNIX_MS}
      - {name: shipped, type: date, field: shipped, format: unix_days}
    clustering: [{column: at}]
    ttl: 1d
    ttl_field: {field: keep, as: Duration, unit: h, max: 7d}
`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	c := loadValid(t, path, []string{"SINK_TOPICS__PARCELS__TTL_FIELD__MAX=2d"})
	tp := c.Topics["parcels"]
	if tp.Time.Format != "Jan _2 2006 15:04:05" || tp.Columns[2].Format != "unix_ms" || tp.TTLField.As != "duration" {
		t.Errorf("time.format %q, columns[2].format %q, ttl_field.as %q", tp.Time.Format, tp.Columns[2].Format, tp.TTLField.As)
	}
	if tp.TTLField.Max != Duration(2*Day) {
		t.Errorf("ttl_field.max %s, want the environment's 2d", tp.TTLField.Max)
	}
}

// TestParseTimeFormat holds the formats each type takes and the reason of each it refuses.
func TestParseTimeFormat(t *testing.T) {
	for _, tc := range []struct {
		format, zone, typ string
		want              TimeFormat
		err               string
	}{
		{"", "", "timestamp", TimeFormat{}, ""},
		{"rfc3339", "", "event", TimeFormat{Named: "rfc3339"}, ""},
		{"Unix_NS", "", "timestamp", TimeFormat{Named: "unix_ns", Unit: time.Nanosecond}, ""},
		{"unix_days", "", "date", TimeFormat{Named: "unix_days", Unit: Day}, ""},
		{"2006-01-02T15:04:05.999Z07:00", "", "event", TimeFormat{Layout: "2006-01-02T15:04:05.999Z07:00"}, ""},
		{"02.01.2006", "", "date", TimeFormat{Layout: "02.01.2006"}, ""},
		{"20060102150405", "UTC", "timestamp", TimeFormat{Layout: "20060102150405", Zone: time.UTC}, ""},
		{"unix_days", "", "event", TimeFormat{}, "unix_days is not a format for the event time; use rfc3339, unix_s, unix_ms, unix_us, unix_ns"},
		{"rfc3339", "", "date", TimeFormat{}, "rfc3339 is not a format for a date column; use unix_days"},
		{"15:04:05", "UTC", "timestamp", TimeFormat{}, `"15:04:05" is not a format`},
		{"2006-01", "UTC", "timestamp", TimeFormat{}, `"2006-01" is not a format`},
		{"2006-01-02 15:04", "", "event", TimeFormat{}, "has no offset, so a time in it names no instant; add zone"},
		{"2006-01-02 15:04", "Europe/Atlantis", "event", TimeFormat{}, `zone "Europe/Atlantis" is not an IANA time zone`},
		{"2006-01-02 15:04", "local", "event", TimeFormat{}, `zone "local" is the host's`},
		{"2006-01-02 15:04 -07:00", "UTC", "event", TimeFormat{}, "which has its offset; remove zone"},
		{"2006-01-02 15:04 MST", "UTC", "event", TimeFormat{}, "has a zone abbreviation (MST)"},
		{"02.01.2006", "UTC", "date", TimeFormat{}, "zone with a date, which has none"},
		{"02.01.2006 15h", "", "date", TimeFormat{}, "holds a time of day or an offset"},
		{"unix_s", "UTC", "timestamp", TimeFormat{}, "zone with format unix_s"},
		{"", "UTC", "timestamp", TimeFormat{}, "zone without a format layout"},
	} {
		got, err := ParseTimeFormat(tc.format, tc.zone, tc.typ)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q %q %s: %v, want an error saying %q", tc.format, tc.zone, tc.typ, err, tc.err)
			}
			continue
		}
		if err != nil || got.Named != tc.want.Named || got.Unit != tc.want.Unit || got.Layout != tc.want.Layout ||
			(got.Zone == nil) != (tc.want.Zone == nil) {
			t.Errorf("%q %q %s: %+v, %v; want %+v", tc.format, tc.zone, tc.typ, got, err, tc.want)
		}
	}
}
