package deadletter

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/packed"
)

func TestDeadLetterRecordCarriesSourceAndReason(t *testing.T) {
	src := &kgo.Record{
		Topic: "readings", Partition: 7, Offset: 1207,
		Key: []byte("dev-1"), Value: []byte(`{"ts":"yesterday"}`),
		Timestamp: time.Date(2024, 1, 15, 10, 30, 0, 123_000_000, time.FixedZone("CET", 3600)),
		Headers:   []kgo.RecordHeader{{Key: "trace", Value: []byte("abc")}},
	}
	got := FromRecord("readings.dlq", src, Refusal{Reason: ReasonMap, Err: errors.New(`field "ts": not RFC 3339`)})
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

// TestOversizedDeadLetterIsCutValueFirstThenHeadersThenKey: Fit keeps every sink.* header and
// cuts only what it must, in order: the value's tail, the original headers, the key's tail; the result
// always fits the limit, and what was cut is named.
func TestOversizedDeadLetterIsCutValueFirstThenHeadersThenKey(t *testing.T) {
	src := &kgo.Record{Topic: "readings", Partition: 2, Offset: 99, Key: []byte(strings.Repeat("k", 300)),
		Value: []byte(strings.Repeat("v", 5000)), Timestamp: time.UnixMilli(1_700_000_000_000),
		Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte(strings.Repeat("t", 400))}}}
	dl := FromRecord("readings.dlq", src, Refusal{Reason: ReasonDecode, Err: errors.New("not an object")})
	ours := len(dl.Headers) - len(src.Headers)
	whole := WireBatchOverhead + WireSize(dl)
	for _, tc := range []struct {
		limit            int
		truncated        string
		value, key, hdrs int // lengths left; hdrs is the count of original headers left
	}{
		{limit: whole, truncated: "", value: 5000, key: 300, hdrs: 1},
		{limit: 2000, truncated: "value", key: 300, hdrs: 1},
		{limit: whole - 5000 - 100, truncated: "value,headers", value: 0, key: 300, hdrs: 0}, // headers dropped, then it fits
		{limit: 650, truncated: "value,headers,key", value: 0, hdrs: 0},
	} {
		got, ok := Fit(dl, ours, tc.limit)
		if !ok {
			t.Errorf("limit %d: does not fit", tc.limit)
			continue
		}
		if n := WireBatchOverhead + WireSize(got); n > tc.limit {
			t.Errorf("limit %d: %d bytes", tc.limit, n)
		}
		for _, k := range []string{HeaderSourceTopic, HeaderSourcePartition, HeaderSourceOffset, HeaderSourceTimestamp, HeaderReason, HeaderError} {
			if HeaderValue(got, k) != HeaderValue(dl, k) {
				t.Errorf("limit %d: header %s = %q, want %q", tc.limit, k, HeaderValue(got, k), HeaderValue(dl, k))
			}
		}
		orig := 0
		for _, h := range got.Headers {
			if !strings.HasPrefix(h.Key, "sink.") {
				orig++
			}
		}
		if HeaderValue(got, HeaderTruncated) != tc.truncated || orig != tc.hdrs ||
			(tc.truncated == "value" && (len(got.Value) < 500 || len(got.Value) >= 5000)) ||
			(tc.truncated != "value" && len(got.Value) != tc.value) ||
			(!strings.Contains(tc.truncated, "key") && len(got.Key) != tc.key) ||
			(strings.Contains(tc.truncated, "key") && (len(got.Key) == 0 || len(got.Key) >= 300)) {
			t.Errorf("limit %d: truncated %q, value %d, key %d, %d original headers; want %q, %d, %d, %d",
				tc.limit, HeaderValue(got, HeaderTruncated), len(got.Value), len(got.Key), orig, tc.truncated, tc.value, tc.key, tc.hdrs)
		}
		if tc.truncated != "" && HeaderValue(got, HeaderSourceValueSize) != "5000" {
			t.Errorf("limit %d: %s = %q, want 5000", tc.limit, HeaderSourceValueSize, HeaderValue(got, HeaderSourceValueSize))
		}
	}
	if _, ok := Fit(dl, ours, 200); ok {
		t.Error("limit 200: fits, though the sink.* headers alone take more")
	}
	if len(dl.Value) != 5000 || len(dl.Key) != 300 || len(dl.Headers) != 1+ours {
		t.Error("Fit changed the record it was given")
	}
}

