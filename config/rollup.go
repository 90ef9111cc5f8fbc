package config

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bucketsink/sink/bucketer"
)

// Rollup is one aggregate table of a bucketed entry: for each entity and window of Width, one row
// of aggregates over the entry's raw rows of that window (or over the rows of the finer rollup
// From), recomputed whole from what Cassandra holds, never accumulated (docs/DESIGN.md, "Rollups").
type Rollup struct {
	// Name identifies the rollup in `sink query --rollup`, metrics and From; a CQL identifier,
	// unique within the entry.
	Name string `koanf:"name"`
	// Width is the window: a bucket width ("10m", "1h", "1d", "week", "month", ...) that lies
	// inside one raw bucket or holds whole raw buckets, so a window's raw rows are a slice of one
	// partition or whole partitions.
	Width string `koanf:"width"`
	// Table is the rollup table, in the entry's keyspace.
	Table string `koanf:"table"`
	// Bucket is the rollup table's own bucket policy (width, column, key, layout): an entity's
	// windows of one bucket share a partition, e.g. hourly windows of one month. Each window must
	// lie inside one bucket. No event buckets, slices or rolling: a rollup partition holds one row
	// per window.
	Bucket Bucket `koanf:"bucket"`
	// WindowColumn is the clustering column holding the window's start (a timestamp, newest
	// first). Default "window_start".
	WindowColumn string `koanf:"window_column"`
	// Grace is how long after a window's end its first computation waits, so events still in
	// flight are in it. An event later than that is not dropped: its window is computed again.
	// Default 1m.
	Grace Duration `koanf:"grace"`
	// From names a finer rollup of the same entry (declared before this one) whose rows this one
	// aggregates instead of the raw rows: hourly to daily. Its width must lie inside this width and
	// it must hold what each aggregate here is made of (see Aggregate).
	From string `koanf:"from"`
	// Aggregates are the rollup's value columns.
	Aggregates []Aggregate `koanf:"aggregates"`
}

// Aggregate is one value column of a rollup: Fn over the raw column Of.
type Aggregate struct {
	// Column is the rollup table's column; a CQL identifier.
	Column string `koanf:"column"`
	// Fn is count (rows, or with Of the rows where Of is not null; bigint), sum (of an integer
	// column: bigint; of float or double: double), min and max (numbers and timestamps; the column's
	// type), avg (of a number; double), first and last (the value of Of in the row of the earliest
	// or latest event time where it is not null, ties broken by the clustering order; any scalar
	// type, the column's type).
	Fn string `koanf:"fn"`
	// Of is the raw column aggregated; required but for count.
	Of string `koanf:"of"`
}

// The aggregate functions.
const (
	AggCount = "count"
	AggSum   = "sum"
	AggMin   = "min"
	AggMax   = "max"
	AggAvg   = "avg"
	AggFirst = "first"
	AggLast  = "last"
)

// RollupIDTypes are the id column types of an entry with rollups: a pending window names its
// entity by the id values' bytes, which the rollup worker turns back into these.
var RollupIDTypes = []string{"text", "ascii", "varchar", "tinyint", "smallint", "int", "bigint", "uuid", "timeuuid", "boolean", "timestamp"}

// AggregateFns lists every aggregate function, for messages.
var AggregateFns = []string{AggCount, AggSum, AggMin, AggMax, AggAvg, AggFirst, AggLast}

const (
	// DefaultRollupGrace waits a minute past a window's end: events of its last seconds are then
	// mostly written, so the first computation is usually the last one.
	DefaultRollupGrace = Duration(time.Minute)
	// DefaultWindowColumn names the rollup tables' clustering column.
	DefaultWindowColumn = "window_start"
	// RollupRowsColumn is the column of every rollup table that holds how many raw rows its row
	// summarizes (package schema, RowsColumn).
	RollupRowsColumn = "sink_rows"
	// MaxRollups bounds the rollups of one entry: each adds a pending marker per raw row.
	MaxRollups = 8
)

