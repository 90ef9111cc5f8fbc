package routing

import "time"

// Record is one routing record, a row of the table sink_splits: from From on, the entity's rows of
// the time bucket starting at BucketStart in Table go to event buckets
// FirstEventBucket..FirstEventBucket+EventBuckets-1 (FirstEventBucket + bucketer hash mod
// EventBuckets). Each generation's event buckets follow the previous generation's (the first
// follows the topic's bucket.event_buckets), so no partition takes rows of two generations.
// Generation counts the entity's decisions in that bucket from 1; generation 0 is the topic's
// configured event buckets from the bucket's start and is never stored.
type Record struct {
	Table            string    // the data table, with its slice suffix when sliced
	BucketStart      time.Time // the time bucket's start, UTC
	Entity           []byte    // the id columns as they lead the partition's routing key (KeyParts)
	Generation       int
	From             time.Time // millisecond precision (a CQL timestamp)
	FirstEventBucket int
	EventBuckets     int
	DecidedAt        time.Time // when the decision was made (for people; nothing routes by it)
	DecidedBy        string    // which instance made it (for people)
	// The decider's own adoption, written in the same transaction as the decision: the rows of
	// Kafka partition Partition of Topic follow this generation from offset FromOffset on. Topic is
	// empty when the record carries none (the decider's partition then adopts it like any other).
	Topic      string
	Partition  int32
	FromOffset int64
}

// Adoption returns the decider's adoption the record carries, and whether it carries one.
func (r Record) Adoption() (Adoption, bool) {
	if r.Topic == "" {
		return Adoption{}, false
	}
	return Adoption{Table: r.Table, BucketStart: r.BucketStart, Entity: r.Entity, Generation: r.Generation,
		Topic: r.Topic, Partition: r.Partition, From: r.FromOffset, AdoptedAt: r.DecidedAt, AdoptedBy: r.DecidedBy}, true
}

// Gen is the record as the generation it routes, with the adoptions given (nil: none yet).
func (r Record) Gen(adopted map[int32]int64) Generation {
	return Generation{N: r.Generation, From: r.From, First: r.FirstEventBucket, Buckets: r.EventBuckets, Adopted: adopted}
}

// Adoption records that the rows of one Kafka partition follow a split generation from an offset
// on, a row of the table sink_split_adoptions: rows of that partition at From offset or later whose
// event time is at or after the generation's from_time use it; earlier offsets never do. Written
// once per (generation, Kafka partition), before any row of that partition uses the generation, and
// never changed.
type Adoption struct {
	Table       string
	BucketStart time.Time
	Entity      []byte
	Generation  int
	Topic       string // the Kafka topic
	Partition   int32
	From        int64     // the first offset whose rows may use the generation
	AdoptedAt   time.Time // for people; nothing routes by it
	AdoptedBy   string
}

// Index is the adoptions of one topic's Kafka partitions: entity → generation → partition → the
// offset from which it follows the generation.
type Index map[string]map[int]map[int32]int64

// AdoptionIndex indexes the adoptions of topic's Kafka partitions, those the records carry for
// their deciders and those of the adoption table. Where two name one (generation, partition), the
// decider's, written with its record, holds; the transactions allow no other duplicate.
func AdoptionIndex(recs []Record, adoptions []Adoption, topic string) Index {
	out := Index{}
	add := func(a Adoption) {
		if a.Topic != topic {
			return // another topic writing the same table
		}
		byGen := out[string(a.Entity)]
		if byGen == nil {
			byGen = map[int]map[int32]int64{}
			out[string(a.Entity)] = byGen
		}
		if byGen[a.Generation] == nil {
			byGen[a.Generation] = map[int32]int64{}
		}
		if _, ok := byGen[a.Generation][a.Partition]; !ok {
			byGen[a.Generation][a.Partition] = a.From
		}
	}
	for _, r := range recs {
		if a, ok := r.Adoption(); ok {
			add(a)
		}
	}
	for _, a := range adoptions {
		add(a)
	}
	return out
}

// Generations groups the records of one time bucket, ordered by entity then generation (as a
// bucket's load returns them), into each entity's generations, with their adoptions from index
// (nil: none). It calls f once per entity, in the records' order.
func Generations(recs []Record, index Index, f func(entity string, gens []Generation)) {
	for i := 0; i < len(recs); {
		j := i
		var gens []Generation
		for ; j < len(recs) && string(recs[j].Entity) == string(recs[i].Entity); j++ {
			r := recs[j]
			gens = append(gens, r.Gen(index[string(r.Entity)][r.Generation]))
		}
		f(string(recs[i].Entity), gens)
		i = j
	}
}

// AdoptFrom is the offset from which a Kafka partition adopts a generation that was already
// recorded, and not adopted by it, when its worker loaded the bucket: at the partition's first row
// the generation would route (offset). An earlier owner of the partition, or the first pass that a
// replay repeats, may have routed rows below the partition's high watermark at that load (floor)
// without the generation, so the adoption starts at floor at the earliest, unless the entity's
// older partitions hold no row at or after the generation's from (newest is the newest event time
// they hold, read after the settle time, so an earlier owner's last writes have landed or failed):
// then no earlier owner routed a row of this partition that the generation would route, and the
// partition follows it from this row. That is the common case of a generation that starts a
// bucket (Carry): its older layout, generation 0, stays empty, and a restarted owner behind a
// backlog follows the split at once instead of writing the backlog unsplit.
func AdoptFrom(offset, floor int64, newest, from time.Time) int64 {
	if newest.Before(from) {
		return offset
	}
	return max(offset, floor)
}
