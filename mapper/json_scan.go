package mapper

import (
	"encoding/binary"
	"math"
	"math/bits"
	"time"
	"unicode/utf8"

	"github.com/bucketsink/sink/packed"
)

// The single-pass scan.
//
// fastjson parses a whole record into a tree of values, and each column then finds its field by
// a linear search of the keys of each level. A topic reads a handful of fields known at New, so
// newScanPlan compiles their paths into a small tree of keys, and scan reads the record's bytes
// once: a key of an object on a needed path is looked up among that level's few keys, the first
// occurrence of a needed key records where its value is (fastjson's Get returns the first too),
// and everything else is skipped, but checked as it is skipped, so that the scan never accepts a
// document fastjson rejects.
//
// fastjson stays the reference. The scan handles the shapes records have in practice and says
// "not handled" for anything else; the record is then mapped by the fastjson path (mapParsed),
// which gives the row, or the error message, it always gave. Not handled:
//
//   - a value that is not an object, or a document outside the strict JSON this scan reads
//     (fastjson accepts more: numbers such as 1-2, +1, NaN or Infinity), or one nested deeper than
//     maxScanDepth;
//   - an escape in a key of an object the scan looks into (fastjson compares such keys raw or
//     unescaped depending on the lookups before);
//   - a value read by a column or as the event time that is a string with an escape, an object
//     or an array, and an array on the way to a field (fastjson indexes arrays by number);
//   - every failure: a value that does not convert, a required value missing or null, the later
//     steps of the row (complete). The error always comes from the fastjson path, so its message
//     is the reference's;
//   - all records of a topic with a field column of a type the scan does not convert
//     (collections, blob, inet, decimal, varint): such a topic has no scan plan.
//
// TestScanMatchesParse and FuzzScanMatchesParse map inputs through both paths and require the
// same row (values, key, size, target, event time) whenever the scan handles one.

// maxScanDepth bounds the nesting the scan follows, well under fastjson's MaxDepth (300): a deeper
// document goes to fastjson, which accepts or rejects it by its own limit.
const maxScanDepth = 64

// scanPlan is the compiled field lookup of one topic.
type scanPlan struct {
	nodes    []scanNode // nodes[0] holds the keys of the record's top-level object
	nslots   int        // one per edge
	timeSlot int        // the slot of the event time field; -1 when the time comes from Kafka
	colSlot  []int      // per column of plan.cols: its field's slot; -1 for the other sources
}

// scanNode is one object level of the needed paths.
type scanNode struct {
	edges []scanEdge
	// byLen[n] is 1 + the index of the first edge whose key is n bytes long (min(n, 31) bytes
	// for longer keys), 0 when there is none; scanEdge.next chains the others of that length.
	// A key of the record is compared with the keys of its length only.
	byLen [32]uint16
}

// find returns the index of the edge of key, whose keyWord is w; -1 when key is not needed.
func (n *scanNode) find(key []byte, w uint64) int {
	for k := int(n.byLen[min(len(key), 31)]) - 1; k >= 0; k = int(n.edges[k].next) - 1 {
		e := &n.edges[k]
		if e.word == w && len(e.key) == len(key) && (len(key) <= 8 || string(key[8:]) == e.key[8:]) {
			return k
		}
	}
	return -1
}

// scanEdge is a key of an object level.
type scanEdge struct {
	key  string
	word uint64 // keyWord of key: its first 8 bytes, for a one-word first comparison
	// slot is where the value of this key's first occurrence is recorded. Every edge has one, also
	// one only passed through, so that a recorded value also says the key was seen.
	slot int
	node int    // the level of the keys needed below this one; -1 when there is none
	next uint16 // 1 + the index of the next edge in the byLen chain of its length; 0 at the end
	// leaf is set when a column or the event time reads the value of this key. The scan then
	// gives up at once on a value it leaves to fastjson whatever the column's type: a string with
	// an escape, an object or an array (as text it would be re-serialized, anything else refuses
	// it), so that such a record does not pay for a whole scan before fastjson's parse.
	leaf bool
}

// rawKind is what the scan found for a field path.
type rawKind uint8

