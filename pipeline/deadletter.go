package pipeline

import (
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Header keys of a dead-lettered record. Together they name the source record exactly, so an operator can
// find, fix and replay it; sink.reason is one of the reasons of sink_records_dead_lettered_total.
const (
	HeaderSourceTopic     = "sink.source.topic"
	HeaderSourcePartition = "sink.source.partition"
	HeaderSourceOffset    = "sink.source.offset"
	HeaderSourceTimestamp = "sink.source.timestamp" // RFC 3339, UTC, millisecond precision (Kafka's resolution)
	HeaderError           = "sink.error"
	HeaderReason          = "sink.reason"
)

// Dead-letter reasons, the values of the reason label and of the sink.reason header.
const (
	ReasonDecode = "decode" // the value is not valid input for the topic's codec
	ReasonMap    = "map"    // decoded, but a field is missing or does not fit its column
	ReasonWrite  = "write"  // Cassandra rejected the row for a reason retrying cannot fix
)

// deadLetterRecord builds the record that carries src to the dead-letter topic: the original key, value
// and headers unchanged, followed by the sink.* headers describing where it came from and why it failed.
// The original headers come first so a consumer reading the last value of a sink.* key always gets ours.
func deadLetterRecord(dlqTopic string, src *kgo.Record, reason string, cause error) *kgo.Record {
	headers := make([]kgo.RecordHeader, 0, len(src.Headers)+6)
	headers = append(headers, src.Headers...)
	msg := ""
	if cause != nil {
		msg = cause.Error()
	}
	headers = append(headers,
		kgo.RecordHeader{Key: HeaderSourceTopic, Value: []byte(src.Topic)},
		kgo.RecordHeader{Key: HeaderSourcePartition, Value: strconv.AppendInt(nil, int64(src.Partition), 10)},
		kgo.RecordHeader{Key: HeaderSourceOffset, Value: strconv.AppendInt(nil, src.Offset, 10)},
		kgo.RecordHeader{Key: HeaderSourceTimestamp, Value: src.Timestamp.UTC().AppendFormat(nil, "2006-01-02T15:04:05.000Z07:00")},
		kgo.RecordHeader{Key: HeaderError, Value: []byte(msg)},
		kgo.RecordHeader{Key: HeaderReason, Value: []byte(reason)},
	)
	return &kgo.Record{
		Topic:     dlqTopic,
		Key:       src.Key,
		Value:     src.Value,
		Headers:   headers,
		Timestamp: time.Time{}, // the producer stamps the time of dead-lettering; the source time is a header
	}
}
