package avro

import (
	"errors"
	"fmt"
	"strings"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/packed"
)

// Codec is the Avro codec: Avro binary in the Confluent wire format. Its plans walk a body in the
// writer schema's field order, keeping the configured fields and skipping the rest.
type Codec struct{}

var _ codec.Codec = Codec{}

// op is what a step does with the value at its place in the body.
type op uint8

const (
	opSkip   op = iota // step over it
	opKeep             // convert it for each target
	opRecord           // walk into a record: one sub step per writer field
	opUnion            // read the branch index, then that arm
)

// step is one value of the body in writer order.
type step struct {
	op      op
	n       *node
	name    string   // the writer field's dot path, for messages
	targets []target // opKeep
	sub     []step   // opRecord
	arms    []step   // opUnion: one per branch
	nulls   []int    // opUnion: the slots under it, Null when the null branch is taken
}

// target is one configured field fed by a kept value.
type target struct {
	slot   int
	column string // the column fed, for messages
	conv   conv
	typ    packed.Type
	mul    int64             // conversions to a timestamp from a count of units: nanoseconds per unit
	time   *codec.TimeFormat // cTimeFormat: the field's format
	elem   conv              // cList, cMap: the conversion of each element
	parts  []part            // cUDT: one per writer field; cTuple: one per element; cVector: one, for every element
}

// part is how one writer field of a record feeding a UDT, or the items of an array feeding a tuple or
// a vector, feed one field or element.
type part struct {
	n     *node
	name  string    // the writer field's name (cUDT), for messages
	field int       // cUDT: the UDT field it feeds, -1 when none (skipped)
	arms  []*target // one per branch of a union, nil for the null branch; else one
}

// plan is the compiled plan of one writer schema.
type plan struct {
	id   int
	root []step // the top-level record's fields
}

// Compile builds the plan of writer schema s for fields.
func (Codec) Compile(s *codec.Schema, fields []codec.Field) (codec.Plan, error) {
	if s == nil {
		return nil, errors.New("avro: no writer schema")
	}
	if s.Type != "" && s.Type != "AVRO" {
		return nil, &codec.SchemaError{SchemaID: s.ID, Err: fmt.Errorf("a %s schema, not Avro (is the topic's codec right?)", s.Type)}
	}
	root, err := parseSchema(s)
	if err != nil {
		return nil, &codec.SchemaError{SchemaID: s.ID, Err: err}
	}
	c := compiler{id: s.ID, fields: fields}
	if root.kind != tRecord {
		if len(fields) != 1 || !fields[0].Whole {
			return nil, &codec.SchemaError{SchemaID: s.ID, Err: fmt.Errorf("the writer schema is %s, not a record", root.describe())}
		}
		// The body is one value, the field's: one step at the depth of its whole path keeps it.
		f := &fields[0]
		st, err := c.node(root, []int{0}, len(f.Path), f.Name())
		if err != nil {
			return nil, err
		}
		return &plan{id: s.ID, root: []step{st}}, nil
	}
	want := make([]int, len(fields))
	for i := range want {
		want[i] = i
	}
	st, err := c.node(root, want, 0, "")
	if err != nil {
		return nil, err
	}
	return &plan{id: s.ID, root: st.sub}, nil
}

type compiler struct {
	id     int
	fields []codec.Field
}

func (c *compiler) fail(i int, format string, args ...any) error {
	f := &c.fields[i]
	return &codec.SchemaError{SchemaID: c.id, Field: f.Name(), Column: f.Column, Err: fmt.Errorf(format, args...)}
}

// node compiles the step of n, at depth along the paths of the fields want.
func (c *compiler) node(n *node, want []int, depth int, name string) (step, error) {
	st := step{op: opSkip, n: n, name: name}
	if len(want) == 0 {
		return st, nil
	}
	if n.kind == tUnion {
		st.op = opUnion
		st.nulls = append(st.nulls, want...)
		for _, b := range n.branches {
			if b.kind == tNull {
				st.arms = append(st.arms, step{op: opSkip, n: b, name: name})
				continue
			}
			arm, err := c.node(b, want, depth, name)
			if err != nil {
				return st, err
			}
			st.arms = append(st.arms, arm)
		}
		return st, nil
	}
	var deeper []int
	for _, i := range want {
		f := &c.fields[i]
		if len(f.Path) > depth {
			deeper = append(deeper, i)
			continue
		}
		t, err := c.target(n, i)
		if err != nil {
			return st, err
		}
		st.op = opKeep
		st.targets = append(st.targets, t)
	}
	if len(deeper) == 0 {
		return st, nil
	}
	if n.kind != tRecord {
		i := deeper[0]
		return st, c.fail(i, "%q is %s, which has no field %q (a path walks records only)",
			strings.Join(c.fields[i].Path[:depth], "."), n.describe(), c.fields[i].Path[depth])
	}
	st.op = opRecord
	used := 0
	for _, f := range n.fields {
		var here []int
		for _, i := range deeper {
			if c.fields[i].Path[depth] == f.name {
				here = append(here, i)
			}
		}
		used += len(here)
		sub, err := c.node(f.typ, here, depth+1, dotted(name, f.name))
		if err != nil {
			return st, err
		}
		st.sub = append(st.sub, sub)
	}
	if used < len(deeper) {
		for _, i := range deeper {
			if !hasField(n, c.fields[i].Path[depth]) {
				return st, c.fail(i, "the writer schema has no field %q in %s", c.fields[i].Path[depth], n.describe())
			}
		}
	}
	return st, nil
}

