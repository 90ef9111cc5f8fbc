package mapper

import (
	"errors"
	"strconv"
	"strings"

	"github.com/valyala/fastjson"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/config"
)

// Filters (topics.<name>.where): an entry maps only the records its filter takes. A record it does not
// take is this entry's skip, reason ReasonFiltered: committed and counted, never dead-lettered. The
// filter is judged before anything else of the record (mapRecord), from the record's JSON value, its
// Kafka key read as a JSON object, and its headers; values are compared as text (config.Where).
//
// A value the filter cannot read as JSON (or a json_schema value whose framing is bad) is no reason to
// skip: the entry takes the record, and its own decoding refuses it as the bad input it is. A key that
// is not a JSON object has no fields, as a tombstone's value has none.

// ReasonFiltered: the entry's where does not take the record; the pipeline skips it (a skip reason).
const ReasonFiltered = "filtered"

// Header is one Kafka record header.
type Header struct {
	Key   string
	Value []byte
}

// whereOp is what one node of a filter does.
type whereOp uint8

const (
	whereEquals whereOp = iota // also one_of: the value's text is one of values
	whereExists
	whereNot
	whereAll
	whereAny
)

// whereFrom is where a test reads its value.
type whereFrom uint8

const (
	fromValue whereFrom = iota
	fromKey
	fromHeader
)

// where is a compiled filter.
type where struct {
	op     whereOp
	from   whereFrom
	path   []string // a value or key field, split at its dots
	header string
	values []string // equals (one) or one_of
	exists bool
	subs   []*where // not (one), all, any
}

// compileWhere compiles a validated filter (config.Where).
func compileWhere(w *config.Where) *where {
	c := &where{}
	switch {
	case w.Not != nil:
		c.op, c.subs = whereNot, []*where{compileWhere(w.Not)}
		return c
	case w.All != nil, w.Any != nil:
		c.op = whereAll
		list := w.All
		if w.Any != nil {
			c.op, list = whereAny, w.Any
		}
		for i := range list {
			c.subs = append(c.subs, compileWhere(&list[i]))
		}
		return c
	}
	switch {
	case w.Field != "":
		c.from, c.path = fromValue, strings.Split(w.Field, ".")
	case w.Key != "":
		c.from, c.path = fromKey, strings.Split(w.Key, ".")
	default:
		c.from, c.header = fromHeader, w.Header
	}
	switch {
	case w.Exists != nil:
		c.op, c.exists = whereExists, *w.Exists
	case w.Equals != nil:
		c.values = []string{*w.Equals}
	default:
		c.values = w.OneOf
	}
	return c
}

// whereScratch is what judging a filter reuses record after record: parsers of its own, so that the
// trees of the value and the key live together and apart from the mapping's.
type whereScratch struct {
	value, key fastjson.Parser
	text       []byte
}

// whereInput is one record as a filter reads it; its value and key are parsed on first need.
type whereInput struct {
	rec        *Record
	codecName  string
	s          *whereScratch
	value, key *fastjson.Value
	valueDone  bool
	keyDone    bool
	bad        error // the value cannot be read as JSON: the entry takes the record and refuses it itself
}

// errWhereUndecidable stops a filter whose record's value is not JSON.
var errWhereUndecidable = errors.New("the value is not JSON")

// takes reports whether p's filter takes rec; when it does not, the error says why (ReasonFiltered).
func (p *plan) takes(rec *Record, s *scratch) error {
	if s.where == nil {
		s.where = &whereScratch{}
	}
	in := whereInput{rec: rec, codecName: p.codecName, s: s.where}
	if p.where.eval(&in) || in.bad != nil {
		return nil
	}
	// The values read are shown only where bad values are (Quoted: the dead letter, explain, quote_values).
	const head = "filtered out: the record does not pass where "
	return &codec.ValueError{Plain: head + p.where.describe(&in, false), Quoted: head + p.where.describe(&in, true)}
}

