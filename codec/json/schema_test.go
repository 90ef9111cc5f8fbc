package json

import (
	"errors"
	"strings"
	"testing"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/packed"
)

func schemaField(path, column, typ string) codec.Field {
	t, err := packed.ParseType(typ)
	if err != nil {
		panic(err)
	}
	return codec.Field{Path: strings.Split(path, "."), Column: column, Type: t}
}

// withTime is f in time format tf.
func withTime(f codec.Field, tf codec.TimeFormat) codec.Field {
	f.Time = tf
	return f
}

// readingFields are what a sensor topic reads: text, a nested int, a double, a uuid, a timestamp column, a
// list, a map, and the event time in RFC 3339.
func readingFields() []codec.Field {
	return []codec.Field{
		schemaField("device_id", "device_id", "text"),
		schemaField("site.id", "site", "int"),
		schemaField("temp", "temp", "double"),
		schemaField("uid", "uid", "uuid"),
		schemaField("seen", "seen", "timestamp"),
		schemaField("samples", "samples", "list<double>"),
		schemaField("tags", "tags", "map<text, text>"),
		{Path: []string{"ts"}, Type: packed.Scalar(packed.KTimestamp), Time: codec.TimeFormat{Form: codec.TimeRFC3339}}, // the event time
	}
}

// readingSchema declares every field of readingFields, the site through a local $ref.
const readingSchema = `{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "type": "object",
  "properties": {
    "device_id": {"type": "string"},
    "site": {"$ref": "#/definitions/Site"},
    "temp": {"type": ["number", "null"]},
    "uid": {"type": "string", "format": "uuid"},
    "seen": {"type": "integer"},
    "samples": {"type": "array", "items": {"type": "number"}},
    "tags": {"type": "object", "additionalProperties": {"type": "string"}},
    "ts": {"type": "string", "format": "date-time"}
  },
  "definitions": {"Site": {"type": "object", "properties": {"id": {"type": "integer"}}}}
}`