func hasField(n *node, name string) bool {
	for _, f := range n.fields {
		if f.name == name {
			return true
		}
	}
	return false
}

func dotted(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

// target compiles how the value of n feeds field i.
func (c *compiler) target(n *node, i int) (target, error) {
	f := &c.fields[i]
	t := target{slot: i, column: f.Column, typ: f.Type}
	if f.AsText {
		if t.conv = textConverter(n); t.conv == cNone {
			return t, c.fail(i, "is %s, which a filter cannot compare as text (a string, an enum, a number or a boolean can)", n.describe())
		}
		return t, nil
	}
	cv, mul, why := converter(n, f.Type.Kind, &f.Time)
	if cv == cNone {
		what := "CQL " + f.Type.String()
		if f.Column == "" {
			what = "the event time"
		}
		return t, c.fail(i, "is %s, which cannot feed %s%s", n.describe(), what, why)
	}
	t.conv, t.mul, t.time = cv, mul, &f.Time
	if cv == cUDT || cv == cTuple || cv == cVector {
		return t, c.parts(n, i, &t)
	}
	if cv == cList || cv == cMap {
		items := n.items
		ecv, emul, why := converter(items, f.Type.Elem, &codec.TimeFormat{})
		if ecv == cNone || ecv == cList || ecv == cMap {
			return t, c.fail(i, "has elements of %s, which cannot feed CQL %s%s", items.describe(), f.Type.Elem, why)
		}
		t.elem, t.mul = ecv, emul
	}
	return t, nil
}

// parts compiles how the record or array n feeds the UDT, tuple or vector of target t, of field i.
func (c *compiler) parts(n *node, i int, t *target) error {
	comp := t.typ.Comp
	switch t.conv {
	case cUDT:
		for _, f := range n.fields {
			p := part{n: f.typ, name: f.name, field: -1}
			for j, name := range comp.Fields {
				if name == f.name {
					p.field = j
				}
			}
			if p.field >= 0 {
				if err := c.arms(&p, i, comp.Types[p.field], "field "+f.name+" of "+n.describe(), false); err != nil {
					return err
				}
			}
			t.parts = append(t.parts, p)
		}
	case cTuple:
		for j, et := range comp.Types {
			p := part{n: n.items, field: j}
			if err := c.arms(&p, i, et, "the items of "+n.describe()+" (tuple element "+fmt.Sprint(j)+")", true); err != nil {
				return err
			}
			t.parts = append(t.parts, p)
		}
	default: // cVector
		p := part{n: n.items}
		if err := c.arms(&p, i, comp.Types[0], "the items of "+n.describe(), false); err != nil {
			return err
		}
		t.parts = append(t.parts, p)
	}
	return nil
}

// arms compiles how p's value, of one of a union's branches or of its one type, feeds CQL type typ
// (never a tuple, UDT or vector): what names the value in messages.
//
// The items of an array feeding a tuple may be a union of the elements' types (tuple<int, text> from
// ["null", "int", "string"]): there a branch that cannot feed an element is bad input (reason map) in
// the records that take it for that element, as long as some branch can.
func (c *compiler) arms(p *part, i int, typ packed.Type, what string, mixed bool) error {
	branches := []*node{p.n}
	if p.n.kind == tUnion {
		branches = p.n.branches
	}
	mixed = mixed && p.n.kind == tUnion
	fits := false
	var refused error
	for _, b := range branches {
		if b.kind == tNull {
			p.arms = append(p.arms, nil)
			continue
		}
		t := &target{slot: -1, column: c.fields[i].Column, typ: typ, time: &codec.TimeFormat{}} // the default, as for elements
		cv, mul, why := converter(b, typ.Kind, t.time)
		if cv == cNone || cv == cUDT || cv == cTuple || cv == cVector {
			if err := c.fail(i, "has %s: %s, which cannot feed CQL %s%s", what, b.describe(), typ, why); !mixed {
				return err
			} else if refused == nil {
				refused = err
			}
			t.conv = cNone // decode refuses it
			p.arms = append(p.arms, t)
			continue
		}
		fits = true
		t.conv, t.mul = cv, mul
		if cv == cList || cv == cMap {
			ecv, emul, why := converter(b.items, typ.Elem, t.time)
			if ecv == cNone || ecv == cList || ecv == cMap || ecv == cUDT || ecv == cTuple || ecv == cVector {
				return c.fail(i, "has %s: elements of %s, which cannot feed CQL %s%s", what, b.items.describe(), typ.Elem, why)
			}
			t.elem, t.mul = ecv, emul
		}
		p.arms = append(p.arms, t)
	}
	if mixed && !fits {
		return refused
	}
	return nil
}