// eval judges w on in.
func (w *where) eval(in *whereInput) bool {
	switch w.op {
	case whereNot:
		return !w.subs[0].eval(in) && in.bad == nil
	case whereAll:
		for _, sub := range w.subs {
			if !sub.eval(in) || in.bad != nil {
				return false
			}
		}
		return true
	case whereAny:
		for _, sub := range w.subs {
			if sub.eval(in) || in.bad != nil {
				return in.bad == nil
			}
		}
		return false
	}
	text, ok := w.read(in)
	if w.op == whereExists {
		return ok == w.exists
	}
	if !ok {
		return false
	}
	for _, v := range w.values {
		if string(text) == v {
			return true
		}
	}
	return false
}

// read returns the text of the value a test reads, and false when it is absent or null.
func (w *where) read(in *whereInput) ([]byte, bool) {
	if w.from == fromHeader {
		b := header(in.rec, w.header)
		return b, b != nil
	}
	var root *fastjson.Value
	if w.from == fromKey {
		root = in.keyRoot()
	} else {
		root = in.valueRoot()
	}
	if root == nil {
		return nil, false
	}
	v := root.Get(w.path...)
	if v == nil || v.Type() == fastjson.TypeNull {
		return nil, false
	}
	if v.Type() == fastjson.TypeString {
		return v.GetStringBytes(), true
	}
	in.s.text = v.MarshalTo(in.s.text[:0])
	return in.s.text, true
}

// valueRoot is the record's value as a JSON object; nil for a tombstone, a value that is no object, or
// one that is not JSON at all (in.bad then).
func (in *whereInput) valueRoot() *fastjson.Value {
	if in.valueDone {
		return in.value
	}
	in.valueDone = true
	body := in.rec.Value
	if body == nil {
		return nil
	}
	if in.codecName == config.CodecJSONSchema {
		_, b, err := codec.Frame(body)
		if err != nil {
			in.bad = err
			return nil
		}
		body = b
	}
	v, err := in.s.value.ParseBytes(body)
	if err != nil {
		in.bad = errWhereUndecidable
		return nil
	}
	if v.Type() == fastjson.TypeObject {
		in.value = v
	}
	return in.value
}

// keyRoot is the record's Kafka key as a JSON object; nil when it is none.
func (in *whereInput) keyRoot() *fastjson.Value {
	if in.keyDone {
		return in.key
	}
	in.keyDone = true
	if v, err := in.s.key.ParseBytes(in.rec.Key); err == nil && v.Type() == fastjson.TypeObject {
		in.key = v
	}
	return in.key
}

// describe is w with what the record holds for each value it tests (quote: its text; else only whether
// it is present), for the message of a skip.
func (w *where) describe(in *whereInput, quote bool) string {
	switch w.op {
	case whereNot:
		return "not " + w.subs[0].describe(in, quote)
	case whereAll, whereAny:
		parts := make([]string, len(w.subs))
		for i, sub := range w.subs {
			parts[i] = sub.describe(in, quote)
		}
		join := " and "
		if w.op == whereAny {
			join = " or "
		}
		return "(" + strings.Join(parts, join) + ")"
	}
	var name string
	switch w.from {
	case fromValue:
		name = "field " + strconv.Quote(strings.Join(w.path, "."))
	case fromKey:
		name = "key field " + strconv.Quote(strings.Join(w.path, "."))
	default:
		name = "header " + strconv.Quote(w.header)
	}
	var test string
	switch {
	case w.op == whereExists && w.exists:
		test = "exists"
	case w.op == whereExists:
		test = "is absent"
	case len(w.values) == 1:
		test = "equals " + strconv.Quote(w.values[0])
	default:
		q := make([]string, len(w.values))
		for i, v := range w.values {
			q[i] = strconv.Quote(v)
		}
		test = "is one of " + strings.Join(q, ", ")
	}
	got := "absent"
	if text, ok := w.read(in); ok && quote {
		got = strconv.Quote(string(text))
	} else if ok {
		got = "present"
	}
	return name + " " + test + ": " + got
}
