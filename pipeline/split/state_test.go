package split

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/bucketer"
	"github.com/bucketsink/sink/routing"
	"github.com/bucketsink/sink/schema"
)

func projector(t *testing.T, max int) *State {
	t.Helper()
	p, err := bucketer.New(bucketer.Spec{Width: "1h"})
	if err != nil {
		t.Fatal(err)
	}
	return &State{t: &Topic{policy: p, base: 1, max: max, budget: 100_000_000, maxRows: 1000}}
}

var hour0 = time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)

// idx0 is the hourly bucket of hour0.
var idx0 = hour0.Unix() / 3600

// stat is an entity that wrote rows rows per event bucket (k of them) from the bucket's start to at.
func stat(k int, rows int64, at time.Duration) *entityStat {
	st := &entityStat{first: hour0, last: hour0.Add(at)}
	for range k {
		st.rows, st.bytes = append(st.rows, rows), append(st.bytes, rows*100)
		st.sentRows += rows
		st.sentBytes += rows * 100
	}
	return st
}

// TestSplitProjectionWaitsForOnePercentOfBudget: an entity with fewer rows than 1% of the budget is
// never split, whatever its rate looks like (a rate read from a handful of rows means nothing).
func TestSplitProjectionWaitsForOnePercentOfBudget(t *testing.T) {
	s := projector(t, 64)
	if next, over := s.project(stat(1, 9, time.Second), idx0, 0, 1); next != 0 || over {
		t.Errorf("9 rows (budget 1000): split to %d, over %v; want no decision", next, over)
	}
	if next, _ := s.project(stat(1, 10, time.Second), idx0, 0, 1); next == 0 {
		t.Error("10 rows in the first second of an hour (36,000 projected against 1,000): no split")
	}
}

// TestSplitAimsAtHalfTheBudget: 200 rows in the first 6 minutes project 2,000 by the hour's end;
// the 1,800 still to come go to a new generation of event buckets of their own, as many as keep
// each within half the budget (500 rows): 4. A partition with room for its share needs nothing.
func TestSplitAimsAtHalfTheBudget(t *testing.T) {
	s := projector(t, 64)
	next, over := s.project(stat(1, 200, 6*time.Minute), idx0, 0, 1)
	if next != 4 || over {
		t.Errorf("split to %d (over %v); want 4 event buckets within budget", next, over)
	}
	if next, over := s.project(stat(8, 50, 30*time.Minute), idx0, 0, 8); next != 0 || over {
		t.Errorf("8 event buckets projected at 100 rows each: split to %d, over %v; want none", next, over)
	}
}

// TestSplitGrowsAgainWhenTheRateRises: an entity whose generation of 4 event buckets is projected
// past the budget splits again: 1,000 rows in 10 minutes leave 5,000 to come, a generation of 10
// event buckets after them (K grows).
func TestSplitGrowsAgainWhenTheRateRises(t *testing.T) {
	s := projector(t, 64)
	st := stat(5, 200, 10*time.Minute) // event bucket 0, then generation 1: 1..4
	if next, _ := s.project(st, idx0, 1, 4); next != 10 {
		t.Errorf("4 event buckets projected at 1,200 rows each: split to %d; want 10", next)
	}
}

// TestSplitAtTheCapIsOverBudget: when max_event_buckets is used up and the projection still passes
// the budget, no decision is made and the partition counts as over budget; near the cap, the last
// event buckets are used and the partitions still count as over budget.
func TestSplitAtTheCapIsOverBudget(t *testing.T) {
	s := projector(t, 4)
	if next, over := s.project(stat(4, 200, 10*time.Minute), idx0, 0, 4); next != 0 || !over {
		t.Errorf("at the cap: split to %d, over %v; want no decision, over budget", next, over)
	}
	if next, over := s.project(stat(2, 400, 10*time.Minute), idx0, 0, 2); next != 2 || !over {
		t.Errorf("cap 4 from 2: split to %d, over %v; want the last 2 and still over budget", next, over)
	}
}

// countStore is a Store whose partitions hold the given row counts, by event bucket; it notes
// which event buckets were counted.
type countStore struct {
	Store
	counts  []int64
	counted *[]int
}