// Spec returns the rollup table's bucket policy in the form package bucketer compiles.
func (r Rollup) Spec() bucketer.Spec {
	return bucketer.Spec{Width: r.Bucket.Width, Key: r.Bucket.Key, Layout: r.Bucket.Layout, EventBuckets: 1}
}

// WindowPolicy is the policy whose buckets are the rollup's windows (their numbers since the epoch).
func (r Rollup) WindowPolicy() (*bucketer.Policy, error) {
	return bucketer.New(bucketer.Spec{Width: r.Width, Key: bucketer.KeyNumber.String()})
}

// Rollup returns the rollup called name of the entry, and whether there is one.
func (t Topic) Rollup(name string) (Rollup, bool) {
	for _, r := range t.Rollups {
		if strings.EqualFold(r.Name, name) {
			return r, true
		}
	}
	return Rollup{}, false
}

// AggregateType is the CQL type of an aggregate's column: what fn gives over a column of type of
// (nothing for count without a column), or why fn cannot take that type.
func AggregateType(fn string, of CQLType) (CQLType, error) {
	integral := slices.Contains([]string{"tinyint", "smallint", "int", "bigint"}, of.Kind)
	float := of.Kind == "float" || of.Kind == "double"
	switch {
	case fn == AggCount:
		return CQLType{Kind: "bigint"}, nil
	case of.Elem != "" || of.Kind == "list" || of.Kind == "set" || of.Kind == "map":
		return CQLType{}, fmt.Errorf("%s is a collection; aggregate a scalar column", of)
	case fn == AggSum && integral:
		return CQLType{Kind: "bigint"}, nil
	case (fn == AggSum || fn == AggAvg) && float, fn == AggAvg && integral:
		return CQLType{Kind: "double"}, nil
	case fn == AggSum || fn == AggAvg:
		return CQLType{}, fmt.Errorf("%s of a %s; %s takes tinyint, smallint, int, bigint, float or double", fn, of, fn)
	case (fn == AggMin || fn == AggMax) && (integral || float || of.Kind == "timestamp"):
		return of, nil
	case fn == AggMin || fn == AggMax:
		return CQLType{}, fmt.Errorf("%s of a %s; %s takes tinyint, smallint, int, bigint, float, double or timestamp", fn, of, fn)
	case fn == AggFirst || fn == AggLast:
		return of, nil
	}
	return CQLType{}, fmt.Errorf("%q is not an aggregate; use %s", fn, strings.Join(AggregateFns, ", "))
}

// Parts lists the aggregates of a finer rollup an aggregate of a coarser one is made of: the same
// function over the same column, but an average, which is the sum over the count of its column.
func (a Aggregate) Parts() []Aggregate {
	if a.Fn == AggAvg {
		return []Aggregate{{Fn: AggSum, Of: a.Of}, {Fn: AggCount, Of: a.Of}}
	}
	return []Aggregate{{Fn: a.Fn, Of: a.Of}}
}

// Find returns the index of the aggregate fn over of (column names case-insensitive), or -1.
func (r Rollup) Find(fn, of string) int {
	return slices.IndexFunc(r.Aggregates, func(a Aggregate) bool {
		return a.Fn == fn && strings.EqualFold(a.Of, of)
	})
}

func rollupDefaults(p string, t *Topic, unset func(path string, zero bool) bool) {
	for i := range t.Rollups {
		r := &t.Rollups[i]
		rp := fmt.Sprintf("%srollups[%d].", p, i)
		setDefault(unset, rp+"window_column", &r.WindowColumn, DefaultWindowColumn)
		setDefault(unset, rp+"grace", &r.Grace, DefaultRollupGrace)
		setDefault(unset, rp+"bucket.column", &r.Bucket.Column, DefaultBucketColumn)
		setDefault(unset, rp+"bucket.key", &r.Bucket.Key, DefaultBucketKey)
		r.Bucket.Key = strings.ToLower(r.Bucket.Key)
		r.Width = strings.ToLower(r.Width)
		r.Bucket.Width = strings.ToLower(r.Bucket.Width)
		for j := range r.Aggregates {
			r.Aggregates[j].Fn = strings.ToLower(r.Aggregates[j].Fn)
		}
	}
}

