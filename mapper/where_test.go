package mapper

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bucketsink/sink/codec"
	jsonc "github.com/bucketsink/sink/codec/json"
	"github.com/bucketsink/sink/config"
)

func ptr[T any](v T) *T { return &v }

// eventsConfig is one Kafka topic of three event types (field type: click, view, purchase) read by
// three entries, each taking its type by a different kind of test: a value field, a header, and a
// key field with a negation inside an all list.
func eventsConfig() *config.Config {
	c := baseConfig()
	base := c.Topics["readings"]
	delete(c.Topics, "readings")
	entry := func(table string, w *config.Where) config.Topic {
		return config.Topic{
			Topic: "events", Accept: base.Accept, Where: w,
			ID:     []string{"user"},
			Time:   config.EventTime{Source: config.TimeSourceKafka},
			Bucket: config.Bucket{Width: "1d"},
			Table:  table,
			Columns: []config.Column{
				{Name: "user", Type: "text", Field: "user"},
				{Name: "at", Type: "timestamp", Source: "event_time"},
				{Name: "n", Type: "int", Field: "n"},
			},
			Clustering: []config.Clustering{{Column: "at"}},
		}
	}
	c.Topics["clicks"] = entry("clicks", &config.Where{Field: "type", Equals: ptr("click")})
	c.Topics["views"] = entry("views", &config.Where{Header: "event-type", OneOf: []string{"view", "impression"}})
	c.Topics["purchases"] = entry("purchases", &config.Where{All: []config.Where{
		{Key: "kind", Equals: ptr("purchase")},
		{Not: &config.Where{Header: "test", Exists: ptr(true)}},
	}})
	return c
}

func newEventsMapper(t *testing.T, mutate func(*config.Config)) *Mapper {
	t.Helper()
	c := eventsConfig()
	if mutate != nil {
		mutate(c)
	}
	return registryMapper(t, c, &staticRegistry{}) // no record here asks it
}

// TestWhereFansOutOneTopic guards against a record of a topic of several event types landing in the
// wrong entry's table, or being dead-lettered by the entries it is not for: each record is mapped by
// the entry whose filter takes it, and skipped (reason filtered, never a refusal) by every other.
func TestWhereFansOutOneTopic(t *testing.T) {
	m := newEventsMapper(t, nil)
	ts := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		name    string
		key     string
		value   string
		headers []Header
		want    string // the one entry that maps the record; "" for none
	}{
		{"value field", "u1", `{"type":"click","user":"u1","n":1}`, nil, "clicks"},
		{"header one_of", "u2", `{"type":"other","user":"u2","n":2}`, []Header{{"event-type", []byte("impression")}}, "views"},
		{"key field", `{"kind":"purchase"}`, `{"user":"u3","n":3}`, nil, "purchases"},
		{"not: a test header", `{"kind":"purchase"}`, `{"user":"u3","n":3}`, []Header{{"test", []byte("1")}}, ""},
		{"text key has no fields", `purchase`, `{"user":"u4","n":4}`, nil, ""},
		{"a number compared as its text", "u5", `{"type":7,"user":"u5","n":5}`, nil, ""},
		{"null is absent", "u6", `{"type":null,"user":"u6","n":6}`, nil, ""},
		{"a tombstone is taken by none", "u7", "", nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := Record{Topic: "events", Offset: 9, Key: []byte(tc.key), Timestamp: ts, Headers: tc.headers}
			if tc.value != "" {
				rec.Value = []byte(tc.value)
			}
			res, err := m.MapAll(context.Background(), rec, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range res {
				if r.Entry == tc.want {
					if r.Err != nil {
						t.Errorf("%s must map the record: %v", r.Entry, r.Err)
					} else if r.Row.Target.Table != tc.want {
						t.Errorf("%s wrote to table %s", r.Entry, r.Row.Target.Table)
					}
					continue
				}
				var re *RecordError
				if !errors.As(r.Err, &re) || re.Reason != ReasonFiltered || !Skipped(re.Reason) {
					t.Errorf("%s: want a skip of reason %s, got %v", r.Entry, ReasonFiltered, r.Err)
				}
			}
		})
	}
}

// TestWhereKeepsBadInputBad guards against a filter turning bad input into a silent skip: a value that
// is not JSON cannot be judged, so the entry takes it and refuses it (reason decode) as it always has.
func TestWhereKeepsBadInputBad(t *testing.T) {
	m := newEventsMapper(t, nil)
	rec := Record{Topic: "events", Value: []byte(`{"type":"click",`), Timestamp: time.Now()}
	res, err := m.MapAll(context.Background(), rec, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		var re *RecordError
		if r.Entry != "clicks" {
			continue
		}
		if !errors.As(r.Err, &re) || re.Reason != ReasonDecode {
			t.Errorf("clicks: want a refusal of reason decode, got %v", r.Err)
		}
	}
}

