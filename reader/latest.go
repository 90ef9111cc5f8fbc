package reader

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// ErrLatest is the error of Read, Scan and Plan on a latest-value table (bucket width none): it has one
// row per entity and no time range to read; Latest reads it.
var ErrLatest = errors.New("a latest-value table (bucket width none) holds the newest row of each entity and no time range; read it by id (Latest)")

// Latest reads the rows of each entity of ids from a latest-value table: the entity's newest event (one
// row, or one per clustering value when the table has a non-time clustering). Each id holds one value per
// id column, in the order of topics.<t>.id; a string is parsed for a column of another type, as in
// Query.ID. It sends one request per entity, at most Config.Parallelism at once, and returns the rows in
// the order of ids (an entity's rows in clustering order); an entity without a row (never written, or
// deleted) has none. Every id is checked before anything is read.
func (r *Reader) Latest(ctx context.Context, ids [][]any) ([]Row, error) {
	if !r.table.Latest {
		return nil, fmt.Errorf("topics.%s: not a latest-value table (bucket width %s); read it by time range (Read)", r.topic, r.table.Policy.Width())
	}
	typed := make([][]any, len(ids))
	for i, id := range ids {
		v, _, err := r.typedID(id)
		if err != nil {
			return nil, err
		}
		typed[i] = v
	}
	if r.gs == nil {
		return nil, errors.New("reader: no Session to read with")
	}
	where := make([]string, len(r.ids))
	for i, c := range r.ids {
		where[i] = c.name + " = ?"
	}
	stmt := "SELECT " + r.selects + " FROM " + r.table.Keyspace + "." + r.table.Name + " WHERE " + strings.Join(where, " AND ")

	parent := ctx
	ctx, cancel := context.WithCancel(ctx) // the first failure stops the other reads
	defer cancel()
	results := make([][]Row, len(typed))
	errs := make([]error, len(typed))
	sem := make(chan struct{}, r.cfg.Parallelism)
	var wg sync.WaitGroup
	for i, id := range typed {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			results[i], errs[i] = r.latestOf(ctx, stmt, id)
			if errs[i] != nil {
				cancel()
			}
		}()
	}
	wg.Wait()
	// The first failure cancelled the reads after it: report it, not their cancellation.
	var first error
	for _, err := range errs {
		if err != nil && (first == nil || errors.Is(first, context.Canceled) && !errors.Is(err, context.Canceled)) {
			first = err
		}
	}
	if first != nil {
		return nil, first
	}
	if err := parent.Err(); err != nil { // ended before every entity was read
		return nil, err
	}
	var out []Row
	for _, rows := range results {
		out = append(out, rows...)
	}
	return out, nil
}

// latestOf reads the one partition of an entity.
func (r *Reader) latestOf(ctx context.Context, stmt string, id []any) ([]Row, error) {
	q := r.gs.Query(stmt, id...).PageSize(r.cfg.FetchSize).Idempotent(true)
	if r.cons != 0 {
		q = q.Consistency(r.cons)
	}
	if r.cfg.Observer != nil {
		q = q.Observer(r.cfg.Observer)
	}
	iter := q.IterContext(ctx)
	var rows []Row
	for _, m := range scanRows(iter, r.table.PartitionKey) {
		rows = append(rows, Row{Values: m, Partition: Partition{Table: r.table.Name}})
	}
	if err := iter.Close(); err != nil {
		return nil, fmt.Errorf("reading %s.%s: %w", r.table.Keyspace, r.table.Name, err)
	}
	return rows, nil
}