func (c countStore) Count(_ context.Context, _ string, _ schema.Table, _ batcher.Row, eb int, limit int64) (int64, error) {
	if c.counted != nil {
		*c.counted = append(*c.counted, eb)
	}
	return min(c.counts[eb], limit), nil
}

// TestSplitCountsWhatCassandraHoldsBeforeDeciding: a worker that took over an entity's bucket half
// way (a restart, a rebalance) has seen 20 rows of it in 5 minutes, 120 more to come: no split by
// its own view. Cassandra holds 900 in the partition: counted in, the rows to come would pass the
// budget, so they go to a new generation of 2.
func TestSplitCountsWhatCassandraHoldsBeforeDeciding(t *testing.T) {
	s := projector(t, 64)
	s.t.store = countStore{counts: []int64{900}}
	s.w = testWorker{}
	st := stat(1, 20, 30*time.Minute)
	st.first = hour0.Add(25 * time.Minute) // seen for the last 5 minutes only
	own, _ := s.project(st, idx0, 0, 1)
	if err := s.count(batcher.Row{}, st, 0, 1); err != nil {
		t.Fatal(err)
	}
	if st.rows[0] != 900 || !st.counted {
		t.Fatalf("after the count: %d rows in event bucket 0, counted %v; want 900", st.rows[0], st.counted)
	}
	next, over := s.project(st, idx0, 0, 1)
	if own != 0 || next != 2 || over {
		t.Errorf("own view: split to %d; with Cassandra's 900 rows: %d (over %v); want none, then 2 within budget", own, next, over)
	}
}

// newestStore is a Store whose partitions' newest row is at newest; any other call panics.
type newestStore struct {
	Store
	newest time.Time
}

func (n newestStore) Newest(context.Context, string, schema.Table, batcher.Row, int) (time.Time, error) {
	return n.newest, nil
}

// TestSplitNoDecisionPastTheBucketEnd: when the newest row already stored is in the bucket's last
// second, a split could only start after the bucket ends: no record is written (the store would
// panic on Propose), and the entity's bucket is not asked about again.
func TestSplitNoDecisionPastTheBucketEnd(t *testing.T) {
	s := projector(t, 64)
	s.t.store = newestStore{newest: hour0.Add(time.Hour - 300*time.Millisecond)}
	s.w = testWorker{}
	st := stat(1, 200, 30*time.Minute)
	if err := s.decide(batcher.Row{}, idx0, "e", nil, 1, 4, st); err != nil {
		t.Fatal(err)
	}
	if !st.tooLate {
		t.Error("a split starting at the bucket's end was not given up")
	}
}

// TestSplitCountsOnlyTheCurrentGenerationsPartitions: before its first decision a worker counts what
// Cassandra holds in the partitions the projection reads, those of the current generation, never
// the earlier generations' (which take no more rows): with generation 1 at event buckets 1..4 and
// generation 2 at 5..12, only 5..12 are read, each at most the row budget plus one.
func TestSplitCountsOnlyTheCurrentGenerationsPartitions(t *testing.T) {
	s := projector(t, 64)
	var counted []int
	counts := make([]int64, 13)
	for i := range counts {
		counts[i] = 1_000_000
	}
	s.t.store = countStore{counts: counts, counted: &counted}
	s.w = testWorker{}
	st := stat(13, 20, 30*time.Minute)
	if err := s.count(batcher.Row{}, st, 5, 8); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(counted, []int{5, 6, 7, 8, 9, 10, 11, 12}) {
		t.Errorf("counted event buckets %v; want only generation 2's, 5..12", counted)
	}
	if st.rows[5] != s.t.maxRows+1 || st.rows[0] != 20 {
		t.Errorf("rows counted %v; want generation 2's at the budget plus one, event bucket 0 as sent", st.rows)
	}
}

// bucketStore is a Store in which every bucket has one routing record for the entity hot,
// starting a minute before the bucket ends; it counts the loads.
type bucketStore struct {
	Store
	loads *int
}

