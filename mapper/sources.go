package mapper

import (
	"strconv"

	"github.com/valyala/fastjson"
)

// Column sources beyond the record's value: a record header (config.SourceHeader) and the Kafka key
// (config.SourceKey).
//
// A header column's value is the first header of its name. Text, varchar and ascii take its bytes as
// text, blob as they are, and every other type its text as a JSON string value of a field would be
// (value's conversions: numeric strings for numbers, RFC 3339 or epoch milliseconds for a timestamp, and
// so on), so a header and a field of one type convert alike and fail alike. A record without the header
// leaves the column unset, or is bad input for a column that needs a value.
//
// A key column takes the key's whole text, converted as a JSON string value is, or with a field, that
// field of the key read as a JSON object (key_codec text), converted as the same field of the value
// would be. No key, a key that is not a JSON object, or a missing or null field is a missing value, with
// the header's consequences. The key is parsed by a parser of its own, as the value's tree is live
// while the columns convert.

// headerValue returns the header of column c (source header) as a JSON string for value's conversions,
// in s.arena (reset: the previous header's value is converted already); nil when the record has no such
// header. A blob takes the header's bytes as they are: headerValue writes them and says it is done.
func headerValue(c *column, rec *Record, s *scratch) (v *fastjson.Value, done bool) {
	b := header(rec, c.header)
	switch {
	case b == nil:
		return nil, false
	case c.typ.kind == kBlob:
		s.putWire(c, b)
		return nil, true
	}
	s.arena.Reset()
	return s.arena.NewStringBytes(b), false
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

// keyValue returns the value column c (source key) takes from the record's key; nil when it has none.
func keyValue(c *column, rec *Record, s *scratch) *fastjson.Value {
	if rec.Key == nil {
		return nil
	}
	if c.path == nil {
		s.arena.Reset()
		return s.arena.NewStringBytes(rec.Key)
	}
	if s.where == nil {
		s.where = &whereScratch{}
	}
	root, err := s.where.key.ParseBytes(rec.Key)
	if err != nil || root.Type() != fastjson.TypeObject {
		return nil
	}
	return root.Get(c.path...)
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
