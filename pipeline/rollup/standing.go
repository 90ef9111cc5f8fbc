package rollup

import "sync"

// Standing is the markers one Kafka partition's worker wrote in this assignment that the rollup
// worker has not taken yet, each with the last record that relies on it. A record whose marker
// stands writes none: the pending row is already there (or on its way, as a part of an earlier
// record, which commits first), and the rollup worker takes the row only once every record relying
// on it is committed, so its computation reads their raw rows too (docs/DESIGN.md, "Rollups"). A
// window then costs one marker row per pass of the worker instead of one per hand-off of records.
//
// Safe for the partition's worker (Rely) and the rollup worker (Take) at once.
type Standing struct {
	mu   sync.Mutex
	last map[string]*int64 // a marker's identity → the offset of the last record relying on it
}

// standingMax bounds the markers a Standing remembers, about 110 bytes each (under 1 MiB a partition,
// outside the buffer's budget). A marker past it is written by every record of its window (folded
// within a hand-off), as if nothing stood; a marker taken makes room.
const standingMax = 1 << 13

// Rely is called for each marker (its Identity, id) that the record at offset would add, in offset
// order. A nil Standing remembers nothing. It reports true when the marker stands: the record writes none, and the marker is not taken
// before the record is committed. Otherwise the record writes it, and from then on it stands.
func (s *Standing) Rely(id []byte, offset int64) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.last[string(id)]; ok {
		*l = max(*l, offset)
		return true
	}
	if s.last == nil {
		s.last = make(map[string]*int64)
	}
	if len(s.last) < standingMax {
		l := offset
		s.last[string(id)] = &l
	}
	return false
}

// Take reports whether the rollup worker may compute and delete the marker of identity id, given
// committed, the offset below which the partition's records are committed: only when no record at or
// above it relies on the marker. Taken, the marker no longer stands, so the next record of its window
// writes a marker of its own, at its own (higher) offset, which the delete of this one leaves alone.
// A nil Standing takes every marker.
func (s *Standing) Take(id []byte, committed int64) bool {
	if s == nil {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.last[string(id)]; ok {
		if *l >= committed {
			return false
		}
		delete(s.last, string(id))
	}
	return true
}

// Len is how many markers stand.
func (s *Standing) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.last)
}