func (b bucketStore) Bucket(_ context.Context, _, table string, start time.Time) ([]routing.Record, error) {
	*b.loads++
	return []routing.Record{{Table: table, BucketStart: start, Entity: []byte(hotEntity), Generation: 1,
		From: start.Add(59 * time.Minute), FirstEventBucket: 1, EventBuckets: 2}}, nil
}

func (bucketStore) Adoptions(context.Context, string, string, time.Time) ([]routing.Adoption, error) {
	return nil, nil
}

const hotEntity = "\x00\x03hot\x00"

// TestSplitRoutesForgetTheBucketsAWorkerMovedPast: a worker writing hour after hour of a split topic
// leaves the mapper's routes holding only the buckets it still writes (the current one and the one
// before), not every bucket that ever split; a late row of a forgotten bucket loads its records again
// and is routed by them.
func TestSplitRoutesForgetTheBucketsAWorkerMovedPast(t *testing.T) {
	s := projector(t, 64)
	loads := 0
	routes := &routing.Routes{}
	s.t.routes, s.t.store, s.t.ids, s.t.settle, s.t.refresh = routes, bucketStore{loads: &loads}, 1, time.Hour, time.Hour
	s.t.refreshed = map[int64]time.Time{}
	w := NewState(s.t, testWorker{}, 0, slog.New(slog.DiscardHandler))
	key := hotEntity + "\x00\x0d2024-03-01-00\x00" + "\x00\x04\x00\x00\x00\x00\x00"
	row := func(hour int) batcher.Row {
		return batcher.Row{Key: key, EventMicros: hour0.Add(time.Duration(hour)*time.Hour + time.Minute).UnixMicro(), Offset: int64(hour)}
	}
	for h := range 100 {
		r := row(h)
		if _, err := w.Route(r, func() (batcher.Row, error) { return r, nil }); err != nil {
			t.Fatal(err)
		}
	}
	for h := range 98 {
		if routes.HasBucket(idx0 + int64(h)) {
			t.Fatalf("hour %d still held after the worker moved two buckets past it", h)
		}
	}
	if !routes.HasBucket(idx0+98) || !routes.HasBucket(idx0+99) {
		t.Fatal("the buckets the worker still writes were forgotten")
	}
	before := loads
	late := row(5)
	if _, err := w.Route(late, func() (batcher.Row, error) { return late, nil }); err != nil {
		t.Fatal(err)
	}
	if loads != before+1 || routes.Lookup(idx0+5, hotEntity) == nil {
		t.Errorf("a late row of a forgotten bucket: %d loads, generations %v; want its records loaded again", loads-before, routes.Lookup(idx0+5, hotEntity))
	}
	w.Release()
	if routes.HasBucket(idx0 + 99) {
		t.Error("the routes still hold a bucket after the assignment ended")
	}
}

// heldStore is a Store whose buckets hold the records recs points at, and no adoptions beyond
// those the records carry.
type heldStore struct {
	Store
	recs *[]routing.Record
}

func (h heldStore) Bucket(context.Context, string, string, time.Time) ([]routing.Record, error) {
	return *h.recs, nil
}

func (heldStore) Adoptions(context.Context, string, string, time.Time) ([]routing.Adoption, error) {
	return nil, nil
}

