package pipeline

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/internal/testenv"
	"github.com/bucketsink/sink/mapper"
	"github.com/bucketsink/sink/pipeline/deadletter"
)

// TestIntegrationConfluentAvroKeysAndWhereFanOut: one topic whose keys and values Confluent's Python
// AvroSerializer writes (registering both schemas itself, the key's under <topic>-key) carries three event
// types, the value's enum kind. Three entries read it, each taking one kind by where on that value field,
// each taking its id column device_id and a column region from fields of the Avro key (key_codec avro).
// Every record lands in its kind's table, with the key's fields, and in no other; none is dead-lettered;
// each entry's skip of a record is counted in sink_records_skipped_total{reason="filtered"}.
func TestIntegrationConfluentAvroKeysAndWhereFanOut(t *testing.T) {
	url := testenv.Registry(t)
	python := testenv.PythonClients(t)
	kinds := map[string]string{"readings": "GAUGE", "counters": "COUNTER", "unspecified": "KIND_UNSPECIFIED"} // table → kind
	s := newStackWith(t, 3, nil, func(c *config.Config) {
		base := c.Topics["readings"]
		for table, kind := range kinds {
			tp := formatsTopic(base.Topic, table, config.CodecAvro, base.DeadLetterTopic)
			tp.KeyCodec = config.CodecAvro
			tp.Columns = append([]config.Column{{Name: "device_id", Type: "text", Source: config.SourceKey, Field: "device_id"}},
				pyColumns[1:]...)
			tp.Columns = append(tp.Columns, config.Column{Name: "region", Type: "text", Source: config.SourceKey, Field: "region"})
			tp.Where = &config.Where{Field: "kind", Equals: ptrTo(kind)}
			c.Topics[table] = tp
		}
		c.SchemaRegistry = config.SchemaRegistry{URLs: []string{url}}
	})
	evs := pyEvents(0, 36)
	region := func(e pyEvent) string { return "r-" + e.device }
	offsets, err := producePythonKeyed(python, strings.Join(s.cfg.Kafka.Brokers, ","), url, s.topic, "avro", evs,
		"readingkey.avsc", func(e pyEvent) any { return map[string]string{"device_id": e.device, "region": region(e)} })
	if err != nil {
		t.Fatal(err)
	}
	for _, kr := range s.readBack(s.topic) {
		if len(kr.Key) < 5 || kr.Key[0] != 0 {
			t.Fatalf("AvroSerializer wrote the key %q: not the Confluent wire format", kr.Key)
		}
	}

	m := s.start(nil)
	s.waitFor(3*time.Minute, "every record of the topic", func() bool { return s.caughtUp([]string{s.topic}) })
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	for table, kind := range kinds {
		t.Run(table, func(t *testing.T) {
			var want []string
			for i, e := range evs {
				if e.kind == kind {
					want = append(want, s.pyRow(e, offsets[i]))
				}
			}
			slices.Sort(want)
			if got := s.pyRows(table); len(want) == 0 || !slices.Equal(got, want) {
				t.Errorf("%s holds %d rows, want %d; rows it lacks:\n  %s\nrows it should not hold:\n  %s", table, len(got), len(want),
					strings.Join(minus(want, got), "\n  "), strings.Join(minus(got, want), "\n  "))
			}
			iter := s.session.Driver().Query("SELECT device_id, region FROM " + s.ks + "." + table).IterContext(context.Background())
			var device, reg string
			rows := 0
			for iter.Scan(&device, &reg) {
				rows++
				if reg != "r-"+device {
					t.Errorf("device %s has region %q, want its key's %q", device, reg, "r-"+device)
				}
			}
			if err := iter.Close(); err != nil || rows != len(want) {
				t.Errorf("reading regions: %d rows, %v", rows, err)
			}
		})
	}
	if dls := s.dlqRecords(); len(dls) != 0 {
		t.Errorf("%d records dead-lettered, want none; the first: %s: %s", len(dls),
			header(dls[0], deadletter.HeaderReason), header(dls[0], deadletter.HeaderError))
	}
	// Each record is skipped by the two entries of the other kinds.
	if n, want := testutil.ToFloat64(m.metrics.RecordsSkipped.WithLabelValues(s.topic, mapper.ReasonFiltered)), float64(2*len(evs)); n != want {
		t.Errorf("sink_records_skipped_total{reason=filtered} = %v, want %v", n, want)
	}
	if n := testutil.ToFloat64(m.metrics.RecordsWritten.WithLabelValues(s.topic)); n != float64(len(evs)) {
		t.Errorf("sink_records_written_total = %v, want %d", n, len(evs))
	}
}
