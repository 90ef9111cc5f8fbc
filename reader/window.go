package reader

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

// WindowRow is one row of a Window: its cells, with a null cell left out of Values (unlike Read,
// whose rows hold a null scalar as its zero value), and the event bucket it was read from.
type WindowRow struct {
	Values      map[string]any
	EventBucket int
}

// Window reads every row of the entity id whose event time is in [from, to), from every partition
// the plan names (every event bucket, every split generation), whole, in the canonical order:
// ascending by the clustering columns (as Cassandra compares them), then by event bucket. Its result
// depends only on the rows stored, never on how they were spread over partitions or the order the
// reads returned, which is what a rollup needs (package rollup computes from exactly these rows).
// It also returns how many partitions it read. It reads the range whole, with no limit: a rollup
// window is a slice of one partition or a few whole ones. A slice table that does not exist holds no
// rows.
func (r *Reader) Window(ctx context.Context, id []any, from, to time.Time) ([]WindowRow, int, error) {
	if r.gs == nil {
		return nil, 0, fmt.Errorf("reader: no session to read topics.%s with", r.topic)
	}
	if !from.Before(to) {
		return nil, 0, fmt.Errorf("reader: window [%s, %s) is empty", from.Format(time.RFC3339Nano), to.Format(time.RFC3339Nano))
	}
	e, err := r.entity(Query{ID: id})
	if err != nil {
		return nil, 0, err
	}
	plan, err := MakePlan(ctx, r.table, e.id, from, to, r.cfg.MaxPartitions, r.routes())
	if err != nil {
		return nil, 0, err
	}
	var out []WindowRow
	parts := 0
	for _, b := range plan.Buckets {
		for _, p := range b.Partitions {
			parts++
			stmt, args := r.statement(b, p, false, e, nil)
			rows, err := r.readNullable(ctx, stmt, args)
			if err != nil && !isMissingTable(err) {
				return nil, parts, fmt.Errorf("reading %s.%s (event bucket %d): %w", r.table.Keyspace, p.Table, p.EventBucket, err)
			}
			for _, row := range rows {
				out = append(out, WindowRow{Values: row, EventBucket: p.EventBucket})
			}
		}
	}
	slices.SortStableFunc(out, func(a, b WindowRow) int {
		if c := r.compare(a.Values, func(_ int, name string) any { return b.Values[name] }, false); c != 0 {
			return c
		}
		return a.EventBucket - b.EventBucket
	})
	return out, parts, nil
}

// readNullable runs a SELECT and scans each cell through a pointer to a pointer, so a null cell
// stays nil and is left out of the row.
func (r *Reader) readNullable(ctx context.Context, stmt string, args []any) ([]map[string]any, error) {
	q := r.gs.Query(stmt, args...).PageSize(r.cfg.FetchSize)
	if r.cons != 0 {
		q = q.Consistency(r.cons)
	}
	if r.cfg.Observer != nil {
		q = q.Observer(r.cfg.Observer)
	}
	return ScanNullable(q.IterContext(ctx))
}

// ScanNullable scans every row of iter through a pointer to a pointer per cell, so a null cell stays
// nil and is left out of the row's map (the driver's own scans give a null scalar as its zero
// value), and closes iter.
func ScanNullable(iter *gocql.Iter) ([]map[string]any, error) {
	dst, err := iter.RowData()
	if err != nil {
		return nil, iter.Close()
	}
	ptrs := make([]reflect.Value, len(dst.Values))
	scan := make([]any, len(dst.Values))
	for i, v := range dst.Values {
		ptrs[i] = reflect.New(reflect.TypeOf(v)) // **T for the driver's *T
		scan[i] = ptrs[i].Interface()
	}
	var out []map[string]any
	for iter.Scan(scan...) {
		row := make(map[string]any, len(scan))
		for i, name := range dst.Columns {
			if p := ptrs[i].Elem(); !p.IsNil() {
				row[name] = p.Elem().Interface()
				p.Set(reflect.Zero(p.Type())) // a new value for the next row
			}
		}
		out = append(out, row)
	}
	return out, iter.Close()
}
