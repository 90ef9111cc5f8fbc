package json

import (
	stdjson "encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/packed"
)

// The writer schema of a json_schema topic decides, once per schema id as Avro's and Protobuf's do,
// whether it can feed the topic's fields: a schema version that no longer declares a configured field,
// or declares it with a type no conversion takes to its column, fails the plan (reason schema) instead
// of writing rows with the column unset or dead-lettering record by record. What the schema does not
// say is left to the records (each value is converted, or refused, as plain JSON's is):
//
//   - a field is declared by `properties`, a matching `patternProperties`, or an `additionalProperties`
//     schema, in the object itself, through `$ref`s (local ones, `#/definitions/...`, `#/$defs/...`,
//     any JSON pointer, and the schema's references by name) and in every `allOf` branch;
//   - a field declared only in a branch of `anyOf`, `oneOf` or `if`/`then`/`else` is accepted, and
//     checked per record; so is any field of an object that declares no properties at all (`{}`,
//     `{"type": "object"}`), and anything behind a `$ref` that cannot be resolved here;
//   - a declared `type` (or list of types, `null` aside) must include one the column's conversion
//     takes: any for text and ascii; integer, number or string for the numeric columns; boolean or
//     string for boolean; string for date, uuid, timeuuid, blob and inet; string, integer or number for
//     timestamp (string only for an rfc3339 event time); array for a list or set, object for a map,
//     and their `items` or `additionalProperties` the element's; a property with no `type` is accepted;
//     in an `anyOf` or `oneOf` one branch must take it;
//   - on the way to a nested field, a declared type must include object.

// maxSchemaHops bounds the `$ref`s and combinators followed from one place of a schema: a cycle stops
// there, and what lies beyond is taken as not said. maxSchemaSteps bounds the places visited in all, for
// schemas whose combinators branch into each other (`{"anyOf": [{"$ref": "#"}, {"$ref": "#"}]}` would
// otherwise take 2^64 steps): past it, nothing more is decided.
const (
	maxSchemaHops  = 64
	maxSchemaSteps = 1 << 16
)

// checkWriterSchema returns the *codec.SchemaError of the first field s cannot feed, nil when it can
// feed them all.
func checkWriterSchema(s *codec.Schema, fields []codec.Field) error {
	c := &schemaChecker{docs: map[string]*schemaDoc{}, steps: maxSchemaSteps}
	main, err := parseSchemaDoc(s.Text)
	if err != nil {
		return &codec.SchemaError{SchemaID: s.ID, Err: fmt.Errorf("the writer schema is not JSON: %w", err)}
	}
	c.addReferences(s.References, 0)
	for i := range fields {
		f := &fields[i]
		if why := c.field(schemaNode{v: main.root, doc: main}, f, 0, 0); why != "" {
			return &codec.SchemaError{SchemaID: s.ID, Field: f.Name(), Column: f.Column, Err: errors.New(why)}
		}
	}
	return nil
}

type schemaDoc struct{ root any }

func parseSchemaDoc(text string) (*schemaDoc, error) {
	var root any
	if err := stdjson.Unmarshal([]byte(text), &root); err != nil {
		return nil, err
	}
	return &schemaDoc{root: root}, nil
}

// schemaNode is a place in a schema: its value (an object or a boolean schema) and the document its
// local `$ref`s resolve in.
type schemaNode struct {
	v   any
	doc *schemaDoc
}

type schemaChecker struct {
	docs  map[string]*schemaDoc // the schema's references, by name
	steps int                   // places left to visit
}

func (c *schemaChecker) addReferences(refs []codec.Reference, depth int) {
	if depth > maxSchemaHops {
		return
	}
	for _, r := range refs {
		if r.Schema == nil || c.docs[r.Name] != nil {
			continue
		}
		if d, err := parseSchemaDoc(r.Schema.Text); err == nil {
			c.docs[r.Name] = d
		}
		c.addReferences(r.Schema.References, depth+1)
	}
}