// The writer schema decides per schema id, as Avro's and Protobuf's do: what it does not declare, or
// declares with a type no conversion takes to the column, fails the plan with a *codec.SchemaError naming
// the field and the column; what it leaves open (combinators, free-form objects, no type) is accepted.
func TestWriterSchemaDecidesWhatItCanFeed(t *testing.T) {
	drop := func(prop string) string {
		return strings.Replace(readingSchema, `"`+prop+`": `, `"was_`+prop+`": `, 1)
	}
	cases := []struct {
		name, schema string
		fields       []codec.Field
		bad          string // the failing field's name, "" when the plan compiles
		why          string
	}{
		{"every field declared", readingSchema, readingFields(), "", ""},
		{"a field dropped", drop("temp"), readingFields(), "temp", `does not declare "temp" in its root object`},
		{"the event time dropped", drop("ts"), readingFields(), "ts", `does not declare "ts"`},
		{"a nested field dropped behind a $ref", strings.Replace(readingSchema, `{"id": {"type": "integer"}}`, `{"code": {"type": "integer"}}`, 1), readingFields(), "site.id", `does not declare "id" in "site"`},
		{"string into an int column", strings.Replace(readingSchema, `"id": {"type": "integer"}`, `"id": {"type": "string"}`, 1), readingFields(), "", ""},
		{"boolean into an int column", strings.Replace(readingSchema, `"id": {"type": "integer"}`, `"id": {"type": "boolean"}`, 1), readingFields(), "site.id", "declares it as boolean, which cannot feed CQL int"},
		{"number into a uuid column", strings.Replace(readingSchema, `"uid": {"type": "string", "format": "uuid"}`, `"uid": {"type": "number"}`, 1), readingFields(), "uid", "cannot feed CQL uuid"},
		{"integer as unix_days for a date", readingSchema, append(readingFields(), withTime(schemaField("seen", "day", "date"), codec.TimeFormat{Form: codec.TimeUnix, Unit: codec.Day})), "", ""},
		{"integer for a date in its default format", readingSchema, append(readingFields(), schemaField("seen", "day", "date")), "seen", "cannot feed CQL date"},
		{"integer for a timestamp in a layout", readingSchema, append(readingFields(), withTime(schemaField("seen", "at", "timestamp"), codec.TimeFormat{Form: codec.TimeLayout, Layout: "2006-01-02"})), "seen", "cannot feed CQL timestamp"},
		{"integer as the rfc3339 event time", strings.Replace(readingSchema, `"ts": {"type": "string", "format": "date-time"}`, `"ts": {"type": "integer"}`, 1), readingFields(), "ts", "cannot feed the event time"},
		{"string elements of a list<double>", strings.Replace(readingSchema, `"items": {"type": "number"}`, `"items": {"type": "object"}`, 1), readingFields(), "samples", "its elements"},
		{"a map column fed by an array", strings.Replace(readingSchema, `"tags": {"type": "object", "additionalProperties": {"type": "string"}}`, `"tags": {"type": "array"}`, 1), readingFields(), "tags", "cannot feed CQL map<text, text>"},
		{"null only", strings.Replace(readingSchema, `"temp": {"type": ["number", "null"]}`, `"temp": {"type": "null"}`, 1), readingFields(), "temp", "null only"},
		{"a nested path through a string", strings.Replace(readingSchema, `"site": {"$ref": "#/definitions/Site"}`, `"site": {"type": "string"}`, 1), readingFields(), "site.id", `declares "site" as string, not an object holding "id"`},
		{"no type: accepted", `{"type": "object", "properties": {"temp": {}, "ts": {"description": "when"}}}`,
			[]codec.Field{schemaField("temp", "temp", "double"), {Path: []string{"ts"}, Type: packed.Scalar(packed.KTimestamp)}}, "", ""},
		{"free-form object: accepted", `{"type": "object"}`, readingFields(), "", ""},
		{"empty schema: accepted", `{}`, readingFields(), "", ""},
		{"true schema: accepted", `true`, readingFields(), "", ""},
		{"additionalProperties false and undeclared", `{"type": "object", "additionalProperties": false, "properties": {"device_id": {"type": "string"}}}`,
			[]codec.Field{schemaField("temp", "temp", "double")}, "temp", `does not declare "temp"`},
		{"additionalProperties schema declares every name", `{"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "number"}}`,
			[]codec.Field{schemaField("temp", "temp", "double")}, "", ""},
		{"additionalProperties true declares every name, as {} does", `{"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": true}`,
			[]codec.Field{schemaField("temp", "temp", "double")}, "", ""},
		{"additionalProperties schema of the wrong type", `{"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "boolean"}}`,
			[]codec.Field{schemaField("temp", "temp", "double")}, "temp", "boolean"},
		{"patternProperties", `{"type": "object", "properties": {}, "patternProperties": {"^te": {"type": "number"}}}`,
			[]codec.Field{schemaField("temp", "temp", "double")}, "", ""},
		{"$defs and a $ref chain", `{"$ref": "#/$defs/R", "$defs": {"R": {"$ref": "#/$defs/S"}, "S": {"type": "object", "properties": {"temp": {"type": "number"}}}}}`,
			[]codec.Field{schemaField("temp", "temp", "double"), schemaField("gone", "gone", "text")}, "gone", `does not declare "gone"`},
		{"a $ref cycle is left to the records", `{"$ref": "#/$defs/A", "$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}}}`,
			readingFields(), "", ""},
		{"combinators branching into each other are walked in bounded time", `{"anyOf": [{"$ref": "#"}, {"$ref": "#"}], "oneOf": [{"$ref": "#"}, {"allOf": [{"$ref": "#"}, {"$ref": "#"}]}]}`,
			readingFields(), "", ""},
		{"a $ref to another document is left to the records", `{"type": "object", "properties": {"temp": {"$ref": "https://example.com/t.json"}}}`,
			[]codec.Field{schemaField("temp", "temp", "double")}, "", ""},
		{"allOf branches declare together", `{"allOf": [{"properties": {"temp": {"type": "number"}}}, {"properties": {"device_id": {"type": "string"}}}]}`,
			[]codec.Field{schemaField("temp", "temp", "double"), schemaField("device_id", "device_id", "text")}, "", ""},
		{"allOf declares neither", `{"allOf": [{"properties": {"temp": {"type": "number"}}}, {"properties": {"device_id": {"type": "string"}}}]}`,
			[]codec.Field{schemaField("gone", "gone", "text")}, "gone", `does not declare "gone"`},
		{"a field in one oneOf branch only: accepted", `{"type": "object", "oneOf": [{"properties": {"temp": {"type": "number"}}}, {"properties": {"other": {"type": "number"}}}]}`,
			[]codec.Field{schemaField("temp", "temp", "double")}, "", ""},
		{"a field in no oneOf branch", `{"type": "object", "oneOf": [{"properties": {"a": {"type": "number"}}}, {"properties": {"b": {"type": "number"}}}]}`,
			[]codec.Field{schemaField("temp", "temp", "double")}, "temp", `does not declare "temp"`},
		{"anyOf types: one branch feeds", `{"type": "object", "properties": {"temp": {"anyOf": [{"type": "null"}, {"type": "number"}]}}}`,
			[]codec.Field{schemaField("temp", "temp", "double")}, "", ""},
		{"anyOf types: no branch feeds", `{"type": "object", "properties": {"temp": {"anyOf": [{"type": "null"}, {"type": "boolean"}]}}}`,
			[]codec.Field{schemaField("temp", "temp", "double")}, "temp", "no branch of a combinator"},
		{"a false schema", `{"type": "object", "properties": {"temp": false}}`,
			[]codec.Field{schemaField("temp", "temp", "double")}, "temp", "allows no value"},
		{"a string-typed key read whole", `{"type": "string"}`,
			[]codec.Field{{Path: []string{"device_id"}, Column: "device_id", Type: packed.Scalar(packed.KText), Whole: true}}, "", ""},
		{"a boolean key read whole into a uuid", `{"type": "boolean"}`,
			[]codec.Field{{Path: []string{"device_id"}, Column: "device_id", Type: packed.Scalar(packed.KUUID), Whole: true}}, "device_id", "cannot feed CQL uuid"},
	}
	for _, c := range cases {
		_, err := Codec{}.Compile(&codec.Schema{ID: 41, Type: "JSON", Text: c.schema}, c.fields)
		if c.bad == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		var se *codec.SchemaError
		if !errors.As(err, &se) || se.SchemaID != 41 || se.Field != c.bad || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s: %v, want a *codec.SchemaError of schema id 41 for field %s saying %q", c.name, err, c.bad, c.why)
		}
	}
}

