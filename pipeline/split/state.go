package split

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/routing"
)

// Worker is the partition worker a State routes for, the split room's one way into the pipeline: the
// calls to the routing table are made through it, so that a failing one holds the partition (stuck,
// retried with backoff) as any dependency of a record does, and every wait ends when the worker stops.
type Worker interface {
	// Retry runs op until it succeeds, with backoff, the partition stuck at offset meanwhile (what says
	// what failed, in its log), or until the worker stops: it then returns the worker's stop error.
	Retry(offset int64, what string, op func(ctx context.Context) error) error
	// Sleep waits d, or returns the worker's stop error as soon as the worker stops.
	Sleep(d time.Duration) error
	// HighWatermark is the partition's high watermark as the last fetch reported it; false until one has.
	HighWatermark() (int64, bool)
	// WorkContext is canceled when the worker stops: a call made under it returns at once.
	WorkContext() context.Context
}

// State is one partition worker's view: which buckets' records it has loaded, and what it has
// sent per (entity, bucket). It lives as long as the assignment, so a new owner loads again.
type State struct {
	t         *Topic
	w         Worker
	partition int32 // the Kafka partition of the assignment
	log       *slog.Logger
	started   time.Time
	loaded    map[int64]bool
	tally     map[tallyKey]*entityStat
	newest    int64 // the newest bucket seen, for pruning
	// floors holds, for each generation that already existed when this worker loaded its bucket and
	// that its Kafka partition had not adopted, the partition's high watermark at that load: an
	// earlier owner may have routed rows below it without the generation, so no adoption starts
	// earlier.
	floors map[genKey]int64
}

type genKey struct {
	bucket int64
	entity string
	n      int
}

type tallyKey struct {
	bucket int64
	entity string
}

// entityStat is one (entity, bucket) as this worker knows it: rows and bytes per event bucket (what
// it sent, raised to what Cassandra held when the entity first looked hot), and, for the rate, what
// it sent itself since the current generation began (or since it first saw the entity), between
// the first and newest event times of that window: a rate that rises is read from recent rows.
type entityStat struct {
	rows, bytes         []int64
	sentRows, sentBytes int64
	first, last         time.Time
	gens                int  // the generations known when the window began
	over                bool // counted in sink_partitions_over_budget
	counted             bool // Cassandra's rows were counted in
	tooLate             bool // a split would start at or after the bucket's end: none is made
	// What Cassandra held of the current generation when last sampled (sample): its rows since
	// wholeFrom, estimated from its first partition, whichever Kafka partitions wrote them; and
	// this worker's sentRows then.
	wholeRows int64
	wholeFrom time.Time
	sampledAt int64
	wholeTo   time.Time // the newest row Cassandra held when sampled, if read (else this worker's last)
	sources   int       // the Kafka partitions known to write the entity (sourcesOf), as of the last look
}

// NewState returns the split state of the worker w of Kafka partition partition, for its
// assignment; log is the worker's logger. Release it when the assignment ends.
func NewState(t *Topic, w Worker, partition int32, log *slog.Logger) *State {
	return &State{t: t, w: w, partition: partition, log: log, started: time.Now(), loaded: map[int64]bool{}, tally: map[tallyKey]*entityStat{}, floors: map[genKey]int64{}}
}

