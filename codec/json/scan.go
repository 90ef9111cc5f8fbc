package json

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// The single-pass scan.
//
// A full JSON parser (fastjson) builds a tree of every value of a record, and each field is then
// found by a linear search of the keys of each level. A topic reads a handful of fields known when
// it is compiled, so a Scanner holds their paths as a small tree of keys, and Scan reads the
// record's bytes once: a key of an object on a needed path is looked up among that level's few
// keys, the first occurrence of a needed key records where its value is (fastjson's Get returns
// the first too; the first duplicate key wins), and everything else is skipped, but checked as it
// is skipped, so that the scan never accepts a document fastjson rejects.
//
// fastjson stays the reference (the parsed tree, tree.go). The scan handles the shapes records have
// in practice and says "not handled" for anything else, and the plan then reads the record through
// the tree, which gives the row, or the error message, it always gave. Not handled:
//
//   - a value that is not an object, or a document outside the strict JSON this scan reads
//     (fastjson accepts more: numbers such as 1-2, +1, NaN or Infinity), or one nested deeper than
//     maxScanDepth;
//   - an escape in a key of an object the scan looks into (fastjson compares such keys raw or
//     unescaped depending on the lookups before);
//   - a value of a leaf path (one Add was given) that is a string with an escape, an object or an
//     array, and an array on the way to a leaf (fastjson indexes arrays by number).

// maxScanDepth bounds the nesting the scan follows, well under fastjson's MaxDepth (300): a deeper
// document goes to fastjson, which accepts or rejects it by its own limit.
const maxScanDepth = 64

// Scanner is the compiled field lookup of one topic: the paths given to Add. Once built it is
// immutable and safe for concurrent use.
type Scanner struct {
	nodes  []scanNode // nodes[0] holds the keys of the record's top-level object
	nslots int        // one per edge
}

// NewScanner returns a Scanner that looks for no path yet.
func NewScanner() *Scanner { return &Scanner{nodes: make([]scanNode, 1)} }

// Slots is the length of the []Raw that Scan fills.
func (sp *Scanner) Slots() int { return sp.nslots }

// Add makes the scanner look for the value at path (the keys of nested objects) and returns the
// slot of the []Raw where Scan records it; false when one object would need more keys than a
// Scanner holds (no topic reads that many fields of one object).
func (sp *Scanner) Add(path []string) (int, bool) {
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
				return -1, false
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
	return slot, slot >= 0
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

// Kind is what the scan found for a path.
type Kind uint8

const (
	Missing Kind = iota // the record has no value at the path
	String              // a string without escapes: Off:End is its content
	Escaped             // a string with an escape, on the way to a leaf only
	Number              // Off:End is its text, a JSON number (IsNumber)
	True                // Off:End is the literal, as for False and Null
	False
	Null
	Object // on the way to a leaf only
)

// Raw is where the value of a path is in the record's bytes.
type Raw struct {
	Kind     Kind
	Off, End int
}

// Scan records in raw (Slots long) where the values of the paths are in the JSON document b;
// false when it does not handle the document (see above), which its caller must then read with
// the reference parser.
func (sp *Scanner) Scan(b []byte, raw []Raw) bool {
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
func (sp *Scanner) object(b []byte, i, node int, raw []Raw, depth int) (int, bool) {
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
		if e := nd.find(key, w); e >= 0 && raw[nd.edges[e].slot].Kind == Missing {
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
func (sp *Scanner) value(b []byte, i int, e *scanEdge, raw []Raw, depth int) (int, bool) {
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
		r.Kind, r.Off = Object, i
		if e.node >= 0 {
			i, ok = sp.object(b, i+1, e.node, raw, depth)
		} else {
			i, ok = skipValue(b, i, depth)
		}
		r.End = i
		return i, ok
	case '[':
		// Read by a column, or on the way to one (fastjson indexes arrays by number).
		return i, false
	case '"':
		end, esc, ok := stringEnd(b, i+1)
		if !ok || esc && e.leaf {
			return i, false
		}
		r.Kind, r.Off, r.End = String, i+1, end
		if esc {
			r.Kind = Escaped
		}
		return end + 1, true
	}
	end, kind, ok := scalar(b, i)
	if ok {
		r.Kind, r.Off, r.End = kind, i, end
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
func scalar(b []byte, i int) (int, Kind, bool) {
	switch rest := b[i:]; b[i] {
	case 't':
		if len(rest) >= 4 && string(rest[:4]) == "true" {
			return i + 4, True, true
		}
	case 'f':
		if len(rest) >= 5 && string(rest[:5]) == "false" {
			return i + 5, False, true
		}
	case 'n':
		if len(rest) >= 4 && string(rest[:4]) == "null" {
			return i + 4, Null, true
		}
	}
	end, ok := number(b, i)
	return end, Number, ok
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
