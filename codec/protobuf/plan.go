package protobuf

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/packed"
)

// Codec compiles Protobuf plans. It is stateless.
type Codec struct{}

// maxIndexDepth is how deep a record's message indexes may name a nested message.
const maxIndexDepth = 16

// msgKey is a record's message indexes, usable as a map key without allocating.
type msgKey struct {
	n   uint8
	idx [maxIndexDepth]int32
}

func (k *msgKey) String() string {
	parts := make([]string, k.n)
	for i := range parts {
		parts[i] = fmt.Sprint(k.idx[i])
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// plan is the plan of one writer schema: its file, and a compiled message plan per message indexes seen.
type plan struct {
	id     int
	file   protoreflect.FileDescriptor
	fields []codec.Field

	first atomic.Pointer[entry] // message [0], what most producers write
	mu    sync.Mutex            // serialises additions to others
	other atomic.Pointer[map[msgKey]*entry]
}

// entry is one message of the file compiled for the fields, or why it cannot feed them (reason schema).
type entry struct {
	m   *message
	err error
}

// Compile reads the writer schema (text or descriptor, with its references). Which message a record holds is
// known only from its indexes, so each message is compiled for the fields on the first record naming it.
func (Codec) Compile(s *codec.Schema, fields []codec.Field) (codec.Plan, error) {
	if s == nil {
		return nil, &codec.SchemaError{Err: errors.New("protobuf needs a writer schema from the registry")}
	}
	if s.Type != "" && s.Type != "PROTOBUF" {
		return nil, &codec.SchemaError{SchemaID: s.ID, Err: fmt.Errorf("a %s schema, not a Protobuf one (is the topic's codec right?)", s.Type)}
	}
	fd, err := parseFile(s)
	if err != nil {
		return nil, &codec.SchemaError{SchemaID: s.ID, Err: err}
	}
	if fd.Messages().Len() == 0 {
		return nil, &codec.SchemaError{SchemaID: s.ID, Err: fmt.Errorf("the file %s declares no message", fd.Path())}
	}
	p := &plan{id: s.ID, file: fd, fields: fields}
	empty := map[msgKey]*entry{}
	p.other.Store(&empty)
	return p, nil
}

// entry returns the compiled message of key, compiling it on first sight. Indexes past the file's messages
// are the record's fault (reason decode) and are not kept, so bad records cannot grow the cache.
func (p *plan) entry(key *msgKey) (*entry, error) {
	first := key.n == 1 && key.idx[0] == 0
	if first {
		if e := p.first.Load(); e != nil {
			return e, nil
		}
	} else if e := (*p.other.Load())[*key]; e != nil {
		return e, nil
	}
	md, err := p.lookup(key)
	if err != nil {
		return nil, err
	}
	e := &entry{}
	e.m, e.err = compileMessage(p.id, md, p.fields)
	p.mu.Lock()
	defer p.mu.Unlock()
	if first {
		p.first.Store(e)
		return e, nil
	}
	old := *p.other.Load()
	next := make(map[msgKey]*entry, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	next[*key] = e
	p.other.Store(&next)
	return e, nil
}

// lookup finds the message the indexes name: the idx[0]-th message of the file, then its idx[1]-th nested one.
func (p *plan) lookup(key *msgKey) (protoreflect.MessageDescriptor, error) {
	msgs := p.file.Messages()
	var md protoreflect.MessageDescriptor
	for i := 0; i < int(key.n); i++ {
		at := int(key.idx[i])
		if at >= msgs.Len() {
			where := "the file"
			if md != nil {
				where = "message " + string(md.FullName())
			}
			return nil, codec.Decodef("protobuf message indexes %s: index %d is past the %d messages of %s (schema id %d)",
				key.String(), at, msgs.Len(), where, p.id)
		}
		md = msgs.Get(at)
		msgs = md.Messages()
	}
	return md, nil
}

// message is the plan of one message: what to do with each field number that feeds something.
type message struct {
	dense  []*step // by field number, for small numbers
	sparse map[protowire.Number]*step
	leaves []*leaf // the leaves of this message's own fields, for the defaults of implicit presence
}

// step is what one field of a message feeds: the message it leads into (a dotted path goes on), values, or both.
type step struct {
	sub    *message
	leaves []*leaf
}

// denseLimit: field numbers up to it are looked up in a slice, larger ones (rare) in a map.
const denseLimit = 256

func (m *message) step(n protowire.Number) *step {
	if int(n) < len(m.dense) {
		return m.dense[n]
	}
	if m.sparse == nil {
		return nil
	}
	return m.sparse[n]
}

func (m *message) stepFor(n protowire.Number) *step {
	if st := m.step(n); st != nil {
		return st
	}
	st := &step{}
	if n <= denseLimit {
		if int(n) >= len(m.dense) {
			m.dense = append(m.dense, make([]*step, int(n)+1-len(m.dense))...)
		}
		m.dense[n] = st
		return st
	}
	if m.sparse == nil {
		m.sparse = map[protowire.Number]*step{}
	}
	m.sparse[n] = st
	return st
}

// source is the Protobuf type a leaf reads.
type source uint8

const (
	sInt32 source = iota + 1 // int32 (a negative one is ten bytes on the wire)
	sInt64
	sUint32
	sUint64
	sSint32
	sSint64
	sFixed32
	sFixed64
	sSfixed32
	sSfixed64
	sBool
	sEnum
	sFloat
	sDouble
	sString
	sBytes
	sTimestamp // google.protobuf.Timestamp
	sDuration  // google.protobuf.Duration
	sWrapper   // google.protobuf.*Value: field 1 of the inner source
	sMessage   // a message feeding a UDT
)

var sourceNames = map[source]string{
	sInt32: "int32", sInt64: "int64", sUint32: "uint32", sUint64: "uint64", sSint32: "sint32", sSint64: "sint64",
	sFixed32: "fixed32", sFixed64: "fixed64", sSfixed32: "sfixed32", sSfixed64: "sfixed64", sBool: "bool",
	sEnum: "enum", sFloat: "float", sDouble: "double", sString: "string", sBytes: "bytes",
	sTimestamp: "google.protobuf.Timestamp", sDuration: "google.protobuf.Duration",
}

// wrappers are the well-known wrapper messages and the type of their field 1.
var wrappers = map[protoreflect.FullName]source{
	"google.protobuf.DoubleValue": sDouble, "google.protobuf.FloatValue": sFloat,
	"google.protobuf.Int64Value": sInt64, "google.protobuf.UInt64Value": sUint64,
	"google.protobuf.Int32Value": sInt32, "google.protobuf.UInt32Value": sUint32,
	"google.protobuf.BoolValue": sBool, "google.protobuf.StringValue": sString,
	"google.protobuf.BytesValue": sBytes,
}

var kindSources = map[protoreflect.Kind]source{
	protoreflect.Int32Kind: sInt32, protoreflect.Int64Kind: sInt64, protoreflect.Uint32Kind: sUint32,
	protoreflect.Uint64Kind: sUint64, protoreflect.Sint32Kind: sSint32, protoreflect.Sint64Kind: sSint64,
	protoreflect.Fixed32Kind: sFixed32, protoreflect.Fixed64Kind: sFixed64, protoreflect.Sfixed32Kind: sSfixed32,
	protoreflect.Sfixed64Kind: sSfixed64, protoreflect.BoolKind: sBool, protoreflect.EnumKind: sEnum,
	protoreflect.FloatKind: sFloat, protoreflect.DoubleKind: sDouble, protoreflect.StringKind: sString,
	protoreflect.BytesKind: sBytes,
}

// shape is what a leaf's value is on the wire: one value, a repeated field, or a map field.
type shape uint8

const (
	single shape = iota
	repeated
	mapped
)

// leaf is one configured field read from a message field.
type leaf struct {
	out    int // index in the plan's fields and the Decode out slice
	name   string
	column string
	shape  shape
	src    source // of the value (a repeated field's elements, a map's values)
	inner  source // a wrapper's field 1
	kind   packed.Kind
	time   *codec.TimeFormat // the field's time format
	enum   map[int32][]byte  // an enum's value names, for a text column
	// implicit: a proto3 scalar without presence, which reads as its default value when not on the wire.
	implicit bool
	asText   bool // read as text, whatever the scalar (codec.Field.AsText)
	// udt: a message feeding a UDT column, compiled for the UDT's fields it has (out: the field's
	// index); comp is the UDT.
	udt  *message
	comp *packed.Composite
	dim  int         // a repeated field feeding a vector: its dimension
	typ  packed.Type // the column's type, for messages
	// A map field: the source and CQL kind of its keys.
	keySrc  source
	keyKind packed.Kind
}

// compileMessage compiles md for fields. An error is a *codec.Error with reason schema naming the field: every
// record of this message is dead-lettered with it.
func compileMessage(id int, md protoreflect.MessageDescriptor, fields []codec.Field) (*message, error) {
	m, err := compileFields(md, fields)
	if err != nil {
		f := &fields[err.at]
		return nil, &codec.Error{Reason: codec.ReasonSchema, Field: f.Name(), Column: f.Column,
			Err: fmt.Errorf("schema id %d, message %s: %w", id, md.FullName(), err.err)}
	}
	return m, nil
}

// compileErr is why field at of a compile cannot be fed.
type compileErr struct {
	at    int
	field string
	err   error
}

// compileFields compiles md for fields.
func compileFields(md protoreflect.MessageDescriptor, fields []codec.Field) (*message, *compileErr) {
	root := &message{}
	for i := range fields {
		f := &fields[i]
		fail := func(format string, args ...any) *compileErr {
			return &compileErr{at: i, field: f.Name(), err: fmt.Errorf(format, args...)}
		}
		cur, curMD := root, md
		for j, name := range f.Path {
			fd := curMD.Fields().ByName(protoreflect.Name(name))
			if fd == nil {
				fd = curMD.Fields().ByJSONName(name)
			}
			if fd == nil {
				return nil, fail("message %s has no field %q", curMD.FullName(), name)
			}
			st := cur.stepFor(fd.Number())
			if j < len(f.Path)-1 {
				if fd.Kind() != protoreflect.MessageKind || fd.IsList() || fd.IsMap() {
					return nil, fail("field %q of %s is not a single message, so the path cannot go on into it", name, curMD.FullName())
				}
				if st.sub == nil {
					st.sub = &message{}
				}
				cur, curMD = st.sub, fd.Message()
				continue
			}
			lf, err := newLeaf(fd, f, i)
			if err != nil {
				return nil, fail("%v", err)
			}
			st.leaves = append(st.leaves, lf)
			cur.leaves = append(cur.leaves, lf)
		}
	}
	return root, nil
}

// newLeaf checks that field fd can feed f and says how to read it.
func newLeaf(fd protoreflect.FieldDescriptor, f *codec.Field, out int) (*leaf, error) {
	lf := &leaf{out: out, name: f.Name(), column: f.Column, kind: f.Type.Kind, time: &f.Time, asText: f.AsText, typ: f.Type}
	vd := fd
	switch {
	case f.AsText && (fd.IsMap() || fd.IsList()):
		return nil, fmt.Errorf("a filter compares one value as text, and a %s field holds several", map[bool]string{true: "map", false: "repeated"}[fd.IsMap()])
	case fd.IsMap():
		if f.Type.Kind != packed.KMap {
			return nil, fmt.Errorf("a map field feeds only a map<K, T> column, not %s", f.Type)
		}
		lf.keySrc, lf.keyKind = kindSources[fd.MapKey().Kind()], f.Type.MapKey()
		if lf.keySrc != sString && !feeds(lf.keySrc, lf.keyKind, &codec.TimeFormat{}) { // a string key is parsed as a JSON object's
			return nil, fmt.Errorf("a map with %s keys cannot feed %s (its keys cannot feed %s)", fd.MapKey().Kind(), f.Type, lf.keyKind)
		}
		lf.shape, lf.kind, vd = mapped, f.Type.Elem, fd.MapValue()
	case fd.IsList():
		switch f.Type.Kind {
		case packed.KList, packed.KSet:
			lf.kind = f.Type.Elem
		case packed.KVector:
			lf.kind, lf.dim = f.Type.Comp.Types[0].Kind, f.Type.Comp.Dim
		default:
			return nil, fmt.Errorf("a repeated field feeds only a list, set or vector column, not %s", f.Type)
		}
		lf.shape = repeated
	default:
		switch f.Type.Kind {
		case packed.KList, packed.KSet, packed.KMap:
			return nil, fmt.Errorf("a single %s cannot feed a %s column (a repeated or map field can)", describe(fd), f.Type)
		case packed.KUDT:
			return udtLeaf(lf, fd, f)
		case packed.KTuple:
			return nil, fmt.Errorf("the Protobuf codec does not feed a CQL %s column", f.Type)
		case packed.KVector:
			return nil, fmt.Errorf("a single %s cannot feed a %s column (a repeated field can)", describe(fd), f.Type)
		}
		lf.implicit = !fd.HasPresence()
	}
	if vd.Kind() == protoreflect.MessageKind {
		switch name := vd.Message().FullName(); {
		case name == "google.protobuf.Timestamp":
			lf.src = sTimestamp
		case name == "google.protobuf.Duration":
			lf.src = sDuration
		case wrappers[name] != 0:
			lf.src, lf.inner = sWrapper, wrappers[name]
		default:
			return nil, fmt.Errorf("message %s cannot feed a column; name one of its fields (%s.<field>)", name, f.Name())
		}
	} else if lf.src = kindSources[vd.Kind()]; lf.src == 0 {
		return nil, fmt.Errorf("a %s field cannot feed a column", vd.Kind())
	}
	if lf.src == sEnum {
		lf.enum = map[int32][]byte{}
		vals := vd.Enum().Values()
		for i := 0; i < vals.Len(); i++ {
			lf.enum[int32(vals.Get(i).Number())] = []byte(vals.Get(i).Name())
		}
	}
	if lf.asText {
		switch lf.value() {
		case sBytes, sTimestamp, sDuration:
			return nil, fmt.Errorf("a %s field, which a filter cannot compare as text (a string, an enum, a number or a bool can)", describe(vd))
		}
		return lf, nil
	}
	if !feeds(lf.value(), lf.kind, lf.time) {
		return nil, fmt.Errorf("a %s field cannot feed a %s column (see the Protobuf table in docs/CONFIG.md)", describe(vd), packed.Scalar(lf.kind))
	}
	return lf, nil
}

// value is the source of the leaf's value once unwrapped.
func (lf *leaf) value() source {
	if lf.src == sWrapper {
		return lf.inner
	}
	return lf.src
}

func describe(fd protoreflect.FieldDescriptor) string {
	if fd.Kind() == protoreflect.MessageKind {
		return string(fd.Message().FullName())
	}
	return fd.Kind().String()
}

// feeds is the table of pairings: which Protobuf types can feed which column kinds.
func feeds(s source, k packed.Kind, tf *codec.TimeFormat) bool {
	switch s {
	case sString:
		switch k {
		case packed.KText, packed.KASCII, packed.KBlob, packed.KUUID, packed.KTimeUUID, packed.KInet,
			packed.KDecimal, packed.KVarint, packed.KTimestamp, packed.KDate, packed.KTime, packed.KDuration:
			return true
		}
	case sBytes:
		return k == packed.KBlob || k == packed.KUUID || k == packed.KTimeUUID || k == packed.KInet
	case sBool:
		return k == packed.KBoolean
	case sFloat, sDouble:
		return k == packed.KFloat || k == packed.KDouble
	case sTimestamp:
		return k == packed.KTimestamp || k == packed.KDate
	case sDuration:
		return k == packed.KBigint || k == packed.KDuration
	case sEnum:
		if k == packed.KText || k == packed.KASCII {
			return true
		}
		fallthrough
	default: // the integers
		switch k {
		case packed.KTinyint, packed.KSmallint, packed.KInt, packed.KBigint, packed.KVarint, packed.KDecimal,
			packed.KFloat, packed.KDouble:
			return true
		case packed.KTimestamp, packed.KDate:
			return tf.IntegerUnit(k) > 0 && s != sEnum
		}
	}
	return false
}

// udtLeaf compiles a single message field fd feeding the UDT column of f: each UDT field is fed by
// the message's field of that name (or JSON name), by the rules of a column; one the message lacks
// is null.
func udtLeaf(lf *leaf, fd protoreflect.FieldDescriptor, f *codec.Field) (*leaf, error) {
	if fd.Kind() != protoreflect.MessageKind {
		return nil, fmt.Errorf("a %s field cannot feed the UDT %s (a message can)", describe(fd), f.Type)
	}
	md := fd.Message()
	comp := f.Type.Comp
	var sub []codec.Field
	var outs []int
	for i, name := range comp.Fields {
		if md.Fields().ByName(protoreflect.Name(name)) == nil && md.Fields().ByJSONName(name) == nil {
			continue // null in every record
		}
		sub = append(sub, codec.Field{Path: []string{name}, Column: f.Column, Type: comp.Types[i]})
		outs = append(outs, i)
	}
	m, err := compileFields(md, sub)
	if err != nil {
		return nil, fmt.Errorf("field %s of the UDT %s: %w", err.field, comp.Name, err.err)
	}
	for _, l := range m.leaves {
		l.out, l.name = outs[l.out], f.Name()+"."+l.name
	}
	lf.udt, lf.comp, lf.src = m, comp, sMessage
	return lf, nil
}