// TestSplitWorkerFrozenPastItsSessionFollowsTheNewOwnersSplit: a worker that resumes after a freeze
// longer than its session (its records last read that long ago) reads them again before it routes
// its next row, and when they show that its own Kafka partition adopted a generation under another
// owner, it maps the row again, so the row goes where the new owner sends it, not to the layout the
// worker knew before the freeze.
func TestSplitWorkerFrozenPastItsSessionFollowsTheNewOwnersSplit(t *testing.T) {
	s := projector(t, 64)
	var recs []routing.Record
	routes := &routing.Routes{}
	routes.FollowAdoptions()
	s.t.routes, s.t.store, s.t.ids, s.t.settle = routes, heldStore{recs: &recs}, 1, time.Hour
	s.t.refresh, s.t.session, s.t.label = time.Second, 10*time.Second, "in"
	s.t.refreshed = map[int64]time.Time{}
	w := NewState(s.t, testWorker{}, 0, slog.New(slog.DiscardHandler))
	key := hotEntity + "\x00\x0d2024-03-01-00\x00" + "\x00\x04\x00\x00\x00\x00\x00"
	row := func(offset int64) batcher.Row {
		return batcher.Row{Target: &batcher.Target{Topic: "in"}, Key: key, EventMicros: hour0.Add(time.Duration(offset) * time.Second).UnixMicro(),
			Partition: 0, Offset: offset}
	}
	remaps := 0
	route := func(r batcher.Row) {
		t.Helper()
		if _, err := w.Route(r, func() (batcher.Row, error) { remaps++; return r, nil }); err != nil {
			t.Fatal(err)
		}
	}
	route(row(1)) // loads the bucket: no split yet
	// Frozen for a minute; meanwhile the partition's next owner split the entity from offset 5 on.
	recs = []routing.Record{{Table: "t", BucketStart: hour0, Entity: []byte(hotEntity), Generation: 1, From: hour0,
		FirstEventBucket: 1, EventBuckets: 4, Topic: "in", Partition: 0, FromOffset: 5}}
	s.t.refreshed[idx0] = time.Now().Add(-time.Minute)
	route(row(10))
	if remaps != 1 {
		t.Errorf("the row after the freeze was mapped again %d times; want once, after the records were read", remaps)
	}
	if g := routes.Route(idx0, hotEntity, row(10).EventTime(), 0, 10); g == nil || g.N != 1 {
		t.Errorf("the row at offset 10 routes by %v; want generation 1, which its partition adopted from offset 5", g)
	}
}

// TestSplitProjectsTheWholeEntityFromWhatCassandraHolds: a worker that writes a third of an entity
// (the rest comes through two other Kafka partitions) sees 100 rows in its first 10 minutes, 500 by
// the hour's end: within the budget of 1,000 by its own view. Cassandra holds 300 in the partition:
// sampled in, the entity is on course for 1,800, so it splits, into event buckets for the whole rate.
func TestSplitProjectsTheWholeEntityFromWhatCassandraHolds(t *testing.T) {
	s := projector(t, 64)
	s.t.store = countStore{counts: []int64{300}}
	s.w = testWorker{}
	st := stat(1, 100, 10*time.Minute)
	if next, _ := s.project(st, idx0, 0, 1); next != 0 {
		t.Fatalf("own view: split to %d; want none (500 rows projected)", next)
	}
	if err := s.sample(batcher.Row{}, st, idx0, nil, 0, 1); err != nil {
		t.Fatal(err)
	}
	if next, _ := s.project(st, idx0, 0, 1); next != 3 {
		t.Errorf("with Cassandra's 300 rows in 10 minutes: split to %d; want 3 (1,500 to come, at half the budget each)", next)
	}
}

// testWorker is a partition worker whose calls to the routing table succeed at once, that never
// stops, and whose waits are over at once (the tests' settle is never waited for).
type testWorker struct{}

func (testWorker) Retry(_ int64, _ string, op func(ctx context.Context) error) error {
	return op(context.Background())
}

func (testWorker) Sleep(time.Duration) error { return nil }

func (testWorker) HighWatermark() (int64, bool) { return 0, true }

func (testWorker) WorkContext() context.Context { return context.Background() }

// carryStore is a Store of the routing records by bucket start, which Propose and Adopt add to as
// the transactions would (the first record of a generation holds), and whose entity partitions'
// newest row is at newest.
type carryStore struct {
	Store
	recs      map[time.Time][]routing.Record
	adoptions *[]routing.Adoption
	newest    time.Time
}

func (c carryStore) Bucket(_ context.Context, _, _ string, start time.Time) ([]routing.Record, error) {
	return slices.Clone(c.recs[start]), nil
}

func (carryStore) Adoptions(context.Context, string, string, time.Time) ([]routing.Adoption, error) {
	return nil, nil
}

func (c carryStore) Newest(context.Context, string, schema.Table, batcher.Row, int) (time.Time, error) {
	return c.newest, nil
}

