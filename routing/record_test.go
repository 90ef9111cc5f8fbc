package routing

import (
	"testing"
	"time"
)

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

// TestAdoptFromStartsAtTheRowWhenTheOlderLayoutHoldsNothingOfTheGeneration: a partition that finds
// a generation recorded when it loads follows it from its high watermark, unless nothing in the
// older layout is at or after the generation's start: then from the row.
func TestAdoptFromStartsAtTheRowWhenTheOlderLayoutHoldsNothingOfTheGeneration(t *testing.T) {
	from := time.Unix(1000, 0)
	for _, c := range []struct {
		name          string
		offset, floor int64
		newest        time.Time
		want          int64
	}{
		{"older layout empty", 10, 500, time.Time{}, 10},
		{"older layout ends before the generation", 10, 500, from.Add(-time.Millisecond), 10},
		{"a row at the generation's start", 10, 500, from, 500},
		{"a row after it", 10, 500, from.Add(time.Hour), 500},
		{"the row is past the floor", 800, 500, from, 800},
		{"no floor", 10, 0, from, 10},
	} {
		if got := AdoptFrom(c.offset, c.floor, c.newest, from); got != c.want {
			t.Errorf("%s: AdoptFrom = %d; want %d", c.name, got, c.want)
		}
	}
}
