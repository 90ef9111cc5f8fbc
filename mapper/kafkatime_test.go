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