func (c carryStore) Propose(_ context.Context, _ string, rec routing.Record) (routing.Record, bool, error) {
	for _, r := range c.recs[rec.BucketStart] {
		if r.Generation == rec.Generation && string(r.Entity) == string(rec.Entity) {
			return r, false, nil
		}
	}
	c.recs[rec.BucketStart] = append(c.recs[rec.BucketStart], rec)
	return rec, true, nil
}

func (c carryStore) Adopt(_ context.Context, _ string, a routing.Adoption) (routing.Adoption, bool, error) {
	*c.adoptions = append(*c.adoptions, a)
	return a, true, nil
}

// carryWorker is a State over a carryStore whose bucket idx0 holds generation 1 of the hot entity
// (event buckets 1..4 from 10 minutes in), and which has seen the entity write 4,800 rows in that
// hour; rows are keyed like the mapper's.
func carryWorker(t *testing.T, newest time.Time, hwm int64) (*State, carryStore, *routing.Routes) {
	s := projector(t, 64)
	routes := &routing.Routes{}
	routes.FollowAdoptions()
	st := carryStore{recs: map[time.Time][]routing.Record{hour0: {{Table: "t", BucketStart: hour0, Entity: []byte(hotEntity),
		Generation: 1, From: hour0.Add(10 * time.Minute), FirstEventBucket: 1, EventBuckets: 4, Topic: "in", Partition: 0, FromOffset: 1}}},
		adoptions: new([]routing.Adoption), newest: newest}
	s.t.routes, s.t.store, s.t.ids, s.t.settle, s.t.refresh, s.t.session, s.t.label = routes, st, 1, time.Hour, time.Hour, time.Hour, "in"
	s.t.refreshed = map[int64]time.Time{}
	s.t.splits, s.t.overBudget = prometheus.NewCounter(prometheus.CounterOpts{Name: "s"}), prometheus.NewGauge(prometheus.GaugeOpts{Name: "o"})
	w := NewState(s.t, hwmWorker(hwm), 0, slog.New(slog.DiscardHandler))
	w.tally[tallyKey{idx0, hotEntity}] = &entityStat{sentRows: 4800, sentBytes: 4800 * 100, first: hour0, last: hour0.Add(time.Hour - time.Millisecond)}
	return w, st, routes
}

func hotRow(at time.Time, offset int64) batcher.Row {
	key := hotEntity + "\x00\x0d2024-03-01-01\x00" + "\x00\x04\x00\x00\x00\x00\x00"
	return batcher.Row{Target: &batcher.Target{Topic: "in", Table: "t"}, Key: key, EventMicros: at.UnixMicro(), Partition: 0, Offset: offset, Size: 100}
}

// TestSplitCarriesIntoTheNextBucket: an entity that split in an hour starts the next one split: at
// the worker's first row of the new hour, before it is routed, generation 1 of the new hour is
// written from the hour's start, sized for the whole hour at the rate of the hour before (4,800
// rows against a budget of 1,000 at half: 10 event buckets after generation 0's), with the
// worker's own partition adopting it from that row, which is mapped again and routed by it. When
// generation 0 of the new hour already holds a row, nothing is carried (a decision follows as
// usual), so no row routed before moves.
func TestSplitCarriesIntoTheNextBucket(t *testing.T) {
	next := hour0.Add(time.Hour)
	w, st, routes := carryWorker(t, time.Time{}, 0)
	row := hotRow(next.Add(time.Second), 50)
	remaps := 0
	if _, err := w.Route(row, func() (batcher.Row, error) { remaps++; return row, nil }); err != nil {
		t.Fatal(err)
	}
	recs := st.recs[next]
	if len(recs) != 1 {
		t.Fatalf("routing records of the next hour: %+v; want the carried generation", recs)
	}
	r := recs[0]
	if r.Generation != 1 || !r.From.Equal(next) || r.FirstEventBucket != 1 || r.EventBuckets != 10 || r.Partition != 0 || r.FromOffset != 50 {
		t.Errorf("carried record %+v; want generation 1 from the hour's start, event buckets 1..10, adopted from offset 50", r)
	}
	if remaps == 0 {
		t.Error("the row was not mapped again after the carry")
	}
	if g := routes.Route(idx0+1, hotEntity, row.EventTime(), 0, 50); g == nil || g.N != 1 {
		t.Errorf("the row routes by %v; want the carried generation", g)
	}

	w, st, _ = carryWorker(t, next.Add(time.Millisecond), 0)
	if _, err := w.Route(row, func() (batcher.Row, error) { return row, nil }); err != nil {
		t.Fatal(err)
	}
	if len(st.recs[next]) != 0 {
		t.Errorf("generation 0 of the next hour holds a row, yet a carry was written: %+v", st.recs[next])
	}
}

