package bucketer

import (
	"fmt"
	"time"
)

// MaxPartitions caps what one Enumerate call returns whatever limit the caller passes, so a
// mistaken limit cannot make it allocate gigabytes. A reader that needs more pages the range.
const MaxPartitions = 1 << 20

// Partition is one Cassandra partition of a topic (for one entity id): the slice (table
// suffix, "" when unsliced), the time bucket number, and the event bucket.
type Partition struct {
	Slice       string
	Index       int64
	EventBucket int
}

// Enumerate lists every partition that the instants between from and to can live in, in the
// order a reader should visit them. from is always included and to never is:
//
//   - from before to: the instants [from, to), buckets in ascending time order;
//   - from after to: the instants (to, from], buckets in descending time order (newest first);
//   - from equal to to: no instants, no partitions.
//
// So a bucket starting exactly at to is left out going up and visited going down (the
// instants just after to are in the range), and a bucket starting exactly at from is visited
// either way.
//
// Within one time bucket the event buckets come in ascending order 0..N-1 (their rows
// interleave in time, so a reader merges them). It returns an error, never a shortened list,
// when more than max (at most MaxPartitions) partitions would be produced, when the range leaves the supported years,
// or when a rolling policy would revisit a key (the range spans more than Rolling buckets).
func (p *Policy) Enumerate(from, to time.Time, max int) ([]Partition, error) {
	if max <= 0 {
		return nil, fmt.Errorf("enumerating partitions: limit %d is not positive", max)
	}
	max = min(max, MaxPartitions)
	c := from.Compare(to)
	if c == 0 {
		return nil, nil
	}
	first := p.Index(from)
	var last int64
	step := int64(1)
	if c < 0 {
		last = p.Index(to.Add(-time.Nanosecond))
	} else {
		last = p.Index(to.Add(time.Nanosecond))
		step = -1
	}
	for _, i := range [2]int64{first, last} {
		if err := p.Check(i); err != nil {
			return nil, fmt.Errorf("enumerating partitions from %s to %s: %w", from.Format(time.RFC3339Nano), to.Format(time.RFC3339Nano), err)
		}
	}
	buckets := (last-first)*step + 1
	if p.rolling > 0 && buckets > p.rolling {
		return nil, fmt.Errorf("enumerating partitions from %s to %s: the range spans %d buckets but rolling keeps only %d; narrow the range",
			from.Format(time.RFC3339Nano), to.Format(time.RFC3339Nano), buckets, p.rolling)
	}
	eb := int64(p.EventBuckets())
	if buckets > int64(max)/eb {
		return nil, fmt.Errorf("enumerating partitions from %s to %s: %d buckets × %d event buckets is more than the limit of %d partitions; narrow the range or raise the limit",
			from.Format(time.RFC3339Nano), to.Format(time.RFC3339Nano), buckets, eb, max)
	}
	out := make([]Partition, 0, buckets*eb)
	var (
		suffix    string
		lastSlice int64
		buf       [16]byte
	)
	for k, i := int64(0), first; k < buckets; k, i = k+1, i+step {
		if p.sliced {
			if s := p.SliceOfBucket(i); k == 0 || s != lastSlice {
				suffix, lastSlice = string(p.AppendSliceSuffix(buf[:0], s)), s
			}
		}
		for e := 0; e < int(eb); e++ {
			out = append(out, Partition{Slice: suffix, Index: i, EventBucket: e})
		}
	}
	return out, nil
}
