package mapper

import (
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Generation is one split decision for an entity's time bucket: from From (an instant, compared in
// UTC) on, the entity's rows of that bucket go to the Buckets event buckets First..First+Buckets-1,
// each row to First + its event-bucket hash (bucketer.IDHash) mod Buckets. Every generation has
// event buckets of its own (First is past every earlier generation's), so a partition stops
// growing once a later generation takes over. Generation 0 is implicit: the topic's
// bucket.event_buckets, 0..N-1, from the bucket's start. Generations of one entity and bucket have
// strictly increasing N, From and First.
type Generation struct {
	N       int
	From    time.Time
	First   int
	Buckets int
}

// End is one past the last event bucket of the generation.
func (g Generation) End() int { return g.First + g.Buckets }

// Routes holds the split decisions of one topic's open time buckets, as the mapper reads them on
// every row. Readers take an immutable snapshot through one atomic load, so a topic with no split
// pays one nil check per row and one with splits in other buckets one map lookup by bucket
// number; writers (the pipeline, after a routing record is in Cassandra) copy and swap.
type Routes struct {
	mu  sync.Mutex // serializes writers
	cur atomic.Pointer[routeSnapshot]
}

// routeSnapshot: bucket number → entity → generations in increasing N. The entity is the id
// columns' part of the partition's routing key (EntityKey). Never modified once published.
type routeSnapshot map[int64]map[string][]Generation

// Set records the generations of an entity's time bucket (the whole list, as the routing table
// holds it). A list no longer than the one already held changes nothing: decisions are never
// recomputed, only followed by later ones.
func (r *Routes) Set(bucket int64, entity string, gens []Generation) {
	if len(gens) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.cur.Load()
	if old != nil && len((*old)[bucket][entity]) >= len(gens) {
		return
	}
	next := routeSnapshot{}
	if old != nil {
		next = maps.Clone(*old)
	}
	entities := maps.Clone(next[bucket])
	if entities == nil {
		entities = map[string][]Generation{}
	}
	entities[entity] = slices.Clone(gens)
	next[bucket] = entities
	r.cur.Store(&next)
}

// Forget drops the decisions of every bucket before bucket (closed buckets take no more rows,
// except late ones, for which the routing table is read again).
func (r *Routes) Forget(before int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.cur.Load()
	if old == nil {
		return
	}
	next := routeSnapshot{}
	for b, e := range *old {
		if b >= before {
			next[b] = e
		}
	}
	if len(next) == 0 {
		r.cur.Store(nil)
		return
	}
	r.cur.Store(&next)
}

// Lookup returns the generations recorded for an entity's time bucket (nil when it never split).
func (r *Routes) Lookup(bucket int64, entity string) []Generation {
	snap := r.cur.Load()
	if snap == nil {
		return nil
	}
	return (*snap)[bucket][entity]
}

// HasBucket reports whether any entity of the time bucket split: the cheap test before the
// entity's key is built.
func (r *Routes) HasBucket(bucket int64) bool {
	snap := r.cur.Load()
	if snap == nil {
		return false
	}
	_, ok := (*snap)[bucket]
	return ok
}

// Applying returns the generation that routes a row at event time t: the one with the largest
// From at or before t, or nil for generation 0.
func Applying(gens []Generation, t time.Time) *Generation {
	for i := len(gens) - 1; i >= 0; i-- {
		if !gens[i].From.After(t) {
			return &gens[i]
		}
	}
	return nil
}

// Routes returns the split routing of topics.<name>, which the pipeline fills and the mapper
// follows; nil for an unknown topic.
func (m *Mapper) Routes(name string) *Routes {
	if p := m.byName[name]; p != nil {
		return &p.routes
	}
	return nil
}