// Route runs after a record is mapped: it makes sure the routing records of the row's bucket are
// known (mapping again when they change the row), reads them again every split.refresh_interval,
// makes the row's Kafka partition adopt the generation that would route it before the row may use
// it, counts the row, and makes a split decision when the row's partition is projected to outgrow
// its budget. The decision is synchronous, so nothing of this worker is sent under the old layout
// while it is pending; its instant T is later than every row sent so far, this one included, so
// this row stays where it was mapped.
func (s *State) Route(row batcher.Row, remap func() (batcher.Row, error)) (batcher.Row, error) {
	t := s.t
	idx := t.policy.Index(row.EventTime())
	if !s.loaded[idx] {
		if idx >= s.newest && !s.loaded[idx-1] {
			// The bucket before says which entities start this one split (carry).
			if _, err := s.hold(idx-1, row.Offset); err != nil {
				return row, err
			}
		}
		n, err := s.hold(idx, row.Offset)
		if err != nil {
			return row, err
		}
		if n > 0 {
			if row, err = remap(); err != nil {
				return row, err
			}
		}
	} else if due, stale := t.refreshDue(idx, time.Now()); due {
		n, err := s.refresh(idx, row.Offset, stale)
		if err != nil {
			return row, err
		}
		if n > 0 {
			// What was read may route this row otherwise: a generation its Kafka partition adopted
			// under another owner (this process was frozen past its session), or a later one.
			if row, err = remap(); err != nil {
				return row, err
			}
		}
	}
	entity, eb, ok := s.keyParts(row.Key)
	if !ok {
		return row, nil // not a key the mapper makes; nothing to count
	}
	row, remapped, err := s.adopt(row, idx, entity, remap)
	if err != nil {
		return row, err
	}
	if remapped {
		if entity, eb, ok = s.keyParts(row.Key); !ok {
			return row, nil
		}
	}
	k := tallyKey{idx, entity}
	st := s.tally[k]
	if st == nil {
		// The worker's first row of the entity's bucket: if the entity split in the bucket before,
		// this one starts split, before any row of it is routed here.
		row, remapped, err = s.carry(row, idx, entity, remap)
		if err != nil {
			return row, err
		}
		if remapped {
			if _, eb, ok = s.keyParts(row.Key); !ok {
				return row, nil
			}
		}
		s.prune(idx)
		st = &entityStat{first: row.EventTime()}
		s.tally[k] = st
	}
	for len(st.rows) <= eb {
		st.rows, st.bytes = append(st.rows, 0), append(st.bytes, 0)
	}
	gens := t.routes.Lookup(idx, entity)
	if len(gens) != st.gens {
		// A new generation: its rate window starts here.
		st.gens, st.sentRows, st.sentBytes, st.first, st.last = len(gens), 0, 0, row.EventTime(), row.EventTime()
		st.wholeRows, st.sampledAt, st.wholeTo = 0, 0, time.Time{}
		st.sources = s.sourcesOf(idx, entity)
	}
	st.rows[eb]++
	st.bytes[eb] += int64(row.Size)
	st.sentRows++
	st.sentBytes += int64(row.Size)
	if row.EventTime().After(st.last) {
		st.last = row.EventTime()
	}
	first, kNow := 0, t.base // the current generation's event buckets
	if len(gens) > 0 {
		first, kNow = gens[len(gens)-1].First, gens[len(gens)-1].Buckets
	}
	next, over := s.project(st, idx, first, kNow)
	if next == 0 && !st.tooLate && s.warm(st) && st.sentRows >= st.sampledAt+st.sampledAt/4 {
		// The entity may be written through other Kafka partitions as well, each worker seeing a
		// share of its rate: project from what Cassandra holds of it too.
		st.sources = s.sourcesOf(idx, entity)
		if err := s.sample(row, st, idx, gens, first, kNow); err != nil {
			return row, err
		}
		next, over = s.project(st, idx, first, kNow)
	}
	s.setOver(st, over)
	if (next == 0 && !over) || st.tooLate {
		return row, nil
	}
	if err := s.settle(); err != nil {
		return row, err
	}
	if !st.counted {
		// After a restart or a rebalance this worker has seen only part of the bucket: count what
		// Cassandra holds before deciding, once per entity and bucket.
		if err := s.count(row, st, first, kNow); err != nil {
			return row, err
		}
		next, over = s.project(st, idx, first, kNow)
		s.setOver(st, over)
	}
	if next > 0 && st.sampledAt != max(st.sentRows, 1) {
		// Sized from the whole of the entity's rate, not this worker's share of it: nothing
		// guarantees that another decision follows this one before the bucket ends. The sample's
		// time range ends at the newest row Cassandra holds, since the other workers of the
		// entity may be ahead of this one.
		newest, err := s.newestRow(row, first+kNow)
		if err != nil {
			return row, err
		}
		st.sources = s.sourcesOf(idx, entity)
		if err := s.sample(row, st, idx, gens, first, kNow); err != nil {
			return row, err
		}
		st.wholeTo = newest
		next, over = s.project(st, idx, first, kNow)
		s.setOver(st, over)
	}
	if next == 0 {
		return row, nil
	}
	return row, s.decide(row, idx, entity, gens, first+kNow, next, st)
}

// settle waits, if need be, until cassandra.timeout has passed since the assignment began: the
// previous owner's last writes have then landed or failed, so the decision's newest-row read sees
// them. It holds the row (and the partition's rows behind it) instead of letting them through
// unsplit: a new owner in front of a backlog would otherwise write much of it to the old layout
// within the window.
func (s *State) settle() error {
	wait := time.Until(s.started.Add(s.t.settle))
	if wait <= 0 {
		return nil
	}
	return s.w.Sleep(wait)
}

