package packed

import (
	"encoding/binary"
	"slices"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

// Value is one packed value as a bind argument: gocql marshals it by calling MarshalCQL, which
// hands over Wire as it is.
type Value struct {
	Type Type
	Wire []byte
}

// MarshalCQL returns the bytes for a bind marker of the type they were encoded for, and a
// *BindTypeError for any other: the bytes would mean another value there.
func (v *Value) MarshalCQL(info gocql.TypeInfo) ([]byte, error) {
	if !v.Type.binds(info) {
		return nil, &BindTypeError{Encoded: v.Type.String(), Bound: bindType(info)}
	}
	return v.Wire, nil
}

// binds reports whether a value of type t may be bound to a marker of info's type. A nil info (no
// metadata) matches nothing. A UDT and a vector are checked by kind only, and a tuple's elements not at
// all (a packed value carries no more of their type): the start-up schema check (cassandra.CheckTable,
// CheckUDT) compares what they hold with the table's.
func (t Type) binds(info gocql.TypeInfo) bool {
	if t.Kind == KTuple {
		return info != nil // an element of a tuple (see Binder.tupleArgs)
	}
	bt := bindType(info)
	if bt != kindInfo[t.Kind].cql {
		return t.Kind == KText && bt == gocql.TypeText
	}
	if t.Kind == KVector {
		switch info.(type) {
		case gocql.VectorType, *gocql.VectorType:
			return true
		}
		return false
	}
	if !t.Kind.Collection() {
		return true
	}
	var ct gocql.CollectionType
	switch c := info.(type) {
	case gocql.CollectionType:
		ct = c
	case *gocql.CollectionType:
		ct = *c
	default:
		return false
	}
	if t.Kind == KMap && !Scalar(t.MapKey()).binds(ct.Key) {
		return false
	}
	return Scalar(t.Elem).binds(ct.Elem)
}

// bindType is info's type; a nil info matches nothing.
func bindType(info gocql.TypeInfo) gocql.Type {
	if info == nil {
		return gocql.TypeCustom
	}
	return info.Type()
}

// BindTypeError is the error of binding a packed value to a bind marker of another CQL type than
// the one it was encoded for. It means the table's column type differs from the type configured
// for the column (topics.<name>.columns[].type), for example after an ALTER TABLE: sending the
// bytes anyway would store a different value, so nothing is sent. It is not a gocql.MarshalError on
// purpose: every row of the table would fail alike, so the write must stop (the cassandra writer
// treats unknown errors as fatal) rather than dead-letter each row.
type BindTypeError struct {
	Encoded string     // the configured CQL type the value was encoded for, e.g. "int"
	Bound   gocql.Type // the type of the bind marker in the prepared statement
}

func (e *BindTypeError) Error() string {
	return "binding a value encoded as CQL " + e.Encoded + " to a bind marker of CQL type " + TypeName(e.Bound) +
		": the table's column type differs from the column's configured type (topics.<name>.columns[].type); " +
		"make the configuration and the table agree"
}

// Count is how many values the packed row p binds.
func Count(p []byte) int {
	if len(p) < header {
		return 0
	}
	return int(binary.BigEndian.Uint16(p))
}

// Binder turns packed rows into bind arguments. The arguments point into the row and into the
// binder's memory, which Reset lets the next batch reuse: they are valid until Reset. One binder
// serves one goroutine; writers keep them in a sync.Pool.
type Binder struct {
	vals []Value
	args []any
}

// Reserve makes room for n more arguments, so that Args never grows the binder's memory while they
// are bound. The cassandra writer reserves rows × the INSERT's bind markers; its check that every
// row has that many values reads each row's count in a loop of its own before, so that the rows'
// cache misses (a row waits in its batch long enough to leave the CPU caches) overlap.
func (b *Binder) Reserve(n int) {
	if cap(b.args)-len(b.args) < n {
		b.args = slices.Grow(b.args, n)
	}
	if cap(b.vals)-len(b.vals) < n {
		b.vals = slices.Grow(b.vals, n)
	}
}

// Args returns the bind arguments of the packed row p: a *Value for each value, gocql.UnsetValue
// for an unset one and nil for a null.
func (b *Binder) Args(p []byte) []any {
	n := Count(p)
	start := len(b.args)
	at := header
	for len(b.args)-start < n {
		tag := p[at]
		at++
		switch tag {
		case tagUnset:
			b.args = append(b.args, gocql.UnsetValue)
			continue
		case tagNull:
			b.args = append(b.args, nil)
			continue
		}
		t := Type{Kind: Kind(tag)}
		if t.Kind.Collection() {
			t.Elem = Kind(p[at])
			at++
			if t.Kind == KMap {
				if k := Kind(p[at]); k != KText {
					t.Key = k
				}
				at++
			}
		}
		l := int(kindInfo[t.Kind].width)
		if l == 0 {
			u, m := binary.Uvarint(p[at:])
			l, at = int(u), at+m
		}
		if t.Kind == KTuple {
			b.tupleArgs(p[at : at+l : at+l])
			at += l
			continue
		}
		// Earlier pointers stay valid if append moves vals: they keep the old array alive, and an
		// entry is never written after its pointer is taken.
		b.vals = append(b.vals, Value{Type: t, Wire: p[at : at+l : at+l]})
		b.args = append(b.args, &b.vals[len(b.vals)-1])
		at += l
	}
	return b.args[start:len(b.args):len(b.args)]
}

// tupleArgs appends the arguments of a tuple's elements, framed in wire (each a 4-byte length, -1 for a
// null, then its bytes): one per element. The INSERT binds a tuple column element by element, (?, ?),
// because gocql counts a tuple's bind marker as one value per element and then binds the wrong
// columns. An element's Value binds to any marker: its type is the element's of the column's
// configured type, which the start-up schema check compared with the table's.
func (b *Binder) tupleArgs(wire []byte) {
	for len(wire) >= 4 {
		l := int32(binary.BigEndian.Uint32(wire))
		wire = wire[4:]
		if l < 0 {
			b.args = append(b.args, nil)
			continue
		}
		b.vals = append(b.vals, Value{Type: Type{Kind: KTuple}, Wire: wire[:l:l]})
		b.args = append(b.args, &b.vals[len(b.vals)-1])
		wire = wire[l:]
	}
}

// Reset forgets every argument handed out, and what they referred to.
func (b *Binder) Reset() {
	clear(b.vals)
	clear(b.args)
	b.vals, b.args = b.vals[:0], b.args[:0]
}
