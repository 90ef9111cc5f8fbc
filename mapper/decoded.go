package mapper

import (
	"context"
	"errors"
	"fmt"

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
