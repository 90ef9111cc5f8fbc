package pipeline

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestDeadLetterRecordCarriesSourceAndReason(t *testing.T) {
	src := &kgo.Record{
		Topic: "readings", Partition: 7, Offset: 1207,
		Key: []byte("dev-1"), Value: []byte(`{"ts":"yesterday"}`),
		Timestamp: time.Date(2024, 1, 15, 10, 30, 0, 123_000_000, time.FixedZone("CET", 3600)),
		Headers:   []kgo.RecordHeader{{Key: "trace", Value: []byte("abc")}},
	}
	got := deadLetterRecord("readings.dlq", src, ReasonMap, errors.New(`field "ts": not RFC 3339`))
	if got.Topic != "readings.dlq" || string(got.Key) != "dev-1" || string(got.Value) != `{"ts":"yesterday"}` {
		t.Fatalf("record %q/%q to %s: want the source key and value to readings.dlq", got.Key, got.Value, got.Topic)
	}
	want := []kgo.RecordHeader{
		{Key: "trace", Value: []byte("abc")},
		{Key: "sink.source.topic", Value: []byte("readings")},
		{Key: "sink.source.partition", Value: []byte("7")},
		{Key: "sink.source.offset", Value: []byte("1207")},
		{Key: "sink.source.timestamp", Value: []byte("2024-01-15T09:30:00.123Z")},
		{Key: "sink.error", Value: []byte(`field "ts": not RFC 3339`)},
		{Key: "sink.reason", Value: []byte("map")},
	}
	if len(got.Headers) != len(want) {
		t.Fatalf("headers %v, want %v", got.Headers, want)
	}
	for i, h := range want {
		if got.Headers[i].Key != h.Key || string(got.Headers[i].Value) != string(h.Value) {
			t.Errorf("header %d = %s: %q, want %s: %q", i, got.Headers[i].Key, got.Headers[i].Value, h.Key, h.Value)
		}
	}
	// The source's header slice must not be shared: appending to it would corrupt the fetched record.
	if len(src.Headers) != 1 {
		t.Errorf("source headers changed: %v", src.Headers)
	}
}