// validateRollups checks the rollups of entry t (path p). tables maps each keyspace.table an
// entry writes to the key path that writes it, so a rollup table is no other table.
func validateRollups(v *validator, p string, t Topic, tables map[string]string) {
	if len(t.Rollups) == 0 {
		return
	}
	if t.Latest() {
		v.add(p+".rollups", "a latest-value entry keeps one row per entity, which has no windows to aggregate; move the rollups to a bucketed entry of the same topic")
		return
	}
	if len(t.Rollups) > MaxRollups {
		v.add(p+".rollups", "%d rollups; at most %d, each adds a pending marker per raw row", len(t.Rollups), MaxRollups)
	}
	if len(t.Clustering) == 0 || !clusteredByEventTime(t) {
		v.add(p+".rollups", "a window's rows are read by event time, so the first clustering column must hold the event time (a timestamp with source event_time or the time field)")
	}
	for i, id := range t.ID {
		if col, ok := t.column(id); ok {
			if typ, err := ParseCQLType(col.Type); err == nil && !slices.Contains(RollupIDTypes, typ.String()) {
				v.add(fmt.Sprintf("%s.id[%d]", p, i), "%q is a %s; an entry with rollups names its entities by ids of type %s", id, typ, strings.Join(RollupIDTypes, ", "))
			}
		}
	}
	raw, rawErr := bucketer.ParseWidth(t.Bucket.Width)
	for i, r := range t.Rollups {
		rp := fmt.Sprintf("%s.rollups[%d]", p, i)
		if msg := checkName("rollup", r.Name, columnNameRE); msg != "" {
			v.add(rp+".name", "%s", msg)
		} else if j := slices.IndexFunc(t.Rollups[:i], func(o Rollup) bool { return strings.EqualFold(o.Name, r.Name) }); j >= 0 {
			v.add(rp+".name", "%q is also the name of rollups[%d]; give each rollup its own name", r.Name, j)
		}
		if msg := checkName("table", r.Table, tableNameRE); msg != "" {
			v.add(rp+".table", "%s", msg)
		} else if t.Keyspace != "" {
			key := strings.ToLower(t.Keyspace + "." + r.Table)
			if prev, ok := tables[key]; ok {
				v.add(rp+".table", "%s is also written by %s; a rollup table is its own", key, prev)
			} else {
				tables[key] = rp
			}
		}
		w, err := bucketer.ParseWidth(r.Width)
		if err != nil {
			v.add(rp+".width", "%v", err)
		} else if rawErr == nil && !w.Within(raw) && !raw.Within(w) {
			v.add(rp+".width", "%s windows straddle the entry's %s buckets; a window must lie inside one raw bucket or hold whole ones, so its rows are read from whole partitions or a slice of one (e.g. a width that divides %s, or a multiple of it that %s buckets tile)", w, raw, raw, raw)
		}
		validateRollupBucket(v, rp, r, w, err == nil)
		if msg := checkName("column", r.WindowColumn, columnNameRE); msg != "" {
			v.add(rp+".window_column", "%s", msg)
		}
		if r.Grace < 0 {
			v.add(rp+".grace", "negative (%s); use 0 or more", r.Grace)
		}
		var finer *Rollup
		if r.From != "" {
			j := slices.IndexFunc(t.Rollups[:i], func(o Rollup) bool { return strings.EqualFold(o.Name, r.From) })
			if j < 0 {
				v.add(rp+".from", "%q is not a rollup declared before this one in %s.rollups; name a finer one, or remove the key to aggregate the raw rows", r.From, p)
			} else {
				finer = &t.Rollups[j]
				if fw, ferr := bucketer.ParseWidth(finer.Width); ferr == nil && err == nil && (!fw.Within(w) || fw == w) {
					v.add(rp+".from", "rollup %q has %s windows, which do not tile %s windows; name a finer rollup whose windows lie inside these", r.From, fw, w)
				}
			}
		}
		validateAggregates(v, rp, t, r, finer)
	}
}