// count raises the tally of the current generation's event buckets first..first+k-1 to the rows
// Cassandra holds there (each counted to at most the row budget plus one), at the bytes per row this
// worker has seen: the partitions the projection reads. Earlier generations take no more rows and
// are not counted. Each partition is its own call, retried alone, so one call reads a bounded number
// of rows and a count that fails part way keeps what it counted.
func (s *State) count(row batcher.Row, st *entityStat, first, k int) error {
	perRow := st.sentBytes / max(st.sentRows, 1)
	for len(st.rows) < first+k {
		st.rows, st.bytes = append(st.rows, 0), append(st.bytes, 0)
	}
	for eb := first; eb < first+k; eb++ {
		n, err := s.countOne(row, eb)
		if err != nil {
			return err
		}
		if n > st.rows[eb] {
			st.bytes[eb] += (n - st.rows[eb]) * perRow
			st.rows[eb] = n
		}
	}
	st.counted = true
	return nil
}

// countOne counts the rows Cassandra holds in the entity's partition with event bucket eb, at most
// the row budget plus one, retried until it succeeds or the partition stops.
func (s *State) countOne(row batcher.Row, eb int) (int64, error) {
	t := s.t
	var n int64
	err := s.w.Retry(row.Offset, "counting the rows of a partition", func(ctx context.Context) (err error) {
		n, err = t.store.Count(ctx, t.keyspace, t.table, row, eb, t.maxRows+1)
		return err
	})
	return n, err
}

// warm reports whether the entity holds 1% of its budget in what this worker sent in the current
// generation: below that, a rate means nothing and no projection is made.
func (s *State) warm(st *entityStat) bool {
	return st.sentBytes >= s.t.budget/100 || st.sentRows >= s.t.maxRows/100
}

// sample counts what Cassandra holds in the first partition of the current generation (event
// buckets first..first+k-1, which the hash fills evenly), at most the row budget plus one, and takes
// k times that as the generation's rows since it began, whichever Kafka partitions wrote them. The
// projection then reads the entity's rate from the larger of that and this worker's own. A worker
// samples again each time its own rows grew by a quarter, so a sample is a bounded read made a
// logarithmic number of times per generation.
func (s *State) sample(row batcher.Row, st *entityStat, idx int64, gens []routing.Generation, first, k int) error {
	t := s.t
	n, err := s.countOne(row, first)
	if err != nil {
		return err
	}
	st.sampledAt, st.wholeTo = max(st.sentRows, 1), time.Time{}
	st.wholeRows, st.wholeFrom = n*int64(k), t.policy.Start(idx)
	if len(gens) > 0 {
		st.wholeFrom = gens[len(gens)-1].From
	}
	if n > st.rows[first] {
		st.bytes[first] += (n - st.rows[first]) * (st.sentBytes / max(st.sentRows, 1))
		st.rows[first] = n
	}
	return nil
}

// project returns the event bucket count of the entity's next generation in its bucket (0: no
// split), and whether a partition of it is or will be over budget even so. The current generation
// has event buckets first..first+k-1 and takes the rows to come; earlier generations' partitions
// take no more. The projection extends what this worker sent, at its rate in event time, to the
// bucket's end (or, when Cassandra holds more of the entity than this worker sent, what Cassandra
// holds, at its rate: sample); it waits until the entity holds 1% of the budget, so that a rate is
// not read from a handful of rows. The next generation gets event buckets of its own, as many as keep each at half
// the budget, within split.max_event_buckets in all.
func (s *State) project(st *entityStat, idx int64, first, k int) (int, bool) {
	t := s.t
	for len(st.rows) < first+k {
		st.rows, st.bytes = append(st.rows, 0), append(st.bytes, 0)
	}
	over := slices.Max(st.bytes) > t.budget || slices.Max(st.rows) > t.maxRows
	if !s.warm(st) {
		return 0, over
	}
	// This worker's rows stand for every Kafka partition known to write the entity (st.sources):
	// records not keyed by the entity spread it about evenly over them.
	rows, total := st.sentRows*int64(max(st.sources, 1)), st.sentBytes*int64(max(st.sources, 1))
	elapsed := st.last.Sub(st.first)
	to := st.last
	if st.wholeTo.After(to) {
		to = st.wholeTo // other workers of the entity are ahead of this one
	}
	if w := to.Sub(st.wholeFrom); st.wholeRows > 0 && w >= time.Second && float64(st.wholeRows)*float64(elapsed) > float64(rows)*float64(w) {
		// Cassandra holds the entity at a higher rate than this worker sends it: other Kafka
		// partitions write it too.
		rows, total, elapsed = st.wholeRows, st.wholeRows*(st.sentBytes/max(st.sentRows, 1)), w
	}
	end := t.policy.End(idx)
	remaining := end.Sub(st.last)
	if elapsed < time.Second || remaining <= 0 {
		return 0, over
	}
	rate := routing.RateOf(rows, total, elapsed)
	f := float64(remaining) / float64(elapsed)
	extraBytes, extraRows := float64(total)*f, float64(rows)*f
	curBytes, curRows := float64(slices.Max(st.bytes[first:first+k])), float64(slices.Max(st.rows[first:first+k]))
	if curBytes+extraBytes/float64(k) <= float64(t.budget) && curRows+extraRows/float64(k) <= float64(t.maxRows) {
		return 0, over
	}
	// The next generation holds the rest of the bucket (routing.Size): no later decision is
	// guaranteed, since a restarted or newly assigned owner makes none before its settle time.
	next, nextOver := routing.Size(rate, st.last, end, t.sizing(), t.max-(first+k))
	if next == 0 {
		return 0, true // split.max_event_buckets is used up
	}
	return next, over || nextOver
}

