package json

import (
	"errors"
	"testing"
	"time"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/packed"
)

func sensorFields() []codec.Field {
	return []codec.Field{
		{Path: []string{"device_id"}, Column: "device_id", Type: packed.Scalar(packed.KText), Unit: time.Millisecond},
		{Path: []string{"site", "id"}, Column: "site", Type: packed.Scalar(packed.KInt), Unit: time.Millisecond},
		{Path: []string{"temp"}, Column: "temp", Type: packed.Scalar(packed.KDouble), Unit: time.Millisecond},
		{Path: []string{"ok"}, Column: "ok", Type: packed.Scalar(packed.KBoolean), Unit: time.Millisecond},
		{Path: []string{"note"}, Column: "note", Type: packed.Scalar(packed.KText), Unit: time.Millisecond},
		{Path: []string{"gone"}, Column: "gone", Type: packed.Scalar(packed.KText), Unit: time.Millisecond},
		{Path: []string{"ts"}, Type: packed.Scalar(packed.KTimestamp)}, // the event time, RFC 3339
	}
}

// TestPlanDecodesTheFieldsOfARecord: a plain JSON plan (no writer schema) sets every field it
// finds as the mapper needs it, tells null from missing, and keeps the first of duplicate keys.
func TestPlanDecodesTheFieldsOfARecord(t *testing.T) {
	fields := sensorFields()
	p, err := Codec{}.Compile(nil, fields)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"device_id":"dev-1","site":{"id":7},"temp":21.5,"ok":true,"note":null,` +
		`"ts":"2024-01-15T10:00:00.5+01:00","device_id":"dev-2"}`)
	out := make([]codec.Value, len(fields))
	if _, err := p.Decode(body, out, nil); err != nil {
		t.Fatalf("Decode: %v", err)
	}
	wantT := time.Date(2024, 1, 15, 9, 0, 0, 5e8, time.UTC)
	switch {
	case out[0].State != codec.Set || string(out[0].B) != "dev-1":
		t.Errorf("device_id: %+v, want the first occurrence, dev-1", out[0])
	case out[1].N != 7, out[2].F != 21.5:
		t.Errorf("site %d, temp %v; want 7 and 21.5", out[1].N, out[2].F)
	case string(out[3].B) != string(packed.AppendBoolean(nil, true)):
		t.Errorf("ok: wire bytes %x, want boolean true's", out[3].B)
	case out[4].State != codec.Null, out[5].State != codec.Absent:
		t.Errorf("note state %d (want Null), gone state %d (want Absent)", out[4].State, out[5].State)
	case out[6].T != wantT:
		t.Errorf("event time %s, want %s", out[6].T, wantT)
	}
}

// TestPlanLeavesEveryDoubtToTheReference: whatever the plan does not convert, it says
// ErrNotHandled for, never an error of its own, so that every JSON error message is the
// reference parser's.
func TestPlanLeavesEveryDoubtToTheReference(t *testing.T) {
	fields := sensorFields()
	p, err := Codec{}.Compile(nil, fields)
	if err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{
		`[1]`, // not an object
		`{"site":{"id":1e400},"ts":"2024-01-15T10:00:00Z"}`,                // out of range for int
		`{"site":{"id":3000000000},"ts":"2024-01-15T10:00:00Z"}`,           // out of range for int
		`{"temp":NaN,"ts":"2024-01-15T10:00:00Z"}`,                         // not JSON
		`{"ts":1705312800000}`,                                             // RFC 3339 time as a number
		`{"device_id":"a\u0062","ts":"2024-01-15T10:00:00Z"}`,              // an escape in a value read
		`{"ok":"yes","ts":"2024-01-15T10:00:00Z"}`,                         // not a boolean
		`{"ts":"2024-01-15T10:00:00+24:00"}`,                               // offset out of range
		`{"device_id":"x","ts":"2024-01-15T10:00:00Z"} trailing`,           // text after the value
		`{"device_id":"x","ts":"2024-01-15T10:00:00Z","deep":[[[[{}]]]]]}`, // unbalanced
	} {
		out := make([]codec.Value, len(fields))
		if _, err := p.Decode([]byte(body), out, nil); err != ErrNotHandled {
			t.Errorf("%s: %v, want ErrNotHandled", body, err)
		}
	}
	// A topic with a field the plan does not convert gets a plan that maps no record.
	set := append(fields, codec.Field{Path: []string{"tags"}, Column: "tags", Type: packed.Type{Kind: packed.KSet, Elem: packed.KText}})
	p, err = Codec{}.Compile(nil, set)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Decode([]byte(`{"ts":"2024-01-15T10:00:00Z"}`), make([]codec.Value, len(set)), nil); err != ErrNotHandled {
		t.Errorf("set<text> field: %v, want ErrNotHandled", err)
	}
}

// TestJSONSchemaMustBeAJSONSchema: json_schema's writer schema is checked when its plan is built:
// another format's schema is a *codec.SchemaError naming the id.
func TestJSONSchemaMustBeAJSONSchema(t *testing.T) {
	_, err := Codec{}.Compile(&codec.Schema{ID: 12, Type: "AVRO", Text: `"string"`}, sensorFields())
	var se *codec.SchemaError
	if !errors.As(err, &se) || se.SchemaID != 12 {
		t.Fatalf("an Avro schema: %v, want a *codec.SchemaError of id 12", err)
	}
	if _, err := (Codec{}).Compile(&codec.Schema{ID: 13, Type: "JSON", Text: `{}`}, sensorFields()); err != nil {
		t.Errorf("a JSON Schema: %v", err)
	}
}
