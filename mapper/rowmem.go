package mapper

import (
	"reflect"
	"unsafe"
)

// Row memory: why and how.
//
// Rows stay buffered by the hundred thousand until their batch is written, so what one row holds
// sets both the allocation rate and how much the collector marks at every cycle. A row keeps each
// value in one form only: the bytes Cassandra will receive. The mapper converts a JSON value to
// its Go value on the stack and encodes it at once (store, encoded.go) into a block of row memory,
// laid out per topic at New with reflect.StructOf so that the collector knows which words are
// pointers. For a topic whose every column type is encoded, the block is the scratch's own, reused
// row after row, and the finished row's bytes are packed out of it into one pointer-free
// allocation (packed.go); for other topics the block is the row's and is bound as it is:
//
//	struct { V [nvals]any; S [nstr]string; B [nbytes]byte }
//
// V is Row.Values. A text or ascii value is a string header in S whose bytes share the row's
// second and last allocation with the routing key (finishRow); its V entry is a *encText or
// *encASCII pointing at the header. Every fixed-width value (tinyint to bigint, float, double,
// timestamp, date, uuid, timeuuid, and the write timestamp) is its wire bytes in B, packed back
// to back at the column's offset, and its V entry is a pointer of the matching enc type into B.
// A pointer stored in an interface allocates nothing, and MarshalCQL hands gocql the bytes in
// place, so neither the mapper nor the driver allocates per value. The bytes are also smaller
// than the Go values were: 8 for a timestamp instead of a 24-byte time.Time, 4 for a float
// instead of a word.
//
// Values many rows bind are encoded once and shared: the bucket value per bucket, the TTL and the
// Kafka topic per topic, and each event bucket number per topic. The types the
// mapper does not encode (collections, blob, inet, decimal, varint, boolean) are boxed the
// ordinary way, one allocation each.
//
// A slot is written once, before the row is returned, and never again: the bytes a value points
// at are immutable from then on, which is what lets gocql read them without a copy.

// slotClass is where a column's converted value lives in row memory.
type slotClass uint8

const (
	slotNone   slotClass = iota // boxed the ordinary way, or a shared value
	slotString                  // text and ascii: a string header in S
	slotFixed                   // fixedWidth(kind) bytes in B
)

// rowLayout is the block type of one topic and where its parts start.
type rowLayout struct {
	typ                   reflect.Type
	nvals, nstr, nbytes   int
	offStr, offFixedBytes uintptr
}

func newRowLayout(nvals, nstr, nbytes int) rowLayout {
	typ := reflect.StructOf([]reflect.StructField{
		{Name: "V", Type: reflect.ArrayOf(nvals, reflect.TypeFor[any]())},
		{Name: "S", Type: reflect.ArrayOf(nstr, reflect.TypeFor[string]())},
		{Name: "B", Type: reflect.ArrayOf(nbytes, reflect.TypeFor[byte]())},
	})
	return rowLayout{
		typ: typ, nvals: nvals, nstr: nstr, nbytes: nbytes,
		offStr: typ.Field(1).Offset, offFixedBytes: typ.Field(2).Offset,
	}
}

// rowMem is one row's block.
type rowMem struct {
	base unsafe.Pointer
	l    *rowLayout
	// scratch: the block belongs to a scratch and is reused for the next row, so the row's values
	// are packed out of it (packed.go) rather than bound from it.
	scratch bool
}

func (l *rowLayout) alloc() rowMem {
	return rowMem{base: reflect.New(l.typ).UnsafePointer(), l: l}
}

// values is the block's V array as a slice: Row.Values.
func (m rowMem) values() []any { return unsafe.Slice((*any)(m.base), m.l.nvals) }

// str is string slot i of S.
func (m rowMem) str(i int) *string {
	return (*string)(unsafe.Add(m.base, m.l.offStr+uintptr(i)*unsafe.Sizeof("")))
}

// fixed is the address of byte off of B; the caller converts it to the enc type of the column,
// whose width layoutRowMemory reserved there. The enc types are byte arrays: any offset is aligned.
func (m rowMem) fixed(off int) unsafe.Pointer {
	return unsafe.Add(m.base, m.l.offFixedBytes+uintptr(off))
}

func (m rowMem) bigint(off int) *encBigint       { return (*encBigint)(m.fixed(off)) }
func (m rowMem) int(off int) *encInt             { return (*encInt)(m.fixed(off)) }
func (m rowMem) smallint(off int) *encSmallint   { return (*encSmallint)(m.fixed(off)) }
func (m rowMem) tinyint(off int) *encTinyint     { return (*encTinyint)(m.fixed(off)) }
func (m rowMem) float(off int) *encFloat         { return (*encFloat)(m.fixed(off)) }
func (m rowMem) double(off int) *encDouble       { return (*encDouble)(m.fixed(off)) }
func (m rowMem) timestamp(off int) *encTimestamp { return (*encTimestamp)(m.fixed(off)) }
func (m rowMem) date(off int) *encDate           { return (*encDate)(m.fixed(off)) }
func (m rowMem) uuid(off int) *encUUID           { return (*encUUID)(m.fixed(off)) }
func (m rowMem) timeUUID(off int) *encTimeUUID   { return (*encTimeUUID)(m.fixed(off)) }