// TestOversizedDeadLetterDropsOnlyTheHeadersWhenThatIsEnough: a dead letter over the limit by less than
// its original headers loses those headers and keeps its whole value. The value used to be cut first,
// also when dropping the headers alone would have fitted (a 53-byte value cut that way, seen end to end).
func TestOversizedDeadLetterDropsOnlyTheHeadersWhenThatIsEnough(t *testing.T) {
	src := &kgo.Record{Topic: "readings", Partition: 2, Offset: 99, Key: []byte("k"),
		Value: []byte(strings.Repeat("v", 53)), Timestamp: time.UnixMilli(1_700_000_000_000),
		Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte(strings.Repeat("t", 400))}}}
	dl := FromRecord("readings.dlq", src, Refusal{Reason: ReasonDecode, Err: errors.New("not an object")})
	ours := len(dl.Headers) - len(src.Headers)
	limit := WireBatchOverhead + WireSize(dl) - 300
	got, ok := Fit(dl, ours, limit)
	if !ok {
		t.Fatal("does not fit")
	}
	if n := WireBatchOverhead + WireSize(got); n > limit {
		t.Errorf("%d bytes, over the limit %d", n, limit)
	}
	if string(got.Value) != string(src.Value) || HeaderValue(got, HeaderTruncated) != "headers" || HeaderValue(got, "trace") != "" {
		t.Errorf("value %d bytes, sink.truncated %q, trace header %d bytes; want the whole value and only the headers dropped",
			len(got.Value), HeaderValue(got, HeaderTruncated), len(HeaderValue(got, "trace")))
	}
}

// TestDeadLetterErrorHeaderIsCapped: an error message of any length becomes a sink.error header of at
// most maxErrorBytes, cut on a UTF-8 boundary and marked.
func TestDeadLetterErrorHeaderIsCapped(t *testing.T) {
	src := &kgo.Record{Topic: "t", Value: []byte("x")}
	long := errors.New(strings.Repeat("é", 3000)) // two bytes each
	got := HeaderValue(FromRecord("t.dlq", src, Refusal{Reason: ReasonWrite, Err: long}), HeaderError)
	if len(got) > maxErrorBytes || !utf8.ValidString(got) || !strings.HasSuffix(got, "…(truncated)") || len(got) < maxErrorBytes-20 {
		t.Errorf("sink.error of %d bytes (valid UTF-8 %v): %.40q…", len(got), utf8.ValidString(got), got)
	}
	if got := HeaderValue(FromRecord("t.dlq", src, Refusal{Reason: ReasonWrite, Err: errors.New("short")}), HeaderError); got != "short" {
		t.Errorf("short error: %q", got)
	}
}

// TestRowDeadLetterRendersTheRowAsJSON: the dead letter of a refused row whose record is gone carries
// the row's columns as a JSON object (unset columns left out, the TTL and write timestamp not
// columns), no key, and the coordinates with sink.source.missing and sink.table.
func TestRowDeadLetterRendersTheRowAsJSON(t *testing.T) {
	row := &batcher.Row{
		Target: &batcher.Target{Topic: "readings", Keyspace: "ks", Table: "readings", Columns: []string{"device_id", "ts", "tags", "note", "counts"}},
		Packed: packed.MustPack([]string{"text", "timestamp", "list<text>", "text", "map<text, text>", "int", "bigint"},
			"dev-1", time.Date(2024, 3, 1, 10, 0, 0, 0, time.UTC), []any{"a", "b"}, gocql.UnsetValue,
			map[string]any{"1": "one"}, int32(3600), int64(1_709_287_200_000_000)),
		Partition: 4, Offset: 17,
	}
	got := FromRow("readings.dlq", row, Refusal{Entry: "readings", Table: "ks.readings", Reason: ReasonWrite, Err: errors.New("Invalid query: value too large")})
	want := `{"counts":{"1":"one"},"device_id":"dev-1","tags":["a","b"],"ts":"2024-03-01T10:00:00Z"}`
	if string(got.Value) != want || got.Key != nil || got.Topic != "readings.dlq" {
		t.Errorf("row dead letter %s key %q to %s, want %s", got.Value, got.Key, got.Topic, want)
	}
	var hs []string
	for _, h := range got.Headers {
		hs = append(hs, h.Key+"="+string(h.Value))
	}
	wantHs := "sink.source.topic=readings sink.source.partition=4 sink.source.offset=17 " +
		"sink.error=Invalid query: value too large sink.reason=write sink.entry=readings sink.table=ks.readings sink.source.missing=true"
	if strings.Join(hs, " ") != wantHs {
		t.Errorf("headers %s\nwant    %s", strings.Join(hs, " "), wantHs)
	}
}

// TestDeleteRowDeadLetterLabelsTheIDs: a refused delete row binds its write timestamp before its id
// values (DELETE ... USING TIMESTAMP ? WHERE ...); its dead letter names the id columns with their own
// values, not with the timestamp's.
func TestDeleteRowDeadLetterLabelsTheIDs(t *testing.T) {
	row := &batcher.Row{
		Target:    &batcher.Target{Topic: "readings", Keyspace: "ks", Table: "latest", Delete: true, Columns: []string{"site", "device_id"}},
		Packed:    packed.MustPack([]string{"bigint", "text", "text"}, int64(1_709_287_200_000_999), "plant-1", "dev-1"),
		Partition: 4, Offset: 18,
	}
	got := FromRow("readings.dlq", row, Refusal{Reason: ReasonWrite, Err: errors.New("refused")})
	if want := `{"device_id":"dev-1","site":"plant-1"}`; string(got.Value) != want {
		t.Errorf("delete row dead letter %s, want %s", got.Value, want)
	}
}

