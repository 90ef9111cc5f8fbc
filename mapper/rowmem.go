package mapper

import (
	"reflect"
	"time"
	"unsafe"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

// Row memory: why and how.
//
// Putting a string, float64, time.Time or int64 into an `any` allocates a copy of it on the heap,
// so a sensor row used to cost one allocation per bound value, plus one per string's bytes, the
// Values slice and the key: 11 per record, and GC a sixth of the process. Instead each row gets
// one block, laid out per topic at New (reflect.StructOf, so the collector knows exactly which
// words are pointers):
//
//	struct { V [nvals]any; S [nstr]string; T [ntime]time.Time; W [nword]uint64 }
//
// V is Row.Values. A converted value is stored in its typed slot of S, T or W, and V[i] is an
// interface whose type word is the value's type and whose data word points at that slot: exactly
// what the compiler's boxing builds, minus the allocation. The values in Row.Values are therefore
// the same types and values as before (reflect.DeepEqual, ==, type switches and gocql.Marshal
// see no difference; TestBoxAtIsBoxing and TestRowMemoryMarshalsLikeBoxing check it). The bytes
// of every string value and of the routing key share a second allocation (see scratch.text).
// A slot is written once, before the row is returned, and never again: an interface's data is
// immutable, and nothing hands out a pointer to a slot.

// eface is the runtime's layout of an interface value: type word, data word. Stable since Go 1.4
// and relied on by the standard library's own reflect.
type eface struct {
	typ  unsafe.Pointer
	data unsafe.Pointer
}

func typeWord(v any) unsafe.Pointer { return (*eface)(unsafe.Pointer(&v)).typ }

// The type words of the types row memory holds; each is non-pointer-shaped, so its interface
// data word points at the value (a pointer-shaped type would hold the value itself there).
var (
	tString  = typeWord("")
	tTime    = typeWord(time.Time{})
	tInt8    = typeWord(int8(0))
	tInt16   = typeWord(int16(0))
	tInt32   = typeWord(int32(0))
	tInt64   = typeWord(int64(0))
	tFloat32 = typeWord(float32(0))
	tFloat64 = typeWord(float64(0))
	tUUID    = typeWord(gocql.UUID{})
)

// boxAt returns an interface of type typ whose value is the one at p, without copying it.
// typ must be the type word of *p's type, one of the t* words above.
func boxAt(typ, p unsafe.Pointer) (v any) {
	e := (*eface)(unsafe.Pointer(&v))
	e.typ, e.data = typ, p
	return v
}

// slotClass is where a column's converted value lives in row memory.
type slotClass uint8

const (
	slotNone slotClass = iota // boxed the ordinary way (collections, blob, inet, decimal, varint, boolean, pre-boxed values)
	slotString
	slotTime
	slotWord // int8 to int64, float32, float64: one 8-byte word
	slotUUID // two words
)

// rowLayout is the block type of one topic and where its parts start.
type rowLayout struct {
	typ                       reflect.Type
	nvals, nstr, ntime, nword int
	offStr, offTime, offWord  uintptr
}

func newRowLayout(nvals, nstr, ntime, nword int) rowLayout {
	typ := reflect.StructOf([]reflect.StructField{
		{Name: "V", Type: reflect.ArrayOf(nvals, reflect.TypeFor[any]())},
		{Name: "S", Type: reflect.ArrayOf(nstr, reflect.TypeFor[string]())},
		{Name: "T", Type: reflect.ArrayOf(ntime, reflect.TypeFor[time.Time]())},
		{Name: "W", Type: reflect.ArrayOf(nword, reflect.TypeFor[uint64]())},
	})
	return rowLayout{
		typ: typ, nvals: nvals, nstr: nstr, ntime: ntime, nword: nword,
		offStr: typ.Field(1).Offset, offTime: typ.Field(2).Offset, offWord: typ.Field(3).Offset,
	}
}

// rowMem is one row's block.
type rowMem struct {
	base unsafe.Pointer
	l    *rowLayout
}

func (l *rowLayout) alloc() rowMem {
	return rowMem{base: reflect.New(l.typ).UnsafePointer(), l: l}
}

// values is the block's V array as a slice: Row.Values.
func (m rowMem) values() []any { return unsafe.Slice((*any)(m.base), m.l.nvals) }

func (m rowMem) str(i int) *string {
	return (*string)(unsafe.Add(m.base, m.l.offStr+uintptr(i)*unsafe.Sizeof("")))
}

func (m rowMem) word(i int) unsafe.Pointer {
	return unsafe.Add(m.base, m.l.offWord+uintptr(i)*8)
}

func (m rowMem) putTime(i int, t time.Time) any {
	p := (*time.Time)(unsafe.Add(m.base, m.l.offTime+uintptr(i)*unsafe.Sizeof(time.Time{})))
	*p = t
	return boxAt(tTime, unsafe.Pointer(p))
}

func (m rowMem) putInt64(i int, n int64) any {
	p := m.word(i)
	*(*int64)(p) = n
	return boxAt(tInt64, p)
}

func (m rowMem) putInt32(i int, n int32) any {
	p := m.word(i)
	*(*int32)(p) = n
	return boxAt(tInt32, p)
}

func (m rowMem) putInt16(i int, n int16) any {
	p := m.word(i)
	*(*int16)(p) = n
	return boxAt(tInt16, p)
}

func (m rowMem) putInt8(i int, n int8) any {
	p := m.word(i)
	*(*int8)(p) = n
	return boxAt(tInt8, p)
}

func (m rowMem) putFloat64(i int, f float64) any {
	p := m.word(i)
	*(*float64)(p) = f
	return boxAt(tFloat64, p)
}

func (m rowMem) putFloat32(i int, f float32) any {
	p := m.word(i)
	*(*float32)(p) = f
	return boxAt(tFloat32, p)
}

// putUUID uses words i and i+1.
func (m rowMem) putUUID(i int, u gocql.UUID) any {
	p := m.word(i)
	*(*gocql.UUID)(p) = u
	return boxAt(tUUID, p)
}

// putString stores s, which must already live in memory the row owns (see mapRecord).
func (m rowMem) putString(i int, s string) any {
	p := m.str(i)
	*p = s
	return boxAt(tString, unsafe.Pointer(p))
}
