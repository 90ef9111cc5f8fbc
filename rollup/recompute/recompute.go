// Package recompute computes one rollup row from what Cassandra holds and writes it: the raw rows
// of an (entity, window) read back through the reader's plan (every event bucket, every split
// generation), or the rows of the finer rollup a coarser one is made of, aggregated by package
// rollup and written at rollup.Timestamp. A Recomputer is safe for concurrent use; it owns no
// goroutine.
package recompute

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/bucketsink/sink/cassandra"
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
	_, all, err := schema.DescribeWithRollups(cfg)
	if err != nil {
		return nil, err
	}
	// A computation reads the raw columns its rollups aggregate, not whole rows (the reader adds the
	// clustering columns, which order them, and a count alone needs nothing more).
	var cols []string
	for _, r := range all[raw.Topic()] {
		for _, a := range r.Aggregates {
			if r.From == "" && a.Of != "" && !slices.Contains(cols, a.Of) {
				cols = append(cols, a.Of)
			}
		}
	}
	if t := raw.Table(); len(cols) == 0 && len(t.Clustering) > 0 {
		cols = append(cols, t.Clustering[0].Name)
	}
	if raw, err = reader.New(reader.Config{Session: gs, Sink: cfg, Topic: raw.Topic(), Columns: cols}); err != nil {
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

// RecomputeEntity is Recompute for the entity a pending marker names: the id components of the raw
// rows' routing key (routing.KeyParts), each a component of the composite key (a 2-byte length, the
// value's bytes, a 0 byte).
func (c *Recomputer) RecomputeEntity(ctx context.Context, name string, entity []byte, at time.Time) (Outcome, error) {
	id, err := c.decodeEntity(entity)
	if err != nil {
		return Outcome{}, err
	}
	return c.Recompute(ctx, name, id, at)
}

// decodeEntity turns the id components of a routing key back into the id columns' values, through
// their text form (reader.ParseID), for the id types config.RollupIDTypes allows.
func (c *Recomputer) decodeEntity(b []byte) ([]any, error) {
	t := c.raw.Table()
	ids := t.IDColumns()
	texts := make([]string, 0, len(ids))
	for _, col := range ids {
		if len(b) < 3 {
			return nil, fmt.Errorf("rollup marker entity: too short for id column %s", col)
		}
		n := int(binary.BigEndian.Uint16(b))
		if len(b) < 2+n+1 {
			return nil, fmt.Errorf("rollup marker entity: component of %d bytes for id column %s, %d left", n, col, len(b)-3)
		}
		v := b[2 : 2+n]
		b = b[2+n+1:]
		text, err := idText(t.Columns[t.Index(col)].Type, v)
		if err != nil {
			return nil, fmt.Errorf("rollup marker entity, id column %s: %w", col, err)
		}
		texts = append(texts, text)
	}
	return c.raw.ParseID(texts)
}

// idText is the text form (reader.ParseValue's) of one serialized id value of CQL type typ.
func idText(typ string, v []byte) (string, error) {
	signed := func() (int64, error) {
		switch len(v) {
		case 1:
			return int64(int8(v[0])), nil
		case 2:
			return int64(int16(binary.BigEndian.Uint16(v))), nil
		case 4:
			return int64(int32(binary.BigEndian.Uint32(v))), nil
		case 8:
			return int64(binary.BigEndian.Uint64(v)), nil
		}
		return 0, fmt.Errorf("%d bytes for a %s", len(v), typ)
	}
	switch typ {
	case "text", "ascii":
		return string(v), nil
	case "tinyint", "smallint", "int", "bigint":
		n, err := signed()
		return strconv.FormatInt(n, 10), err
	case "uuid", "timeuuid":
		u, err := gocql.UUIDFromBytes(v)
		return u.String(), err
	case "boolean":
		if len(v) != 1 {
			return "", fmt.Errorf("%d bytes for a boolean", len(v))
		}
		return strconv.FormatBool(v[0] != 0), nil
	case "timestamp":
		n, err := signed()
		return time.UnixMilli(n).UTC().Format(time.RFC3339Nano), err
	}
	return "", fmt.Errorf("a %s id cannot name a rollup's entity; config allows %v", typ, config.RollupIDTypes)
}

// Store is what the pipeline's rollup worker needs (pipeline/rollup's Store): each entry's pending
// markers in its keyspace (cassandra.Pending) and its Recomputer.
type Store struct {
	pending   map[string]*cassandra.Pending
	recompute map[string]*Recomputer
}

// NewStore is the Store of every entry of cfg with rollups, on session s.
func NewStore(s *cassandra.Session, cfg *config.Config) (*Store, error) {
	tables, all, err := schema.DescribeWithRollups(cfg)
	if err != nil {
		return nil, err
	}
	st := &Store{pending: map[string]*cassandra.Pending{}, recompute: map[string]*Recomputer{}}
	for name := range all {
		cons, err := gocql.ParseConsistencyWrapper(cfg.Topics[name].Consistency)
		if err != nil {
			return nil, fmt.Errorf("topics.%s.consistency: %w", name, err)
		}
		st.pending[name] = cassandra.NewPending(s, tables[name].Keyspace, cons)
		if st.recompute[name], err = New(s.Driver(), cfg, name); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// Due lists up to limit markers of (entry, partition) due at or before upTo, oldest first.
func (s *Store) Due(ctx context.Context, entry string, partition int32, upTo time.Time, limit int) ([]cassandra.Marker, error) {
	return s.pending[entry].Due(ctx, entry, partition, upTo, limit)
}

// Done deletes marker m at the timestamp it was written with.
func (s *Store) Done(ctx context.Context, entry string, partition int32, m cassandra.Marker) error {
	return s.pending[entry].Done(ctx, entry, partition, m)
}

// Mark writes marker m at its Timestamp.
func (s *Store) Mark(ctx context.Context, entry string, partition int32, m cassandra.Marker) error {
	return s.pending[entry].Mark(ctx, entry, partition, m)
}

// Recompute computes and writes the row of rollup name for the marker's entity and the window
// holding at, and returns how many partitions it read.
func (s *Store) Recompute(ctx context.Context, entry, name string, entity []byte, at time.Time) (int, error) {
	out, err := s.recompute[entry].RecomputeEntity(ctx, name, entity, at)
	return out.Partitions, err
}
