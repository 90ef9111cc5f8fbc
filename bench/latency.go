package bench

import (
	"math"
	"slices"
	"sort"
	"sync"
	"time"
)

// produceLog records, per Kafka partition, when each offset was produced. Offsets of one partition
// arrive in order from one producer, but the promises of different partitions interleave, so each
// partition keeps its own slice and Add takes a lock (the producer calls it from its callback
// goroutine).
type produceLog struct {
	mu    sync.Mutex
	parts map[int32][]stamp
}

type stamp struct {
	offset int64
	at     time.Time
}

func newProduceLog() *produceLog { return &produceLog{parts: make(map[int32][]stamp)} }

func (l *produceLog) Add(partition int32, offset int64, at time.Time) {
	l.mu.Lock()
	l.parts[partition] = append(l.parts[partition], stamp{offset, at})
	l.mu.Unlock()
}

// commitSeen is one observation of a committed offset: at At, partition Partition had committed
// Offset (the next offset to consume, Kafka's convention).
type commitSeen struct {
	Partition int32
	Offset    int64
	At        time.Time
}

// commitLatencies pairs each produced record with the first observation of a committed offset past
// it and returns the delays, one per covered record. Records never covered are left out (the caller
// compares the count with what it produced). Observations need not be sorted.
func commitLatencies(produced map[int32][]stamp, seen []commitSeen) []time.Duration {
	byPart := make(map[int32][]commitSeen)
	for _, c := range seen {
		byPart[c.Partition] = append(byPart[c.Partition], c)
	}
	var out []time.Duration
	for p, stamps := range produced {
		stamps = slices.Clone(stamps)
		slices.SortFunc(stamps, func(a, b stamp) int { return cmpInt64(a.offset, b.offset) })
		obs := byPart[p]
		slices.SortFunc(obs, func(a, b commitSeen) int { return a.At.Compare(b.At) })
		i := 0
		var high int64 = math.MinInt64
		for _, c := range obs {
			// A committed offset never moves back in a healthy run, but a late poll answer could
			// be stale; only an advance covers new records.
			if c.Offset <= high {
				continue
			}
			high = c.Offset
			for i < len(stamps) && stamps[i].offset < c.Offset {
				out = append(out, c.At.Sub(stamps[i].at))
				i++
			}
		}
	}
	return out
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// percentile returns the q-quantile (0 < q ≤ 1) of ds by the nearest-rank method; ds is sorted in
// place. It returns 0 for an empty slice.
func percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	if !sort.SliceIsSorted(ds, func(i, j int) bool { return ds[i] < ds[j] }) {
		slices.Sort(ds)
	}
	rank := int(math.Ceil(q*float64(len(ds)))) - 1
	rank = max(0, min(rank, len(ds)-1))
	return ds[rank]
}
