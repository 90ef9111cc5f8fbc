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
		{Path: []string{"device_id"}, Column: "device_id", Type: packed.Scalar(packed.KText)},
		{Path: []string{"site", "id"}, Column: "site", Type: packed.Scalar(packed.KInt)},
		{Path: []string{"temp"}, Column: "temp", Type: packed.Scalar(packed.KDouble)},
		{Path: []string{"ok"}, Column: "ok", Type: packed.Scalar(packed.KBoolean)},
		{Path: []string{"note"}, Column: "note", Type: packed.Scalar(packed.KText)},
		{Path: []string{"gone"}, Column: "gone", Type: packed.Scalar(packed.KText)},
		{Path: []string{"ts"}, Type: packed.Scalar(packed.KTimestamp), Time: codec.TimeFormat{Form: codec.TimeRFC3339}}, // the event time
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

// TestPlanReadsWhatTheScanDoesNotThroughTheTree: every record the scan does not map is read through
// the parsed tree, which decodes it (a value that does not fit is a Value of State Bad, its words
// following the field's subject) or refuses the document as a whole (a decode *codec.Error); a field
// of a type the scan does not convert makes a plan that reads every record through the tree.
func TestPlanReadsWhatTheScanDoesNotThroughTheTree(t *testing.T) {
	fields := sensorFields()
	p, err := Codec{}.Compile(nil, fields)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		body    string
		scanned bool
		field   int    // the field that is Bad; -1 for none
		plain   string // its words, or the decode error's message
		quoted  string
	}{
		{`{"device_id":"x","ts":"2024-01-15T10:00:00Z"}`, true, -1, "", ""},
		{`{"ts":"2024-01-15T10:00:00Z"}`, true, -1, "", ""}, // a missing value is Absent, not the codec's to refuse
		{`{"site":{"id":1e400},"ts":"2024-01-15T10:00:00Z"}`, false, 1,
			" is out of range for CQL int (-2147483648 to 2147483647)", " is 1e400, out of range for CQL int (-2147483648 to 2147483647)"},
		{`{"ok":"yes","ts":"2024-01-15T10:00:00Z"}`, false, 3, " is not true or false for CQL boolean", ` is "yes", not true or false for CQL boolean`},
		{`{"ts":1705312800000}`, false, 6, " is not RFC 3339 with an offset (e.g. 2024-01-15T10:00:00Z)",
			" is 1705312800000, not RFC 3339 with an offset (e.g. 2024-01-15T10:00:00Z)"},
		{`{"device_id":"a\u0062","ts":"2024-01-15T10:00:00Z"}`, false, -1, "", ""},
		{`[1]`, false, -1, "decoding JSON: the value is a JSON array, not an object", ""},
		{`{"temp":NaN,"ts":"2024-01-15T10:00:00Z"}`, false, -1,
			"decoding JSON: the value holds a number outside JSON's grammar (NaN, Infinity, +1, 1-2 and the like), refused in any field",
			`decoding JSON: field "temp" is NaN, a number outside JSON's grammar (NaN, Infinity, +1, 1-2 and the like), refused in any field`},
		{`{"device_id":"x","ts":"2024-01-15T10:00:00Z"} trailing`, false, -1, "decoding JSON: unexpected tail", `decoding JSON: unexpected tail: "trailing"`},
	} {
		out := make([]codec.Value, len(fields))
		if got := p.(*plan).scan([]byte(tc.body), out); got != tc.scanned {
			t.Errorf("%s: scanned %v, want %v", tc.body, got, tc.scanned)
		}
		_, err := p.Decode([]byte(tc.body), out, nil)
		if tc.field < 0 && tc.plain != "" {
			var ce *codec.Error
			if !errors.As(err, &ce) || ce.Reason != codec.ReasonDecode || err.Error() != tc.plain || (tc.quoted != "" && codec.Quoted(err) != tc.quoted) {
				t.Errorf("%s: %v (quoted %s), want a decode error %q", tc.body, err, codec.Quoted(err), tc.plain)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.body, err)
			continue
		}
		for i := range out {
			switch bad := out[i].State == codec.Bad; {
			case i == tc.field && (!bad || out[i].Err.Plain != tc.plain || out[i].Err.Quoted != tc.quoted):
				t.Errorf("%s: field %d is %+v, want Bad saying %q / %q", tc.body, i, out[i], tc.plain, tc.quoted)
			case i != tc.field && bad:
				t.Errorf("%s: field %d is Bad: %s", tc.body, i, out[i].Err.Plain)
			}
		}
	}
	// A topic with a field the scan does not convert gets a plan that reads every record through the tree.
	set := append(fields, codec.Field{Path: []string{"tags"}, Column: "tags", Type: packed.Type{Kind: packed.KSet, Elem: packed.KText}})
	p, err = Codec{}.Compile(nil, set)
	if err != nil {
		t.Fatal(err)
	}
	if p.(*plan).sc != nil {
		t.Error("a set<text> field: the plan scans")
	}
	out := make([]codec.Value, len(set))
	if _, err := p.Decode([]byte(`{"ts":"2024-01-15T10:00:00Z","tags":["b","a"]}`), out, nil); err != nil || out[7].State != codec.Set ||
		string(out[7].B) != "\x00\x00\x00\x02\x00\x00\x00\x01b\x00\x00\x00\x01a" {
		t.Errorf("set<text> field: %v, %+v", err, out[7])
	}
}

