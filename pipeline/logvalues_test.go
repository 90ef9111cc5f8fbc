package pipeline

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/mapper"
	"github.com/bucketsink/sink/pipeline/deadletter"
	"github.com/bucketsink/sink/pipeline/metrics"
)

// TestBadRecordLogLineShowsTheValueOnlyWhenAsked guards log.quote_values: the log line of a record the
// mapper refuses (dead-lettered, or halting its partition) names the column and field but not the value
// unless the switch is on, while the dead letter's sink.error shows the value either way.
func TestBadRecordLogLineShowsTheValueOnlyWhenAsked(t *testing.T) {
	const secret = "Jane-Doe-1970"
	sink, err := config.Load("../examples/local.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := sink.Validate(); err != nil {
		t.Fatal(err)
	}
	mp, err := mapper.New(sink)
	if err != nil {
		t.Fatal(err)
	}
	rec := &kgo.Record{Topic: "sensor-readings", Partition: 1, Offset: 7, Timestamp: time.Now(),
		Value: []byte(`{"device_id":"d","ts":"2024-01-15T10:00:00Z","temperature":"` + secret + `"}`)}
	_, mapErr := mp.Map(mapper.Record{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset, Value: rec.Value, Timestamp: rec.Timestamp})
	if mapErr == nil {
		t.Fatal("the record mapped")
	}
	for _, quote := range []bool{false, true} {
		cfg := (&fixture{t: t, addrs: []string{"127.0.0.1:1"}, group: "g"}).config(func(c *config.Config) { c.Log.QuoteValues = quote })
		var logs bytes.Buffer
		pl, err := New(Config{Sink: cfg, Mapper: oneEntry{fakeMapper{}}, Writer: &memWriter{}, Metrics: metrics.NewMetrics(prometheus.NewRegistry()),
			Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		pl.log.Error("bad record", pl.badRecordError(mapErr))
		if got := strings.Contains(logs.String(), secret); got != quote {
			t.Errorf("quote_values %v: the log line shows the value: %v\n%s", quote, got, logs.String())
		}
		if !strings.Contains(logs.String(), `column temperature: field \"temperature\"`) {
			t.Errorf("quote_values %v: the log line does not name the column and field:\n%s", quote, logs.String())
		}
	}
	dl := deadletter.FromRecord("sensor-readings.dlq", rec, deadletter.Refusal{Reason: mapper.ReasonMap, Err: mapErr})
	if msg := deadletter.HeaderValue(dl, deadletter.HeaderError); !strings.Contains(msg, secret) {
		t.Errorf("the dead letter's %s does not show the value: %s", deadletter.HeaderError, msg)
	}
}
