package split

import (
	"context"
	"log/slog"
	"time"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/packed"
	"github.com/bucketsink/sink/routing"
)

// carry starts the entity's time bucket idx split when it split in the bucket before (routing.Carry):
// before the worker routes its first row of the entity's bucket, it writes generation 1 of the
// bucket, from the bucket's start, sized for the whole bucket at the rate the entity wrote the bucket
// before, with its own Kafka partition's adoption from this row on, and maps the row again. It does
// so only when generation 0's partitions of the bucket hold no row (read after the settle time, so
// an earlier owner's last writes are in): then no row of the bucket was routed by the generation 0
// that the record would take over from, here or by an earlier owner. Otherwise, or when the
// transaction finds a generation 1 already written, the entity follows the records as they are
// (another worker's carry is adopted below, like any generation). It reports whether it mapped the
// row again.
func (s *State) carry(row batcher.Row, idx int64, entity string, remap func() (batcher.Row, error)) (batcher.Row, bool, error) {
	t := s.t
	prev := t.routes.Lookup(idx-1, entity)
	if len(prev) == 0 || len(t.routes.Lookup(idx, entity)) > 0 {
		return row, false, nil
	}
	rate, err := s.rateBefore(row, idx-1, entity, prev)
	if err != nil {
		return row, false, err
	}
	start, end := t.policy.Start(idx), t.policy.End(idx)
	g, ok := routing.Carry(rate, start, end, t.sizing(), t.base, t.max)
	if !ok {
		return row, false, nil
	}
	if err := s.settle(); err != nil {
		return row, false, err
	}
	newest, err := s.newestRow(row, t.base)
	if err != nil {
		return row, false, err
	}
	if !newest.Before(start) {
		return row, false, nil // generation 0 holds rows of the bucket: a decision follows as usual
	}
	rec := routing.Record{
		Table: row.Target.Table, BucketStart: start, Entity: []byte(entity), Generation: 1,
		From: start, FirstEventBucket: g.First, EventBuckets: g.Buckets, DecidedAt: time.Now(), DecidedBy: t.clientID,
		// From this row on: no row of the entity's bucket was routed before it (see above).
		Topic: row.Target.Topic, Partition: row.Partition, FromOffset: row.Offset,
	}
	if err := s.propose(row, idx, entity, nil, rec); err != nil {
		return row, false, err
	}
	if row, err = remap(); err != nil {
		return row, true, err
	}
	row, _, err = s.adopt(row, idx, entity, remap) // another worker's carry won: adopt it
	return row, true, err
}

// rateBefore is the entity's rate in bucket idx (the one before the bucket being carried into): the
// larger of this worker's own view of it (its tally, and what it last sampled) and what Cassandra
// holds of the last of its generations (gens) that lasted a tenth of the bucket, or of generation 0
// when none did: the rows of that generation's first partition (counted to at most the row budget
// plus one) times its event buckets, over its time range.
func (s *State) rateBefore(row batcher.Row, idx int64, entity string, gens []routing.Generation) (routing.Rate, error) {
	t := s.t
	var rate routing.Rate
	if st := s.tally[tallyKey{idx, entity}]; st != nil {
		n := int64(s.sourcesOf(idx, entity))
		rate = routing.RateOf(st.sentRows*n, st.sentBytes*n, st.last.Sub(st.first))
		if st.wholeRows > 0 {
			rate = rate.Max(routing.RateOf(st.wholeRows, st.wholeRows*(st.sentBytes/max(st.sentRows, 1)), st.last.Sub(st.wholeFrom)))
		}
	}
	start, end := t.policy.Start(idx), t.policy.End(idx)
	first, k, from, until := 0, t.base, start, gens[0].From
	for i := len(gens) - 1; i >= 0; i-- {
		u := end
		if i+1 < len(gens) {
			u = gens[i+1].From
		}
		if u.Sub(gens[i].From) >= (end.Sub(start))/10 {
			first, k, from, until = gens[i].First, gens[i].Buckets, gens[i].From, u
			break
		}
	}
	e, err := routing.Partitions(t.table, s.tableOf(idx), row.Target.Columns, packed.Values(row.Packed))
	if err != nil {
		return rate, nil // not an entity the routing table can count; the worker's own view it is
	}
	e.Values[len(e.Values)-1] = t.policy.Value(idx) // the time bucket column, last of the key before the event bucket
	var n int64
	err = s.w.Retry(row.Offset, "counting the rows of a partition of the bucket before", func(ctx context.Context) (err error) {
		n, err = t.store.CountIn(ctx, t.keyspace, e, first, t.maxRows+1)
		return err
	})
	if err != nil {
		return rate, err
	}
	rows := n * int64(k)
	return rate.Max(routing.RateOf(rows, rows*int64(row.Size), until.Sub(from))), nil
}

// adopt makes the row's Kafka partition adopt, at the row's offset, the newest generation whose
// time range holds the row, unless it adopted that generation already: synchronously, before the
// row is mapped again to use it. Until then the row's partition followed the layout it knew, at
// offsets below the adoption, which is what a replay finds too. When another owner of the partition
// adopted first, its offset holds (a replay of this row routes as that offset says).
// It reports whether it mapped the row again.
func (s *State) adopt(row batcher.Row, idx int64, entity string, remap func() (batcher.Row, error)) (batcher.Row, bool, error) {
	t := s.t
	g := routing.Applying(t.routes.Lookup(idx, entity), row.EventTime())
	if g == nil {
		return row, false, nil
	}
	if _, ok := g.Adopted[row.Partition]; ok {
		return row, false, nil // the mapper routed the row by that adoption already
	}
	from := row.Offset
	if floor, ok := s.floors[genKey{idx, entity, g.N}]; ok && floor > from {
		// Found recorded at the load: an earlier owner may have routed rows below the floor
		// without it, unless the older layout holds none that it would route (routing.AdoptFrom),
		// which is read once the earlier owner's writes have landed or failed.
		if err := s.settle(); err != nil {
			return row, false, err
		}
		newest, err := s.newestRow(row, g.First)
		if err != nil {
			return row, false, err
		}
		from = routing.AdoptFrom(row.Offset, floor, newest, g.From)
	}
	if err := s.adoptFrom(row, idx, entity, g.N, from); err != nil {
		return row, false, err
	}
	row, err := remap()
	return row, true, err
}

// adoptFrom writes the adoption of generation n by the row's Kafka partition from offset from on
// (or takes the one written first) and publishes it to the mapper's routes.
func (s *State) adoptFrom(row batcher.Row, idx int64, entity string, n int, from int64) error {
	t := s.t
	a := routing.Adoption{
		Table: row.Target.Table, BucketStart: t.policy.Start(idx), Entity: []byte(entity), Generation: n,
		Topic: row.Target.Topic, Partition: row.Partition, From: from, AdoptedAt: time.Now(), AdoptedBy: t.clientID,
	}
	var held routing.Adoption
	var applied bool
	err := s.w.Retry(row.Offset, "writing a split adoption", func(ctx context.Context) (err error) {
		held, applied, err = t.store.Adopt(ctx, t.keyspace, a)
		return err
	})
	if err != nil {
		return err
	}
	t.routes.Adopt(idx, entity, n, row.Partition, held.From)
	s.log.Info("split generation adopted", slog.String("table", a.Table), slog.Time("bucket", a.BucketStart),
		slog.Int("generation", n), slog.Int64("from_offset", held.From), slog.Bool("adopted_here", applied))
	return nil
}
