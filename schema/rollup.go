package schema

import (
	"fmt"
	"strings"
	"time"

	"github.com/bucketsink/sink/bucketer"
	"github.com/bucketsink/sink/config"
)

// WriteTimestampRollup is the write_timestamp of a rollup table: each row is written at a
// timestamp that grows with the raw rows its computation saw (package rollup, Timestamp), so a
// computation twice writes the same cells and one that saw more rows wins.
const WriteTimestampRollup = "rollup"

// RowsColumn is the column of every rollup table holding how many raw rows its row summarizes (for a
// rollup from a finer one, the sum of the finer rows' own): the write timestamp grows with it, and a
// coarser rollup's timestamp is made of it.
const RowsColumn = config.RollupRowsColumn

// Rollup describes one rollup of a bucketed entry: its table and what its rows are computed from.
type Rollup struct {
	// Entry is the raw entry (the key under topics:) whose rows the rollup aggregates, directly or
	// through From.
	Entry string
	Name  string
	// Table is the rollup table: the entry's id columns, the window column, RowsColumn, the aggregate columns
	// and the bucket column, in that order; partitioned by the id columns and the bucket, clustered
	// by the window's start, newest first. Table.Topic is Entry.
	Table Table
	// WindowColumn is the clustering column holding each window's start.
	WindowColumn string
	// Window numbers the windows: window i is [Window.Start(i), Window.End(i)).
	Window *bucketer.Policy
	// Grace is how long after a window's end its first computation waits.
	Grace time.Duration
	// From is the finer rollup (of the same entry) this one aggregates, or "" for the raw rows.
	From string
	// Aggregates are the value columns, in table order.
	Aggregates []Aggregate
}

// Aggregate is one value column of a rollup.
type Aggregate struct {
	Column string // the rollup table's column, as configured
	Fn     string // config.AggCount, ...
	Of     string // the raw column as spelled in the raw table, or "" for a count of rows
	Type   string // the column's canonical CQL type
}

// Rollups holds each entry's rollups in configured order, by entry name.
type Rollups map[string][]Rollup

// DescribeRollups describes the rollups of every entry of cfg, from the raw tables Describe gave.
func DescribeRollups(cfg *config.Config, raw Tables) (Rollups, error) {
	out := Rollups{}
	for _, name := range raw.Names() {
		tc := cfg.Topics[name]
		for i, rc := range tc.Rollups {
			r, err := describeRollup(raw[name], tc, rc)
			if err != nil {
				return nil, fmt.Errorf("topics.%s.rollups[%d]: %w", name, i, err)
			}
			out[name] = append(out[name], r)
		}
	}
	return out, nil
}

// DescribeWithRollups is Describe and DescribeRollups together: every entry's table and rollups.
func DescribeWithRollups(cfg *config.Config) (Tables, Rollups, error) {
	tables, err := Describe(cfg)
	if err != nil {
		return nil, nil, err
	}
	rollups, err := DescribeRollups(cfg, tables)
	if err != nil {
		return nil, nil, err
	}
	return tables, rollups, nil
}

// Get returns the rollup called name of entry, or an error naming the entry's rollups.
func (rs Rollups) Get(entry, name string) (Rollup, error) {
	var names []string
	for _, r := range rs[entry] {
		if strings.EqualFold(r.Name, name) {
			return r, nil
		}
		names = append(names, r.Name)
	}
	if len(names) == 0 {
		return Rollup{}, fmt.Errorf("topics.%s: no rollups configured", entry)
	}
	return Rollup{}, fmt.Errorf("topics.%s: no rollup %q; configured: %s", entry, name, strings.Join(names, ", "))
}

// describeRollup derives one rollup from its validated configuration and its entry's raw table.
func describeRollup(raw Table, tc config.Topic, rc config.Rollup) (Rollup, error) {
	window, err := rc.WindowPolicy()
	if err != nil {
		return Rollup{}, fmt.Errorf("width: %w", err)
	}
	policy, err := bucketer.New(rc.Spec())
	if err != nil {
		return Rollup{}, fmt.Errorf("bucket: %w", err)
	}
	for _, id := range []string{rc.Table, rc.WindowColumn, rc.Bucket.Column} {
		if !identRE.MatchString(id) {
			return Rollup{}, fmt.Errorf("%q is not a plain CQL identifier", id)
		}
	}
	t := Table{
		Topic: raw.Topic, Keyspace: raw.Keyspace, Name: rc.Table, Policy: policy,
		BucketColumn: rc.Bucket.Column, WriteTimestamp: WriteTimestampRollup,
	}
	for _, id := range raw.IDColumns() {
		t.Columns = append(t.Columns, raw.Columns[raw.Index(id)])
		t.PartitionKey = append(t.PartitionKey, id)
	}
	t.Columns = append(t.Columns, Column{Name: rc.WindowColumn, Type: "timestamp"}, Column{Name: RowsColumn, Type: "bigint"})
	t.Clustering = []Clustering{{Name: rc.WindowColumn, Desc: true}}
	r := Rollup{
		Entry: raw.Topic, Name: rc.Name, WindowColumn: rc.WindowColumn, Window: window,
		Grace: time.Duration(rc.Grace), From: rc.From,
	}
	for i, a := range rc.Aggregates {
		if !identRE.MatchString(a.Column) {
			return Rollup{}, fmt.Errorf("aggregates[%d].column: %q is not a plain CQL identifier", i, a.Column)
		}
		var of config.CQLType
		ag := Aggregate{Column: a.Column, Fn: a.Fn}
		if a.Of != "" {
			j := raw.Index(a.Of)
			if j < 0 {
				return Rollup{}, fmt.Errorf("aggregates[%d].of: %q is not a column", i, a.Of)
			}
			ag.Of = raw.Columns[j].Name
			if of, err = config.ParseCQLType(raw.Columns[j].Type); err != nil {
				return Rollup{}, fmt.Errorf("aggregates[%d].of: %w", i, err)
			}
		}
		typ, err := config.AggregateType(a.Fn, of)
		if err != nil {
			return Rollup{}, fmt.Errorf("aggregates[%d].fn: %w", i, err)
		}
		ag.Type = typ.String()
		r.Aggregates = append(r.Aggregates, ag)
		t.Columns = append(t.Columns, Column{Name: a.Column, Type: ag.Type})
	}
	t.Columns = append(t.Columns, Column{Name: t.BucketColumn, Type: policy.CQLType()})
	t.PartitionKey = append(t.PartitionKey, t.BucketColumn)
	r.Table = t
	return r, nil
}
