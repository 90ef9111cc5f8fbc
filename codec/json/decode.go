package json

import (
	"fmt"
	"math"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/packed"
)

// Codec is the JSON codec behind the seam: a plan reads a record with one Scan and converts each
// field's value for its column; a record the scan does not map (an escape in a value read, a value it
// does not convert, one that does not fit, a document that is not strict JSON or not an object) is
// parsed into a tree by fastjson and read from it (tree.go), which gives every JSON row and error
// message. So a plan maps every record of every column type itself, and a value that does not fit its
// column is a Value of State Bad.
//
// The scan converts text, ascii, the integers, float, double, timestamp, date, uuid, timeuuid and
// boolean; a topic with a field of another type (collections, blob, inet, decimal, varint) is read
// through the tree alone (Scannable says which).
//
// TestScanMatchesParse and FuzzScanMatchesParse (package mapper) map inputs through a plan and through
// the tree alone (Tree) and require the same row, or the same reason and message.
type Codec struct {
	// Key: the plan reads a Kafka key, not a record's value: a JSON scalar is the value of the lone
	// field when that field is Whole (a scalar that must name several fields is ErrNotObject), an empty
	// or null key is a parse error like any other text that is not JSON, and numbers outside JSON's
	// grammar are not looked for.
	Key bool
	// Tree: the plan reads every record through the parsed tree, never the scan: the reference the
	// scan is tested against.
	Tree bool
}

// Scannable reports whether a plan converts a value for a field of type t.
func Scannable(t packed.Type) bool {
	switch t.Kind {
	case packed.KText, packed.KASCII, packed.KTinyint, packed.KSmallint, packed.KInt, packed.KBigint,
		packed.KFloat, packed.KDouble, packed.KTimestamp, packed.KDate, packed.KUUID, packed.KTimeUUID,
		packed.KBoolean:
		return true
	}
	return false
}

// Compile builds the plan of fields. s is nil for plain JSON; for json_schema it is the writer
// schema, which must be a JSON Schema that can feed every field (schema.go says what is checked:
// the fields' declarations and types, never a record's body against the schema); a
// *codec.SchemaError says which field it cannot feed.
func (c Codec) Compile(s *codec.Schema, fields []codec.Field) (codec.Plan, error) {
	if s != nil && s.Type != "JSON" {
		return nil, &codec.SchemaError{SchemaID: s.ID, Err: fmt.Errorf("a %s schema, not a JSON Schema (is the topic's codec right?)", s.Type)}
	}
	if s != nil {
		if err := checkWriterSchema(s, fields); err != nil {
			return nil, err
		}
	}
	p := &plan{fields: fields, slots: make([]int, len(fields)), key: c.Key}
	if c.Key || c.Tree {
		return p, nil // keys are read through the tree: they are rare, and may be scalars
	}
	sc := NewScanner()
	for i := range fields {
		var ok bool
		if !Scannable(fields[i].Type) {
			return p, nil
		}
		if p.slots[i], ok = sc.Add(fields[i].Path); !ok {
			return p, nil
		}
	}
	p.sc = sc
	return p, nil
}

// plan is a JSON plan; sc is nil when no record can be scanned (the tree reads them all).
type plan struct {
	sc     *Scanner
	fields []codec.Field
	slots  []int // per field: its slot in the scan
	key    bool  // Codec.Key
}

// maxStackSlots is how many scan slots a Decode keeps on its stack; a plan with more (a topic
// reading more than that many keys) allocates its slots per record.
const maxStackSlots = 16

// Decode scans body and converts every field; a record the scan does not map is read through the
// parsed tree (decodeTree), whose errors are about the whole document.
func (p *plan) Decode(body []byte, out []codec.Value, buf []byte) ([]byte, error) {
	if p.sc != nil && p.scan(body, out) {
		return buf, nil
	}
	return p.decodeTree(body, out, buf)
}

// scan maps body by the single-pass scan; false when it does not map it.
func (p *plan) scan(body []byte, out []codec.Value) bool {
	var stack [maxStackSlots]Raw
	var raw []Raw
	if n := p.sc.Slots(); n <= maxStackSlots {
		raw = stack[:n]
	} else {
		raw = make([]Raw, n)
	}
	if !p.sc.Scan(body, raw) {
		return false
	}
	for i := range p.fields {
		v, r := &out[i], raw[p.slots[i]]
		switch r.Kind {
		case Missing:
			v.State = codec.Absent
			continue
		case Null:
			v.State = codec.Null
			continue
		}
		v.State = codec.Set
		if !convert(&p.fields[i], r, body, v) {
			return false
		}
	}
	return true
}

// The wire bytes of a boolean, shared: the mapper copies a value's bytes into its row.
var (
	wireFalse = packed.AppendBoolean(nil, false)
	wireTrue  = packed.AppendBoolean(nil, true)
)