// resolve finds the target of ref from doc: a JSON pointer in doc (`#`, `#/definitions/x`) or in a
// referenced schema (`name`, `name#/...`); false when it is anything else.
func (c *schemaChecker) resolve(doc *schemaDoc, ref string) (schemaNode, bool) {
	name, ptr, _ := strings.Cut(ref, "#")
	if name != "" {
		if doc = c.docs[name]; doc == nil {
			return schemaNode{}, false
		}
	}
	v := doc.root
	if ptr == "" {
		return schemaNode{v: v, doc: doc}, true
	}
	if ptr[0] != '/' {
		return schemaNode{}, false // an anchor
	}
	for _, seg := range strings.Split(ptr[1:], "/") {
		if u, err := url.PathUnescape(seg); err == nil {
			seg = u
		}
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[seg]; !ok {
				return schemaNode{}, false
			}
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(x) {
				return schemaNode{}, false
			}
			v = x[i]
		default:
			return schemaNode{}, false
		}
	}
	return schemaNode{v: v, doc: doc}, true
}

// schemaView is what applies at one place of a schema: the objects that all apply (the place itself,
// its `$ref`s' targets, its `allOf` branches), the groups of which one branch applies (`anyOf`, `oneOf`,
// `then`/`else`), whether no value is allowed (`false`), and whether some of it could not be read
// (then nothing is decided there).
type schemaView struct {
	parts   []schemaNode
	alts    []altGroup
	never   bool
	unknown bool
}

// altGroup is a group of branches of which one applies; partial when none may (an `if` with only one of
// `then` and `else`), so the group's types decide nothing.
type altGroup struct {
	branches []schemaNode
	partial  bool
}

func (c *schemaChecker) view(n schemaNode, hops int) schemaView {
	var vw schemaView
	c.collect(n, hops, &vw)
	return vw
}

func (c *schemaChecker) collect(n schemaNode, hops int, vw *schemaView) {
	c.steps--
	if hops > maxSchemaHops || c.steps < 0 {
		vw.unknown = true
		return
	}
	switch v := n.v.(type) {
	case bool:
		vw.never = vw.never || !v
		return
	case map[string]any:
		vw.parts = append(vw.parts, n)
		if ref, ok := v["$ref"].(string); ok {
			t, ok := c.resolve(n.doc, ref)
			if !ok {
				vw.unknown = true
				return
			}
			c.collect(t, hops+1, vw)
		}
		for _, b := range schemaList(v["allOf"]) {
			c.collect(schemaNode{v: b, doc: n.doc}, hops+1, vw)
		}
		for _, key := range []string{"anyOf", "oneOf"} {
			if bs := schemaList(v[key]); len(bs) > 0 {
				group := altGroup{branches: make([]schemaNode, len(bs))}
				for i, b := range bs {
					group.branches[i] = schemaNode{v: b, doc: n.doc}
				}
				vw.alts = append(vw.alts, group)
			}
		}
		if _, ok := v["if"]; ok {
			// then applies, or else; one left out adds nothing where it would apply.
			var group altGroup
			for _, key := range []string{"then", "else"} {
				if b, ok := v[key]; ok {
					group.branches = append(group.branches, schemaNode{v: b, doc: n.doc})
				} else {
					group.partial = true
				}
			}
			if len(group.branches) > 0 {
				vw.alts = append(vw.alts, group)
			}
		}
	default:
		vw.unknown = true
	}
}

func schemaList(v any) []any {
	l, _ := v.([]any)
	return l
}

// schemaTypes is the set of types a schema object declares (`type`, a name or a list of names), null
// aside; ok is false when it declares none.
func schemaTypes(m map[string]any) (types []string, nullOnly, ok bool) {
	switch t := m["type"].(type) {
	case string:
		if t == "null" {
			return nil, true, true
		}
		return []string{t}, false, true
	case []any:
		for _, x := range t {
			if s, isStr := x.(string); isStr && s != "null" {
				types = append(types, s)
			}
		}
		return types, len(types) == 0, true
	}
	return nil, false, false
}