// validateRollupBucket checks a rollup table's bucket policy: only width, column, key and layout,
// and each window inside one bucket.
func validateRollupBucket(v *validator, rp string, r Rollup, w bucketer.Width, widthOK bool) {
	b := r.Bucket
	bp := rp + ".bucket"
	if b.Width == "" {
		v.add(bp+".width", "empty; give the rollup table's bucket width, e.g. month for hourly windows")
		return
	}
	for _, k := range []struct {
		key string
		set bool
	}{
		{"event_buckets", b.EventBuckets > 1}, {"event_bucket_column", b.EventBucketColumn != ""},
		{"event_bucket_field", b.EventBucketField != ""}, {"slice", b.Slice != ""},
		{"missing_slice", b.MissingSlice != ""}, {"rolling", b.Rolling != 0},
	} {
		if k.set {
			v.add(bp+"."+k.key, "not for a rollup table, whose partitions hold one row per window; remove it")
		}
	}
	if msg := checkName("column", b.Column, columnNameRE); msg != "" {
		v.add(bp+".column", "%s", msg)
	}
	if _, err := bucketer.New(r.Spec()); err != nil {
		addBucketErrors(v, rp, err)
		return
	}
	if bw, err := bucketer.ParseWidth(b.Width); err == nil && widthOK && !w.Within(bw) {
		v.add(bp+".width", "%s buckets cut %s windows; a window's row belongs to one partition: use a bucket that whole windows tile (e.g. month for 1h)", bw, w)
	}
}

// validateAggregates checks a rollup's value columns against the entry's raw columns and, for a
// rollup from a finer one, against what the finer one holds.
func validateAggregates(v *validator, rp string, t Topic, r Rollup, finer *Rollup) {
	if len(r.Aggregates) == 0 {
		v.add(rp+".aggregates", "none; declare at least one, e.g. {column: n, fn: count}")
	}
	taken := map[string]string{}
	for _, id := range t.ID {
		taken[strings.ToLower(id)] = "an id column of the rollup table"
	}
	taken[strings.ToLower(r.WindowColumn)] = "the rollup table's window column"
	taken[strings.ToLower(r.Bucket.Column)] = "the rollup table's bucket column"
	taken[RollupRowsColumn] = "the rollup table's count of raw rows, which the sink keeps"
	for i, a := range r.Aggregates {
		ap := fmt.Sprintf("%s.aggregates[%d]", rp, i)
		if msg := checkName("column", a.Column, columnNameRE); msg != "" {
			v.add(ap+".column", "%s", msg)
		} else if what, dup := taken[strings.ToLower(a.Column)]; dup {
			v.add(ap+".column", "%q is also %s; rename it", a.Column, what)
		} else {
			taken[strings.ToLower(a.Column)] = "another aggregate's column"
		}
		if !slices.Contains(AggregateFns, a.Fn) {
			v.add(ap+".fn", "%q is not an aggregate; use %s", a.Fn, strings.Join(AggregateFns, ", "))
			continue
		}
		if a.Of == "" && a.Fn != AggCount {
			v.add(ap+".of", "empty; %s needs the raw column it aggregates", a.Fn)
			continue
		}
		if a.Of != "" {
			col, ok := t.column(a.Of)
			if !ok {
				v.add(ap+".of", "%q is not a column of the entry", a.Of)
				continue
			}
			typ, err := ParseCQLType(col.Type)
			if err != nil {
				continue // reported on the column
			}
			if _, err := AggregateType(a.Fn, typ); err != nil {
				v.add(ap+".fn", "%v", err)
				continue
			}
		}
		if finer == nil {
			continue
		}
		for _, part := range a.Parts() {
			if finer.Find(part.Fn, part.Of) < 0 {
				of := part.Of
				if of == "" {
					of = "the rows"
				}
				v.add(ap+".fn", "%s here is made of the %s of %s in rollup %q, which has none; add it there, or aggregate the raw rows (remove from)", a.Fn, part.Fn, of, finer.Name)
			}
		}
	}
}
