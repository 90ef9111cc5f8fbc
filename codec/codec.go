package codec

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/bucketsink/sink/packed"
)

// Codec compiles decode plans for one wire format. A Codec is stateless and safe for concurrent
// use; the mapper caches the plans it returns per (topic, schema id).
type Codec interface {
	// Compile builds the plan that decodes values written with schema s into fields. s is nil
	// for a format without a registry (plain JSON). An error of a field the schema cannot feed is
	// a *SchemaError; any other error is too (the schema itself cannot be read).
	Compile(s *Schema, fields []Field) (Plan, error)
}

// Plan decodes the bodies of one writer schema. A Plan is immutable and safe for concurrent use.
type Plan interface {
	// Decode reads body (the value after its framing) and sets out[i] for fields[i] of Compile;
	// len(out) == len(fields). buf is scratch memory the plan may append to and returns, reused
	// by the caller record after record; a Value's B aliases body or buf. Its errors are *Error.
	Decode(body []byte, out []Value, buf []byte) ([]byte, error)
}

// Field is one value the mapper needs from a record.
type Field struct {
	Path   []string    // the configured dot path, split at its dots: field: site.id is {"site", "id"}
	Column string      // the column it feeds, for messages; "" for the event time
	Type   packed.Type // the CQL type the value must feed (KTimestamp for the event time)
	// Time is how a timestamp or date spells itself when its writer schema does not say (text, or an
	// integer that is no timestamp logical type): the column's format, or the event time's. A value
	// whose schema says what it is (Avro timestamp-micros, a Protobuf Timestamp) ignores it.
	Time TimeFormat
	// Whole: when the writer schema is not a record (an Avro primitive such as "string" or "long",
	// the usual form of a Kafka key), the whole value is this field's, whatever its Path. A record
	// schema is read along Path as ever. Only the lone field of a plan may set it.
	Whole bool
	// AsText: the value is read as a filter (topics.<name>.where) compares it, as text, whatever its
	// scalar type: a string or an enum's symbol as it is, an integer in decimal, a boolean as true or
	// false, a float or double in the shortest form that reads back exactly (strconv 'g', -1). Type is
	// text. JSON's text already reads any value as its JSON text.
	AsText bool
}

// Name is the field's configured dot path.
func (f *Field) Name() string { return strings.Join(f.Path, ".") }

// Wire reports whether a value of type t is handed over as its CQL wire bytes (Value.B) rather
// than as a typed cell: boolean, blob, inet, decimal, varint and the collections. text and ascii
// hand over their bytes in B too, which are also their wire bytes.
func Wire(t packed.Type) bool {
	k := t.Kind
	return k != packed.KText && k != packed.KASCII && (packed.Width(k) == 0 || k == packed.KBoolean)
}

// State says whether a record has a field's value.
type State uint8

const (
	// Absent: the record has no value for the field (an Avro union on its null branch is Null).
	Absent State = iota
	// Null: the record says null (Avro's null branch, JSON's null).
	Null
	// Set: the Value holds the field's value, converted for its Field.Type.
	Set
	// Bad: the record holds a value for the field that does not fit its column; Value.Err says why, in
	// words that follow the field's subject (`column c: field "f"`, `event time: field "f"`; ValueError.At).
	// The JSON codec reports a bad value this way, so that the mapper says first what it checks first
	// (the event time, the accept window, then the columns in order); the other codecs return a bad value
	// as Decode's *Error.
	Bad
)

// Value is one decoded field, converted for the CQL type of its Field. Only the member of the
// type's kind is set:
//
//   - text, ascii: B, valid UTF-8 (ASCII for ascii);
//   - tinyint, smallint, int, bigint: N, in range for the kind;
//   - float, double: F (in range for float32 for float);
//   - timestamp, date: T, in UTC, years 0000 to 9999 (a date at midnight);
//   - uuid, timeuuid: U;
//   - every kind Wire reports: B, the value's CQL wire bytes for the Field.Type.
//
// Err is set with State Bad only.
type Value struct {
	State State
	N     int64
	F     float64
	T     time.Time
	U     [16]byte
	B     []byte
	Err   *ValueError
}

// Reasons of the errors of this package; they are also dead-letter reasons.
const (
	ReasonDecode = "decode" // the bytes are not a value of the writer schema, or their framing is bad
	ReasonMap    = "map"    // a value does not fit its column
	ReasonSchema = "schema" // the writer schema cannot feed a configured field, or the registry has no such schema
)