const (
	rawMissing rawKind = iota
	rawString          // a string without escapes: off:end is its content
	rawEscaped         // a string with an escape, on the path to a field only
	rawNumber          // off:end is its text, a JSON number (isNumber)
	rawTrue            // off:end is the literal, as for false and null
	rawFalse
	rawNull
	rawObject // on the path to a field only
)

// rawValue is where a field's value is in the record's bytes.
type rawValue struct {
	kind     rawKind
	off, end int
}

// newScanPlan compiles the paths of the topic's field columns and of its event time field; nil
// when a field column has a type the scan does not convert.
func newScanPlan(p *plan) *scanPlan {
	sp := &scanPlan{nodes: make([]scanNode, 1), timeSlot: -1, colSlot: make([]int, len(p.cols))}
	add := func(path []string) int {
		n, slot := 0, -1
		for depth, key := range path {
			k := -1
			for j, e := range sp.nodes[n].edges {
				if e.key == key {
					k = j
					break
				}
			}
			if k < 0 {
				nd := &sp.nodes[n]
				k = len(nd.edges)
				if k == math.MaxUint16 {
					return -1 // no topic reads that many fields of one object; newScanPlan gives up
				}
				// Chained at the head: the chain's order does not matter, keys are unique in it.
				l := min(len(key), 31)
				w := keyWord([]byte(key), 0, len(key))
				nd.edges = append(nd.edges, scanEdge{key: key, word: w, slot: sp.nslots, node: -1, next: nd.byLen[l]})
				nd.byLen[l] = uint16(k + 1)
				sp.nslots++
			}
			slot = sp.nodes[n].edges[k].slot
			if depth == len(path)-1 {
				sp.nodes[n].edges[k].leaf = true
				break
			}
			if sp.nodes[n].edges[k].node < 0 {
				sp.nodes[n].edges[k].node = len(sp.nodes)
				sp.nodes = append(sp.nodes, scanNode{})
			}
			n = sp.nodes[n].edges[k].node
		}
		return slot
	}
	for i := range p.cols {
		c := &p.cols[i]
		sp.colSlot[i] = -1
		if c.source != srcField {
			continue
		}
		if !c.direct && c.typ.kind != kBoolean {
			return nil
		}
		if sp.colSlot[i] = add(c.path); sp.colSlot[i] < 0 {
			return nil
		}
	}
	if !p.timeFromKafka {
		if sp.timeSlot = add(p.timePath); sp.timeSlot < 0 {
			return nil
		}
	}
	return sp
}

// mapScanned maps rec from one scan of its bytes; false when the scan, or any step after it, does
// not handle the record, which the fastjson path must then map.
func (p *plan) mapScanned(rec *Record, s *scratch) (outcome, bool) {
	var out outcome
	sp := p.scan
	if cap(s.raw) < sp.nslots {
		s.raw = make([]rawValue, sp.nslots)
	}
	raw := s.raw[:sp.nslots]
	b := rec.Value
	if !sp.scan(b, raw) {
		return out, false
	}

	if p.timeFromKafka {
		t, err := p.eventTime(nil, rec, s)
		if err != nil {
			return out, false
		}
		out.eventTime = t
	} else {
		t, ok := p.scannedTime(raw[sp.timeSlot], b)
		if !ok {
			return out, false
		}
		out.eventTime = t
	}
	if _, err := p.accept(out.eventTime, rec); err != nil {
		return out, false
	}

	// A required value missing is looked for before any value is written, so that such a record
	// costs no encoding work before fastjson maps it. (The scan already gave up on the other values
	// left to fastjson whatever they hold: see scanEdge.leaf.)
	for i, slot := range sp.colSlot {
		if slot >= 0 && p.cols[i].need != "" && (raw[slot].kind == rawMissing || raw[slot].kind == rawNull) {
			return out, false
		}
	}

	s.begin(p)
	for i, slot := range sp.colSlot {
		c := &p.cols[i]
		ok := true
		switch {
		case slot < 0:
			// Not a field: value reads the record, not the JSON.
			ok = p.value(c, nil, rec, out.eventTime, s) == nil
		case raw[slot].kind == rawMissing || raw[slot].kind == rawNull:
			s.w.Absent(c.absent)
		case !c.direct: // boolean, the one type the scan converts without a cell
			var v bool
			if v, ok = scannedBool(raw[slot], b); ok {
				s.coll = packed.AppendBoolean(s.coll[:0], v)
				s.putWire(c, s.coll)
			}
		default:
			var x cell
			if ok = scannedCell(c.typ.kind, raw[slot], b, &x); ok {
				store(c, &x, s)
			}
		}
		if !ok {
			return out, false
		}
		s.spans[i] = s.w.Last()
	}
	if p.complete(&out, rec, s) != nil {
		return out, false
	}
	return out, true
}

