package reader

import (
	"context"
	"fmt"
	"slices"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

// WindowRow is one row of a Window: its cells (a null cell nil) and the event bucket it was read from.
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
			rows, err := r.readAll(ctx, stmt, args)
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

// readAll runs a SELECT and returns all its rows, a null cell nil.
func (r *Reader) readAll(ctx context.Context, stmt string, args []any) ([]map[string]any, error) {
	q := r.gs.Query(stmt, args...).PageSize(r.cfg.FetchSize)
	if r.cons != 0 {
		q = q.Consistency(r.cons)
	}
	if r.cfg.Observer != nil {
		q = q.Observer(r.cfg.Observer)
	}
	return ScanAll(q.IterContext(ctx))
}

// ScanAll returns every row of iter as the reader scans them (a null cell nil, never its type's zero
// value) and closes iter.
func ScanAll(iter *gocql.Iter) ([]map[string]any, error) {
	rows := scanRows(iter, nil)
	return rows, iter.Close()
}
