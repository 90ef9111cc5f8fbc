package mapper

import (
	"errors"
	"strings"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/bucketsink/sink/config"
)

// TestKafkaTimestampMinusOneIsNoTimestamp: a record produced without a timestamp carries -1, which
// the Kafka client hands on as 1969-12-31T23:59:59.999Z. Where time comes from Kafka that is bad
// input with a reason that says so, never an event of 1969 nor a write timestamp of 1969; an
// optional kafka_timestamp column is left unset.
func TestKafkaTimestampMinusOneIsNoTimestamp(t *testing.T) {
	const value = `{"device_id":"d","ts":"2024-01-15T14:37:22Z","temperature":1}`
	noTS := func() Record {
		r := rec(value)
		r.Timestamp = time.UnixMilli(-1)
		return r
	}
	cases := []struct {
		name   string
		mutate func(*config.Topic)
		msg    string
	}{
		{"time.source kafka", func(tp *config.Topic) { tp.Time = config.EventTime{Source: "kafka"} },
			"event time: the record has no Kafka timestamp (-1)"},
		{"write_timestamp kafka", func(tp *config.Topic) { tp.WriteTimestamp = "kafka" },
			"write timestamp: the record has no Kafka timestamp (-1)"},
		{"required kafka_timestamp column", func(tp *config.Topic) {
			tp.WriteTimestamp = "event_time"
			tp.Columns = append(tp.Columns, config.Column{Name: "kts", Type: "timestamp", Source: "kafka_timestamp", Required: true})
		}, "column kts: the record has no Kafka timestamp (-1)"},
	}
	for _, tc := range cases {
		m := newMapper(t, tc.mutate)
		checkScan(t, m, noTS())
		_, err := m.Map(noTS())
		var re *RecordError
		if !errors.As(err, &re) || re.Reason != ReasonMap || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want a map error saying %q", tc.name, err, tc.msg)
		}
	}

	m := newMapper(t, func(tp *config.Topic) {
		tp.WriteTimestamp = "event_time"
		tp.Columns = append(tp.Columns, config.Column{Name: "kts", Type: "timestamp", Source: "kafka_timestamp"})
	})
	row, err := m.Map(noTS())
	if err != nil {
		t.Fatal(err)
	}
	if v := Values(row)[6]; v != gocql.UnsetValue {
		t.Errorf("optional kafka_timestamp column of a record without a timestamp: %#v, want unset", GoValue(v))
	}
}

// TestAcceptWindowBoundsTheYearsOfRecordsWithAKafkaTimestamp holds what docs/CONFIG.md ("Times") says:
// by default a record with a 2024 Kafka timestamp reaches back 10 years, not to year 1; a window of
// 106751d (292 years) reaches 1800 but neither year 1 nor 9999, as a distance beyond about 292 years
// cannot be measured; only Go's largest duration, which refuses nothing, reaches them; and a record
// without a Kafka timestamp reaches any year.
func TestAcceptWindowBoundsTheYearsOfRecordsWithAKafkaTimestamp(t *testing.T) {
	windows := map[string]config.Accept{"default": {Before: config.DefaultAcceptBefore, After: config.DefaultAcceptAfter}}
	for name, text := range map[string]string{"106751d": "106751d", "largest": "2562047h47m16s854775807ns"} {
		d, err := config.ParseDuration(text)
		if err != nil {
			t.Fatal(err)
		}
		windows[name] = config.Accept{Before: d, After: d}
	}
	for _, tc := range []struct {
		ts      string
		refused map[string]bool // by window, for a record with a 2024 Kafka timestamp
	}{
		{"2015-06-01T00:00:00Z", map[string]bool{}},
		{"1800-01-01T00:00:00Z", map[string]bool{"default": true}},
		{"0001-01-01T00:00:00Z", map[string]bool{"default": true, "106751d": true}},
		{"9999-12-31T23:59:59.999Z", map[string]bool{"default": true, "106751d": true}},
	} {
		value := `{"device_id":"d","ts":"` + tc.ts + `","temperature":1}`
		for name, w := range windows {
			m := newMapper(t, func(tp *config.Topic) { tp.Accept, tp.WriteTimestamp = w, "server" })
			if _, err := m.Map(rec(value)); (err != nil) != tc.refused[name] {
				t.Errorf("%s, %s window: error %v, want refused %v", tc.ts, name, err, tc.refused[name])
			}
			noTS := rec(value)
			noTS.Timestamp = time.UnixMilli(-1)
			if _, err := m.Map(noTS); err != nil {
				t.Errorf("%s, %s window, no Kafka timestamp: %v", tc.ts, name, err)
			}
		}
	}
}
