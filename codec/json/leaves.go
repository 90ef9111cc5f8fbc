package json

import (
	"bytes"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/packed"
)

// SchemaLeaves lists the leaf fields of the JSON Schema writer schema s: the properties its root object
// declares (`properties`, through `$ref`s and `allOf`), objects with properties walked by their paths,
// in name order. Each gets the column type it feeds without loss: timestamp for a `date-time` string,
// date for `date`, uuid for `uuid`, inet for `ipv4`/`ipv6`, text for another string, bigint for an
// integer, double for a number, boolean, list<T> for an array of such items, map<text, T> for an object
// with only `additionalProperties`; text for a value of several types or none declared (text keeps any
// JSON value as its text). A choice is kept only when the schema check takes it for a column, so a
// drafted column always passes it. A value of null only feeds no column.
func SchemaLeaves(s *codec.Schema) ([]codec.Leaf, error) {
	if s == nil {
		return nil, errors.New("json_schema: no writer schema")
	}
	c := &schemaChecker{docs: map[string]*schemaDoc{}, steps: maxSchemaSteps}
	main, err := parseSchemaDoc(s.Text)
	if err != nil {
		return nil, fmt.Errorf("the writer schema is not JSON: %w", err)
	}
	c.addReferences(s.References, 0)
	root := schemaNode{v: main.root, doc: main}
	vw := c.view(root, 0)
	if len(declared(vw)) == 0 {
		return nil, errors.New("the writer schema declares no properties of an object (a root object with \"properties\")")
	}
	var out []codec.Leaf
	c.walkLeaves(root, nil, 0, &out)
	for i := range out {
		l := &out[i]
		if !l.Fits() {
			continue
		}
		f := codec.Field{Path: l.Path, Column: "x", Type: l.Type}
		if why := c.field(root, &f, 0, 0); why != "" {
			l.Type, l.Reason = packed.Type{}, why
		}
	}
	return out, nil
}

// declared is the sorted names of the properties vw's objects declare.
func declared(vw schemaView) []string {
	seen := map[string]bool{}
	var names []string
	for _, p := range vw.parts {
		props, _ := p.v.(map[string]any)["properties"].(map[string]any)
		for name := range props {
			if !seen[name] {
				seen[name] = true
				names = append(names, name)
			}
		}
	}
	sort.Strings(names)
	return names
}

func (c *schemaChecker) walkLeaves(n schemaNode, path []string, hops int, out *[]codec.Leaf) {
	vw := c.view(n, hops)
	for _, name := range declared(vw) {
		p := append(append([]string(nil), path...), name)
		subs, _ := c.lookup(vw, name, hops)
		sub := schemaNode{v: map[string]any{"allOf": nodesAsList(subs)}, doc: n.doc}
		if len(subs) == 1 {
			sub = subs[0]
		}
		svw := c.view(sub, hops+1)
		if hops < 16 && len(declared(svw)) > 0 {
			c.walkLeaves(sub, p, hops+1, out)
			continue
		}
		*out = append(*out, c.leafOf(svw, p, hops+1))
	}
}

func nodesAsList(ns []schemaNode) []any {
	l := make([]any, len(ns))
	for i, n := range ns {
		l[i] = n.v
	}
	return l
}

// typeAndFormat is what the parts of vw declare: their types (null aside) and a format.
func typeAndFormat(vw schemaView) (types []string, format string, nullOnly bool) {
	declaredAny := false
	for _, p := range vw.parts {
		m := p.v.(map[string]any)
		if t, no, ok := schemaTypes(m); ok {
			declaredAny = true
			types, nullOnly = append(types, t...), no
		}
		if f, ok := m["format"].(string); ok {
			format = f
		}
	}
	return types, format, declaredAny && nullOnly && len(types) == 0
}

func (c *schemaChecker) leafOf(vw schemaView, path []string, hops int) codec.Leaf {
	l := codec.Leaf{Path: path}
	types, format, nullOnly := typeAndFormat(vw)
	l.Writer = strings.Join(types, " or ")
	if l.Writer == "" {
		l.Writer = "any type"
	}
	if format != "" {
		l.Writer += " (" + format + ")"
	}
	if nullOnly || vw.never {
		l.Writer, l.Reason = "null", "always null"
		return l
	}
	switch {
	case len(types) == 1 && (types[0] == "array" || types[0] == "object"):
		key, kind := "items", packed.KList
		if types[0] == "object" {
			key, kind = "additionalProperties", packed.KMap
		}
		var elem packed.Kind
		for _, p := range vw.parts {
			if s, ok := p.v.(map[string]any)[key].(map[string]any); ok {
				et, ef, _ := typeAndFormat(c.view(schemaNode{v: s, doc: p.doc}, hops+1))
				if len(et) == 1 && et[0] != "array" && et[0] != "object" {
					elem, _ = naturalKind(et[0], ef)
				}
			}
		}
		if elem == 0 {
			l.Reason = "its " + key + " declare no one scalar type for a collection element"
			return l
		}
		l.Type = packed.Type{Kind: kind, Elem: elem}
	case len(types) == 1:
		k, t := naturalKind(types[0], format)
		l.Type, l.Time = packed.Scalar(k), t
	default:
		l.Type = packed.Scalar(packed.KText)
	}
	return l
}

