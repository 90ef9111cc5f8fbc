package bucketer

import "time"

// SliceIndex is the number of the slice holding t, counted like bucket numbers (0 holds the
// epoch); 0 when the policy is not sliced. Callers cache table names by it.
func (p *Policy) SliceIndex(t time.Time) int64 {
	if !p.sliced {
		return 0
	}
	return p.slice.index(t.Unix())
}

// SliceOfBucket is the number of the slice holding bucket i (every bucket lies in one slice).
func (p *Policy) SliceOfBucket(i int64) int64 {
	if !p.sliced {
		return 0
	}
	return p.slice.index(p.width.start(i))
}

// SliceSuffix is the table suffix of the slice holding t: yyyymmdd for slices of whole days,
// yyyymmddHH for slices of whole hours, yyyy"w"ww for ISO weeks (e.g. 2024w03), yyyymm for months
// and yyyy for years; "" when the policy is not sliced. The table is <base>_<suffix>.
func (p *Policy) SliceSuffix(t time.Time) string {
	if !p.sliced {
		return ""
	}
	var buf [16]byte
	return string(p.AppendSliceSuffix(buf[:0], p.slice.index(t.Unix())))
}

// AppendSliceSuffix appends the suffix of slice s (a SliceIndex) to dst; nothing when unsliced.
func (p *Policy) AppendSliceSuffix(dst []byte, s int64) []byte {
	if !p.sliced {
		return dst
	}
	st := p.slice.stamp(s)
	switch p.slicePrec {
	case precWeek:
		dst = appendYear(dst, st.year)
		dst = append(dst, 'w')
		return append2(dst, st.week)
	case precMonth:
		return append2(appendYear(dst, st.year), st.month)
	case precYear:
		return appendYear(dst, st.year)
	}
	dst = append2(append2(appendYear(dst, st.year), st.month), st.day)
	if p.slicePrec == precHour {
		dst = append2(dst, st.hour)
	}
	return dst
}

// SliceStart is the UTC start of slice s.
func (p *Policy) SliceStart(s int64) time.Time {
	if !p.sliced {
		return time.Time{}
	}
	return time.Unix(p.slice.start(s), 0).UTC()
}
