package mapper

import (
	"slices"
	"strconv"
	"strings"

	"github.com/bucketsink/sink/codec"
	jsonc "github.com/bucketsink/sink/codec/json"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/packed"
)

// Filters (topics.<name>.where): an entry maps only the records its filter takes. A record it does not
// take is this entry's skip, reason ReasonFiltered: committed and counted, never dead-lettered. The
// filter is judged before anything else of the record (mapRecord), from the record's JSON value and its
// Kafka key read as a JSON object (by JSON plans of the filter's own, each field read as text), and its
// headers; values are compared as text (config.Where).
//
// A value the filter cannot read as a JSON object (or a json_schema value whose framing is bad) is no
// reason to skip: the entry takes the record, and its own decoding refuses it as the bad input it is. A key that
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
	slot   int      // a value or key field's index in the filter's decoded fields
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

// filter is an entry's compiled filter: its tests, and the JSON plans that read the value's and the
// key's fields it tests (each field once, as text: a JSON string's text, any other value's JSON text).
type filter struct {
	root       *where
	value, key codec.Plan // nil when no test reads the value (the key)
	nvalue     int
	nkey       int
}

// compileFilter compiles a validated filter (config.Where) with the plans of its fields.
func compileFilter(w *config.Where) (*filter, error) {
	f := &filter{root: compileWhere(w)}
	var vfields, kfields []codec.Field
	index := map[string]int{}
	var walk func(w *where)
	walk = func(w *where) {
		for _, sub := range w.subs {
			walk(sub)
		}
		if w.subs != nil || w.from == fromHeader {
			return
		}
		list := &vfields
		if w.from == fromKey {
			list = &kfields
		}
		name := strconv.Itoa(int(w.from)) + "\x00" + strings.Join(w.path, ".")
		i, ok := index[name]
		if !ok {
			i = len(*list)
			index[name] = i
			*list = append(*list, codec.Field{Path: w.path, Column: "where", Type: packed.Scalar(kText)})
		}
		w.slot = i
	}
	walk(f.root)
	var err error
	if len(vfields) > 0 {
		if f.value, err = (jsonc.Codec{}).Compile(nil, vfields); err != nil {
			return nil, err
		}
	}
	if len(kfields) > 0 {
		if f.key, err = (jsonc.Codec{}).Compile(nil, kfields); err != nil {
			return nil, err
		}
	}
	f.nvalue, f.nkey = len(vfields), len(kfields)
	return f, nil
}

// whereScratch is what judging a filter reuses record after record: the decoded fields of the value
// and of the key, apart from the mapping's.
type whereScratch struct {
	value, key       []codec.Value
	valueBuf, keyBuf []byte
}

// whereInput is one record as a filter reads it; its value and key are decoded on first need.
type whereInput struct {
	rec       *Record
	codecName string
	f         *filter
	s         *whereScratch
	value     []codec.Value // nil until decoded, and when the key or value has no fields
	key       []codec.Value
	valueDone bool
	keyDone   bool
	bad       error // the value cannot be read as JSON: the entry takes the record and refuses it itself
}

// takes reports whether p's filter takes rec; when it does not, the error says why (ReasonFiltered).
func (p *plan) takes(rec *Record, s *scratch) error {
	if s.where == nil {
		s.where = &whereScratch{}
	}
	in := whereInput{rec: rec, codecName: p.codecName, f: p.where, s: s.where}
	if p.where.root.eval(&in) || in.bad != nil {
		return nil
	}
	// The values read are shown only where bad values are (Quoted: the dead letter, explain, quote_values).
	const head = "filtered out: the record does not pass where "
	return &codec.ValueError{Plain: head + p.where.root.describe(&in, false), Quoted: head + p.where.root.describe(&in, true)}
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
	var vals []codec.Value
	switch w.from {
	case fromHeader:
		b := header(in.rec, w.header)
		return b, b != nil
	case fromKey:
		vals = in.keyValues()
	default:
		vals = in.valueValues()
	}
	if vals == nil || vals[w.slot].State != codec.Set {
		return nil, false
	}
	return vals[w.slot].B, true
}

// valueValues are the value's fields the filter tests; nil for a tombstone, and for a value that is not
// a JSON object (in.bad then).
func (in *whereInput) valueValues() []codec.Value {
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
	in.s.value = slices.Grow(in.s.value[:0], in.f.nvalue)[:in.f.nvalue]
	var err error
	if in.s.valueBuf, err = in.f.value.Decode(body, in.s.value, in.s.valueBuf[:0]); err != nil {
		in.bad = err
		return nil
	}
	in.value = in.s.value
	return in.value
}

// keyValues are the key's fields the filter tests; nil when the key is not a JSON object.
func (in *whereInput) keyValues() []codec.Value {
	if in.keyDone {
		return in.key
	}
	in.keyDone = true
	if in.rec.Key == nil {
		return nil
	}
	in.s.key = slices.Grow(in.s.key[:0], in.f.nkey)[:in.f.nkey]
	var err error
	if in.s.keyBuf, err = in.f.key.Decode(in.rec.Key, in.s.key, in.s.keyBuf[:0]); err == nil {
		in.key = in.s.key
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
