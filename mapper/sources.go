package mapper

import (
	"strconv"

	"github.com/bucketsink/sink/codec"
	jsonc "github.com/bucketsink/sink/codec/json"
)

// Column sources beyond the record's value: a record header (config.SourceHeader) and the Kafka key
// (config.SourceKey).
//
// A header column's value is the first header of its name. Blob takes its bytes as they are, and every
// other type its text as a JSON string value of a field would be (codec/json's DecodeString: text as
// is, numeric strings for numbers, RFC 3339 or epoch milliseconds for a timestamp, and so on), so a
// header and a field of one type convert alike and fail alike. A record without the header leaves the
// column unset, or is bad input for a column that needs a value.
//
// A key column takes the key's whole text the same way, or with a field, that field of the key read as
// a JSON object (key_codec text) by a JSON plan of its own (keyPlan), converted as the same field of
// the value would be. No key, a key that is not a JSON object, or a missing or null field is a missing
// value, with the header's consequences.

// sourceScratch is what header and key columns convert into, reused record after record.
type sourceScratch struct {
	buf  []byte
	vals [1]codec.Value
}

// compileKeyPlan gives a column of source key with a field the JSON plan that reads it from the key.
func (c *column) compileKeyPlan() error {
	if c.source != srcKey || c.path == nil {
		return nil
	}
	var err error
	c.keyPlan, err = jsonc.Codec{}.Compile(nil, []codec.Field{c.codecField()})
	return err
}

// headerOrKeyValue writes the value of column c (source header or key) to s.w.
func (p *plan) headerOrKeyValue(c *column, rec *Record, s *scratch) error {
	if s.src == nil {
		s.src = &sourceScratch{}
	}
	v := &s.src.vals[0]
	*v = codec.Value{}
	b := rec.Key
	if c.source == srcHeader {
		b = header(rec, c.header)
	}
	switch {
	case b == nil: // absent
	case c.source == srcHeader && c.typ.kind == kBlob:
		s.putWire(c, b)
		return nil
	case c.keyPlan != nil:
		var err error
		if s.src.buf, err = c.keyPlan.Decode(b, s.src.vals[:], s.src.buf[:0]); err != nil {
			*v = codec.Value{} // a key that is not a JSON object has no fields
		}
	default:
		f := c.codecField()
		s.src.buf = jsonc.DecodeString(&f, b, v, s.src.buf[:0])
	}
	return p.decodedValue(c, v, s)
}

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

// subject names where column c's value comes from, for messages: field "a.b", header "NAME", key
// field "a.b" or the Kafka key.
func (c *column) subject() string {
	switch {
	case c.source == srcHeader:
		return "header " + strconv.Quote(c.header)
	case c.source == srcKey && c.path == nil:
		return "the Kafka key"
	case c.source == srcKey:
		return "key field " + strconv.Quote(c.field)
	case c.source == srcChange:
		return "change field " + strconv.Quote(c.field)
	}
	return "field " + strconv.Quote(c.field)
}

// from is explain's Value.From of column c: where its value came from when that is not the record's
// value.
func (c *column) from() string {
	if c.source == srcHeader || c.source == srcKey {
		return c.subject()
	}
	return ""
}