func (s *State) setOver(st *entityStat, over bool) {
	if over == st.over {
		return
	}
	st.over = over
	if over {
		s.t.overBudget.Inc()
	} else {
		s.t.overBudget.Dec()
	}
}

// decide writes the routing record of the entity's next generation (next event buckets from end,
// the first unused one), or adopts the one another instance wrote first, and publishes it to the
// mapper. T is later than every row of the entity's bucket this worker has sent and every row
// Cassandra holds in its partitions so far.
func (s *State) decide(row batcher.Row, idx int64, entity string, gens []routing.Generation, end, next int, st *entityStat) error {
	t := s.t
	newest, err := s.newestRow(row, end)
	if err != nil {
		return err
	}
	from := st.last
	if newest.After(from) {
		from = newest
	}
	if n := len(gens); n > 0 && !gens[n-1].From.Before(from) {
		from = gens[n-1].From
	}
	from = from.Truncate(time.Second).Add(time.Second)
	if !from.Before(t.policy.End(idx)) {
		st.tooLate = true // the bucket ends first: nothing left to spread, and no need to ask again
		return nil
	}
	rec := routing.Record{
		Table: row.Target.Table, BucketStart: t.policy.Start(idx), Entity: []byte(entity), Generation: len(gens) + 1,
		From: from, FirstEventBucket: end, EventBuckets: next, DecidedAt: time.Now(), DecidedBy: t.clientID,
		// The decider's partition adopts its decision in the same transaction, from the next record
		// on: no row of it was routed past this one, and every row before it is earlier than T.
		Topic: row.Target.Topic, Partition: row.Partition, FromOffset: row.Offset + 1,
	}
	return s.propose(row, idx, entity, gens, rec)
}

// propose writes the routing record rec, the generation after gens, or takes the one written
// first, and publishes it to the mapper's routes.
func (s *State) propose(row batcher.Row, idx int64, entity string, gens []routing.Generation, rec routing.Record) error {
	t := s.t
	var held routing.Record
	var applied bool
	err := s.w.Retry(row.Offset, "writing a routing record", func(ctx context.Context) (err error) {
		held, applied, err = t.store.Propose(ctx, t.keyspace, rec)
		return err
	})
	if err != nil {
		return err
	}
	g := routing.Generation{N: held.Generation, From: held.From, First: held.FirstEventBucket, Buckets: held.EventBuckets}
	if a, ok := held.Adoption(); ok && a.Topic == t.label {
		g.Adopted = map[int32]int64{a.Partition: a.From}
	}
	t.routes.Set(idx, entity, append(slices.Clone(gens), g))
	if applied {
		t.splits.Inc()
	}
	s.log.Info("hot partition split", slog.String("table", rec.Table), slog.Time("bucket", rec.BucketStart),
		slog.Int("generation", held.Generation), slog.Time("from", held.From), slog.Int("first_event_bucket", held.FirstEventBucket), slog.Int("event_buckets", held.EventBuckets),
		slog.Bool("decided_here", applied), slog.Bool("carried", rec.From.Equal(rec.BucketStart)))
	return nil
}

// newestRow reads the newest event time Cassandra holds in the event buckets 0..end-1 of the row's
// entity and bucket (the zero time when they hold none), retried until it succeeds or the worker
// stops.
func (s *State) newestRow(row batcher.Row, end int) (time.Time, error) {
	t := s.t
	var newest time.Time
	err := s.w.Retry(row.Offset, "reading the newest row of a hot partition", func(ctx context.Context) (err error) {
		newest, err = t.store.Newest(ctx, t.keyspace, t.table, row, end)
		return err
	})
	return newest, err
}
