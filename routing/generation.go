package routing

import "time"

// Generation is one split decision for an entity's time bucket: from From (an instant, compared in
// UTC) on, the entity's rows of that bucket go to the Buckets event buckets First..First+Buckets-1,
// each row to First + its event-bucket hash (bucketer.IDHash) mod Buckets. Every generation has
// event buckets of its own (First is past every earlier generation's), so a partition stops
// growing once a later generation takes over. Generation 0 is implicit: the topic's
// bucket.event_buckets, 0..N-1, from the bucket's start. Generations of one entity and bucket have
// strictly increasing N, From and First.
//
// Adopted lists the Kafka partitions of the topic that adopted the generation, each with the
// offset from which its rows follow it (docs/DESIGN.md, "Adoption by source offset"). It is never
// modified once the generation is published in a Routes snapshot; Routes.Adopt copies it.
type Generation struct {
	N       int
	From    time.Time
	First   int
	Buckets int
	Adopted map[int32]int64
}

// End is one past the last event bucket of the generation.
func (g Generation) End() int { return g.First + g.Buckets }

// Applying returns the generation whose time range holds event time t: the one with the largest
// From at or before t, or nil for generation 0. It ignores adoptions (Routes.Route does not).
func Applying(gens []Generation, t time.Time) *Generation {
	for i := len(gens) - 1; i >= 0; i-- {
		if !gens[i].From.After(t) {
			return &gens[i]
		}
	}
	return nil
}