// scannedTime is eventTime for a scanned field; false also for every error.
func (p *plan) scannedTime(r rawValue, b []byte) (time.Time, bool) {
	text := bstr(b[r.off:r.end])
	if p.timeUnit == 0 {
		if r.kind != rawString {
			return time.Time{}, false
		}
		t, err := parseRFC3339(text)
		if err != nil || !inTimeRange(t) {
			return time.Time{}, false
		}
		return t, true
	}
	if !scannedNumeric(r, text) {
		return time.Time{}, false
	}
	return parseUnix(text, p.timeUnit)
}

// scannedNumeric is numberText's test for a scanned value: a number, or a string holding one.
func scannedNumeric(r rawValue, text string) bool {
	switch r.kind {
	case rawNumber:
		return true // the scan checked it
	case rawString:
		return isNumber(text)
	}
	return false
}

// scannedBool is appendScalar's boolean for a scanned value.
func scannedBool(r rawValue, b []byte) (v, ok bool) {
	switch r.kind {
	case rawTrue:
		return true, true
	case rawFalse:
		return false, true
	case rawString:
		switch bstr(b[r.off:r.end]) {
		case "true":
			return true, true
		case "false":
			return false, true
		}
	}
	return false, false
}

// scannedCell converts a scanned value for a column of kind k as textOf, floatOf, intOf,
// timestampOf, dateOf and uuidOf do; false also for every value they refuse. Text bytes alias b.
func scannedCell(k kind, r rawValue, b []byte, x *cell) bool {
	raw := b[r.off:r.end]
	text := bstr(raw)
	switch k {
	case kText, kASCII:
		switch r.kind {
		case rawString, rawNumber, rawTrue, rawFalse:
			// A string as is; a number or a boolean as its JSON text, which is these bytes.
		default:
			return false
		}
		if k == kASCII {
			for _, c := range raw {
				if c >= 0x80 {
					return false
				}
			}
		} else if !utf8.Valid(raw) {
			return false // the fastjson path names the byte
		}
		x.b = raw
	case kDouble, kFloat:
		if !scannedNumeric(r, text) {
			return false
		}
		f, err := parseFloat(text)
		if err != nil || (k == kFloat && math.Abs(f) > math.MaxFloat32) {
			return false
		}
		x.f = f
	case kTinyint, kSmallint, kInt, kBigint:
		if !scannedNumeric(r, text) {
			return false
		}
		n, st := parseIntegral(text)
		if st != intOK || n < intBounds[k][0] || n > intBounds[k][1] {
			return false
		}
		x.n = n
	case kTimestamp:
		if r.kind == rawString && !isNumber(text) {
			t, err := parseRFC3339(text)
			if err != nil || !inTimeRange(t) {
				return false
			}
			x.t = t
			return true
		}
		if !scannedNumeric(r, text) {
			return false
		}
		t, ok := parseUnix(text, unixMS)
		if !ok {
			return false
		}
		x.t = t
	case kDate:
		if r.kind != rawString || len(text) != len(time.DateOnly) {
			return false
		}
		t, err := time.Parse(time.DateOnly, text)
		if err != nil || !inTimeRange(t) {
			return false
		}
		x.t = t
	case kUUID, kTimeUUID:
		if r.kind != rawString {
			return false
		}
		u, ok := parseCanonicalUUID(raw)
		if !ok || (k == kTimeUUID && u.Version() != 1) {
			return false
		}
		x.u = u
	default:
		return false
	}
	return true
}

// scan records in raw where the needed fields of the JSON document b are; false when it does not
// handle the document (see above).
func (sp *scanPlan) scan(b []byte, raw []rawValue) bool {
	clear(raw)
	i := skipSpace(b, 0)
	if i == len(b) || b[i] != '{' {
		return false
	}
	i, ok := sp.object(b, i+1, 0, raw, 1)
	return ok && skipSpace(b, i) == len(b)
}

