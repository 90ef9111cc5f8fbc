package protobuf

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/packed"
)

// Leaves lists the leaf fields of a message of the writer schema s, singular nested messages walked by
// their paths, each with the column type it feeds without loss: int for the 32-bit signed integers, bigint
// for the 64-bit ones and uint32, varint for the unsigned 64-bit ones, text for a string or an enum's name,
// timestamp for a Timestamp, bigint nanoseconds for a Duration, a wrapper's inner type. A choice is kept only
// when the pairing table (feeds) takes it, so a drafted column always compiles against s; a map with integer
// keys feeds a map of the integer key type that holds them. A repeated message, a map with bool keys and a
// recursive message feed no column; their Reason says why.
//
// The message is the first of the file (nested ones after their parent) whose leaves hold every path of
// want; without want, or when none holds them all, the file's first message (indexes [0], what producers
// write unless told otherwise). Its full name is returned with its leaves.
func Leaves(s *codec.Schema, want ...string) (string, []codec.Leaf, error) {
	if s == nil {
		return "", nil, errors.New("protobuf: no writer schema")
	}
	fd, err := parseFile(s)
	if err != nil {
		return "", nil, err
	}
	var all []protoreflect.MessageDescriptor
	var add func(ms protoreflect.MessageDescriptors)
	add = func(ms protoreflect.MessageDescriptors) {
		for i := 0; i < ms.Len(); i++ {
			if m := ms.Get(i); !m.IsMapEntry() {
				all = append(all, m)
				add(m.Messages())
			}
		}
	}
	add(fd.Messages())
	if len(all) == 0 {
		return "", nil, errors.New("the schema declares no message")
	}
	var first []codec.Leaf
	for i, md := range all {
		var out []codec.Leaf
		walkLeaves(md, nil, map[protoreflect.FullName]bool{}, &out)
		if i == 0 {
			first = out
		}
		if holdsAll(out, want) {
			return string(md.FullName()), out, nil
		}
	}
	return string(all[0].FullName()), first, nil
}

func holdsAll(leaves []codec.Leaf, want []string) bool {
	have := make(map[string]bool, len(leaves))
	for _, l := range leaves {
		have[l.Name()] = true
	}
	for _, w := range want {
		if !have[w] {
			return false
		}
	}
	return true
}

func walkLeaves(md protoreflect.MessageDescriptor, path []string, open map[protoreflect.FullName]bool, out *[]codec.Leaf) {
	open[md.FullName()] = true
	defer delete(open, md.FullName())
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		p := append(append([]string(nil), path...), string(fd.Name()))
		if fd.Kind() == protoreflect.MessageKind && !fd.IsList() && !fd.IsMap() && valueSource(fd) == 0 {
			if open[fd.Message().FullName()] {
				*out = append(*out, codec.Leaf{Path: p, Writer: describe(fd), Reason: "a recursive message: name the fields of one level in a hand-written column"})
				continue
			}
			walkLeaves(fd.Message(), p, open, out)
			continue
		}
		*out = append(*out, leafOf(fd, p))
	}
}

// valueSource is the source a field's value reads (a map's values, a repeated field's elements), 0 for a
// message that is not a well-known one.
func valueSource(vd protoreflect.FieldDescriptor) source {
	if vd.Kind() != protoreflect.MessageKind {
		return kindSources[vd.Kind()]
	}
	switch name := vd.Message().FullName(); {
	case name == "google.protobuf.Timestamp":
		return sTimestamp
	case name == "google.protobuf.Duration":
		return sDuration
	default:
		return wrappers[name]
	}
}

func leafOf(fd protoreflect.FieldDescriptor, path []string) codec.Leaf {
	l := codec.Leaf{Path: path, Writer: describe(fd)}
	vd := fd
	var key packed.Kind // a map's key kind; 0 is text
	switch {
	case fd.IsMap():
		vd = fd.MapValue()
		l.Writer = fmt.Sprintf("map<%s, %s>", fd.MapKey().Kind(), describe(vd))
		if ks := kindSources[fd.MapKey().Kind()]; ks != sString {
			// An integer key feeds the integer key type that holds it; a bool no key type.
			if key = naturalKind(ks); key != packed.KInt && key != packed.KBigint && key != packed.KVarint {
				l.Reason = "a map with " + fd.MapKey().Kind().String() + " keys (a CQL map takes string or integer keys from Protobuf)"
				return l
			}
		}
	case fd.IsList():
		l.Writer = "repeated " + describe(fd)
	}
	src := valueSource(vd)
	k := naturalKind(src)
	if k == 0 || !feeds(src, k, &textTime) {
		l.Reason = describe(vd) + " feeds no column; name one of its fields in a hand-written column"
		if fd.IsList() || fd.IsMap() {
			l.Reason = "its elements (" + describe(vd) + ") feed no collection element"
		}
		return l
	}
	switch {
	case fd.IsMap():
		l.Type = packed.Type{Kind: packed.KMap, Elem: k, Key: key}
	case fd.IsList():
		l.Type = packed.Type{Kind: packed.KList, Elem: k}
	default:
		l.Type = packed.Scalar(k)
		l.Time = src == sTimestamp
	}
	return l
}

// naturalKind is the column kind a value of s feeds without loss; 0 for none.
func naturalKind(s source) packed.Kind {
	switch s {
	case sInt32, sSint32, sSfixed32:
		return packed.KInt
	case sInt64, sSint64, sSfixed64, sUint32, sFixed32:
		return packed.KBigint
	case sUint64, sFixed64:
		return packed.KVarint
	case sBool:
		return packed.KBoolean
	case sFloat:
		return packed.KFloat
	case sDouble:
		return packed.KDouble
	case sString, sEnum:
		return packed.KText
	case sBytes:
		return packed.KBlob
	case sTimestamp:
		return packed.KTimestamp
	case sDuration:
		return packed.KBigint
	}
	return 0
}

// CheckMessage compiles the message of s named message (a full name) for fields, as the first record
// naming it would: its error is the one every such record would be dead-lettered with. Compile alone checks
// no field, since which message a record holds is known only from its indexes.
func CheckMessage(s *codec.Schema, message string, fields []codec.Field) error {
	fd, err := parseFile(s)
	if err != nil {
		return err
	}
	md := findMessage(fd.Messages(), protoreflect.FullName(message))
	if md == nil {
		return fmt.Errorf("the schema has no message %s", message)
	}
	_, err = compileMessage(s.ID, md, fields)
	return err
}

// findMessage is the message of ms, or nested in one of them, named name; nil when none is.
func findMessage(ms protoreflect.MessageDescriptors, name protoreflect.FullName) protoreflect.MessageDescriptor {
	for i := 0; i < ms.Len(); i++ {
		m := ms.Get(i)
		if m.FullName() == name {
			return m
		}
		if n := findMessage(m.Messages(), name); n != nil {
			return n
		}
	}
	return nil
}

// textTime is the format a leaf is judged by: a time is text, so only a Timestamp message makes a
// field one.
var textTime = codec.TimeFormat{Form: codec.TimeRFC3339, Name: "rfc3339"}
