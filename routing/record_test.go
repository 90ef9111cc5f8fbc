package routing

import "testing"

// TestAdoptionIndexPrefersTheDecidersAndKeepsToItsTopic: the adoption a routing record carries for
// its decider holds over a row of the adoption table for the same generation and partition, and
// another topic's adoptions of the same table are left out.
func TestAdoptionIndexPrefersTheDecidersAndKeepsToItsTopic(t *testing.T) {
	rec := Record{Entity: []byte("e"), Generation: 1, Topic: "t", Partition: 0, FromOffset: 10}
	adoptions := []Adoption{
		{Entity: []byte("e"), Generation: 1, Topic: "t", Partition: 0, From: 99},
		{Entity: []byte("e"), Generation: 1, Topic: "t", Partition: 1, From: 20},
		{Entity: []byte("e"), Generation: 1, Topic: "other", Partition: 2, From: 30},
	}
	got := AdoptionIndex([]Record{rec}, adoptions, "t")["e"][1]
	if len(got) != 2 || got[0] != 10 || got[1] != 20 {
		t.Errorf("adoptions of generation 1: %v; want partition 0 from 10 (the decider's) and 1 from 20, none of topic other", got)
	}
}
