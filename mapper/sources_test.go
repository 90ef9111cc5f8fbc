package mapper

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/packed"
)

// headerTopic adds header columns to the sensor topic: a text trace id, an int, a timestamp and a
// blob, none required.
func headerTopic(tp *config.Topic) {
	tp.Columns = append(tp.Columns,
		config.Column{Name: "trace", Type: "text", Source: config.SourceHeader, Header: "trace-id"},
		config.Column{Name: "version", Type: "int", Source: config.SourceHeader, Header: "version"},
		config.Column{Name: "sent", Type: "timestamp", Source: config.SourceHeader, Header: "sent-at"},
		config.Column{Name: "sig", Type: "blob", Source: config.SourceHeader, Header: "sig"},
	)
}

// TestHeaderColumns maps header values into columns: text as is, an int and a timestamp from their
// text as a JSON string would be, a blob's bytes as they are; a missing header leaves its column unset,
// and a header that does not fit its column is bad input naming the header.
func TestHeaderColumns(t *testing.T) {
	m := newMapper(t, headerTopic)
	n := len(baseConfig().Topics["readings"].Columns)
	base := rec(`{"device_id":"dev-1","ts":"2024-01-15T10:00:00Z","temperature":21.5}`)

	r := base
	r.Headers = []Header{{"trace-id", []byte("abc-1")}, {"version", []byte("42")}, {"sent-at", []byte("2024-01-15T10:00:01Z")},
		{"sig", []byte{0, 1, 0xff}}, {"trace-id", []byte("second")}}
	row, err := m.Map(r)
	if err != nil {
		t.Fatal(err)
	}
	vals := packed.Values(row.Packed)
	got := []any{packed.GoValue(vals[n]), packed.GoValue(vals[n+1]), packed.GoValue(vals[n+2]), packed.GoValue(vals[n+3])}
	if got[0] != "abc-1" || got[1] != int32(42) || !got[2].(time.Time).Equal(time.Date(2024, 1, 15, 10, 0, 1, 0, time.UTC)) || string(got[3].([]byte)) != "\x00\x01\xff" {
		t.Errorf("header columns = %v", got)
	}

	row, err = m.Map(base) // no headers
	if err != nil {
		t.Fatal(err)
	}
	vals = packed.Values(row.Packed)
	for i := n; i < n+4; i++ {
		if v := packed.GoValue(vals[i]); v != gocql.UnsetValue {
			t.Errorf("column %d without its header = %v, want unset", i, v)
		}
	}

	r = base
	r.Headers = []Header{{"version", []byte("forty-two")}}
	_, err = m.Map(r)
	var re *RecordError
	if !errors.As(err, &re) || re.Reason != ReasonMap || !strings.Contains(err.Error(), `column version: header "version"`) {
		t.Errorf("a header that is no int: %v", err)
	}
}

// TestHeaderIDColumn: an id column from a header needs it; a record without it is bad input (reason
// map) naming the header, also when the Kafka topic is read by several entries (the shared decoding
// leaves header columns to each entry).
func TestHeaderIDColumn(t *testing.T) {
	c := baseConfig()
	tp := c.Topics["readings"]
	tp.Columns = append(tp.Columns, config.Column{Name: "tenant", Type: "text", Source: config.SourceHeader, Header: "tenant"})
	byTenant := tp
	byTenant.ID, byTenant.Table = []string{"tenant"}, "by_tenant"
	c.Topics["by-tenant"] = byTenant
	m := registryMapper(t, c, nil)
	r := rec(`{"device_id":"dev-1","ts":"2024-01-15T10:00:00Z","temperature":21.5}`)
	res, err := m.MapAll(context.Background(), r, nil)
	if err != nil {
		t.Fatal(err)
	}
	var re *RecordError
	if res[0].Entry != "by-tenant" || !errors.As(res[0].Err, &re) || re.Reason != ReasonMap ||
		!strings.Contains(re.Error(), `column tenant: header "tenant" is missing, and an id column needs a value`) {
		t.Errorf("by-tenant without the header: %v", res[0].Err)
	}
	if res[1].Err != nil {
		t.Errorf("readings: %v", res[1].Err)
	}
	r.Headers = []Header{{"tenant", []byte("acme")}}
	res, err = m.MapAll(context.Background(), r, nil)
	if err != nil || res[0].Err != nil {
		t.Fatalf("%v %v", err, res[0].Err)
	}
	if got := packed.GoValue(packed.Values(res[0].Row.Packed)[len(tp.Columns)-1]); got != "acme" {
		t.Errorf("tenant = %v", got)
	}
}

