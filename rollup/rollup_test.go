package rollup

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/schema"
)

var day = time.Date(2024, 1, 15, 0, 0, 0, 0, time.UTC)

// rows makes n raw rows of one entity over the day, in event time order: an int value v (null one
// time in five), a double d, a timestamp at. Seeded, so a failure repeats.
func rows(seed uint64, n int) []map[string]any {
	rng := rand.New(rand.NewPCG(seed, 7))
	out := make([]map[string]any, n)
	for i := range out {
		at := day.Add(time.Duration(i) * 24 * time.Hour / time.Duration(n))
		row := map[string]any{"at": at, "d": rng.NormFloat64() * 100}
		if rng.IntN(5) > 0 {
			row["v"] = int64(rng.IntN(2001) - 1000)
		}
		out[i] = row
	}
	return out
}

func agg(column, fn, of string) schema.Aggregate {
	return schema.Aggregate{Column: column, Fn: fn, Of: of}
}

var hourly = schema.Rollup{Name: "hourly", Aggregates: []schema.Aggregate{
	agg("n", config.AggCount, ""), agg("v_n", config.AggCount, "v"), agg("v_sum", config.AggSum, "v"),
	agg("v_min", config.AggMin, "v"), agg("v_max", config.AggMax, "v"), agg("v_avg", config.AggAvg, "v"),
	agg("v_first", config.AggFirst, "v"), agg("v_last", config.AggLast, "v"), agg("at_max", config.AggMax, "at"),
}}

var daily = schema.Rollup{Name: "daily", From: "hourly", Aggregates: []schema.Aggregate{
	agg("n", config.AggCount, ""), agg("v_n", config.AggCount, "v"), agg("v_sum", config.AggSum, "v"),
	agg("v_min", config.AggMin, "v"), agg("v_max", config.AggMax, "v"), agg("v_avg", config.AggAvg, "v"),
	agg("v_first", config.AggFirst, "v"), agg("v_last", config.AggLast, "v"), agg("at_max", config.AggMax, "at"),
}}

// A daily rollup made of hourly rows equals the daily rollup of the raw rows, exactly, for integer
// columns: the property that lets a coarse rollup read a few dozen finer rows instead of every raw one.
func TestMergeOfFinerRowsEqualsComputeOfRawRows(t *testing.T) {
	for seed := range uint64(200) {
		raw := rows(seed, 1+int(seed*37%900))
		var finer []map[string]any
		for h := range 24 {
			var of []map[string]any
			for _, r := range raw {
				if r["at"].(time.Time).Sub(day)/time.Hour == time.Duration(h) {
					of = append(of, r)
				}
			}
			if len(of) == 0 {
				continue // a window without rows has no row
			}
			res, err := Compute(hourly, of)
			if err != nil {
				t.Fatal(err)
			}
			row := map[string]any{schema.RowsColumn: res.Rows}
			for i, a := range hourly.Aggregates {
				if res.Values[i] != nil {
					row[a.Column] = res.Values[i]
				}
			}
			finer = append(finer, row)
		}
		merged, err := Merge(daily, hourly, finer)
		if err != nil {
			t.Fatal(err)
		}
		whole, err := Compute(daily, raw)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(merged, whole) {
			t.Fatalf("seed %d, %d rows: from hourly rows %v, from raw rows %v", seed, len(raw), merged, whole)
		}
	}
}

// Compute against an oracle written the obvious way: keep the non-null values, then fold them.
func TestComputeMatchesAnOracle(t *testing.T) {
	r := schema.Rollup{Aggregates: []schema.Aggregate{
		agg("n", config.AggCount, ""), agg("d_n", config.AggCount, "d"), agg("d_sum", config.AggSum, "d"),
		agg("d_min", config.AggMin, "d"), agg("d_max", config.AggMax, "d"), agg("d_avg", config.AggAvg, "d"),
		agg("d_first", config.AggFirst, "d"), agg("d_last", config.AggLast, "d"),
	}}
	for seed := range uint64(100) {
		raw := rows(seed, 1+int(seed*13%300))
		var ds []float64
		for i, row := range raw {
			if i%3 == 1 {
				delete(row, "d")
				continue
			}
			ds = append(ds, row["d"].(float64))
		}
		want := []any{int64(len(raw)), int64(len(ds)), nil, nil, nil, nil, nil, nil}
		if len(ds) > 0 {
			sum, lo, hi := 0.0, math.Inf(1), math.Inf(-1)
			for _, d := range ds {
				sum, lo, hi = sum+d, math.Min(lo, d), math.Max(hi, d)
			}
			want = []any{int64(len(raw)), int64(len(ds)), sum, lo, hi, sum / float64(len(ds)), ds[0], ds[len(ds)-1]}
		}
		got, err := Compute(r, raw)
		if err != nil {
			t.Fatal(err)
		}
		if got.Rows != int64(len(raw)) || !reflect.DeepEqual(got.Values, want) {
			t.Fatalf("seed %d: got %d rows %v, want %v", seed, got.Rows, got.Values, want)
		}
	}
}

// The same rows give the same values and timestamp; more rows give a later timestamp, so a
// computation that saw more wins whatever order the writes land in.
func TestTimestampIsTheSameForTheSameRowsAndLaterForMore(t *testing.T) {
	start := day.Add(13 * time.Hour)
	for seed := range uint64(50) {
		raw := rows(seed, 2+int(seed%40))
		a, errA := Compute(hourly, raw)
		b, errB := Compute(hourly, raw)
		if errA != nil || errB != nil || !reflect.DeepEqual(a, b) || Timestamp(start, a.Rows) != Timestamp(start, b.Rows) {
			t.Fatalf("seed %d: two computations of the same rows differ: %v %v", seed, a, b)
		}
		fewer, _ := Compute(hourly, raw[:len(raw)-1])
		if Timestamp(start, fewer.Rows) >= Timestamp(start, a.Rows) {
			t.Fatalf("seed %d: %d rows written at %d, not before %d rows at %d", seed, fewer.Rows, Timestamp(start, fewer.Rows), a.Rows, Timestamp(start, a.Rows))
		}
	}
}

// A sum that leaves bigint is an error, never a wrapped value.
func TestIntegerSumOverflowIsAnError(t *testing.T) {
	r := schema.Rollup{Aggregates: []schema.Aggregate{agg("s", config.AggSum, "v")}}
	_, err := Compute(r, []map[string]any{{"v": int64(math.MaxInt64)}, {"v": int64(1)}})
	if !errors.Is(err, ErrOverflow) {
		t.Fatalf("got %v, want ErrOverflow", err)
	}
	if _, err := Compute(r, []map[string]any{{"v": int64(math.MinInt64)}, {"v": int64(-1)}}); !errors.Is(err, ErrOverflow) {
		t.Fatalf("negative overflow: got %v, want ErrOverflow", err)
	}
}

// min and max keep the column's own Go type, so the value binds to the rollup column (which has
// the raw column's type).
func TestMinAndMaxKeepTheColumnsType(t *testing.T) {
	r := schema.Rollup{Aggregates: []schema.Aggregate{agg("lo", config.AggMin, "v"), agg("hi", config.AggMax, "v"), agg("l", config.AggLast, "v")}}
	got, err := Compute(r, []map[string]any{{"v": int16(3)}, {"v": int16(-2)}, {"v": nil}, {"v": int16(9)}, {}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []any{int16(-2), int16(9), int16(9)}; !reflect.DeepEqual(got.Values, want) {
		t.Fatalf("got %#v, want %#v", got.Values, want)
	}
}
