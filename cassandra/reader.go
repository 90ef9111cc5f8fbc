package cassandra

import (
	"context"
	"errors"
	"fmt"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/bucketsink/sink/bucketer"
)

// ReadSpec describes a time-range read of one entity across its buckets.
type ReadSpec struct {
	Policy *bucketer.Policy
	// From and To bound the range like bucketer.Enumerate: From before To reads [From, To) oldest
	// first; From after To reads (To, From] newest first.
	From, To time.Time
	// Query returns the SELECT for one partition and its bind values. The statement restricts the
	// time clustering column to the range and orders it in the reading direction (desc is true when
	// reading newest first), so each partition's rows arrive in order.
	Query func(p bucketer.Partition, desc bool) (stmt string, args []any)
	// TimeColumn is the selected column holding the row's time (a timestamp, or a timeuuid); rows of
	// the event buckets of one time bucket are merged by it.
	TimeColumn string
	// Limit stops the read after this many rows; 0 reads everything.
	Limit int
	// MaxEmpty stops the read after this many consecutive time buckets without a row, so "the latest
	// readings" of an entity that went quiet long ago does not walk years of empty partitions; 0 never stops.
	MaxEmpty int
	// MaxPartitions caps the partitions the range may span (default 10000); a wider range is an error.
	MaxPartitions int
	// PageSize is the rows fetched per request (default 1000).
	PageSize int
	// Consistency of the reads; 0 is the session's.
	Consistency gocql.Consistency
}

// ErrStop, returned by a ReadRange callback, ends the read early without an error.
var ErrStop = errors.New("stop reading")

// ReadRange reads the rows of spec's range partition by partition in time order and calls fn for
// each, with the partition it came from. Each partition is paged through; the event buckets of one
// time bucket are read together and merged by TimeColumn. fn's row map is fn's to keep.
func (s *Session) ReadRange(ctx context.Context, spec ReadSpec, fn func(p bucketer.Partition, row map[string]any) error) error {
	if spec.Policy == nil || spec.Query == nil || spec.TimeColumn == "" {
		return errors.New("reading a range: Policy, Query and TimeColumn are required")
	}
	maxParts := spec.MaxPartitions
	if maxParts <= 0 {
		maxParts = 10000
	}
	parts, err := spec.Policy.Enumerate(spec.From, spec.To, maxParts)
	if err != nil {
		return fmt.Errorf("reading a range: %w", err)
	}
	desc := spec.From.After(spec.To)
	read, empty := 0, 0
	for len(parts) > 0 {
		// One time bucket: its event buckets are consecutive in the enumeration.
		n := 1
		for n < len(parts) && parts[n].Index == parts[0].Index && parts[n].Slice == parts[0].Slice {
			n++
		}
		got, err := s.readBucket(ctx, spec, parts[:n], desc, spec.Limit-read, fn)
		read += got
		if errors.Is(err, ErrStop) {
			return nil
		}
		if err != nil {
			return err
		}
		if spec.Limit > 0 && read >= spec.Limit {
			return nil
		}
		if got == 0 {
			empty++
			if spec.MaxEmpty > 0 && empty >= spec.MaxEmpty {
				return nil
			}
		} else {
			empty = 0
		}
		parts = parts[n:]
	}
	return nil
}

// cursor is one event bucket's iterator and its next row.
type cursor struct {
	p    bucketer.Partition
	stmt string
	iter *gocql.Iter
	row  map[string]any
	at   time.Time
}

func (c *cursor) next(timeCol string) (bool, error) {
	c.row = make(map[string]any)
	if !c.iter.MapScan(c.row) {
		c.row = nil
		if err := c.iter.Close(); err != nil {
			return false, fmt.Errorf("reading partition %+v with %q: %w", c.p, c.stmt, err)
		}
		return false, nil
	}
	switch v := c.row[timeCol].(type) {
	case time.Time:
		c.at = v
	case gocql.UUID:
		c.at = v.Time()
	default:
		typ := c.row[timeCol]
		c.row = nil
		_ = c.iter.Close()
		return false, fmt.Errorf("reading partition %+v: column %q is %T, want a timestamp or timeuuid", c.p, timeCol, typ)
	}
	return true, nil
}

// readBucket merges the partitions of one time bucket, returning how many rows it passed to fn.
// limit <= 0 means no limit.
func (s *Session) readBucket(ctx context.Context, spec ReadSpec, parts []bucketer.Partition, desc bool, limit int,
	fn func(bucketer.Partition, map[string]any) error) (int, error) {
	pageSize := spec.PageSize
	if pageSize <= 0 {
		pageSize = 1000
	}
	cursors := make([]*cursor, 0, len(parts))
	defer func() {
		for _, c := range cursors {
			if c.row != nil {
				_ = c.iter.Close()
			}
		}
	}()
	for _, p := range parts {
		stmt, args := spec.Query(p, desc)
		q := s.gs.Query(stmt, args...).PageSize(pageSize).Idempotent(true)
		if spec.Consistency != 0 {
			q = q.Consistency(spec.Consistency)
		}
		c := &cursor{p: p, stmt: stmt, iter: q.IterContext(ctx)}
		ok, err := c.next(spec.TimeColumn)
		if err != nil {
			return 0, err
		}
		if ok {
			cursors = append(cursors, c)
		}
	}
	read := 0
	for len(cursors) > 0 {
		best := 0
		for i := 1; i < len(cursors); i++ {
			if before := cursors[i].at.Before(cursors[best].at); before != desc && !cursors[i].at.Equal(cursors[best].at) {
				best = i
			}
		}
		c := cursors[best]
		if err := fn(c.p, c.row); err != nil {
			return read, err
		}
		read++
		if limit > 0 && read >= limit {
			return read, nil
		}
		ok, err := c.next(spec.TimeColumn)
		if err != nil {
			return read, err
		}
		if !ok {
			cursors = append(cursors[:best], cursors[best+1:]...)
		}
	}
	return read, nil
}