// TestScanHandlesTheCommonShapes pins which records the scan maps itself: the common shapes must not
// fall back to the tree (that would only cost time, so no other test notices), the unusual ones must.
func TestScanHandlesTheCommonShapes(t *testing.T) {
	const tail = `"ts":"2024-01-15T14:37:22.123Z","temp":21.5`
	fields := sensorFields()
	p, _ := Codec{}.Compile(nil, fields)
	for _, tc := range []struct {
		value   string
		handled bool
	}{
		{`{"device_id":"dev-0042",` + tail + `,"site":{"id":7}}`, true},
		{" \n{ \"device_id\" : \"d\" , " + tail + " }\t", true},
		{`{"device_id":"d",` + tail + `,"skipped":{"a\"b":["\\",1.5e-3,true,null,{}]}}`, true},
		{`{"device_id":"a","device_id":"b",` + tail + `}`, true},
		{`{"device_id":"a","site":"x","site":{"id":1},` + tail + `}`, true},
		{`{"device_id":"dév",` + tail + `,"note":null}`, true},
		{`{"device_id":42,` + tail + `,"site":{"id":"40"}}`, true},
		{`{"device_id":"d\"",` + tail + `}`, false},                   // escape in a needed string
		{`{"device\u005fid":"d",` + tail + `}`, false},                // escape in a key of a level read
		{`{"device_id":{"a":1},` + tail + `}`, false},                 // an object as text
		{`{"device_id":"d","site":[{"id":"x"}],` + tail + `}`, false}, // an array on a path
		{`{"device_id":"d",` + tail + `,"x":NaN}`, false},             // not strict JSON
		{`{"device_id":"d",` + tail + `,"temp":"abc"}`, true},         // the first "temp" is read
		{`{"device_id":"d","temp":"abc",` + tail + `}`, false},        // a value that does not convert
		{`[1]`, false},
	} {
		if got := p.(*plan).scan([]byte(tc.value), make([]codec.Value, len(fields))); got != tc.handled {
			t.Errorf("%s: handled by the scan %v, want %v", tc.value, got, tc.handled)
		}
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

// BenchmarkTreeSensor is the parsed tree's decode of a sensor record (fastjson's parse, the lookups
// of its fields and their conversion): what a record the scan does not map costs.
func BenchmarkTreeSensor(b *testing.B) {
	fields := sensorFields()
	p, _ := Codec{Tree: true}.Compile(nil, fields)
	v := []byte(`{"device_id":"dev-0042","ts":"2024-01-15T14:37:22.123Z","temp":21.5,"note":"x","site":{"id":7},"ok":true}`)
	out := make([]codec.Value, len(fields))
	var buf []byte
	b.ReportAllocs()
	b.SetBytes(int64(len(v)))
	for b.Loop() {
		var err error
		if buf, err = p.Decode(v, out, buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
}

// TestKeyPlanChecksTheNumbersItConverts: a value plan's parse checks every number of the document, so
// its conversions trust a JSON number's text; a key plan checks none, so its conversion must check the
// number it reads, even on a tree whose last parse was a value plan's (the trees are pooled). NaN is a
// number to fastjson and to strconv, not to JSON.
func TestKeyPlanChecksTheNumbersItConverts(t *testing.T) {
	field := []codec.Field{{Path: []string{"reading"}, Column: "reading", Type: packed.Scalar(packed.KDouble), Whole: true}}
	values, err := Codec{}.Compile(nil, field)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := Codec{Key: true}.Compile(nil, field)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]codec.Value, 1)
	for range 3 {
		// Through the tree (an escape the scan leaves to it): the tree's numbers are all checked.
		if _, err := values.Decode([]byte(`{"reading":2.5,"n\u0061me":"x"}`), out, nil); err != nil || out[0].F != 2.5 {
			t.Fatalf("value plan: %+v, %v; want 2.5", out[0], err)
		}
		if _, err := keys.Decode([]byte(`NaN`), out, nil); err != nil {
			t.Fatalf("key plan: %v", err)
		}
		if out[0].State != codec.Bad || out[0].Err == nil || out[0].Err.Plain != " is not a number for CQL double" {
			t.Fatalf("key NaN: %+v, want State Bad, not a number for CQL double", out[0])
		}
	}
}
