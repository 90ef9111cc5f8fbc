package routing

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// The numbers of the bound under churn that docs/DESIGN.md states ("The bound under churn").
const (
	docRate    = 1000.0                  // the entity's rows per second of event time
	docSpan    = time.Minute             // the time bucket
	docMaxRows = 2000                    // split.max_rows
	docBase    = 1                       // bucket.event_buckets
	docMax     = 64                      // split.max_event_buckets
	docLead    = 7500 * time.Millisecond // cassandra.timeout 5 s plus the lease's confirmation, 2.5 s
	docWarm    = time.Second             // the event time a worker routes before it projects
)

// firstBucketBound is the docs' bound on generation 0 of the first bucket an entity is hot in:
// one second of its rows per process life until a life outlasts the lead and decides, n lives
// short of it before that one, and the second up to the decision's from (a whole second).
func firstBucketBound(n int) float64 {
	return (float64(n+1)*docWarm.Seconds() + 1) * docRate / docBase
}

// TestDocsChurnBoundNumbers checks the figures the docs give for their example.
func TestDocsChurnBoundNumbers(t *testing.T) {
	b := Budget{Rows: docMaxRows}
	g, ok := Carry(Rate{Rows: docRate}, t0, t0.Add(docSpan), b, docBase, docMax)
	if !ok || g.Buckets != 60 {
		t.Fatalf("carried generation: %+v, %v; the docs say 60 event buckets", g, ok)
	}
	if per := docRate * docSpan.Seconds() / float64(g.Buckets); per != 1000 {
		t.Errorf("carried rows per partition %v; the docs say 1,000", per)
	}
	if got := firstBucketBound(0); got != 2000 {
		t.Errorf("first bucket, no short life: %v; the docs say 2,000", got)
	}
	if got := firstBucketBound(1); got != 3000 {
		t.Errorf("first bucket, one short life: %v; the docs say 3,000", got)
	}
	// Lives of 3 to 15 s at random: a life is too short to decide (under lead + warm, 8.5 s)
	// with probability 5.5/12, and n short lives in a row open the first bucket with that to the
	// n-th power: the docs round them.
	short := (docLead + docWarm - 3*time.Second).Seconds() / 12
	if math.Abs(short-0.458) > 0.001 {
		t.Errorf("short life probability %.3f; the docs say 46%%", short)
	}
	if p := short * short; math.Abs(p-0.21) > 0.005 {
		t.Errorf("two short lives %.3f; the docs say 21%%", p)
	}
}

// TestDocsChurnBoundHoldsInTheModel plays the rules the docs state on one entity at the docs'
// numbers, with a process killed every 3 to 15 s for an hour of event time: every bucket after the
// first starts carried and holds at most half the budget per partition, and generation 0 of the
// first stays within the bound for the number of short lives that opened it. The model routes rows
// in event time as they come (a worker live on its partition); a decision that falls due within the
// lead of a life holds the rows until the lead has passed, as the pipeline does, so a life that
// ends first adds only the rows it routed before the decision fell due.
func TestDocsChurnBoundHoldsInTheModel(t *testing.T) {
	for seed := range uint64(20) {
		m := churnModel{rng: rand.New(rand.NewPCG(seed, 7)), b: Budget{Rows: docMaxRows}}
		m.run(30)
		if m.decidedAt < 0 {
			t.Fatalf("seed %d: no decision in the first bucket", seed)
		}
		for bucket, parts := range m.rows {
			for eb, n := range parts {
				limit := float64(docMaxRows) / 2
				if bucket == 0 && eb < docBase {
					limit = firstBucketBound(m.short)
				}
				if n > limit+1e-6 {
					t.Errorf("seed %d: bucket %d event bucket %d holds %.0f rows; the bound is %.0f (short lives %d)",
						seed, bucket, eb, n, limit, m.short)
				}
			}
		}
	}
}

type churnModel struct {
	rng       *rand.Rand
	b         Budget
	gens      map[int][]Generation
	rows      map[int][]float64 // bucket → event bucket → rows
	short     int               // lives of the first bucket that ended before its first decision
	decidedAt int               // the life that made the first bucket's first decision (-1: none)
	carried   map[int]bool      // buckets whose carry was settled
}

func (m *churnModel) run(buckets int) {
	const dt = 50 * time.Millisecond
	m.gens, m.rows, m.carried, m.decidedAt = map[int][]Generation{}, map[int][]float64{}, map[int]bool{}, -1
	c := t0 // the event time of the next row, where every life resumes
	end := t0.Add(time.Duration(buckets) * docSpan)
	for life := 0; c.Before(end); life++ {
		lifetime := time.Duration(3000+m.rng.IntN(12001)) * time.Millisecond
		windowFrom := c // the life's own rate window
		decided := false
		for age := time.Duration(0); age < lifetime; age += dt {
			idx := int(c.Sub(t0) / docSpan)
			start, bEnd := t0.Add(time.Duration(idx)*docSpan), t0.Add(time.Duration(idx+1)*docSpan)
			if _, seen := m.rows[idx]; !seen {
				m.rows[idx] = make([]float64, docMax)
			}
			if len(m.gens[idx]) == 0 && !m.carried[idx] {
				if len(m.gens[idx-1]) > 0 {
					// Carried: decided before the bucket's first row, once the lead has passed.
					if age < docLead {
						continue // the rows wait
					}
					g, ok := Carry(Rate{Rows: docRate}, start, bEnd, m.b, docBase, docMax)
					if ok {
						m.gens[idx] = []Generation{g}
					}
				}
				m.carried[idx] = true
			}
			gens := m.gens[idx]
			first, k := 0, docBase
			if g := Applying(gens, c); g != nil {
				first, k = g.First, g.Buckets
			}
			if c.Sub(windowFrom) >= docWarm {
				fill := m.rows[idx][first]
				due := fill+docRate*bEnd.Sub(c).Seconds()/float64(k) > float64(docMaxRows)
				if due && age < docLead {
					continue // held until the lead has passed; the life may end first
				}
				if due {
					from := c.Truncate(time.Second).Add(time.Second)
					next, _ := Size(Rate{Rows: docRate}, from, bEnd, m.b, docMax-(first+k))
					if next > 0 && from.Before(bEnd) {
						m.gens[idx] = append(gens, Generation{N: len(gens) + 1, From: from, First: first + k, Buckets: next})
						windowFrom = c
						if idx == 0 && m.decidedAt < 0 {
							m.decidedAt, decided = life, true
						}
					}
				}
			}
			// One step of rows, spread evenly over the generation's event buckets.
			for eb := first; eb < first+k; eb++ {
				m.rows[idx][eb] += docRate * dt.Seconds() / float64(k)
			}
			c = c.Add(dt)
		}
		if !decided && m.decidedAt < 0 && c.Before(t0.Add(docSpan)) {
			m.short++
		}
	}
}
