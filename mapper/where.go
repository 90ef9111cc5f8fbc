package mapper

import (
	"fmt"
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
// filter is judged before anything else of the record is mapped (before the event time and the
// columns), on the record's decoded value (the fields it tests are fields of the entry's decoding, or of
// the shared decoding of a Kafka topic read by several entries: the value is decoded once), its Kafka key
// (read as a JSON object under key_codec text, by the registry key codec otherwise) and its headers;
// values are compared as text (config.Where, codec.Field.AsText).
//
// A value that cannot be decoded (not a JSON object, a bad framing, a body that does not match its
// schema) is no reason to skip: the entry takes the record, and refuses it as the bad input it is. A key
// under key_codec text that is not a JSON object has no fields, as a tombstone's value has none; a
// registry-framed key that cannot be decoded is bad input (reason key).

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

// filter is an entry's compiled filter: its tests, and the value and key fields they read (each once, as
// text: codec.Field.AsText).
//
// The value's fields are fields of the entry's own decoding (plan.whereSlot), and of the shared one of a
// Kafka topic read by several entries (plan.sharedWhere): the value is decoded once, and the filter judged
// on what that gave. Only when a registry codec's writer schema cannot feed the entry's own plan (a
// column's field it lacks: a schema of another event type) does the filter decode the value by a plan of
// its fields alone (value), to tell a record it skips from one it refuses.
//
// The key's fields: under key_codec text, a JSON plan of the filter's own (key); under a registry key
// codec, fields of the entry's key decoding (plan.keyReg, plan.whereKey), which its key columns share.
type filter struct {
	root             *where
	vfields, kfields []codec.Field
	key              codec.Plan // key_codec text: the JSON plan of kfields; nil without key tests
	value            *decoder   // registry codecs: vfields alone, for a schema the entry's plan refuses
	change           codec.Plan // an envelope entry under codec json: vfields of the change event as written
	self             []int      // 0, 1, ...: the slots of vfields in value's own values
}

// compileFilter compiles a validated filter (config.Where) with the fields it reads; codecName is the
// entry's codec and keyCodec its key_codec.
func compileFilter(w *config.Where, codecName, keyCodec string) (*filter, error) {
	f := &filter{root: compileWhere(w)}
	index := map[string]int{}
	var walk func(w *where)
	walk = func(w *where) {
		for _, sub := range w.subs {
			walk(sub)
		}
		if w.subs != nil || w.from == fromHeader {
			return
		}
		list := &f.vfields
		if w.from == fromKey {
			list = &f.kfields
		}
		name := strconv.Itoa(int(w.from)) + "\x00" + strings.Join(w.path, ".")
		i, ok := index[name]
		if !ok {
			i = len(*list)
			index[name] = i
			*list = append(*list, codec.Field{Path: w.path, Column: "where", Type: packed.Scalar(kText), AsText: true})
		}
		w.slot = i
	}
	walk(f.root)
	if len(f.kfields) > 0 && !config.NeedsRegistry(keyCodec) {
		var err error
		if f.key, err = (jsonc.Codec{}).Compile(nil, f.kfields); err != nil {
			return nil, err
		}
	}
	for i := range f.vfields {
		f.self = append(f.self, i)
	}
	if len(f.vfields) > 0 && config.NeedsRegistry(codecName) {
		f.value = &decoder{fields: f.vfields}
		if !f.value.setCodec(codecName, false) {
			return nil, fmt.Errorf("codec %s has no decoder in this build", codecName)
		}
	}
	return f, nil
}

// whereScratch is what judging a filter reuses record after record: the key's fields read as text
// (key_codec text), and the value's when the filter decodes them alone.
type whereScratch struct {
	key, value       []codec.Value
	keyBuf, valueBuf []byte
}

// whereInput is one record as a filter reads it: the value's decoded fields (vals at vslots), the key's
// decoded on first need.
type whereInput struct {
	f     *filter
	rec   *Record
	s     *scratch
	vals  []codec.Value // nil for a tombstone (no fields), and when the value is unreadable
	slots []int         // vfields[i] is vals[slots[i]]
	// unreadable: the value could not be decoded; a test of a value field then cannot be judged, and the
	// entry takes the record, which its own decoding refuses as the bad input it is.
	unreadable bool
	key        []codec.Value
	keySlots   []int
	keyDone    bool
	bad        bool // a test read the unreadable value or key: judging stops, and the entry takes the record
	keyBad     bool // the key cannot be decoded by the registry key codec
}

// stopped: a test could not be judged (the value is unreadable, or the key cannot be decoded), so
// judging ends.
func (in *whereInput) stopped() bool { return in.bad }

// eval judges w on in.
func (w *where) eval(in *whereInput) bool {
	switch w.op {
	case whereNot:
		return !w.subs[0].eval(in) && !in.stopped()
	case whereAll:
		for _, sub := range w.subs {
			if !sub.eval(in) || in.stopped() {
				return false
			}
		}
		return true
	case whereAny:
		for _, sub := range w.subs {
			if sub.eval(in) || in.stopped() {
				return !in.stopped()
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
	var v *codec.Value
	switch w.from {
	case fromHeader:
		b := header(in.rec, w.header)
		return b, b != nil
	case fromKey:
		vals := in.keyValues()
		if vals == nil {
			return nil, false
		}
		v = &vals[w.slot]
		if in.keySlots != nil {
			v = &vals[in.keySlots[w.slot]]
		}
	default:
		if in.unreadable {
			in.bad = true
			return nil, false
		}
		if in.vals == nil {
			return nil, false
		}
		v = &in.vals[in.slots[w.slot]]
	}
	if v.State != codec.Set {
		return nil, false
	}
	return v.B, true
}

// keyValues are the key's decoded fields the filter reads (at keySlots under a registry key codec, which
// judge decodes first); nil when the key has none (no key, or under key_codec text a key that is not a
// JSON object), and when a registry-framed key cannot be decoded (keyBad: the test stops judging).
func (in *whereInput) keyValues() []codec.Value {
	if in.keyDone {
		if in.keyBad {
			in.bad = true
		}
		return in.key
	}
	in.keyDone = true
	if in.rec.Key == nil {
		return nil
	}
	if in.s.where == nil {
		in.s.where = &whereScratch{}
	}
	ws, f := in.s.where, in.f
	ws.key = slices.Grow(ws.key[:0], len(f.kfields))[:len(f.kfields)]
	var err error
	if ws.keyBuf, err = f.key.Decode(in.rec.Key, ws.key, ws.keyBuf[:0]); err == nil {
		in.key = ws.key
	}
	return in.key
}

// compileChange readies the filter of an envelope entry (codec codecName), which reads the change event as
// written (op, after.status; payload.op under JsonConverter's schema part), not the row image an entry maps:
// under codec json a JSON plan of the filter's value fields; under a registry codec its plan of them alone
// (value), one per writer schema id.
func (f *filter) compileChange(codecName string) error {
	if len(f.vfields) == 0 || config.NeedsRegistry(codecName) {
		return nil
	}
	var err error
	f.change, err = (jsonc.Codec{}).Compile(nil, f.vfields)
	return err
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
