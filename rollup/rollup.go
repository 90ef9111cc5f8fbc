// Package rollup computes rollup rows: the aggregates of the raw rows of one entity and window, or
// of the rows of a finer rollup, and the write timestamp of the row. It is pure: no I/O, no clock,
// no goroutines; the same rows in the same order give the same values on every call.
//
// A row is a map from column name to its Go value as the driver scans it (int8, int16, int, int64,
// float32, float64, time.Time, string, ...), with nil (or no entry) for a null cell.
package rollup

import (
	"cmp"
	"errors"
	"fmt"
	"time"

	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/schema"
)

// Result is one computed rollup row: the raw rows it summarizes (the sink_rows column) and one value
// per aggregate, in the rollup's order, nil for an aggregate with nothing to aggregate (a null cell).
type Result struct {
	Rows   int64
	Values []any
}

// Timestamp is the write timestamp of a rollup row of the window starting at start that summarizes
// rows raw rows: the window's start in microseconds plus rows. Raw rows are only ever added, so the
// same count is the same rows (the same cells, written at the same timestamp however often) and a
// computation that saw more rows writes later and wins (docs/DESIGN.md, "Rollups").
func Timestamp(start time.Time, rows int64) int64 { return start.UnixMicro() + rows }

// ErrOverflow is returned when an integer sum leaves the range of a bigint.
var ErrOverflow = errors.New("integer sum overflows bigint")

// Compute aggregates the raw rows of one entity and window, in ascending order of the raw table's
// clustering key (event time first; the caller reads them so), which decides first and last among
// rows of the same event time and the order of a floating-point sum.
func Compute(r schema.Rollup, rows []map[string]any) (Result, error) {
	res := Result{Rows: int64(len(rows)), Values: make([]any, len(r.Aggregates))}
	for i, a := range r.Aggregates {
		var acc accumulator
		for _, row := range rows {
			if a.Fn == config.AggCount && a.Of == "" {
				acc.n++
				continue
			}
			if err := acc.add(a.Fn, row[a.Of]); err != nil {
				return Result{}, fmt.Errorf("%s of %s: %w", a.Fn, a.Of, err)
			}
		}
		res.Values[i] = acc.value(a.Fn)
	}
	return res, nil
}

// Merge aggregates the rows of the finer rollup a coarser rollup r is made of (r.From), for one
// entity and window, in ascending window order. Each aggregate is made of the finer one of the same
// function over the same column (config.Aggregate.Parts): counts and sums add up, minima and
// maxima of minima and maxima, first and last are the first and last finer value present, and an
// average is the sum of the sums over the sum of the counts.
func Merge(r, finer schema.Rollup, rows []map[string]any) (Result, error) {
	res := Result{Values: make([]any, len(r.Aggregates))}
	for _, row := range rows {
		n, _ := toInt(row[schema.RowsColumn])
		res.Rows += n
	}
	col := func(fn, of string) (string, error) {
		for _, fa := range finer.Aggregates {
			if fa.Fn == fn && fa.Of == of {
				return fa.Column, nil
			}
		}
		return "", fmt.Errorf("rollup %s has no %s of %q", finer.Name, fn, of)
	}
	for i, a := range r.Aggregates {
		switch a.Fn {
		case config.AggAvg:
			sc, err := col(config.AggSum, a.Of)
			if err != nil {
				return Result{}, err
			}
			cc, err := col(config.AggCount, a.Of)
			if err != nil {
				return Result{}, err
			}
			var sum, count accumulator
			for _, row := range rows {
				if err := sum.add(config.AggSum, row[sc]); err != nil {
					return Result{}, fmt.Errorf("avg of %s: %w", a.Of, err)
				}
				n, _ := toInt(row[cc])
				count.n += n
			}
			if count.n > 0 && sum.set {
				s := sum.f
				if sum.isInt {
					s = float64(sum.i)
				}
				res.Values[i] = s / float64(count.n)
			}
		default:
			c, err := col(a.Fn, a.Of)
			if err != nil {
				return Result{}, err
			}
			fn := a.Fn
			if fn == config.AggCount {
				fn = config.AggSum // counts add up
			}
			var acc accumulator
			for _, row := range rows {
				if err := acc.add(fn, row[c]); err != nil {
					return Result{}, fmt.Errorf("%s of %s: %w", a.Fn, a.Of, err)
				}
			}
			if a.Fn == config.AggCount {
				res.Values[i] = acc.i // no finer row means no coarser row; a count is never null
				continue
			}
			res.Values[i] = acc.value(a.Fn)
		}
	}
	return res, nil
}

// accumulator folds the values of one column in order.
type accumulator struct {
	n     int64 // values seen (not null)
	set   bool  // a value is held
	isInt bool  // the sum is integral
	i     int64
	f     float64
	v     any // min, max, first, last: the value in the column's own type
}

func (a *accumulator) add(fn string, v any) error {
	if v == nil {
		return nil
	}
	a.n++
	switch fn {
	case config.AggCount:
	case config.AggSum, config.AggAvg:
		if n, ok := toInt(v); ok {
			if a.set && !a.isInt {
				return fmt.Errorf("mixed integer and floating-point values")
			}
			s := a.i + n
			if (n > 0 && s < a.i) || (n < 0 && s > a.i) {
				return ErrOverflow
			}
			a.i, a.isInt, a.set = s, true, true
			return nil
		}
		f, ok := toFloat(v)
		if !ok || (a.set && a.isInt) {
			return fmt.Errorf("%T is not a number", v)
		}
		a.f, a.set = a.f+f, true
	case config.AggMin, config.AggMax:
		if a.set {
			c, err := compare(v, a.v)
			if err != nil {
				return err
			}
			if (fn == config.AggMin && c >= 0) || (fn == config.AggMax && c <= 0) {
				return nil
			}
		}
		a.v, a.set = v, true
	case config.AggFirst:
		if !a.set {
			a.v, a.set = v, true
		}
	case config.AggLast:
		a.v, a.set = v, true
	default:
		return fmt.Errorf("%q is not an aggregate", fn)
	}
	return nil
}

func (a *accumulator) value(fn string) any {
	switch fn {
	case config.AggCount:
		return a.n
	case config.AggSum:
		switch {
		case !a.set:
			return nil
		case a.isInt:
			return a.i
		}
		return a.f
	case config.AggAvg:
		switch {
		case !a.set:
			return nil
		case a.isInt:
			return float64(a.i) / float64(a.n)
		}
		return a.f / float64(a.n)
	}
	if !a.set {
		return nil
	}
	return a.v
}

// toInt is v as an int64 when it is an integer of a CQL integer type.
func toInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int:
		return int64(x), true
	case int64:
		return x, true
	}
	return 0, false
}

// toFloat is v as a float64 when it is a float or a double.
func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float32:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// compare orders two values of one column: integers, floating-point numbers (NaN below every
// number, as cmp.Compare has it, so min and max are total and deterministic) and timestamps.
func compare(a, b any) (int, error) {
	if x, ok := toInt(a); ok {
		if y, ok := toInt(b); ok {
			return cmp.Compare(x, y), nil
		}
	}
	if x, ok := toFloat(a); ok {
		if y, ok := toFloat(b); ok {
			return cmp.Compare(x, y), nil
		}
	}
	if x, ok := a.(time.Time); ok {
		if y, ok := b.(time.Time); ok {
			return x.Compare(y), nil
		}
	}
	return 0, fmt.Errorf("cannot order %T and %T", a, b)
}
