package mapper

import (
	"math"
	"time"
	"unicode/utf8"

	jsonc "github.com/bucketsink/sink/codec/json"
	"github.com/bucketsink/sink/packed"
)

// The JSON path's fast side: the single-pass scan of package codec/json finds a topic's field
// paths in one read of the record's bytes, and mapScanned converts what it found straight into
// the row. fastjson (mapParsed) stays the reference: mapScanned says "not handled" for every
// record the scan does not handle (see codec/json), and for every failure (a value that does not
// convert, a required value missing or null, the later steps of the row, complete), so that every
// error message is the reference's. A topic with a field column of a type the scan does not
// convert (collections, blob, inet, decimal, varint) has no scan plan: fastjson maps all its records.
//
// TestScanMatchesParse and FuzzScanMatchesParse map inputs through both paths and require the
// same row (values, key, size, target, event time) whenever the scan handles one.

// scanPlan is the compiled field lookup of one topic.
type scanPlan struct {
	*jsonc.Scanner
	timeSlot int   // the slot of the event time field; -1 when the time comes from Kafka
	colSlot  []int // per column of plan.cols: its field's slot; -1 for the other sources
}

// newScanPlan compiles the paths of the topic's field columns and of its event time field; nil
// when a field column has a type the scan does not convert.
func newScanPlan(p *plan) *scanPlan {
	sp := &scanPlan{Scanner: jsonc.NewScanner(), timeSlot: -1, colSlot: make([]int, len(p.cols))}
	var ok bool
	for i := range p.cols {
		c := &p.cols[i]
		sp.colSlot[i] = -1
		if c.source != srcField {
			continue
		}
		if !c.direct && c.typ.kind != kBoolean {
			return nil
		}
		if sp.colSlot[i], ok = sp.Add(c.path); !ok {
			return nil
		}
	}
	if !p.timeFromKafka {
		if sp.timeSlot, ok = sp.Add(p.timePath); !ok {
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
	if cap(s.raw) < sp.Slots() {
		s.raw = make([]jsonc.Raw, sp.Slots())
	}
	raw := s.raw[:sp.Slots()]
	b := rec.Value
	if !sp.Scan(b, raw) {
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
		if slot >= 0 && p.cols[i].need != "" && (raw[slot].Kind == jsonc.Missing || raw[slot].Kind == jsonc.Null) {
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
		case raw[slot].Kind == jsonc.Missing || raw[slot].Kind == jsonc.Null:
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
func (p *plan) scannedTime(r jsonc.Raw, b []byte) (time.Time, bool) {
	text := bstr(b[r.Off:r.End])
	if p.timeUnit == 0 {
		if r.Kind != jsonc.String {
			return time.Time{}, false
		}
		t, err := jsonc.ParseRFC3339(text)
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
func scannedNumeric(r jsonc.Raw, text string) bool {
	switch r.Kind {
	case jsonc.Number:
		return true // the scan checked it
	case jsonc.String:
		return jsonc.IsNumber(text)
	}
	return false
}

// scannedBool is appendScalar's boolean for a scanned value.
func scannedBool(r jsonc.Raw, b []byte) (v, ok bool) {
	switch r.Kind {
	case jsonc.True:
		return true, true
	case jsonc.False:
		return false, true
	case jsonc.String:
		switch bstr(b[r.Off:r.End]) {
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
func scannedCell(k kind, r jsonc.Raw, b []byte, x *cell) bool {
	raw := b[r.Off:r.End]
	text := bstr(raw)
	switch k {
	case kText, kASCII:
		switch r.Kind {
		case jsonc.String, jsonc.Number, jsonc.True, jsonc.False:
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
		f, err := jsonc.ParseFloat(text)
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
		if r.Kind == jsonc.String && !jsonc.IsNumber(text) {
			t, err := jsonc.ParseRFC3339(text)
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
		if r.Kind != jsonc.String || len(text) != len(time.DateOnly) {
			return false
		}
		t, err := time.Parse(time.DateOnly, text)
		if err != nil || !inTimeRange(t) {
			return false
		}
		x.t = t
	case kUUID, kTimeUUID:
		if r.Kind != jsonc.String {
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