// Error is a record that cannot be decoded (ReasonDecode) or one of whose values does not fit its
// column (ReasonMap).
type Error struct {
	Reason string
	Field  string // the field's dot path; "" when the error is not about one field
	Column string // the column it feeds; "" for the event time or when Field is ""
	Err    error
}

func (e *Error) Error() string {
	switch {
	case e.Field == "":
		return e.Err.Error()
	case e.Column == "":
		return fmt.Sprintf("event time: field %q: %v", e.Field, e.Err)
	}
	return fmt.Sprintf("column %s: field %q: %v", e.Column, e.Field, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Decodef is an *Error with ReasonDecode about the record as a whole.
func Decodef(format string, args ...any) error {
	return &Error{Reason: ReasonDecode, Err: fmt.Errorf(format, args...)}
}

// SchemaError is a writer schema that cannot feed a configured field: the field is missing, or
// its type cannot feed the column. Every record written with that schema is dead-lettered with
// reason schema and this message.
type SchemaError struct {
	SchemaID int
	Field    string // the field's dot path; "" when the schema as a whole cannot be read
	Column   string // "" for the event time
	Err      error
}

func (e *SchemaError) Error() string {
	id := "schema id " + strconv.Itoa(e.SchemaID)
	switch {
	case e.Field == "":
		return id + ": " + e.Err.Error()
	case e.Column == "":
		return fmt.Sprintf("%s, event time field %q: %v", id, e.Field, e.Err)
	}
	return fmt.Sprintf("%s, field %q (column %s): %v", id, e.Field, e.Column, e.Err)
}

func (e *SchemaError) Unwrap() error { return e.Err }

// Schema is a writer schema as the registry holds it, with the schemas it references.
type Schema struct {
	ID         int
	Type       string // "AVRO", "PROTOBUF" or "JSON", as the registry says
	Text       string
	References []Reference
}

// Reference is a schema another schema refers to, under the name it uses (an import path for
// Protobuf, a full name for Avro).
type Reference struct {
	Name    string
	Subject string
	Version int
	Schema  *Schema
}

// Registry fetches writer schemas by id, with their references resolved.
type Registry interface {
	// Schema returns the schema of id. Its error wraps ErrUnknownSchema when the registry has no
	// such id, and is an *UnavailableError when the registry could not be asked or did not answer.
	Schema(ctx context.Context, id int) (*Schema, error)
}

// ErrUnknownSchema: the registry answered that it has no schema with the id (HTTP 404).
var ErrUnknownSchema = errors.New("the schema registry has no schema with this id")

// UnavailableError: the registry could not be reached or failed to answer. It is not the record's
// fault: the caller waits and asks again.
type UnavailableError struct{ Err error }

func (e *UnavailableError) Error() string { return "schema registry unavailable: " + e.Err.Error() }
func (e *UnavailableError) Unwrap() error { return e.Err }

// ValueError is a value of a record that does not fit its column, said two ways: Plain, its Error, says
// what is wrong without the value or a map key (logs are kept longer and read by more people than the
// data); Quoted says it with them, for the dead letter (which carries the record anyway) and for logs
// when log.quote_values asks. The two forms differ only where the value is shown, so that the message of
// an error wrapping one is turned into its quoted form by replacing Plain with Quoted (the function
// Quoted).
type ValueError struct{ Plain, Quoted string }

func (e *ValueError) Error() string { return e.Plain }

// At is e said of the value at subject: subject, then e's words (which begin with the space or the
// word that joins them to it).
func (e *ValueError) At(subject string) *ValueError {
	return &ValueError{Plain: subject + e.Plain, Quoted: subject + e.Quoted}
}

// BadValue is the ValueError "the value is <reason>", quoted "<shown> is <reason>".
func BadValue(shown, reason string) *ValueError {
	return &ValueError{Plain: "the value is " + reason, Quoted: shown + " is " + reason}
}

// Quoted returns err's message with the bad value shown, where err wraps a *ValueError; for any other
// error, its message.
func Quoted(err error) string {
	if err == nil {
		return ""
	}
	msg := err.Error()
	var ve *ValueError
	if errors.As(err, &ve) {
		return strings.Replace(msg, ve.Plain, ve.Quoted, 1)
	}
	return msg
}
