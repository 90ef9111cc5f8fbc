package reader

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bucketsink/sink/schema"
)

// Partition is one Cassandra partition of one entity: the table (with its slice suffix), the time
// bucket and its key value, and the event bucket.
type Partition struct {
	Table       string // table name without keyspace: <table> or <table>_<slice suffix>
	Slice       string // the slice suffix; "" when the topic is not sliced
	Bucket      int64  // the time bucket's number (bucketer.Policy.Index)
	Key         any    // the value of the bucket column (bucketer.Policy.Value), rolling applied
	EventBucket int    // 0 when the topic has no event buckets
}

// TimeBucket is one time bucket of a plan: the part of the query's range it holds, and the
// partitions its rows may be in. Their rows interleave in time, so a reader merges them.
type TimeBucket struct {
	Bucket int64  // the time bucket's number
	Table  string // every partition of a time bucket is in the same table
	Slice  string
	Key    any
	// Lo and Hi bound the instants of the range inside this bucket, [Lo, Hi), in milliseconds
	// (what Cassandra stores), whatever the reading direction.
	Lo, Hi time.Time
	// Partitions lists where the rows of this bucket live. Today that is every event bucket
	// 0..N-1 of the topic's policy; each time bucket carries its own list so that a split of a hot
	// partition, recorded from some instant on, can give some buckets more partitions than others.
	Partitions []Partition
}

// Plan is the ordered list of time buckets a query visits: oldest first when Desc is false, newest
// first when it is true.
type Plan struct {
	Desc    bool
	Buckets []TimeBucket
}

// Partitions counts the partitions of the plan.
func (p Plan) Partitions() int {
	n := 0
	for _, b := range p.Buckets {
		n += len(b.Partitions)
	}
	return n
}

// RangeError is a range that cannot be planned: wider than the cap on partitions, outside the
// years 0000-9999, or longer than a rolling cycle. Narrowing the range fixes it.
type RangeError struct {
	Topic string
	Err   error
}

func (e *RangeError) Error() string {
	return "planning a read of topics." + e.Topic + ": " + e.Err.Error()
}
func (e *RangeError) Unwrap() error { return e.Err }

// MakePlan lists the partitions of table t that hold rows of the entity id (its id column values)
// between from and to: [from, to) oldest first when from is before to, (to, from] newest first
// when from is after to (instants are taken to the millisecond). It is the one place that decides
// where a reader looks; the writer's side of the same decision is mapper and bucketer, and both
// follow the contract in the bucketer package doc.
//
// For a table with an event bucket column, routes gives the entity's split generations per time
// bucket (nil routes: none), whether or not the topic's configuration has split on now: rows that a
// split routed while it was on stay where their routing records say. A bucket in which the entity
// split lists every event bucket any of its generations uses (0 up to the largest count), over the
// bucket's whole range, and the reader merges them. An entity that never split costs one cached
// lookup per bucket.
//
// It fails, rather than return a shortened plan, when the range would take more than
// maxPartitions partitions, leaves the years 0000-9999, or revisits a rolling key.
func MakePlan(ctx context.Context, t schema.Table, id []any, from, to time.Time, maxPartitions int, routes RouteLookup) (Plan, error) {
	if t.Policy == nil {
		return Plan{}, errors.New("planning a read: the table has no bucket policy")
	}
	if len(id) != len(idColumns(t)) {
		return Plan{}, fmt.Errorf("planning a read of topics.%s: %d id values for the %d id columns %v",
			t.Topic, len(id), len(idColumns(t)), idColumns(t))
	}
	lo, hi, desc := msRange(from, to)
	parts, err := t.Policy.Enumerate(from, to, maxPartitions)
	if err != nil {
		return Plan{}, &RangeError{Topic: t.Topic, Err: err}
	}
	var entity []byte
	if routes != nil && t.HasEventBucketColumn() {
		if entity, err = EntityKey(t, id); err != nil {
			return Plan{}, fmt.Errorf("planning a read of topics.%s: %w", t.Topic, err)
		}
	}
	plan := Plan{Desc: desc}
	total := 0
	for len(parts) > 0 {
		n := 1 // the event buckets of one time bucket are consecutive in the enumeration
		for n < len(parts) && parts[n].Index == parts[0].Index {
			n++
		}
		i := parts[0].Index
		b := TimeBucket{Bucket: i, Table: t.Name, Slice: parts[0].Slice, Key: t.Policy.Value(i),
			Lo: later(lo, t.Policy.Start(i)), Hi: earlier(hi, t.Policy.End(i))}
		if b.Slice != "" {
			b.Table = t.Name + "_" + b.Slice
		}
		// A bucket the enumeration lists only because a bound falls inside its first or last
		// millisecond can be empty once the range is taken to the millisecond.
		if b.Lo.Before(b.Hi) {
			for _, p := range parts[:n] {
				b.Partitions = append(b.Partitions, Partition{Table: b.Table, Slice: b.Slice, Bucket: i, Key: b.Key, EventBucket: p.EventBucket})
			}
			if entity != nil {
				gens, err := routes(ctx, b.Table, t.Policy.Start(i), entity)
				if err != nil {
					return Plan{}, err
				}
				for _, g := range gens {
					for eb := len(b.Partitions); eb < g.End(); eb++ {
						b.Partitions = append(b.Partitions, Partition{Table: b.Table, Slice: b.Slice, Bucket: i, Key: b.Key, EventBucket: eb})
					}
				}
			}
			if total += len(b.Partitions); total > maxPartitions {
				return Plan{}, &RangeError{Topic: t.Topic, Err: fmt.Errorf("the range spans more than %d partitions once the entity's splits are counted; narrow it", maxPartitions)}
			}
			plan.Buckets = append(plan.Buckets, b)
		}
		parts = parts[n:]
	}
	return plan, nil
}

// msRange turns a query range into the half-open range [lo, hi) of millisecond instants it
// covers: [from, to) going up, (to, from] going down.
func msRange(from, to time.Time) (lo, hi time.Time, desc bool) {
	ms := func(t time.Time) time.Time { return t.UTC().Truncate(time.Millisecond) }
	if from.After(to) {
		// (to, from] over whole milliseconds is [floor(to)+1ms, floor(from)+1ms).
		return ms(to).Add(time.Millisecond), ms(from).Add(time.Millisecond), true
	}
	// [from, to): a row at millisecond m is in when from <= m < to, i.e. m >= ceil(from), m < ceil(to).
	return ceilMS(from), ceilMS(to), false
}

func ceilMS(t time.Time) time.Time {
	f := t.UTC().Truncate(time.Millisecond)
	if f.Before(t) {
		return f.Add(time.Millisecond)
	}
	return f
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// idColumns are the id columns: the partition key without the bucket and event bucket columns.
func idColumns(t schema.Table) []string { return t.IDColumns() }
