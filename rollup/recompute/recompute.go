// Package recompute computes one rollup row from what Cassandra holds and writes it: the raw rows
// of an (entity, window) read back through the reader's plan (every event bucket, every split
// generation), or the rows of the finer rollup a coarser one is made of, aggregated by package
// rollup and written at rollup.Timestamp. A Recomputer is safe for concurrent use; it owns no
// goroutine.
package recompute

import (
	"context"
	"errors"
	"fmt"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/reader"
	"github.com/bucketsink/sink/rollup"
	"github.com/bucketsink/sink/schema"
)

// Recomputer recomputes the rollups of one entry.
type Recomputer struct {
	gs      *gocql.Session
	raw     *reader.Reader
	rollups []schema.Rollup
	cons    gocql.Consistency
}

// New prepares the recomputation of the rollups of topics.<entry> of cfg (validated, defaults
// applied) on session gs. Reads and writes use the entry's consistency: read at the consistency the
// raw rows were written at (LOCAL_QUORUM by default), a read sees every write acknowledged before it.
func New(gs *gocql.Session, cfg *config.Config, entry string) (*Recomputer, error) {
	raw, err := reader.New(reader.Config{Session: gs, Sink: cfg, Topic: entry})
	if err != nil {
		return nil, err
	}
	tables, err := schema.Describe(cfg)
	if err != nil {
		return nil, err
	}
	all, err := schema.DescribeRollups(cfg, tables)
	if err != nil {
		return nil, err
	}
	cons, err := gocql.ParseConsistencyWrapper(cfg.Topics[raw.Topic()].Consistency)
	if err != nil {
		return nil, fmt.Errorf("topics.%s.consistency: %w", raw.Topic(), err)
	}
	return &Recomputer{gs: gs, raw: raw, rollups: all[raw.Topic()], cons: cons}, nil
}

// Rollup returns the rollup called name.
func (c *Recomputer) Rollup(name string) (schema.Rollup, error) {
	return schema.Rollups{c.raw.Topic(): c.rollups}.Get(c.raw.Topic(), name)
}

// Outcome is what one recomputation did.
type Outcome struct {
	Result rollup.Result
	// Written is false when the window has no row to aggregate: nothing is written (a window
	// without rows has no rollup row).
	Written bool
	// Timestamp is the write timestamp of the row written.
	Timestamp int64
	// Partitions is how many partitions were read (the extra reads of a window).
	Partitions int
}

// Recompute computes the row of rollup name for the entity id (its id column values, typed as the
// columns) and the window holding at, and writes it.
func (c *Recomputer) Recompute(ctx context.Context, name string, id []any, at time.Time) (Outcome, error) {
	r, err := c.Rollup(name)
	if err != nil {
		return Outcome{}, err
	}
	w := r.Window.Index(at)
	start, end := r.Window.Start(w), r.Window.End(w)
	var out Outcome
	if r.From == "" {
		rows, parts, err := c.raw.Window(ctx, id, start, end)
		if err != nil {
			return Outcome{}, fmt.Errorf("reading the rows of rollup %s's window %s: %w", r.Name, start.Format(time.RFC3339), err)
		}
		out.Partitions = parts
		vals := make([]map[string]any, len(rows))
		for i, row := range rows {
			vals[i] = row.Values
		}
		if out.Result, err = rollup.Compute(r, vals); err != nil {
			return Outcome{}, fmt.Errorf("computing rollup %s's window %s: %w", r.Name, start.Format(time.RFC3339), err)
		}
	} else {
		finer, err := c.Rollup(r.From)
		if err != nil {
			return Outcome{}, err
		}
		rows, parts, err := c.finerRows(ctx, finer, id, start, end)
		if err != nil {
			return Outcome{}, fmt.Errorf("reading rollup %s's rows for %s's window %s: %w", finer.Name, r.Name, start.Format(time.RFC3339), err)
		}
		out.Partitions = parts
		if out.Result, err = rollup.Merge(r, finer, rows); err != nil {
			return Outcome{}, fmt.Errorf("computing rollup %s's window %s: %w", r.Name, start.Format(time.RFC3339), err)
		}
	}
	if out.Result.Rows == 0 {
		return out, nil
	}
	out.Timestamp = rollup.Timestamp(start, out.Result.Rows)
	if err := c.write(ctx, r, id, start, out.Result, out.Timestamp); err != nil {
		return Outcome{}, err
	}
	out.Written = true
	return out, nil
}

// finerRows reads the rows of rollup finer for the entity whose windows start in [start, end), in
// ascending window order (a null cell nil); a window lies inside one bucket, so every finer
// window of the range is in one of the buckets the range enumerates.
func (c *Recomputer) finerRows(ctx context.Context, finer schema.Rollup, id []any, start, end time.Time) ([]map[string]any, int, error) {
	t := finer.Table
	parts, err := t.Policy.Enumerate(start, end, reader.DefaultMaxPartitions)
	if err != nil {
		return nil, 0, err
	}
	stmt := "SELECT " + selectList(t) + " FROM " + t.Keyspace + "." + t.Name + " WHERE "
	for _, col := range t.PartitionKey {
		stmt += col + " = ? AND "
	}
	stmt += finer.WindowColumn + " >= ? AND " + finer.WindowColumn + " < ? ORDER BY " + finer.WindowColumn + " ASC"
	var out []map[string]any
	for _, p := range parts {
		args := append(append([]any{}, id...), t.Policy.Value(p.Index), start, end)
		rows, err := reader.ScanAll(c.gs.Query(stmt, args...).Consistency(c.cons).IterContext(ctx))
		if err != nil {
			return nil, len(parts), err
		}
		out = append(out, rows...)
	}
	return out, len(parts), nil
}

// selectList is every column of t, comma separated.
func selectList(t schema.Table) string {
	s := ""
	for i, col := range t.Columns {
		if i > 0 {
			s += ", "
		}
		s += col.Name
	}
	return s
}

// write inserts the rollup row at the write timestamp ts.
func (c *Recomputer) write(ctx context.Context, r schema.Rollup, id []any, start time.Time, res rollup.Result, ts int64) error {
	t := r.Table
	args := make([]any, 0, t.NumValues())
	args = append(args, id...)
	args = append(args, start, res.Rows)
	args = append(args, res.Values...)
	args = append(args, t.Policy.Value(t.Policy.Index(start)), ts)
	if len(args) != t.NumValues() {
		return errors.New("recompute: the row does not fit its table's INSERT")
	}
	err := c.gs.Query(t.Insert(t.Name), args...).Consistency(c.cons).Idempotent(true).ExecContext(ctx)
	if err != nil {
		return fmt.Errorf("writing rollup %s to %s.%s: %w", r.Name, t.Keyspace, t.Name, err)
	}
	return nil
}