// keyEnd returns the index of the closing quote of the key whose content starts at b[i], and its
// keyWord; false for a key with an escape, or without an end. Most keys are shorter than 8 bytes,
// and then one word holds the key and its closing quote, and is the key's word once masked.
func keyEnd(b []byte, i int) (end int, w uint64, ok bool) {
	if i+8 <= len(b) {
		w = binary.LittleEndian.Uint64(b[i:])
		if m := quoteOrBackslash(w); m != 0 {
			n := bits.TrailingZeros64(m) >> 3
			if b[i+n] != '"' {
				return i, 0, false
			}
			return i + n, w & (1<<(8*n) - 1), true
		}
		end, esc, ok := stringEnd(b, i+8)
		return end, w, ok && !esc
	}
	end, esc, ok := stringEnd(b, i)
	if !ok || esc {
		return i, 0, false
	}
	return end, keyWord(b, i, end-i), true
}

// quoteOrBackslash flags (0x80) the bytes of w that are '"' or '\\'. Only the lowest flag is sure:
// a borrow may flag a byte above it.
func quoteOrBackslash(w uint64) uint64 {
	q, s := w^(lsbs*'"'), w^(lsbs*'\\')
	return ((q-lsbs)&^q | (s-lsbs)&^s) & (lsbs * 0x80)
}

// keyWord is the first min(n, 8) bytes of b[i:i+n] as a little-endian word, zero-padded.
func keyWord(b []byte, i, n int) uint64 {
	if i+8 <= len(b) {
		w := binary.LittleEndian.Uint64(b[i:])
		if n < 8 {
			w &= 1<<(8*n) - 1
		}
		return w
	}
	var w uint64
	for k := min(n, 8) - 1; k >= 0; k-- {
		w = w<<8 | uint64(b[i+k])
	}
	return w
}

// skipSpace skips the whitespace fastjson skips, which is JSON's. Records seldom have any, so
// the inlined first test usually decides.
func skipSpace(b []byte, i int) int {
	if i < len(b) && b[i] > ' ' {
		return i
	}
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
		i++
	}
	return i
}

// object scans the members of an object whose needed keys are those of node, from just after its
// '{'; it returns the index after the closing '}'. depth is the object's, counted as fastjson does
// (the top-level value is 1).
func (sp *scanPlan) object(b []byte, i, node int, raw []rawValue, depth int) (int, bool) {
	nd := &sp.nodes[node]
	i = skipSpace(b, i)
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return i, false
		}
		end, w, ok := keyEnd(b, i+1)
		if !ok {
			return i, false
		}
		key := b[i+1 : end]
		i = skipSpace(b, end+1)
		if i >= len(b) || b[i] != ':' {
			return i, false
		}
		i = skipSpace(b, i+1)
		if e := nd.find(key, w); e >= 0 && raw[nd.edges[e].slot].kind == rawMissing {
			i, ok = sp.value(b, i, &nd.edges[e], raw, depth+1)
		} else {
			i, ok = skipValue(b, i, depth+1)
		}
		if !ok {
			return i, false
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return i, false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return i + 1, true
		default:
			return i, false
		}
	}
}

// value records the value at b[i] of edge e, the first occurrence of its key, and returns the
// index after it.
func (sp *scanPlan) value(b []byte, i int, e *scanEdge, raw []rawValue, depth int) (int, bool) {
	if depth > maxScanDepth || i >= len(b) {
		return i, false
	}
	r := &raw[e.slot]
	var ok bool
	switch b[i] {
	case '{':
		if e.leaf {
			return i, false
		}
		r.kind, r.off = rawObject, i
		if e.node >= 0 {
			i, ok = sp.object(b, i+1, e.node, raw, depth)
		} else {
			i, ok = skipValue(b, i, depth)
		}
		r.end = i
		return i, ok
	case '[':
		// Read by a column, or on the way to one (fastjson indexes arrays by number).
		return i, false
	case '"':
		end, esc, ok := stringEnd(b, i+1)
		if !ok || esc && e.leaf {
			return i, false
		}
		r.kind, r.off, r.end = rawString, i+1, end
		if esc {
			r.kind = rawEscaped
		}
		return end + 1, true
	}
	end, kind, ok := scalar(b, i)
	if ok {
		r.kind, r.off, r.end = kind, i, end
	}
	return end, ok
}

