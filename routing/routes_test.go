package routing

import (
	"testing"
	"time"
)

// TestRoutesNeverShrink: a list of generations no longer than the one held is ignored (a stale
// load cannot undo a decision), and Applying picks the generation whose time range holds an instant.
func TestRoutesNeverShrink(t *testing.T) {
	var r Routes
	g1 := Generation{N: 1, From: time.Unix(100, 0), Buckets: 4}
	g2 := Generation{N: 2, From: time.Unix(200, 0), Buckets: 16}
	r.Set(7, "e", []Generation{g1, g2})
	r.Set(7, "e", []Generation{g1})
	if got := r.Lookup(7, "e"); len(got) != 2 {
		t.Fatalf("after a shorter Set: %v; want both generations", got)
	}
	if g := Applying([]Generation{g1, g2}, time.Unix(150, 0)); g == nil || g.N != 1 {
		t.Errorf("Applying at 150: %v; want generation 1", g)
	}
	if g := Applying([]Generation{g1, g2}, time.Unix(99, 0)); g != nil {
		t.Errorf("Applying before the first split: %v; want none (generation 0)", g)
	}
}

// TestRouteFollowsAGenerationOnlyFromItsSourcesAdoption: with FollowAdoptions, a generation routes
// a row only when the row's Kafka partition adopted it at or before the row's offset; otherwise the
// highest earlier generation it adopted does, or generation 0. Adoptions merge into what is held and
// never change once held.
func TestRouteFollowsAGenerationOnlyFromItsSourcesAdoption(t *testing.T) {
	var r Routes
	r.FollowAdoptions()
	g1 := Generation{N: 1, From: time.Unix(100, 0), First: 1, Buckets: 4, Adopted: map[int32]int64{0: 10}}
	g2 := Generation{N: 2, From: time.Unix(200, 0), First: 5, Buckets: 8}
	r.Set(7, "e", []Generation{g1, g2})
	at := time.Unix(250, 0)
	for _, c := range []struct {
		part   int32
		offset int64
		want   int
	}{{0, 9, 0}, {0, 10, 1}, {1, 50, 0}} {
		got := 0
		if g := r.Route(7, "e", at, c.part, c.offset); g != nil {
			got = g.N
		}
		if got != c.want {
			t.Errorf("partition %d offset %d: generation %d; want %d", c.part, c.offset, got, c.want)
		}
	}
	r.Adopt(7, "e", 2, 0, 20)
	r.Adopt(7, "e", 2, 0, 5) // a second adoption of the same partition changes nothing
	r.Set(7, "e", []Generation{g1, {N: 2, From: g2.From, First: 5, Buckets: 8, Adopted: map[int32]int64{1: 30}}})
	for _, c := range []struct {
		part   int32
		offset int64
		want   int
	}{{0, 19, 1}, {0, 20, 2}, {1, 29, 0}, {1, 30, 2}} {
		got := 0
		if g := r.Route(7, "e", at, c.part, c.offset); g != nil {
			got = g.N
		}
		if got != c.want {
			t.Errorf("after the adoptions, partition %d offset %d: generation %d; want %d", c.part, c.offset, got, c.want)
		}
	}
	if g := r.Route(7, "e", time.Unix(150, 0), 0, 100); g == nil || g.N != 1 {
		t.Errorf("a row before generation 2's instant: %v; want generation 1", g)
	}
}

// TestRoutesForgetABucketOnceEveryHolderReleasedIt: the routes of a long-running process hold only
// the buckets its workers route rows of. A bucket stays while any holder holds it, goes with the last
// release, and a holder that loads it again (a late row) gets it back.
func TestRoutesForgetABucketOnceEveryHolderReleasedIt(t *testing.T) {
	var r Routes
	g := []Generation{{N: 1, From: time.Unix(100, 0), First: 1, Buckets: 4}}
	for b := range int64(1000) {
		r.Hold(b)
		r.Set(b, "e", g)
		if b > 0 {
			r.Release(b - 1)
		}
	}
	for b := range int64(999) {
		if r.HasBucket(b) {
			t.Fatalf("bucket %d is still held after its only holder released it", b)
		}
	}
	if !r.HasBucket(999) {
		t.Fatal("bucket 999, still held, was forgotten")
	}
	r.Hold(999) // a second worker
	r.Release(999)
	if r.Lookup(999, "e") == nil {
		t.Fatal("bucket 999 was forgotten while a holder still held it")
	}
	r.Release(999)
	if r.HasBucket(999) {
		t.Fatal("bucket 999 was kept after its last holder released it")
	}
	r.Hold(5) // a late row loads its bucket again
	r.Set(5, "e", g)
	if r.Lookup(5, "e") == nil {
		t.Error("a bucket loaded again after it was forgotten is not routed")
	}
}
