package deadletter

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/packed"
)

// Header keys of a dead-lettered record. Together they name the source record exactly, so an operator can
// find, fix and replay it; sink.reason is one of the reasons of sink_records_dead_lettered_total.
//
// Why the record is there comes as one group of headers per refusal: sink.error, sink.reason, then, when
// an entry refused it (not an error of the whole record, such as a panic), sink.entry and sink.table. A
// record that several entries of its Kafka topic refuse is one dead letter with a group per refusing
// entry, in entry-name order; a reader that wants them all reads every header of these keys in order
// (HeaderValue gives the last group's).
const (
	HeaderSourceTopic     = "sink.source.topic"
	HeaderSourcePartition = "sink.source.partition"
	HeaderSourceOffset    = "sink.source.offset"
	HeaderSourceTimestamp = "sink.source.timestamp" // RFC 3339, UTC, millisecond precision (Kafka's resolution)
	HeaderError           = "sink.error"
	HeaderReason          = "sink.reason"
	// HeaderTruncated is present only on a dead letter cut to fit the dead-letter topic: the parts that
	// were cut or dropped, comma-separated, from "value", "headers" (the original headers), "key" and
	// "error" (sink.error's tail).
	HeaderTruncated = "sink.truncated"
	// HeaderSourceValueSize is the source record's value size in bytes, on a truncated dead letter.
	HeaderSourceValueSize = "sink.source.value.size"
	// HeaderSourceMissing is "true" on the dead letter of a row Cassandra refused whose source record the
	// partition's log no longer held: its value is the row (see FromRow), not the record.
	HeaderSourceMissing = "sink.source.missing"
	// HeaderEntry is the entry (topics.<name>) that refused the record, or whose row Cassandra refused.
	HeaderEntry = "sink.entry"
	// HeaderTable is the keyspace.table of the refusing entry: for a row Cassandra refused, the table
	// (or slice table) the row was for.
	HeaderTable = "sink.table"
)

// Refusal is why a record is dead-lettered: one entry refused it (Entry and Table set), or it could not
// be mapped at all (Entry empty).
type Refusal struct {
	Entry  string // topics.<name>; "" for an error of the whole record
	Table  string // keyspace.table of the entry
	Reason string // one of the Reason constants (or the mapper's reasons)
	Err    error
}

// Dead-letter reasons, the values of the reason label and of the sink.reason header.
const (
	ReasonDecode = "decode" // the value is not valid input for the topic's codec
	ReasonMap    = "map"    // decoded, but a field is missing or does not fit its column
	ReasonWrite  = "write"  // Cassandra rejected the row for a reason retrying cannot fix
	ReasonPanic  = "panic"  // mapping the record panicked (a bug, contained to the record)
	// ReasonSlice: the record's slice table does not exist, in a topic with bucket.missing_slice:
	// dead_letter.
	ReasonSlice = "slice"
)

// maxErrorBytes caps the sink.error header. Error messages can quote input (a field's value, a driver's
// message with the statement); the header only has to say what went wrong.
const maxErrorBytes = 1024

// minErrorBytes is as short as sink.error is cut to make a dead letter fit: enough to say what failed.
const minErrorBytes = 64