// skipValue checks the value at b[i] and returns the index after it.
func skipValue(b []byte, i, depth int) (int, bool) {
	if depth > maxScanDepth || i >= len(b) {
		return i, false
	}
	var ok bool
	switch b[i] {
	case '{':
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == '}' {
			return i + 1, true
		}
		for {
			if i >= len(b) || b[i] != '"' {
				return i, false
			}
			var end int
			if end, _, ok = stringEnd(b, i+1); !ok {
				return i, false
			}
			i = skipSpace(b, end+1)
			if i >= len(b) || b[i] != ':' {
				return i, false
			}
			if i, ok = skipValue(b, skipSpace(b, i+1), depth+1); !ok {
				return i, false
			}
			i = skipSpace(b, i)
			if i >= len(b) {
				return i, false
			}
			switch b[i] {
			case ',':
				i = skipSpace(b, i+1)
			case '}':
				return i + 1, true
			default:
				return i, false
			}
		}
	case '[':
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == ']' {
			return i + 1, true
		}
		for {
			if i, ok = skipValue(b, i, depth+1); !ok {
				return i, false
			}
			i = skipSpace(b, i)
			if i >= len(b) {
				return i, false
			}
			switch b[i] {
			case ',':
				i = skipSpace(b, i+1)
			case ']':
				return i + 1, true
			default:
				return i, false
			}
		}
	case '"':
		end, _, ok := stringEnd(b, i+1)
		return end + 1, ok
	}
	end, _, ok := scalar(b, i)
	return end, ok
}

// stringEnd returns the index of the closing quote of the string whose content starts at b[i]:
// the first '"' not escaped by a backslash, the end fastjson finds (it counts the backslashes
// before a quote; an odd run escapes it). esc reports a backslash in the content. Like fastjson,
// it takes any other byte as content.
func stringEnd(b []byte, i int) (end int, esc, ok bool) {
	for i < len(b) {
		if i+8 <= len(b) {
			// Eight bytes at a time, up to the lowest flagged byte.
			m := quoteOrBackslash(binary.LittleEndian.Uint64(b[i:]))
			if m == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) >> 3
		}
		switch b[i] {
		case '"':
			return i, esc, true
		case '\\':
			esc = true
			i += 2
		default:
			i++
		}
	}
	return i, esc, false
}

// lsbs has the lowest bit of each byte of a word set.
const lsbs = 0x0101010101010101

// scalar returns the end and the kind of the literal or number at b[i].
func scalar(b []byte, i int) (int, rawKind, bool) {
	switch rest := b[i:]; b[i] {
	case 't':
		if len(rest) >= 4 && string(rest[:4]) == "true" {
			return i + 4, rawTrue, true
		}
	case 'f':
		if len(rest) >= 5 && string(rest[:5]) == "false" {
			return i + 5, rawFalse, true
		}
	case 'n':
		if len(rest) >= 4 && string(rest[:4]) == "null" {
			return i + 4, rawNull, true
		}
	}
	end, ok := number(b, i)
	return end, rawNumber, ok
}

// number returns the end of the number at b[i]: fastjson's number token, the run of the bytes
// numberByte allows, when that run is a JSON number as isNumber reads one; false otherwise.
func number(b []byte, i int) (int, bool) {
	j := i
	if j < len(b) && b[j] == '-' {
		j++
	}
	d := j
	for j < len(b) && b[j]-'0' < 10 {
		j++
	}
	if j == d {
		return i, false
	}
	if j < len(b) && b[j] == '.' {
		j++
		d = j
		for j < len(b) && b[j]-'0' < 10 {
			j++
		}
		if j == d {
			return i, false
		}
	}
	if j < len(b) && b[j]|0x20 == 'e' {
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		d = j
		for j < len(b) && b[j]-'0' < 10 {
			j++
		}
		if j == d {
			return i, false
		}
	}
	if j < len(b) && numberByte(b[j]) {
		return i, false // fastjson's token goes on ("1.5.2", "1e5-"): not a number
	}
	return j, true
}

// numberByte reports whether fastjson takes c as part of a number token.
func numberByte(c byte) bool {
	return c-'0' < 10 || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E'
}
