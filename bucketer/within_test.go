package bucketer

import (
	"testing"
	"time"
)

// Within must say exactly whether fine buckets never straddle a coarse boundary: when it says yes,
// no bucket of two years straddles one; when it says no, one of them does.
func TestWithinIsExactlyWhetherNoBucketStraddles(t *testing.T) {
	var widths []Width
	for _, s := range []string{"1m", "8m", "10m", "1h", "90m", "3d", "6h", "1d", "2d", "7d", "week", "month", "year"} {
		w, err := ParseWidth(s)
		if err != nil {
			t.Fatal(err)
		}
		widths = append(widths, w)
	}
	from := time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	to := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	for _, fine := range widths {
		for _, coarse := range widths {
			straddles := false
			for i := fine.index(from); fine.start(i) < to && !straddles; i++ {
				straddles = coarse.index(fine.start(i)) != coarse.index(fine.start(i+1)-1)
			}
			if got := fine.Within(coarse); got == straddles {
				t.Errorf("%s.Within(%s) = %v, but a %s bucket straddles a %s boundary: %v", fine, coarse, got, fine, coarse, straddles)
			}
		}
	}
}
