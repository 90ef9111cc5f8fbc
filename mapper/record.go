package mapper

import (
	"errors"
	"strconv"
	"time"

	"github.com/bucketsink/sink/codec"
)

// A Kafka record as the mapper reads it, and the errors it gives back: the reasons of a dead letter
// or a skip (RecordError), and the two forms of their messages (Quoted).

// Record is one Kafka record, as much of it as mapping needs.
type Record struct {
	Topic     string // the Kafka topic
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte
	Timestamp time.Time // the record timestamp (create or log-append time); see kafkaTime
	// SchemaIDHeader: the record has a __value_schema_id header, the newer Confluent clients' way of
	// carrying the writer schema's id beside the value instead of in its first 5 bytes. The sink does
	// not read that form (decoder.go says so in the dead letter).
	SchemaIDHeader bool
	// KeySchemaIDHeader: the record has a __key_schema_id header, the same form for the key, which a
	// registry key codec does not read either (latest.go says so in the dead letter).
	KeySchemaIDHeader bool
	// Headers are the record's headers, which filters and header columns read (where.go, sources.go);
	// the mapper does not keep them.
	Headers []Header
}

// Header is one Kafka record header.
type Header struct {
	Key   string
	Value []byte
}

// HeaderValueSchemaID and HeaderKeySchemaID are the record headers in which the newer Confluent
// clients carry a value's and a key's writer schema id (a GUID) instead of the wire format's prefix.
const (
	HeaderValueSchemaID = "__value_schema_id"
	HeaderKeySchemaID   = "__key_schema_id"
)

// kafkaTime is the record's Kafka timestamp, and false when it has none. A record produced
// without a timestamp carries -1, which franz-go hands on as 1969-12-31T23:59:59.999Z, and
// brokers refuse every other negative timestamp, so any instant before the Unix epoch (the
// zero time.Time included) means "no timestamp", never an event of 1969.
func kafkaTime(rec *Record) (time.Time, bool) {
	if rec.Timestamp.UnixMilli() < 0 {
		return time.Time{}, false
	}
	return rec.Timestamp.UTC(), true
}

// Reasons of a RecordError, also the reason label of sink_records_dead_lettered_total (of
// sink_records_skipped_total for ReasonExpired: the pipeline skips such a record, it is not bad input).
const (
	ReasonDecode  = "decode"  // the value is not a JSON object
	ReasonMap     = "map"     // a field is missing or does not fit its column, or the time is unusable
	ReasonExpired = "expired" // ttl_from event_time: the event is older than the ttl, so its row would be born expired
	// ReasonSchema: the writer schema cannot feed a configured field (codec.SchemaError), or the
	// registry has no schema with the record's id.
	ReasonSchema = codec.ReasonSchema
	// ReasonLate and ReasonFuture: the event time lies further before (after) the record's Kafka
	// timestamp than the topic's accept window allows.
	ReasonLate   = "late"
	ReasonFuture = "future"
	// ReasonTombstone: the record is a tombstone (a null value) and its entry's on_tombstone is skip;
	// the pipeline skips it, like ReasonExpired.
	ReasonTombstone = "tombstone"
	// ReasonKey: on_tombstone delete, and the tombstone's Kafka key does not name an entity of the
	// entry (latest.go says how a key names one).
	ReasonKey = "key"
)

// Skipped reports whether reason is a skip reason (ReasonExpired, ReasonTombstone, ReasonFiltered,
// ReasonDeleted): the record is not
// bad input, and its entry makes no row of it; the pipeline commits it and counts it in
// sink_records_skipped_total{reason}. Every other reason is a refusal.
func Skipped(reason string) bool {
	return reason == ReasonExpired || reason == ReasonTombstone || reason == ReasonFiltered || reason == ReasonDeleted
}

// ReasonFiltered: the entry's where does not take the record; the pipeline skips it (a skip reason).
const ReasonFiltered = "filtered"

// ReasonDeleted: a delete event on a bucketed envelope entry whose on_delete is skip; the pipeline skips
// it (a skip reason).
const ReasonDeleted = "deleted"

// RecordError is why one entry cannot make a row of one record, or skips it (a skip reason: ReasonExpired,
// ReasonTombstone). The pipeline sends the record to its topic's dead-letter topic with these
// coordinates and the message.
type RecordError struct {
	Topic     string
	Partition int32
	Offset    int64
	Reason    string // ReasonDecode, ReasonMap, ReasonSchema, ReasonExpired, ReasonLate, ReasonFuture, ReasonTombstone or ReasonKey
	Err       error
	// Entry is the entry (topics.<name>) that refused the record; "" for an error of the whole
	// record that no entry was asked about (ErrUnknownTopic).
	Entry string
	// shared: the Kafka topic has several entries, so the message names the one that refused.
	shared bool
}

func (e *RecordError) Error() string {
	head := "topic " + e.Topic + " partition " + strconv.FormatInt(int64(e.Partition), 10) +
		" offset " + strconv.FormatInt(e.Offset, 10) + ": "
	if e.shared {
		head += "topics." + e.Entry + ": "
	}
	return head + e.Err.Error()
}

func (e *RecordError) Unwrap() error { return e.Err }

// Quoted is Error with the bad value shown (see the package function Quoted).
func (e *RecordError) Quoted() string { return Quoted(e) }

// ErrUnknownTopic is wrapped by the RecordError of a record whose Kafka topic no configured topic
// reads; the pipeline subscribes only to configured topics, so it means a wiring bug.
var ErrUnknownTopic = errors.New("no configured topic reads this Kafka topic")

// errExpired is wrapped by the error of a record whose event is older than its topic's ttl under
// ttl_from event_time; its reason is ReasonExpired.
var errExpired = errors.New("expired")

// Quoted returns err's message with the bad value shown, where err is about a value of the record (a
// field that does not convert, an event time that does not parse, a value that is not JSON), whichever
// the codec; for any other error, its message. Dead letters carry it in sink.error (they carry the
// record anyway); logs carry it only when log.quote_values is set, Error otherwise.
func Quoted(err error) string { return codec.Quoted(err) }

// header is the value of the first header of rec named name; nil when there is none, or its value is
// null.
func header(rec *Record, name string) []byte {
	for i := range rec.Headers {
		if h := &rec.Headers[i]; h.Key == name {
			return h.Value
		}
	}
	return nil
}