// TestWhereMessage checks that a skip says which test failed, with the values read only when quoted
// (logs do not show record data unless log.quote_values is on).
func TestWhereMessage(t *testing.T) {
	m := newEventsMapper(t, nil)
	rec := Record{Topic: "events", Offset: 3, Key: []byte("u"), Value: []byte(`{"type":"secret-type","user":"u","n":1}`), Timestamp: time.Now()}
	_, err := m.MapEntry(context.Background(), "clicks", rec)
	var re *RecordError
	if !errors.As(err, &re) || re.Reason != ReasonFiltered {
		t.Fatalf("want a filtered skip, got %v", err)
	}
	plain, quoted := err.Error(), Quoted(err)
	if !strings.Contains(plain, `field "type" equals "click": present`) || strings.Contains(plain, "secret-type") {
		t.Errorf("plain message: %s", plain)
	}
	if !strings.Contains(quoted, `field "type" equals "click": "secret-type"`) {
		t.Errorf("quoted message: %s", quoted)
	}
	if !strings.Contains(plain, "topics.clicks") {
		t.Errorf("the message of an entry of a shared topic must name it: %s", plain)
	}
}

// TestWhereJSONSchema reads a filter's field from a json_schema value's body, after its framing.
func TestWhereJSONSchema(t *testing.T) {
	c := eventsConfig()
	for name, tp := range c.Topics {
		tp.Codec = config.CodecJSONSchema
		c.Topics[name] = tp
	}
	m := registryMapper(t, c, &staticRegistry{schemas: map[int]*codec.Schema{7: {ID: 7, Type: "JSON", Text: `{"type": "object"}`}}})
	body := []byte(`{"type":"view","user":"u","n":1}`)
	framed := append([]byte{0, 0, 0, 0, 7}, body...)
	rec := Record{Topic: "events", Value: framed, Timestamp: time.Now()}
	if !judge(t, &config.Where{Field: "type", Equals: ptr("view")}, config.CodecJSONSchema, rec) {
		t.Error("the filter does not read the framed body")
	}
	if _, err := m.MapEntry(context.Background(), "clicks", rec); err == nil || !strings.Contains(err.Error(), "filtered out") {
		t.Errorf("clicks must skip a view: %v", err)
	}
}

// TestWhereAny covers any, exists false and one_of against absent values.
func TestWhereAny(t *testing.T) {
	w := &config.Where{Any: []config.Where{
		{Header: "h", Exists: ptr(false)},
		{Field: "a.b", OneOf: []string{"1", "true"}},
	}}
	for _, tc := range []struct {
		value   string
		headers []Header
		want    bool
	}{
		{`{}`, nil, true},
		{`{}`, []Header{{"h", []byte("x")}}, false},
		{`{"a":{"b":true}}`, []Header{{"h", nil}, {"h", []byte("x")}}, true}, // a header with a null value is absent; the first counts
		{`{"a":{"b":1}}`, []Header{{"h", []byte("")}}, true},
		{`{"a":{"b":2}}`, []Header{{"h", []byte("")}}, false},
	} {
		rec := Record{Value: []byte(tc.value), Headers: tc.headers}
		if got := judge(t, w, config.CodecJSON, rec); got != tc.want {
			t.Errorf("%s %v: got %t, want %t", tc.value, tc.headers, got, tc.want)
		}
	}
}

// judge compiles w and judges rec of codec codecName (json or json_schema) by it, the value decoded by a
// JSON plan of the filter's fields as an entry's decoding reads them.
func judge(t *testing.T, w *config.Where, codecName string, rec Record) bool {
	t.Helper()
	f, err := compileFilter(w, codecName, config.KeyCodecText)
	if err != nil {
		t.Fatal(err)
	}
	p := &plan{where: f}
	body := rec.Value
	if codecName == config.CodecJSONSchema {
		if _, body, err = codec.Frame(body); err != nil {
			t.Fatal(err)
		}
	}
	jp, _ := jsonc.Codec{}.Compile(nil, f.vfields)
	vals := make([]codec.Value, len(f.vfields))
	_, derr := jp.Decode(body, vals, nil)
	_, err = p.judge(context.Background(), &rec, vals, f.self, derr != nil, &scratch{})
	return err == nil
}