// convert converts the scanned value r of field f into v, as the tree converts it; false for every
// value the tree refuses, and for some it takes (it then maps them itself). Text bytes alias b.
func convert(f *codec.Field, r Raw, b []byte, v *codec.Value) bool {
	raw := b[r.Off:r.End]
	text := bstr(raw)
	switch k := f.Type.Kind; k {
	case packed.KText, packed.KASCII:
		switch r.Kind {
		case String, Number, True, False:
			// A string as is; a number or a boolean as its JSON text, which is these bytes.
		default:
			return false
		}
		if k == packed.KASCII {
			if !codec.ASCII(raw) {
				return false
			}
		} else if !utf8.Valid(raw) {
			return false // the reference names the byte
		}
		v.B = raw
	case packed.KBoolean:
		switch {
		case r.Kind == True, r.Kind == String && text == "true":
			v.B = wireTrue
		case r.Kind == False, r.Kind == String && text == "false":
			v.B = wireFalse
		default:
			return false
		}
	case packed.KDouble, packed.KFloat:
		if !numeric(r, text) {
			return false
		}
		x, err := ParseFloat(text)
		if err != nil || (k == packed.KFloat && math.Abs(x) > math.MaxFloat32) {
			return false
		}
		v.F = x
	case packed.KTinyint, packed.KSmallint, packed.KInt, packed.KBigint:
		if !numeric(r, text) {
			return false
		}
		n, st := ParseIntegral(text)
		if st != IntOK || n < intBounds[k][0] || n > intBounds[k][1] {
			return false
		}
		v.N = n
	case packed.KTimestamp:
		if r.Kind == String && (f.Time.Form == codec.TimeRFC3339 || f.Time.Form == codec.TimeDefault && !IsNumber(text)) {
			// RFC 3339 text, the usual event time, here rather than in scanTime: the hot path of most records.
			t, err := ParseRFC3339(text)
			if err != nil || !codec.InRange(t) {
				return false
			}
			v.T = t
			return true
		}
		t, ok := scanTime(f, k, r, raw)
		if !ok {
			return false
		}
		v.T = t
	case packed.KDate:
		t, ok := scanTime(f, k, r, raw)
		if !ok {
			return false
		}
		v.T = t
	case packed.KUUID, packed.KTimeUUID:
		if r.Kind != String {
			return false
		}
		u, ok := codec.ParseUUID(raw)
		if !ok || (k == packed.KTimeUUID && u[6]>>4 != 1) {
			return false
		}
		v.U = u
	default:
		return false
	}
	return true
}

// scanTime converts the scanned value r (bytes raw) of a timestamp or date field f in its format, as
// instantOf does, but for RFC 3339 text, which convert reads; false for every value instantOf refuses.
func scanTime(f *codec.Field, k packed.Kind, r Raw, raw []byte) (time.Time, bool) {
	text := bstr(raw)
	switch f.Time.Form {
	case codec.TimeDefault:
		if k == packed.KDate {
			if r.Kind != String || len(text) != len(time.DateOnly) {
				return time.Time{}, false
			}
			t, err := time.Parse(time.DateOnly, text)
			return t, err == nil && codec.InRange(t)
		}
		if r.Kind == String && !IsNumber(text) {
			return time.Time{}, false // RFC 3339, which convert reads itself
		}
	case codec.TimeRFC3339:
		return time.Time{}, false // RFC 3339 is a string, which convert reads itself
	case codec.TimeLayout:
		if r.Kind != String {
			return time.Time{}, false
		}
		t, why := f.Time.Text(k, raw, "")
		return t, why == ""
	}
	if !numeric(r, text) {
		return time.Time{}, false
	}
	return parseUnix(text, f.Time.IntegerUnit(k))
}

// parseUnix is the time a JSON number counts in units of u since the epoch (ParseUnix), whole days
// only for u of a day.
func parseUnix(text string, u time.Duration) (time.Time, bool) {
	if u != codec.Day {
		return ParseUnix(text, u)
	}
	n, st := ParseIntegral(text)
	if st != IntOK {
		return time.Time{}, false
	}
	return codec.UnixTime(n, u)
}

// numeric reports whether a scanned value is a number, or a string holding one.
func numeric(r Raw, text string) bool {
	switch r.Kind {
	case Number:
		return true // the scan checked it
	case String:
		return IsNumber(text)
	}
	return false
}

// intBounds are the ranges of CQL's integer kinds.
var intBounds = [...][2]int64{
	packed.KTinyint:  {math.MinInt8, math.MaxInt8},
	packed.KSmallint: {math.MinInt16, math.MaxInt16},
	packed.KInt:      {math.MinInt32, math.MaxInt32},
	packed.KBigint:   {math.MinInt64, math.MaxInt64},
}

// bstr views b as a string without copying, for parsers that do not keep it.
func bstr(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