// truncateUTF8 cuts s to at most n bytes without splitting a UTF-8 sequence, marking the cut.
func truncateUTF8(s string, n int) string {
	const mark = "…(truncated)"
	if len(s) <= n {
		return s
	}
	cut := max(n-len(mark), 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

// errorText is the sink.error of a refusal, capped at maxErrorBytes.
func errorText(cause error) string {
	if cause == nil {
		return ""
	}
	msg := cause.Error()
	// An error that can show the bad value (mapper.RecordError) shows it here: the dead letter carries
	// the record anyway, and the value beside the reason saves a reader decoding it.
	var q interface{ Quoted() string }
	if errors.As(cause, &q) {
		msg = q.Quoted()
	}
	return truncateUTF8(msg, maxErrorBytes)
}

// sinkHeaders are the sink.* headers every dead letter carries (the timestamp only when it is known),
// with a group per refusal.
func sinkHeaders(dst []kgo.RecordHeader, topic string, partition int32, offset int64, ts time.Time, refusals []Refusal) []kgo.RecordHeader {
	dst = append(dst,
		kgo.RecordHeader{Key: HeaderSourceTopic, Value: []byte(topic)},
		kgo.RecordHeader{Key: HeaderSourcePartition, Value: strconv.AppendInt(nil, int64(partition), 10)},
		kgo.RecordHeader{Key: HeaderSourceOffset, Value: strconv.AppendInt(nil, offset, 10)},
	)
	if !ts.IsZero() {
		dst = append(dst, kgo.RecordHeader{Key: HeaderSourceTimestamp, Value: ts.UTC().AppendFormat(nil, "2006-01-02T15:04:05.000Z07:00")})
	}
	for _, r := range refusals {
		dst = append(dst,
			kgo.RecordHeader{Key: HeaderError, Value: []byte(errorText(r.Err))},
			kgo.RecordHeader{Key: HeaderReason, Value: []byte(r.Reason)},
		)
		if r.Entry != "" {
			dst = append(dst,
				kgo.RecordHeader{Key: HeaderEntry, Value: []byte(r.Entry)},
				kgo.RecordHeader{Key: HeaderTable, Value: []byte(r.Table)},
			)
		}
	}
	return dst
}

// HeaderValue returns the value of r's last header named key, or "" when it has none.
func HeaderValue(r *kgo.Record, key string) string {
	v := ""
	for _, h := range r.Headers {
		if h.Key == key {
			v = string(h.Value)
		}
	}
	return v
}

// FromRecord builds the record that carries src to the dead-letter topic: the original key, value
// and headers unchanged, followed by the sink.* headers describing where it came from and why it failed
// (a group per refusal). The original headers come first so a consumer reading the last value of a
// sink.* key always gets ours.
func FromRecord(dlqTopic string, src *kgo.Record, refusals ...Refusal) *kgo.Record {
	headers := make([]kgo.RecordHeader, 0, len(src.Headers)+4+4*len(refusals))
	headers = append(headers, src.Headers...)
	headers = sinkHeaders(headers, src.Topic, src.Partition, src.Offset, src.Timestamp, refusals)
	return &kgo.Record{
		Topic:     dlqTopic,
		Key:       src.Key,
		Value:     src.Value,
		Headers:   headers,
		Timestamp: time.Time{}, // the producer stamps the time of dead-lettering; the source time is a header
	}
}

// FromRow builds the dead letter of a row Cassandra refused whose source record Kafka no longer
// holds (retention or compaction removed it before it could be read back): what is left of the record
// is the row the sink mapped from it. The value is that row as a JSON object, column name to bound value
// (columns left unset are absent; the TTL and write timestamp are not columns); there is no key; the
// headers are the sink.* ones of the refusal without sink.source.timestamp (unknown), then
// sink.source.missing=true.
func FromRow(dlqTopic string, row *batcher.Row, refusal Refusal) *kgo.Record {
	src := row.Source()
	headers := sinkHeaders(make([]kgo.RecordHeader, 0, 9), src.Topic, src.Partition, src.Offset, time.Time{}, []Refusal{refusal})
	headers = append(headers, kgo.RecordHeader{Key: HeaderSourceMissing, Value: []byte("true")})
	return &kgo.Record{Topic: dlqTopic, Value: rowJSON(row), Headers: headers}
}

// rowJSON renders a row's column values as a JSON object. A value JSON cannot encode as it is (a map
// with keys JSON has no form for) is rendered as its Go string form.
func rowJSON(row *batcher.Row) []byte {
	vals := packed.Values(row.Packed)
	var cols []string
	if row.Target != nil {
		cols = row.Target.Columns
		vals = vals[min(row.Target.ColumnsAt(), len(vals)):] // a delete binds its timestamp first
	}
	obj := make(map[string]json.RawMessage, len(cols))
	for i, c := range cols {
		if i >= len(vals) {
			break
		}
		v := packed.GoValue(vals[i])
		if v == gocql.UnsetValue {
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			b, _ = json.Marshal(fmt.Sprint(v))
		}
		obj[c] = b
	}
	out, err := json.Marshal(obj)
	if err != nil { // unreachable: every entry is valid JSON
		return []byte("{}")
	}
	return out
}

// Sizes of a record on the wire, as the broker measures it against max.message.bytes: the whole record
// batch, whose header is 61 bytes (offset and length included), and per record at most these many bytes
// of varints and attributes (length 5, attributes 1, timestamp delta 10, offset delta 5, key and value
// lengths 5 each, header count 5), and per header 10 (two lengths). Compression never makes a batch
// larger: franz-go sends it uncompressed when compressing does not shrink it.
const (
	WireBatchOverhead  = 61
	wireRecordOverhead = 36
	wireHeaderOverhead = 10
)

// WireSize is an upper bound of the bytes r takes in a record batch, not counting the batch header.
func WireSize(r *kgo.Record) int {
	n := wireRecordOverhead + len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += wireHeaderOverhead + len(h.Key) + len(h.Value)
	}
	return n
}

// truncatedExtra bounds what the two headers of a truncated dead letter add: their keys, the longest
// sink.truncated value, a 20-digit size, and their lengths.
var truncatedExtra = 2*wireHeaderOverhead + len(HeaderTruncated) + len("value,headers,key,error") +
	len(HeaderSourceValueSize) + 20

// Fit returns r if a batch of r alone takes at most limit bytes; otherwise a truncated copy
// that does. The last ours headers of r are the sink.* ones, which always stay; the rest are the source
// record's. When dropping the original headers alone makes it fit, only they go: the value stays whole
// (it is the record; the headers are its metadata). Otherwise what goes, in order, until it fits: the
// value's tail, then the original headers, then the key's tail, then the tail of sink.error (down to
// minErrorBytes). sink.truncated names what was cut and sink.source.value.size gives the original
// value's size. ok is false when even that does not fit.
func Fit(r *kgo.Record, ours, limit int) (fitted *kgo.Record, ok bool) {
	if WireBatchOverhead+WireSize(r) <= limit {
		return r, true
	}
	t := *r
	var cut []string
	// excess is how many bytes t is over limit once the two truncation headers are added.
	excess := func() int { return WireBatchOverhead + WireSize(&t) + truncatedExtra - limit }
	done := func() (*kgo.Record, bool) {
		t.Headers = append(t.Headers[:len(t.Headers):len(t.Headers)],
			kgo.RecordHeader{Key: HeaderTruncated, Value: []byte(strings.Join(cut, ","))},
			kgo.RecordHeader{Key: HeaderSourceValueSize, Value: strconv.AppendInt(nil, int64(len(r.Value)), 10)})
		return &t, true
	}
	if ours < len(t.Headers) {
		t.Headers = t.Headers[len(t.Headers)-ours:]
		if excess() <= 0 {
			cut = append(cut, "headers")
			return done()
		}
		t.Headers = r.Headers
	}
	cut = append(cut, "value")
	if n := excess(); n <= len(t.Value) {
		t.Value = t.Value[:len(t.Value)-n]
		return done()
	}
	t.Value = nil
	if ours < len(t.Headers) {
		cut = append(cut, "headers")
		t.Headers = t.Headers[len(t.Headers)-ours:]
		if excess() <= 0 {
			return done()
		}
	}
	cut = append(cut, "key")
	if n := excess(); n <= len(t.Key) {
		t.Key = t.Key[:len(t.Key)-n]
		return done()
	}
	t.Key = nil
	// Last, sink.error: it may quote input, up to maxErrorBytes. A record several entries refused has one
	// per refusal: each is cut in turn, none below minErrorBytes, until the dead letter fits.
	cut = append(cut, "error")
	hs := slices.Clone(t.Headers)
	t.Headers = hs
	for i, h := range hs {
		if h.Key != HeaderError || len(h.Value) <= minErrorBytes {
			continue
		}
		keep := max(len(h.Value)-excess(), minErrorBytes)
		hs[i].Value = []byte(truncateUTF8(string(h.Value), keep))
		if excess() <= 0 {
			return done()
		}
	}
	return nil, false
}