// TestOversizedDeadLetterCutsTheErrorLast: when the key, value and original headers are gone and the
// dead letter still does not fit (an error that quotes input, a small max.message.bytes), sink.error is
// cut too, never below minErrorBytes.
func TestOversizedDeadLetterCutsTheErrorLast(t *testing.T) {
	src := &kgo.Record{Topic: "readings", Partition: 0, Offset: 35, Key: []byte("dev-1"), Value: []byte(strings.Repeat("v", 3000))}
	dl := FromRecord("readings.dlq", src, Refusal{Reason: ReasonDecode, Err: errors.New("decoding JSON: unparsed tail: " + strings.Repeat("v", 2000))})
	ours := len(dl.Headers) - len(src.Headers)
	got, ok := Fit(dl, ours, 600)
	if !ok {
		t.Fatal("does not fit 600 bytes")
	}
	e := HeaderValue(got, HeaderError)
	if n := WireBatchOverhead + WireSize(got); n > 600 || HeaderValue(got, HeaderTruncated) != "value,key,error" ||
		len(e) < minErrorBytes || !strings.HasPrefix(e, "decoding JSON: unparsed tail: ") || !strings.HasSuffix(e, "…(truncated)") ||
		len(got.Key) != 0 || len(got.Value) != 0 {
		t.Errorf("%d bytes, truncated %q, key %q, %d value bytes, error %q", n, HeaderValue(got, HeaderTruncated), got.Key, len(got.Value), e)
	}
	if len(HeaderValue(dl, HeaderError)) != maxErrorBytes {
		t.Error("Fit changed the headers of the record it was given")
	}
}

// TestDeadLetterNamesEveryRefusingEntry: a record two entries of its topic refuse is one dead letter
// with a group of headers per entry (its error, reason, name and table), in the order given.
func TestDeadLetterNamesEveryRefusingEntry(t *testing.T) {
	src := &kgo.Record{Topic: "readings", Partition: 1, Offset: 5, Value: []byte(`{"site":7}`)}
	got := FromRecord("readings.dlq", src,
		Refusal{Entry: "by_device", Table: "ks.by_device", Reason: ReasonMap, Err: errors.New("id column device_id: no field device_id")},
		Refusal{Entry: "by_site", Table: "ks.by_site", Reason: "late", Err: errors.New("event time too early")})
	var hs []string
	for _, h := range got.Headers {
		hs = append(hs, h.Key+"="+string(h.Value))
	}
	want := "sink.source.topic=readings sink.source.partition=1 sink.source.offset=5 " +
		"sink.error=id column device_id: no field device_id sink.reason=map sink.entry=by_device sink.table=ks.by_device " +
		"sink.error=event time too early sink.reason=late sink.entry=by_site sink.table=ks.by_site"
	if strings.Join(hs, " ") != want {
		t.Errorf("headers %s\nwant    %s", strings.Join(hs, " "), want)
	}
}

// TestOversizedDeadLetterOfTwoRefusalsCutsBothErrors: a record two entries refused has two sink.error
// headers; when cutting one of them alone cannot make the dead letter fit but cutting both can, both are
// cut (each to no less than minErrorBytes), instead of the dead letter failing on every attempt.
func TestOversizedDeadLetterOfTwoRefusalsCutsBothErrors(t *testing.T) {
	src := &kgo.Record{Topic: "readings", Partition: 0, Offset: 35, Value: []byte(`{"v":1}`)}
	long := func(s string) error { return errors.New(s + strings.Repeat("v", 2000)) }
	dl := FromRecord("readings.dlq", src,
		Refusal{Entry: "a", Table: "ks.a", Reason: ReasonMap, Err: long("a: ")},
		Refusal{Entry: "b", Table: "ks.b", Reason: ReasonMap, Err: long("b: ")})
	ours := len(dl.Headers) - len(src.Headers)
	const limit = 1100 // two whole errors are 2,048 bytes: cutting one alone leaves over 1,024
	got, ok := Fit(dl, ours, limit)
	if !ok {
		t.Fatalf("does not fit %d bytes", limit)
	}
	if n := WireBatchOverhead + WireSize(got); n > limit {
		t.Errorf("%d bytes, over %d", n, limit)
	}
	for _, h := range got.Headers {
		if h.Key == HeaderError && (len(h.Value) < minErrorBytes || len(h.Value) >= maxErrorBytes) {
			t.Errorf("sink.error of %d bytes, want cut and at least %d: %q", len(h.Value), minErrorBytes, h.Value)
		}
	}
}
