package mapper

import (
	"errors"
	"fmt"

	"github.com/bucketsink/sink/codec"
)

// From a plan's values to the row: decodeValues runs the plan, mapValues maps what it gave (row.go).

// mapValues maps a record whose body wp decodes: the values of its fields, then the columns and
// the rest of the row, the same for every codec.
func (p *plan) mapValues(wp codec.Plan, rec *Record, body []byte, s *scratch) (outcome, string, error) {
	var out outcome
	vals, reason, err := decodeValues(wp, p.codecName, p.json, len(p.fields), body, s)
	if err == nil {
		reason, err = p.mapDecoded(&out, vals, p.colSlot, p.timeSlot, p.ttlSlot, rec, s)
	}
	return out, reason, err
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