// TestExplainNamesTheHeader: explain says which header a column came from.
func TestExplainNamesTheHeader(t *testing.T) {
	m := newMapper(t, headerTopic)
	r := rec(`{"device_id":"dev-1","ts":"2024-01-15T10:00:00Z","temperature":21.5}`)
	r.Headers = []Header{{"trace-id", []byte("abc")}}
	ex, err := m.Explain(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range ex.Bound {
		want := map[string]string{"trace": `header "trace-id"`, "version": `header "version"`, "device_id": ""}
		if w, ok := want[v.Column]; ok && v.From != w {
			t.Errorf("%s: From = %q, want %q", v.Column, v.From, w)
		}
	}
}

// TestKeyColumns maps columns from the Kafka key: its whole text converted to an int, and fields of a
// JSON object key (text and a nested bigint), for a topic of one entry and for one read by several (the
// shared decoding leaves key columns to each entry); an id column from a key field that is missing is
// bad input naming the key field, and a key that is not a JSON object leaves a field column unset.
func TestKeyColumns(t *testing.T) {
	c := baseConfig()
	tp := c.Topics["readings"]
	tp.Columns = append(tp.Columns,
		config.Column{Name: "tenant", Type: "text", Source: config.SourceKey, Field: "tenant"},
		config.Column{Name: "shard", Type: "bigint", Source: config.SourceKey, Field: "route.shard"})
	n := len(tp.Columns)
	c.Topics["readings"] = tp
	byTenant := tp
	byTenant.ID, byTenant.Table = []string{"tenant"}, "by_tenant"
	c.Topics["by-tenant"] = byTenant
	whole := baseConfig().Topics["readings"]
	whole.Topic, whole.Table = "numbered", "numbered"
	whole.Columns = append(whole.Columns, config.Column{Name: "seq", Type: "int", Source: config.SourceKey})
	c.Topics["numbered"] = whole
	m := registryMapper(t, c, nil)

	r := rec(`{"device_id":"dev-1","ts":"2024-01-15T10:00:00Z","temperature":21.5}`)
	r.Key = []byte(`{"tenant":"acme","route":{"shard":9007199254740993}}`)
	res, err := m.MapAll(context.Background(), r, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, got := range res {
		if got.Err != nil {
			t.Fatalf("%s: %v", got.Entry, got.Err)
		}
		vals := packed.Values(got.Row.Packed)
		if a, b := packed.GoValue(vals[n-2]), packed.GoValue(vals[n-1]); a != "acme" || b != int64(9007199254740993) {
			t.Errorf("%s: tenant %v, shard %v", got.Entry, a, b)
		}
	}

	r.Key = []byte("plain-text")
	res, err = m.MapAll(context.Background(), r, nil)
	if err != nil {
		t.Fatal(err)
	}
	var re *RecordError
	if !errors.As(res[0].Err, &re) || re.Reason != ReasonMap ||
		!strings.Contains(re.Error(), `topics.by-tenant: column tenant: key field "tenant" is missing, and an id column needs a value`) {
		t.Errorf("by-tenant, a key that is no JSON object: %v", res[0].Err)
	}
	if res[1].Err != nil || packed.GoValue(packed.Values(res[1].Row.Packed)[n-2]) != gocql.UnsetValue {
		t.Errorf("readings, a key that is no JSON object: %v, want the column unset", res[1].Err)
	}

	w := rec(`{"device_id":"dev-1","ts":"2024-01-15T10:00:00Z","temperature":21.5}`)
	w.Topic, w.Key = "numbered", []byte("42")
	row, err := m.Map(w)
	if err != nil {
		t.Fatal(err)
	}
	if got := packed.GoValue(packed.Values(row.Packed)[len(whole.Columns)-1]); got != int32(42) {
		t.Errorf("seq = %v, want 42", got)
	}
	w.Key = []byte("x42")
	if _, err := m.Map(w); err == nil || !strings.Contains(err.Error(), "column seq: the Kafka key") {
		t.Errorf("a key that is no int: %v", err)
	}
	ex, err := m.ExplainEntry("numbered", Record{Topic: "numbered", Key: []byte("7"), Value: w.Value, Timestamp: w.Timestamp})
	if err != nil {
		t.Fatal(err)
	}
	if v := ex.Bound[len(whole.Columns)-1]; v.Column != "seq" || v.From != "the Kafka key" {
		t.Errorf("explain: %+v", v)
	}
}