// lookupResult is what a view says of one property name.
type lookupResult uint8

const (
	propMissing lookupResult = iota // not declared: no record can hold it by this schema
	propFound                       // declared: subs are the schemas that all apply to it
	propOpen                        // not decided here: a branch of a combinator, a free-form object
)

// lookup finds property name in vw.
func (c *schemaChecker) lookup(vw schemaView, name string, hops int) ([]schemaNode, lookupResult) {
	if vw.unknown {
		return nil, propOpen
	}
	var subs, additional []schemaNode
	declares, unreadable := false, false
	for _, p := range vw.parts {
		m := p.v.(map[string]any)
		if props, ok := m["properties"].(map[string]any); ok {
			declares = true
			if s, ok := props[name]; ok {
				subs = append(subs, schemaNode{v: s, doc: p.doc})
			}
		}
		if pats, ok := m["patternProperties"].(map[string]any); ok {
			declares = true
			for pat, s := range pats {
				re, err := regexp.Compile(pat)
				switch {
				case err != nil:
					unreadable = true // an ECMA 262 pattern Go's regexp does not read
				case re.MatchString(name):
					subs = append(subs, schemaNode{v: s, doc: p.doc})
				}
			}
		}
		if a, ok := m["additionalProperties"]; ok {
			declares = true
			// A schema: an object, or true (which is {}); false declares no other name.
			if _, isMap := a.(map[string]any); isMap || a == true {
				additional = append(additional, schemaNode{v: a, doc: p.doc})
			}
		}
	}
	if len(subs) > 0 {
		return subs, propFound
	}
	for _, group := range vw.alts {
		for _, b := range group.branches {
			if _, r := c.lookup(c.view(b, hops+1), name, hops+1); r != propMissing {
				return nil, propOpen
			}
		}
	}
	switch {
	case unreadable:
		return nil, propOpen
	case len(additional) > 0:
		return additional, propFound
	case !declares && !wholeGroup(vw.alts):
		// An object that declares no property says nothing of them; nor does a group of which
		// no branch may apply (an if with no else), whose branches alone declare some.
		return nil, propOpen
	}
	return nil, propMissing
}

// wholeGroup reports whether one of groups is not partial: one of its branches applies to every value.
func wholeGroup(groups []altGroup) bool {
	for _, g := range groups {
		if !g.partial {
			return true
		}
	}
	return false
}

// field says why the schema at n cannot feed f from f.Path[depth:], "" when it can or does not say.
func (c *schemaChecker) field(n schemaNode, f *codec.Field, depth, hops int) string {
	vw := c.view(n, hops)
	if vw.unknown {
		return ""
	}
	if vw.never {
		return "the writer schema allows no value there (a false schema)"
	}
	if depth == len(f.Path) || f.Whole && depth == 0 && !mayBeObject(vw) {
		return c.feeds(vw, f.Type, f, hops)
	}
	name := f.Path[depth]
	for _, p := range vw.parts {
		if types, nullOnly, ok := schemaTypes(p.v.(map[string]any)); ok && (nullOnly || !contains(types, "object")) {
			return fmt.Sprintf("the writer schema declares %s as %s, not an object holding %q", where(f, depth), typeNames(types, nullOnly), name)
		}
	}
	subs, r := c.lookup(vw, name, hops)
	switch r {
	case propOpen:
		return ""
	case propMissing:
		return fmt.Sprintf("the writer schema does not declare %q in %s", name, where(f, depth))
	}
	for _, s := range subs {
		if why := c.field(s, f, depth+1, hops+1); why != "" {
			return why
		}
	}
	return ""
}

