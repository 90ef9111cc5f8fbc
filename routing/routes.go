package routing

import (
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Routes holds the split decisions of the time buckets of one topic that the process routes rows of,
// as the mapper reads them on every row. Readers take an immutable snapshot through one atomic load,
// so a topic with no split pays one nil check per row and one with splits in other buckets one map
// lookup by bucket number; writers (the pipeline, after a routing record is in Cassandra) copy the
// bucket's entities and swap.
//
// What it holds is bounded by what is being written: each worker that loads a bucket's records holds
// the bucket (Hold) until it moves past it or its assignment ends (Release), and a bucket nobody
// holds any more is forgotten. A late row of a forgotten bucket loads its records again first, as
// any load does.
//
// With FollowAdoptions (the pipeline and `sink explain` turn it on), a generation routes a row only
// once the row's Kafka partition has adopted it at or before the row's offset (Route). Without it a
// generation routes every row from its From on: the view of one who only reads the routing records.
type Routes struct {
	mu      sync.Mutex // serializes writers
	cur     atomic.Pointer[routeSnapshot]
	adopted atomic.Bool // FollowAdoptions
	holds   map[int64]int
}

// FollowAdoptions makes Route require the row's source to have adopted a generation.
func (r *Routes) FollowAdoptions() { r.adopted.Store(true) }

// routeSnapshot: bucket number → entity → generations in increasing N. The entity is the id
// columns' part of the partition's routing key (KeyParts). Never modified once published.
type routeSnapshot map[int64]map[string][]Generation

// Hold marks bucket as being loaded and routed by one more holder: its generations are kept until
// every holder released it. A holder holds a bucket before it loads the bucket's records, so that a
// release by another holder cannot drop what it is loading.
func (r *Routes) Hold(bucket int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.holds == nil {
		r.holds = map[int64]int{}
	}
	r.holds[bucket]++
}

// Release ends one Hold of bucket; the last one forgets the bucket's generations.
func (r *Routes) Release(bucket int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, ok := r.holds[bucket]
	if !ok {
		return
	}
	if n > 1 {
		r.holds[bucket] = n - 1
		return
	}
	delete(r.holds, bucket)
	old := r.cur.Load()
	if old == nil {
		return
	}
	if _, ok := (*old)[bucket]; !ok {
		return
	}
	next := maps.Clone(*old)
	delete(next, bucket)
	if len(next) == 0 {
		r.cur.Store(nil)
		return
	}
	r.cur.Store(&next)
}

// Set records the generations of an entity's time bucket (the whole list, as the routing table
// holds it). A list no longer than the one already held adds no generation: decisions are never
// recomputed, only followed by later ones. The adoptions of the given generations are added to
// those already held (an adoption, like a decision, never changes once written).
func (r *Routes) Set(bucket int64, entity string, gens []Generation) {
	if len(gens) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.cur.Load()
	if old != nil {
		held := (*old)[bucket][entity]
		if len(held) > len(gens) {
			gens = append(slices.Clone(gens), held[len(gens):]...)
		}
		merged, changed := mergeAdoptions(held, gens)
		if !changed && len(held) >= len(gens) {
			return
		}
		gens = merged
	}
	r.publish(old, bucket, entity, gens)
}

// mergeAdoptions returns gens with the adoptions of held added (held's win: they were known
// first and never change), and whether the result differs from held.
func mergeAdoptions(held, gens []Generation) ([]Generation, bool) {
	out := slices.Clone(gens)
	changed := len(gens) != len(held)
	for i := range out {
		var have map[int32]int64
		if i < len(held) {
			have = held[i].Adopted
		}
		adopted := maps.Clone(have)
		for part, from := range out[i].Adopted {
			if _, ok := adopted[part]; !ok {
				if adopted == nil {
					adopted = map[int32]int64{}
				}
				adopted[part] = from
				changed = true
			}
		}
		out[i].Adopted = adopted
	}
	return out, changed
}

// Adopt records that Kafka partition part adopted generation n of an entity's time bucket from
// offset from on. It changes nothing when the generation is unknown or the adoption already held.
func (r *Routes) Adopt(bucket int64, entity string, n int, part int32, from int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.cur.Load()
	if old == nil {
		return
	}
	held := (*old)[bucket][entity]
	i := slices.IndexFunc(held, func(g Generation) bool { return g.N == n })
	if i < 0 {
		return
	}
	if _, ok := held[i].Adopted[part]; ok {
		return
	}
	gens := slices.Clone(held)
	gens[i].Adopted = maps.Clone(gens[i].Adopted)
	if gens[i].Adopted == nil {
		gens[i].Adopted = map[int32]int64{}
	}
	gens[i].Adopted[part] = from
	r.publish(old, bucket, entity, gens)
}

// publish stores a snapshot that is old with the entity's generations of bucket replaced by gens:
// the map of buckets and the bucket's map of entities are copied, nothing else. The caller holds
// r.mu.
func (r *Routes) publish(old *routeSnapshot, bucket int64, entity string, gens []Generation) {
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

// Route returns the generation that routes a row of the entity's time bucket with event time t,
// read from Kafka partition part at offset: the highest generation with From at or before t that
// part adopted at or before offset (any generation with From at or before t without
// FollowAdoptions), or nil for generation 0. Both conditions depend only on the row and on what
// the routing table holds, so a replay routes every row as the first pass did.
// entity is only looked up, never kept: callers may pass a view of bytes they reuse.
func (r *Routes) Route(bucket int64, entity string, t time.Time, part int32, offset int64) *Generation {
	gens := r.Lookup(bucket, entity)
	if !r.adopted.Load() {
		return Applying(gens, t)
	}
	for i := len(gens) - 1; i >= 0; i-- {
		if from, ok := gens[i].Adopted[part]; ok && from <= offset && !gens[i].From.After(t) {
			return &gens[i]
		}
	}
	return nil
}
