package pipeline

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/mapper"
)

// TestIntegrationWhereFansOutEventTypes runs one Kafka topic of three event types plus a fourth that no
// entry takes, on the real stack, read by three entries whose filters each take one type: by a value
// field (readings), a header (alerts) and a field of a JSON key (heartbeats). Every record lands in its
// type's table and no other, none is dead-lettered, every offset is committed, and each entry's skip of
// a record is counted in sink_records_skipped_total{reason="filtered"}. The alerts table also takes two
// columns from headers: a trace id as text and a severity as an int, and heartbeats a column from its
// JSON key's field, all read back from Cassandra.
func TestIntegrationWhereFansOutEventTypes(t *testing.T) {
	s := newStackWith(t, 1, nil, func(c *config.Config) {
		r := c.Topics["readings"]
		r.Where = &config.Where{Field: "type", Equals: ptrTo("reading")}
		c.Topics["readings"] = r
		alerts := r
		alerts.Table, alerts.Where = "alerts", &config.Where{Header: "event-type", OneOf: []string{"alert", "alarm"}}
		alerts.Columns = append(slices.Clip(r.Columns),
			config.Column{Name: "trace", Type: "text", Source: config.SourceHeader, Header: "trace-id"},
			config.Column{Name: "severity", Type: "int", Source: config.SourceHeader, Header: "severity"})
		c.Topics["alerts"] = alerts
		beats := r
		beats.Columns = append(slices.Clip(r.Columns), config.Column{Name: "kind", Type: "text", Source: config.SourceKey, Field: "kind"})
		beats.Table, beats.Where = "heartbeats", &config.Where{All: []config.Where{
			{Key: "kind", Equals: ptrTo("heartbeat")},
			{Not: &config.Where{Field: "type", Exists: ptrTo(true)}},
		}}
		c.Topics["heartbeats"] = beats
	})
	const perType, others = 20, 7
	base := time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond)
	var recs []*kgo.Record
	value := func(kind string, i int) []byte {
		return fmt.Appendf(nil, `{%s"device_id":"d%d","ts":%q,"value":%d}`, kind, i%3, base.Add(time.Duration(i)*time.Second).Format(time.RFC3339Nano), i)
	}
	for i := range perType {
		recs = append(recs,
			&kgo.Record{Topic: s.topic, Key: []byte("k"), Value: value(`"type":"reading",`, i)},
			&kgo.Record{Topic: s.topic, Key: []byte("k"), Value: value("", i), Headers: []kgo.RecordHeader{{Key: "event-type", Value: []byte("alarm")},
				{Key: "trace-id", Value: fmt.Appendf(nil, "t-%d", i)}, {Key: "severity", Value: fmt.Appendf(nil, "%d", i)}}},
			&kgo.Record{Topic: s.topic, Key: []byte(`{"kind":"heartbeat"}`), Value: value("", i)},
		)
	}
	for i := range others {
		recs = append(recs, &kgo.Record{Topic: s.topic, Key: []byte(`{"kind":"heartbeat"}`), Value: value(`"type":"debug",`, i),
			Headers: []kgo.RecordHeader{{Key: "event-type", Value: []byte("debug")}}})
	}
	m := s.start(nil)
	s.produceCommitted(recs...)
	for _, table := range []string{"readings", "alerts", "heartbeats"} {
		var n int
		if err := s.session.Driver().Query("SELECT COUNT(*) FROM " + s.ks + "." + table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != perType {
			t.Errorf("%s holds %d rows, want %d (one per record of its type)", table, n, perType)
		}
	}
	iter := s.session.Driver().Query("SELECT value, trace, severity FROM " + s.ks + ".alerts").Iter()
	var v float64
	var trace string
	var severity, rows int
	for iter.Scan(&v, &trace, &severity) {
		rows++
		if trace != fmt.Sprintf("t-%d", int(v)) || severity != int(v) {
			t.Errorf("alert of value %v: trace %q, severity %d; want the headers of its record", v, trace, severity)
		}
	}
	if err := iter.Close(); err != nil || rows != perType {
		t.Errorf("reading alerts: %d rows, %v", rows, err)
	}
	var kinds []string
	iter = s.session.Driver().Query("SELECT kind FROM " + s.ks + ".heartbeats").Iter()
	for iter.Scan(&trace) {
		kinds = append(kinds, trace)
	}
	if err := iter.Close(); err != nil || len(kinds) != perType || slices.ContainsFunc(kinds, func(k string) bool { return k != "heartbeat" }) {
		t.Errorf("heartbeats' kind column, from the key: %q, %v", kinds, err)
	}
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	// Each record of a type is skipped by the two other entries; one of no type by all three.
	want := float64(3*perType*2 + others*3)
	if n := testutil.ToFloat64(m.metrics.RecordsSkipped.WithLabelValues(s.topic, mapper.ReasonFiltered)); n != want {
		t.Errorf("sink_records_skipped_total{reason=filtered} = %v, want %v", n, want)
	}
	if dls := s.dlqRecords(); len(dls) != 0 {
		t.Errorf("%d records dead-lettered, want none: a record no entry takes is skipped", len(dls))
	}
}

func ptrTo[T any](v T) *T { return &v }