// naturalKind is the column kind a JSON value of type t with format f feeds without loss.
func naturalKind(t, f string) (packed.Kind, bool) {
	switch t {
	case "string":
		switch f {
		case "date-time":
			return packed.KTimestamp, true
		case "date":
			return packed.KDate, false
		case "uuid":
			return packed.KUUID, false
		case "ipv4", "ipv6":
			return packed.KInet, false
		}
	case "integer":
		return packed.KBigint, false
	case "number":
		return packed.KDouble, false
	case "boolean":
		return packed.KBoolean, false
	}
	return packed.KText, false
}

// SampleLeaves lists the leaf fields of plain JSON records: every path any of them holds, objects walked,
// in name order, with the column type their values feed without loss: boolean; bigint when every number
// is whole, else double; timestamp when every string is RFC 3339 with an offset, else text; list<T> for
// arrays of one scalar type; text for values of several types (text keeps any JSON value as its text).
// A path that is only ever null feeds no column. A record that is not a JSON object is an error.
func SampleLeaves(records [][]byte) ([]codec.Leaf, error) {
	seen := map[string]*sampled{}
	for i, r := range records {
		d := stdjson.NewDecoder(bytes.NewReader(r))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			return nil, fmt.Errorf("record %d is not JSON: %w", i, err)
		}
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("record %d is not a JSON object", i)
		}
		sampleObject(obj, nil, seen)
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]codec.Leaf, 0, len(names))
	for _, n := range names {
		out = append(out, seen[n].leaf())
	}
	return out, nil
}

// sampled is what the records hold at one path.
type sampled struct {
	path                          []string
	strings, times, whole, frac   int
	bools, arrays, objects, nulls int
	elems                         map[packed.Kind]bool
}

func sampleObject(obj map[string]any, path []string, seen map[string]*sampled) {
	for k, v := range obj {
		p := append(append([]string(nil), path...), k)
		if o, ok := v.(map[string]any); ok && len(o) > 0 {
			sampleObject(o, p, seen)
			continue
		}
		key := strings.Join(p, "\x00")
		s := seen[key]
		if s == nil {
			s = &sampled{path: p, elems: map[packed.Kind]bool{}}
			seen[key] = s
		}
		switch x := v.(type) {
		case nil:
			s.nulls++
		case bool:
			s.bools++
		case stdjson.Number:
			if isWhole(string(x)) {
				s.whole++
			} else {
				s.frac++
			}
		case string:
			s.strings++
			if _, err := ParseRFC3339(x); err == nil {
				s.times++
			}
		case []any:
			s.arrays++
			for _, e := range x {
				s.elems[scalarKind(e)] = true
			}
		case map[string]any:
			s.objects++
		}
	}
}

func isWhole(n string) bool { return !strings.ContainsAny(n, ".eE") }

func scalarKind(v any) packed.Kind {
	switch x := v.(type) {
	case bool:
		return packed.KBoolean
	case stdjson.Number:
		if isWhole(string(x)) {
			return packed.KBigint
		}
		return packed.KDouble
	case string:
		return packed.KText
	}
	return 0
}

func (s *sampled) leaf() codec.Leaf {
	l := codec.Leaf{Path: s.path}
	kinds := 0
	for _, n := range []int{s.strings, s.whole + s.frac, s.bools, s.arrays, s.objects} {
		if n > 0 {
			kinds++
		}
	}
	switch {
	case kinds == 0:
		l.Writer, l.Reason = "null", "null in every sampled record"
	case kinds > 1:
		l.Writer, l.Type = "values of several types", packed.Scalar(packed.KText)
	case s.strings > 0 && s.times == s.strings:
		l.Writer, l.Type, l.Time = "string (RFC 3339)", packed.Scalar(packed.KTimestamp), true
	case s.strings > 0:
		l.Writer, l.Type = "string", packed.Scalar(packed.KText)
	case s.frac > 0:
		l.Writer, l.Type = "number", packed.Scalar(packed.KDouble)
	case s.whole > 0:
		l.Writer, l.Type = "integer", packed.Scalar(packed.KBigint)
	case s.bools > 0:
		l.Writer, l.Type = "boolean", packed.Scalar(packed.KBoolean)
	case s.objects > 0:
		l.Writer, l.Reason = "empty object", "an empty object in every sampled record (no field to name)"
	default:
		l.Writer = "array"
		if s.elems[packed.KBigint] && s.elems[packed.KDouble] {
			delete(s.elems, packed.KBigint)
		}
		if len(s.elems) != 1 || s.elems[0] {
			l.Reason = "arrays of no one scalar type"
			return l
		}
		for k := range s.elems {
			l.Type = packed.Type{Kind: packed.KList, Elem: k}
		}
	}
	return l
}