// TestSplitAdoptsAGenerationFoundAtLoadFromTheRowWhenTheOlderLayoutHoldsNothingOfIt: a new owner
// that finds a generation recorded, not adopted by its partition, follows it from its high
// watermark at the load (an earlier owner may have routed the rows below it without it) unless the
// older partitions hold no row at or after the generation's start: then from its first row of it.
func TestSplitAdoptsAGenerationFoundAtLoadFromTheRowWhenTheOlderLayoutHoldsNothingOfIt(t *testing.T) {
	from := hour0.Add(10 * time.Minute)
	for _, c := range []struct {
		name   string
		newest time.Time
		want   int64
	}{
		{"older layout ends before the generation", from.Add(-time.Second), 20},
		{"older layout holds a row of it", from.Add(time.Second), 1000},
	} {
		w, st, _ := carryWorker(t, c.newest, 1000)
		st.recs[hour0][0].Partition = 3 // decided through another Kafka partition
		delete(w.tally, tallyKey{idx0, hotEntity})
		row := hotRow(from.Add(time.Minute), 20)
		row.Key = hotEntity + "\x00\x0d2024-03-01-00\x00" + "\x00\x04\x00\x00\x00\x00\x00"
		if _, err := w.Route(row, func() (batcher.Row, error) { return row, nil }); err != nil {
			t.Fatal(err)
		}
		if a := *st.adoptions; len(a) != 1 || a[0].From != c.want {
			t.Errorf("%s: adoptions %+v; want one from offset %d", c.name, a, c.want)
		}
	}
}

// hwmWorker is a testWorker whose partition's high watermark is the given offset.
type hwmWorker int64

func (hwmWorker) Retry(_ int64, _ string, op func(ctx context.Context) error) error {
	return op(context.Background())
}

func (hwmWorker) Sleep(time.Duration) error { return nil }

func (h hwmWorker) HighWatermark() (int64, bool) { return int64(h), true }

func (hwmWorker) WorkContext() context.Context { return context.Background() }

// TestSplitProjectsForEveryKafkaPartitionKnownToWriteTheEntity: a worker that sees a third of an
// entity (three Kafka partitions adopted its generations) projects the whole of it, not its share:
// 100 rows in its first 10 minutes stand for 300, 1,500 more to come, 3 event buckets at half the
// budget, where its share alone would have fitted.
func TestSplitProjectsForEveryKafkaPartitionKnownToWriteTheEntity(t *testing.T) {
	s := projector(t, 64)
	st := stat(1, 100, 10*time.Minute)
	if next, _ := s.project(st, idx0, 0, 1); next != 0 {
		t.Fatalf("its share alone: split to %d; want none (500 rows projected)", next)
	}
	st.sources = 3
	if next, _ := s.project(st, idx0, 0, 1); next != 3 {
		t.Errorf("three sources: split to %d; want 3", next)
	}
	routes := &routing.Routes{}
	routes.Set(idx0-1, hotEntity, []routing.Generation{{N: 1, From: hour0.Add(-time.Hour), First: 1, Buckets: 2, Adopted: map[int32]int64{0: 1, 4: 1}}})
	routes.Set(idx0, hotEntity, []routing.Generation{{N: 1, From: hour0, First: 1, Buckets: 2, Adopted: map[int32]int64{4: 1, 5: 1}}})
	s.t.routes, s.partition = routes, 2
	if n := s.sourcesOf(idx0, hotEntity); n != 4 {
		t.Errorf("sources %d; want 4 (this worker's 2, and 0, 4, 5 that adopted generations of the bucket or the one before)", n)
	}
}
