package mapper

import (
	"strconv"

	"github.com/valyala/fastjson"
)

// Column sources beyond the record's value: a record header (config.SourceHeader).
//
// A header column's value is the first header of its name. Text, varchar and ascii take its bytes as
// text, blob as they are, and every other type its text as a JSON string value of a field would be
// (value's conversions: numeric strings for numbers, RFC 3339 or epoch milliseconds for a timestamp, and
// so on), so a header and a field of one type convert alike and fail alike. A record without the header
// leaves the column unset, or is bad input for a column that needs a value.

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

// subject names where column c's value comes from, for messages: field "a.b" or header "NAME".
func (c *column) subject() string {
	if c.source == srcHeader {
		return "header " + strconv.Quote(c.header)
	}
	return "field " + strconv.Quote(c.field)
}

// from is explain's Value.From of column c: where its value came from when that is not the record's
// value.
func (c *column) from() string {
	if c.source == srcHeader {
		return c.subject()
	}
	return ""
}