// feeds says why the value vw describes cannot feed a column of type t (f's, or its element's).
func (c *schemaChecker) feeds(vw schemaView, t packed.Type, f *codec.Field, hops int) string {
	if vw.unknown {
		return ""
	}
	if vw.never {
		return "the writer schema allows no value there (a false schema)"
	}
	what := "CQL " + t.String()
	if f.Column == "" {
		what = "the event time"
	}
	for _, p := range vw.parts {
		m := p.v.(map[string]any)
		types, nullOnly, ok := schemaTypes(m)
		if !ok {
			continue
		}
		if nullOnly || !anyFeeds(types, t.Kind, f) {
			return fmt.Sprintf("the writer schema declares it as %s, which cannot feed %s", typeNames(types, nullOnly), what)
		}
	}
	if t.Kind == packed.KList || t.Kind == packed.KSet || t.Kind == packed.KMap {
		elem := packed.Scalar(t.Elem)
		key := "items"
		if t.Kind == packed.KMap {
			key = "additionalProperties"
		}
		for _, p := range vw.parts {
			if s, ok := p.v.(map[string]any)[key].(map[string]any); ok {
				if why := c.feeds(c.view(schemaNode{v: s, doc: p.doc}, hops+1), elem, f, hops+1); why != "" {
					return "its elements: " + why
				}
			}
		}
	}
	for _, group := range vw.alts {
		if group.partial {
			continue
		}
		var first string
		for _, b := range group.branches {
			why := c.feeds(c.view(b, hops+1), t, f, hops+1)
			if why == "" {
				first = ""
				break
			}
			if first == "" {
				first = why
			}
		}
		if first != "" {
			return "no branch of a combinator can feed " + what + ": " + first
		}
	}
	return ""
}

// mayBeObject reports whether the value vw describes may be an object (a key schema that is not one is
// read whole).
func mayBeObject(vw schemaView) bool {
	for _, p := range vw.parts {
		if types, nullOnly, ok := schemaTypes(p.v.(map[string]any)); ok && (nullOnly || !contains(types, "object")) {
			return false
		}
	}
	return true
}

// anyFeeds reports whether one of the JSON types converts to a column of kind k, as the JSON codec
// converts values (convert here, and the mapper's reference).
func anyFeeds(types []string, k packed.Kind, f *codec.Field) bool {
	for _, t := range types {
		if jsonTypeFeeds(t, k, f) {
			return true
		}
	}
	return false
}

func jsonTypeFeeds(t string, k packed.Kind, f *codec.Field) bool {
	switch k {
	case packed.KText, packed.KASCII:
		return true // a string as is, anything else as its JSON text
	case packed.KTinyint, packed.KSmallint, packed.KInt, packed.KBigint, packed.KFloat, packed.KDouble,
		packed.KDecimal, packed.KVarint:
		return t == "integer" || t == "number" || t == "string"
	case packed.KBoolean:
		return t == "boolean" || t == "string"
	case packed.KTimestamp, packed.KDate:
		switch f.Time.Form {
		case codec.TimeRFC3339, codec.TimeLayout:
			return t == "string"
		case codec.TimeUnix:
			return t == "string" || t == "integer" || t == "number" // a number, or a string holding one
		}
		if k == packed.KDate {
			return t == "string"
		}
		return t == "string" || t == "integer" || t == "number"
	case packed.KUUID, packed.KTimeUUID, packed.KBlob, packed.KInet:
		return t == "string"
	case packed.KList, packed.KSet:
		return t == "array"
	case packed.KMap, packed.KUDT:
		return t == "object"
	case packed.KTuple, packed.KVector:
		return t == "array"
	case packed.KTime:
		return t == "string" || t == "integer"
	case packed.KDuration:
		return t == "string"
	}
	return true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func typeNames(types []string, nullOnly bool) string {
	if nullOnly {
		return "null only"
	}
	return strings.Join(types, " or ")
}

// where names the place depth steps down f's path: the schema's root, or the object at a dot path.
func where(f *codec.Field, depth int) string {
	if depth == 0 {
		return "its root object"
	}
	return fmt.Sprintf("%q", strings.Join(f.Path[:depth], "."))
}
