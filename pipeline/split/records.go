package split

import (
	"context"
	"log/slog"
	"time"

	"github.com/bucketsink/sink/routing"
)

// load reads the adoptions and then the routing records of a bucket into the mapper's routes, and
// returns how many entities have records. Adoptions are read first: an adoption is written after
// its record, so every adoption read has its record in the second read. It is what a new owner does
// before it routes a row of the bucket, so that it knows every adoption its partitions made.
func (s *State) load(idx, offset int64) (int, error) {
	var recs []routing.Record
	var adoptions []routing.Adoption
	err := s.w.Retry(offset, "reading the routing records of a bucket", func(ctx context.Context) (err error) {
		recs, adoptions, err = s.read(ctx, idx)
		return err
	})
	if err != nil {
		return 0, err
	}
	adopted := s.adopted(recs, adoptions)
	n := s.publish(idx, recs, adopted)
	if len(recs) == 0 {
		return n, nil
	}
	hwm, err := s.highWatermark()
	if err != nil {
		return 0, err
	}
	for _, r := range recs {
		if _, ok := adopted[string(r.Entity)][r.Generation][s.partition]; !ok {
			s.floors[genKey{idx, string(r.Entity), r.Generation}] = hwm
		}
	}
	return n, nil
}

// hold loads the routing records of bucket idx (load) and holds the bucket in the mapper's routes
// until the worker moves past it or its assignment ends.
func (s *State) hold(idx, offset int64) (int, error) {
	// Held before the load, so that no other worker's release forgets what this one loads.
	s.t.routes.Hold(idx)
	n, err := s.load(idx, offset)
	if err != nil {
		s.t.routes.Release(idx)
		return 0, err
	}
	s.loaded[idx] = true
	_, _ = s.t.refreshDue(idx, time.Now()) // just read
	return n, nil
}

// read reads the adoptions and then the routing records of a bucket. Adoptions are read first: an
// adoption is written after its record, so every adoption read has its record in the second read.
func (s *State) read(ctx context.Context, idx int64) ([]routing.Record, []routing.Adoption, error) {
	t := s.t
	table, start := s.tableOf(idx), t.policy.Start(idx)
	adoptions, err := t.store.Adoptions(ctx, t.keyspace, table, start)
	if err != nil {
		return nil, nil, err
	}
	recs, err := t.store.Bucket(ctx, t.keyspace, table, start)
	return recs, adoptions, err
}

// adopted indexes the adoptions of this topic's Kafka partitions, those the records carry for their
// deciders and those of the adoption table: entity → generation → partition → offset. A decider's
// adoption, written with its record, comes first.
func (s *State) adopted(recs []routing.Record, adoptions []routing.Adoption) routing.Index {
	return routing.AdoptionIndex(recs, adoptions, s.t.label)
}

// highWatermark is the partition's high watermark as the fetch that brought the current record
// reported it: past every offset an earlier owner can have routed. The fetch reports it just after
// it queues the records, so the worker may have to wait for it an instant.
func (s *State) highWatermark() (int64, error) {
	for {
		if hwm, ok := s.w.HighWatermark(); ok {
			return hwm, nil
		}
		if err := s.w.Sleep(time.Millisecond); err != nil {
			return 0, err
		}
	}
}

// refresh reads the adoptions and routing records of a bucket again, to learn of generations decided
// by workers of other Kafka partitions, and of adoptions of this worker's own partition by another
// owner (a process frozen past its session keeps its partitions until franz-go reports them lost, and
// meanwhile a new owner may have split or adopted: this worker then routes as that owner does). It
// returns how many entities have records. Unless wait (the last read is a session timeout old), it
// does not wait: a failure is logged and the next interval tries again (a worker that knows a
// generation late only writes to the older layout longer).
func (s *State) refresh(idx, offset int64, wait bool) (int, error) {
	var recs []routing.Record
	var adoptions []routing.Adoption
	var err error
	if wait {
		err = s.w.Retry(offset, "reading the routing records of a bucket again", func(ctx context.Context) (err error) {
			recs, adoptions, err = s.read(ctx, idx)
			return err
		})
		if err != nil {
			return 0, err
		}
	} else {
		ctx, cancel := context.WithTimeout(s.w.WorkContext(), max(s.t.settle, time.Second))
		recs, adoptions, err = s.read(ctx, idx)
		cancel()
		if err != nil {
			s.log.Warn("reading the routing records of a bucket again failed; trying again next interval", slog.Any("error", err))
			return 0, nil
		}
	}
	return s.publish(idx, recs, s.adopted(recs, adoptions)), nil
}

func (s *State) tableOf(idx int64) string {
	t := s.t
	if _, sliced := t.policy.Sliced(); sliced {
		return t.table.NameOfSlice(t.policy.SliceOfBucket(idx))
	}
	return t.table.Name
}

// publish hands the records of a bucket, ordered by entity then generation, with their adoptions
// (s.adopted's index), to the mapper's routes; it returns how many entities have records.
func (s *State) publish(idx int64, recs []routing.Record, adopted routing.Index) int {
	n := 0
	routing.Generations(recs, adopted, func(entity string, gens []routing.Generation) {
		s.t.routes.Set(idx, entity, gens)
		n++
	})
	return n
}

// sourcesOf counts the Kafka partitions known to write the entity: this worker's, and those that
// adopted one of its generations of bucket idx or of the bucket before.
func (s *State) sourcesOf(idx int64, entity string) int {
	seen := map[int32]bool{s.partition: true}
	for _, b := range []int64{idx - 1, idx} {
		for _, g := range s.t.routes.Lookup(b, entity) {
			for p := range g.Adopted {
				seen[p] = true
			}
		}
	}
	return len(seen)
}

// keyParts splits a row's routing key into the entity (its id components) and its event bucket.
func (s *State) keyParts(key string) (string, int, bool) { return routing.KeyParts(key, s.t.ids) }

// prune forgets the tallies of buckets two or more before the newest this worker has seen.
func (s *State) prune(idx int64) {
	if idx <= s.newest {
		return
	}
	s.newest = idx
	for k, st := range s.tally {
		if k.bucket < idx-1 {
			s.setOver(st, false)
			delete(s.tally, k)
		}
	}
	for b := range s.loaded {
		if b < idx-1 {
			delete(s.loaded, b)
			s.t.routes.Release(b)
		}
	}
	for g := range s.floors {
		if g.bucket < idx-1 {
			delete(s.floors, g)
		}
	}
}

// Release drops the worker's over-budget counts and its holds on the mapper's routes when its
// assignment ends.
func (s *State) Release() {
	for _, st := range s.tally {
		s.setOver(st, false)
	}
	for b := range s.loaded {
		s.t.routes.Release(b)
	}
	clear(s.loaded)
}