// A $ref into a schema the writer schema references (by the reference's name) is followed.
func TestWriterSchemaFollowsItsReferences(t *testing.T) {
	site := &codec.Schema{ID: 42, Type: "JSON", Text: `{"type": "object", "properties": {"id": {"type": "integer"}}}`}
	s := &codec.Schema{ID: 43, Type: "JSON", Text: `{"type": "object", "properties": {"site": {"$ref": "site.json"}}}`,
		References: []codec.Reference{{Name: "site.json", Subject: "site", Version: 1, Schema: site}}}
	if _, err := (Codec{}).Compile(s, []codec.Field{schemaField("site.id", "site", "int")}); err != nil {
		t.Fatal(err)
	}
	_, err := Codec{}.Compile(s, []codec.Field{schemaField("site.code", "site", "int")})
	var se *codec.SchemaError
	if !errors.As(err, &se) || se.Field != "site.code" {
		t.Fatalf("%v, want site.code undeclared", err)
	}
	if _, err := (Codec{}).Compile(&codec.Schema{ID: 44, Type: "JSON", Text: `{"type": "object",`}, readingFields()); !errors.As(err, &se) || se.Field != "" {
		t.Fatalf("%v, want a schema error of the whole schema", err)
	}
}

// if/then/else: a field declared in then or else is left to the records; one declared nowhere is not, an
// absent else adding nothing; a type given only by then decides nothing when else is absent.
func TestWriterSchemaIfThenElse(t *testing.T) {
	s := `{"type": "object", "properties": {"kind": {"type": "string"}},
	  "if": {"properties": {"kind": {"const": "t"}}}, "then": {"properties": {"temp": {"type": "boolean"}}}}`
	for _, c := range []struct {
		field codec.Field
		bad   bool
	}{
		{schemaField("temp", "temp", "double"), false},
		{schemaField("gone", "gone", "text"), true},
	} {
		_, err := Codec{}.Compile(&codec.Schema{ID: 45, Type: "JSON", Text: s}, []codec.Field{c.field})
		if (err != nil) != c.bad {
			t.Errorf("%s: %v, want refused %v", c.field.Name(), err, c.bad)
		}
	}
	// An object that declares properties only in then, with no else: a record the if does not match is
	// a free-form object, so a field named nowhere is left to the records, not refused.
	onlyThen := `{"type": "object", "if": {"properties": {"kind": {"const": "t"}}}, "then": {"properties": {"temp": {"type": "number"}}}}`
	if _, err := (Codec{}).Compile(&codec.Schema{ID: 45, Type: "JSON", Text: onlyThen}, []codec.Field{schemaField("gone", "gone", "text")}); err != nil {
		t.Errorf("a field named nowhere, properties declared only in then without else: %v, want it left to the records", err)
	}
	// With an else that declares properties too, every record meets one of them: a field named in
	// neither is refused, as for anyOf.
	both := strings.Replace(onlyThen, `}}}}`, `}}}, "else": {"properties": {"other": {"type": "number"}}}}`, 1)
	if _, err := (Codec{}).Compile(&codec.Schema{ID: 45, Type: "JSON", Text: both}, []codec.Field{schemaField("gone", "gone", "text")}); err == nil {
		t.Errorf("a field named in neither then nor else (%s): compiled, want refused", both)
	}
}

// FuzzWriterSchema: any schema text compiles or fails with a *codec.SchemaError, never a panic or a hang.
func FuzzWriterSchema(f *testing.F) {
	for _, s := range []string{readingSchema, `{}`, `true`, `{"$ref": "#"}`, `{"allOf": [{"$ref": "#"}]}`,
		`{"properties": {"site": {"anyOf": [{"$ref": "#/properties/site"}]}}}`, `{"$ref": "#/a~1b/0"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		_, err := Codec{}.Compile(&codec.Schema{ID: 46, Type: "JSON", Text: text}, readingFields())
		var se *codec.SchemaError
		if err != nil && !errors.As(err, &se) {
			t.Fatalf("%v is not a *codec.SchemaError", err)
		}
	})
}
