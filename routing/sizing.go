package routing

import (
	"math"
	"time"
)

// Budget is what one partition of a split table may hold: split.max_rows rows and partition_budget
// bytes. A zero half does not bound.
type Budget struct{ Rows, Bytes int64 }

// Rate is how fast an entity writes one time bucket, per second of event time.
type Rate struct{ Rows, Bytes float64 }

// RateOf is the rate of rows and bytes written over span of event time. A span under a second
// gives the zero rate: a handful of rows in an instant says nothing about the next minute.
func RateOf(rows, bytes int64, span time.Duration) Rate {
	if span < time.Second {
		return Rate{}
	}
	s := span.Seconds()
	return Rate{Rows: float64(rows) / s, Bytes: float64(bytes) / s}
}

// Max is the larger of two estimates of one entity's rate, each half apart. A worker that sees
// the entity through one Kafka partition of several reads a share of its rate; what Cassandra
// holds, and what the bucket before wrote, read the whole of it. Nothing guarantees that the
// generation being sized is followed by another (below), so the larger estimate is the one that
// holds.
func (r Rate) Max(o Rate) Rate {
	return Rate{Rows: math.Max(r.Rows, o.Rows), Bytes: math.Max(r.Bytes, o.Bytes)}
}

// Horizon is the span of event time a generation that starts at from must hold the entity's rows
// for: the rest of its time bucket (which ends at end). A later decision could split again, but
// none is guaranteed: a process that was just restarted or assigned makes none before its lead
// (the settle time plus the lease's confirmation) has passed, and under churn it may not live that
// long. A generation decided late in a bucket therefore still holds everything until the bucket
// ends at the rate it was sized for.
func Horizon(from, end time.Time) time.Duration {
	return max(end.Sub(from), 0)
}

// Need is how many empty partitions keep each at half the budget when together they take rate
// for span: at least 1. Half leaves room for a rate that rises before anyone can decide again.
func Need(r Rate, span time.Duration, b Budget) int {
	s := span.Seconds()
	n := 1.0
	if b.Rows > 0 {
		n = math.Max(n, math.Ceil(2*r.Rows*s/float64(b.Rows)))
	}
	if b.Bytes > 0 {
		n = math.Max(n, math.Ceil(2*r.Bytes*s/float64(b.Bytes)))
	}
	if n > math.MaxInt32 {
		return math.MaxInt32
	}
	return int(n)
}

// Size is the event bucket count of a generation that starts at from, in a bucket that ends at
// end, for an entity writing at rate: Need over the Horizon, at least 2 (a split that adds one
// partition is not worth a routing record), within room (split.max_event_buckets less the event
// buckets earlier generations use). It returns 0 when room is below 2, and reports whether the
// generation's partitions pass the budget by the bucket's end even so (capped by room, or no
// room at all): what sink_partitions_over_budget then shows.
func Size(r Rate, from, end time.Time, b Budget, room int) (k int, over bool) {
	need := Need(r, Horizon(from, end), b)
	if room < 2 {
		return 0, need > 0 && r != (Rate{})
	}
	k = min(max(2, need), room)
	return k, !Holds(r, Horizon(from, end), b, k)
}

// Holds reports whether k empty partitions take rate for span without passing the budget (the
// full budget, not the half Need aims at).
func Holds(r Rate, span time.Duration, b Budget, k int) bool {
	s := span.Seconds() / float64(k)
	return (b.Rows <= 0 || r.Rows*s <= float64(b.Rows)) && (b.Bytes <= 0 || r.Bytes*s <= float64(b.Bytes))
}

// Carry is the first generation of the time bucket [start, end) of an entity that split in the
// bucket before, written at rate there: from the bucket's start on, the event buckets after
// generation 0's (base of them), as many as Size gives for the whole bucket within maxBuckets in
// all. It reports false when generation 0 holds that rate at half the budget (no carry is due) or
// maxBuckets leaves no room. A hot entity is hot in the next bucket too; carried, its rows never
// wait in generation 0 for a decision that under churn may come late or not at all.
//
// The routing record of a carried generation is generation 1 of the new bucket, written like any
// other (IF NOT EXISTS, the decider's adoption in the record) before any row of the entity's new
// bucket is routed by its decider; its From is the bucket's start, so every row of the decider's
// source from its adoption on follows it.
func Carry(r Rate, start, end time.Time, b Budget, base, maxBuckets int) (Generation, bool) {
	if Need(r, end.Sub(start), b) <= base {
		return Generation{}, false
	}
	k, _ := Size(r, start, end, b, maxBuckets-base)
	if k == 0 {
		return Generation{}, false
	}
	return Generation{N: 1, From: start, First: base, Buckets: k}, true
}
