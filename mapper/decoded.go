package mapper

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/bucketsink/sink/codec"
)

// From a plan's values to the row: decodeValues runs the plan, mapValues maps what it gave (row.go).

// mapValues maps a record whose body wp decodes: the values of its fields, the entry's filter on
// them, then the columns and the rest of the row, the same for every codec.
func (p *plan) mapValues(ctx context.Context, wp codec.Plan, rec *Record, body []byte, s *scratch) (outcome, string, error) {
	var out outcome
	vals, reason, err := decodeValues(wp, p.codecName, p.json, len(p.fields), body, s)
	if err != nil {
		return p.refuse(ctx, rec, s, reason, err)
	}
	if p.where != nil || p.keyReg != nil {
		if reason, err = p.prepare(ctx, vals, p.whereSlot, rec, s); err != nil {
			return out, reason, err
		}
	}
	reason, err = p.mapDecoded(&out, vals, p.colSlot, p.timeSlot, p.ttlSlot, rec, s)
	return out, reason, err
}

// prepare is what entry p does with a record's decoded values vals before it maps them: judge its
// filter (the values it tests at whereSlot), and decode the key for its key columns (registry key codecs).
// An entry with neither has nothing to do; its callers skip the call.
func (p *plan) prepare(ctx context.Context, vals []codec.Value, whereSlot []int, rec *Record, s *scratch) (string, error) {
	if p.where != nil {
		if reason, err := p.judge(ctx, rec, vals, whereSlot, false, s); err != nil {
			return reason, err
		}
	}
	return p.keyColumns(ctx, rec, s)
}

// refuse is the outcome of a record whose value entry p cannot decode (reason, err): the refusal, unless
// the entry's filter does not take it by what it can judge without the value (a header or the key).
func (p *plan) refuse(ctx context.Context, rec *Record, s *scratch, reason string, err error) (outcome, string, error) {
	if p.where != nil {
		if fr, ferr := p.judge(ctx, rec, nil, nil, true, s); ferr != nil {
			return outcome{}, fr, ferr
		}
	}
	return outcome{}, reason, err
}

// decodeValues decodes body by wp into n values in s.vals (their bytes in s.buf), which it returns.
// JSON's errors (whole: json) are its messages as they are; another codec's say the codec first.
func decodeValues(wp codec.Plan, codecName string, whole bool, n int, body []byte, s *scratch) ([]codec.Value, string, error) {
	vals := s.values(n)
	var err error
	if s.buf, err = wp.Decode(body, vals, s.buf[:0]); err != nil {
		reason := ReasonDecode
		var ce *codec.Error
		if errors.As(err, &ce) {
			reason = ce.Reason
		}
		if !whole {
			err = fmt.Errorf("decoding %s: %w", codecName, err)
		}
		return nil, reason, err
	}
	return vals, "", nil
}

// values is s.vals, n of them.
func (s *scratch) values(n int) []codec.Value {
	if cap(s.vals) < n {
		s.vals = make([]codec.Value, n)
	}
	return s.vals[:n]
}

// judge judges p's filter on rec, whose value's fields the filter reads at vals[slots[i]] (nil vals: a
// tombstone, or with unreadable a value that could not be decoded). It returns "" and nil when the entry
// takes the record; ReasonFiltered and the skip's error when it does not; ReasonKey when a test reads a
// registry-framed key that cannot be decoded; "" and a *codec.UnavailableError when the registry does not
// answer.
func (p *plan) judge(ctx context.Context, rec *Record, vals []codec.Value, slots []int, unreadable bool, s *scratch) (string, error) {
	in := whereInput{f: p.where, rec: rec, s: s, vals: vals, slots: slots, unreadable: unreadable}
	var keyErr error // kept apart from in: its messages would take the record's memory to the heap
	if p.keyReg != nil && len(p.whereKey) > 0 {
		// A registry-framed key is decoded before the tests (once per record, with the key columns).
		in.keyDone, in.keySlots = true, p.whereKey
		if in.key, keyErr = p.registryKey(ctx, rec, s); keyErr != nil {
			if isUnavailable(keyErr) {
				return "", keyErr
			}
			in.key, in.keyBad = nil, true
		}
	}
	taken := p.where.root.eval(&in)
	switch {
	case keyErr != nil && in.stopped():
		return ReasonKey, fmt.Errorf("where: %w", keyErr)
	case taken || in.bad:
		return "", nil
	}
	// The values read are shown only where bad values are (Quoted: the dead letter, explain, quote_values).
	const head = "filtered out: the record does not pass where "
	return ReasonFiltered, &codec.ValueError{Plain: head + p.where.root.describe(&in, false), Quoted: head + p.where.root.describe(&in, true)}
}

// judgeChange judges the filter of envelope entry p on rec, a change event read as written (compileChange)
// and the key. A value that cannot be decoded leaves value tests unjudged: the entry takes the record, and
// its reading of the event refuses it as the bad input it is.
func (p *plan) judgeChange(ctx context.Context, rec *Record, s *scratch) (string, error) {
	f := p.where
	if rec.Value == nil || len(f.vfields) == 0 {
		return p.judge(ctx, rec, nil, nil, false, s)
	}
	if s.where == nil {
		s.where = &whereScratch{}
	}
	ws := s.where
	ws.value = slices.Grow(ws.value[:0], len(f.vfields))[:len(f.vfields)]
	var err error
	switch {
	case f.change != nil:
		ws.valueBuf, err = f.change.Decode(rec.Value, ws.value, ws.valueBuf[:0])
	case f.value != nil:
		id, body, ferr := codec.Frame(rec.Value)
		if ferr != nil {
			err = ferr
			break
		}
		wp, reason, werr := f.value.writerPlan(ctx, id)
		if werr != nil {
			if reason == "" {
				return "", werr // the registry does not answer
			}
			err = werr
			break
		}
		ws.valueBuf, err = wp.Decode(body, ws.value, ws.valueBuf[:0])
	}
	if err != nil {
		return p.judge(ctx, rec, nil, nil, true, s)
	}
	return p.judge(ctx, rec, ws.value, f.self, false, s)
}

// valueAlone decodes body (of writer schema id) by the filter's plan of its value fields alone, for a
// record whose writer schema the entry's own plan refuses (a *codec.SchemaError); nil and false when the
// filter cannot read the schema either, or the body does not decode.
func (p *plan) valueAlone(ctx context.Context, id int, body []byte, s *scratch) ([]codec.Value, []int, bool, error) {
	f := p.where
	if f.value == nil {
		return nil, nil, true, nil
	}
	wp, reason, err := f.value.writerPlan(ctx, id)
	if err != nil {
		if reason == "" {
			return nil, nil, false, err // the registry does not answer
		}
		return nil, nil, false, nil
	}
	if s.where == nil {
		s.where = &whereScratch{}
	}
	ws := s.where
	ws.value = slices.Grow(ws.value[:0], len(f.vfields))[:len(f.vfields)]
	if ws.valueBuf, err = wp.Decode(body, ws.value, ws.valueBuf[:0]); err != nil {
		return nil, nil, false, nil
	}
	return ws.value, f.self, true, nil
}
