package config

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// Where is a filter on an entry (topics.<name>.where): the entry maps only the records it takes; every
// other record is skipped by this entry, committed and counted in sink_records_skipped_total
// {reason="filtered"}, never dead-lettered. Several entries of one Kafka topic, each with its own
// filter, split one topic of several event types into one table per type.
//
// A Where is one of: a test of one value (exactly one of Field, Key or Header, with exactly one of
// Equals, OneOf or Exists); Not, the negation of another Where; All, every Where of a list; or Any,
// at least one of a list. Values are compared as text: a JSON string's text, any other JSON value as
// its JSON text (a number as written, true, false), a header's bytes as they are. A null field is
// absent.
type Where struct {
	Field  string `koanf:"field"`  // dot path into the record's decoded value (any codec)
	Key    string `koanf:"key"`    // dot path into the Kafka key: a JSON object (key_codec text), or decoded by a registry key codec
	Header string `koanf:"header"` // a record header's name; the first header of that name counts

	Equals *string  `koanf:"equals"` // the value's text is exactly this
	OneOf  []string `koanf:"one_of"` // the value's text is one of these
	Exists *bool    `koanf:"exists"` // true: the value is present and not null; false: it is absent or null

	Not *Where  `koanf:"not"`
	All []Where `koanf:"all"`
	Any []Where `koanf:"any"`
}

// maxWhereDepth bounds the nesting of not, all and any: a filter is a few tests, and a deeper
// one is a mistake in the file rather than a need.
const maxWhereDepth = 8

// validateWhere checks the filter w at path p of an entry t.
func validateWhere(v *validator, p string, t Topic, w *Where, depth int) {
	if depth > maxWhereDepth {
		v.add(p, "nested more than %d levels deep; a filter is a few tests", maxWhereDepth)
		return
	}
	var selectors, tests, groups []string
	for _, s := range []struct {
		set  bool
		name string
		into *[]string
	}{
		{w.Field != "", "field", &selectors}, {w.Key != "", "key", &selectors}, {w.Header != "", "header", &selectors},
		{w.Equals != nil, "equals", &tests}, {w.OneOf != nil, "one_of", &tests}, {w.Exists != nil, "exists", &tests},
		{w.Not != nil, "not", &groups}, {w.All != nil, "all", &groups}, {w.Any != nil, "any", &groups},
	} {
		if s.set {
			*s.into = append(*s.into, s.name)
		}
	}
	switch {
	case len(groups) > 0 && len(selectors)+len(tests)+len(groups) > 1:
		v.add(p, "has %s together; %s stands alone (put the other tests inside it, or in an all list)",
			strings.Join(append(append(selectors, tests...), groups...), ", "), groups[0])
		return
	case len(groups) == 1:
		switch {
		case w.Not != nil:
			validateWhere(v, p+".not", t, w.Not, depth+1)
		case w.All != nil:
			validateWhereList(v, p+".all", t, w.All, depth)
		default:
			validateWhereList(v, p+".any", t, w.Any, depth)
		}
		return
	case len(selectors) == 0 && len(tests) == 0:
		v.add(p, "is empty; test a value (field, key or header with equals, one_of or exists), or combine tests with not, all or any")
		return
	case len(selectors) != 1:
		if len(selectors) == 0 {
			v.add(p, "has %s but names no value to test; add field, key or header", tests[0])
		} else {
			v.add(p, "names %s; a test reads one value (combine tests with all or any)", strings.Join(selectors, " and "))
		}
		return
	case len(tests) != 1:
		if len(tests) == 0 {
			v.add(p, "names %s %q but has no test; add equals, one_of or exists", selectors[0], w.Field+w.Key+w.Header)
		} else {
			v.add(p, "has %s; a test has one of them (combine tests with all or any)", strings.Join(tests, " and "))
		}
		return
	}
	switch {
	case w.Field != "":
		if !fieldPathRE.MatchString(w.Field) {
			v.add(p+".field", "%q is not a field path; use names separated by dots, e.g. meta.type", w.Field)
		}
	case w.Key != "":
		if !fieldPathRE.MatchString(w.Key) {
			v.add(p+".key", "%q is not a field path into the Kafka key; use names separated by dots, e.g. tenant", w.Key)
		}
	}
	if w.OneOf != nil && len(w.OneOf) == 0 {
		v.add(p+".one_of", "an empty list, which no value is one of; list the values to take")
	}
}

// readsKey reports whether a test of w reads a field of the Kafka key.
func (w *Where) readsKey() bool {
	if w.Key != "" || (w.Not != nil && w.Not.readsKey()) {
		return true
	}
	for _, list := range [][]Where{w.All, w.Any} {
		for i := range list {
			if list[i].readsKey() {
				return true
			}
		}
	}
	return false
}

// validateWhereList checks the filters of an all or any list at path p.
func validateWhereList(v *validator, p string, t Topic, ws []Where, depth int) {
	if len(ws) == 0 {
		v.add(p, "an empty list; list the tests to combine")
	}
	for i := range ws {
		validateWhere(v, fmt.Sprintf("%s[%d]", p, i), t, &ws[i], depth+1)
	}
}

var whereType = reflect.TypeFor[*Where]()

// String spells w as a YAML flow mapping, as a file would: {field: type, equals: "click"}.
func (w *Where) String() string {
	var parts []string
	add := func(key, value string) { parts = append(parts, key+": "+value) }
	list := func(ws []Where) string {
		items := make([]string, len(ws))
		for i := range ws {
			items[i] = ws[i].String()
		}
		return "[" + strings.Join(items, ", ") + "]"
	}
	for _, s := range []struct{ key, value string }{{"field", w.Field}, {"key", w.Key}, {"header", w.Header}} {
		if s.value != "" {
			add(s.key, strconv.Quote(s.value))
		}
	}
	if w.Equals != nil {
		add("equals", strconv.Quote(*w.Equals))
	}
	if w.OneOf != nil {
		q := make([]string, len(w.OneOf))
		for i, v := range w.OneOf {
			q[i] = strconv.Quote(v)
		}
		add("one_of", "["+strings.Join(q, ", ")+"]")
	}
	if w.Exists != nil {
		add("exists", strconv.FormatBool(*w.Exists))
	}
	if w.Not != nil {
		add("not", w.Not.String())
	}
	if w.All != nil {
		add("all", list(w.All))
	}
	if w.Any != nil {
		add("any", list(w.Any))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
