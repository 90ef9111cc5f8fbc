package bucketer

import (
	"hash/fnv"
	"testing"
)

// hashVectors are on disk: every row written with event buckets sits in the partition these
// numbers choose, so they must never change. The sums were computed once with hash/fnv's New64a
// and cross-checked with an independent Python implementation of FNV-1a 64, then written here as
// literals; TestEventBucketMatchesStdlib keeps comparing with hash/fnv.
var hashVectors = []struct {
	id           string
	sum          uint64
	mod2, mod4   int
	mod16, mod10 int
}{
	{"", 14695981039346656037, 1, 1, 5, 7},
	{"a", 12638187200555641996, 0, 0, 12, 6},
	{"sensor-42", 5480530964706277968, 0, 0, 0, 8},
	{"site-7\x00sensor-42", 12616644721313318105, 1, 1, 9, 5},
	{"device-00001", 12061433118844342993, 1, 1, 1, 3},
	{"ünïcødé", 9216958171127846560, 0, 0, 0, 0},
	{"\x00", 12638153115695167455, 1, 3, 15, 5},
	{"user:1234567890", 13895730305839073153, 1, 1, 1, 3},
}

func TestEventBucketVectors(t *testing.T) {
	for _, v := range hashVectors {
		h := NewIDHash()
		h.PartString(v.id)
		if got := h.Sum64(); got != v.sum {
			t.Errorf("FNV-1a 64 of %q = %d, want %d", v.id, got, v.sum)
		}
		for n, want := range map[int]int{2: v.mod2, 4: v.mod4, 16: v.mod16, 10: v.mod10} {
			if got := EventBucket([]byte(v.id), n); got != want {
				t.Errorf("EventBucket(%q, %d) = %d, want %d", v.id, n, got, want)
			}
			if got := EventBucketString(v.id, n); got != want {
				t.Errorf("EventBucketString(%q, %d) = %d, want %d", v.id, n, got, want)
			}
		}
		for _, n := range []int{-1, 0, 1} {
			if got := EventBucket([]byte(v.id), n); got != 0 {
				t.Errorf("EventBucket(%q, %d) = %d, want 0 (no event buckets)", v.id, n, got)
			}
		}
	}
}

// TestCompositeID: hashing parts one by one equals hashing them joined by 0x00.
func TestCompositeID(t *testing.T) {
	h := NewIDHash()
	h.PartString("site-7")
	h.Part([]byte("sensor-42"))
	if got, want := h.Sum64(), uint64(12616644721313318105); got != want {
		t.Errorf("composite hash = %d, want %d", got, want)
	}
	if got := h.Bucket(4); got != 1 {
		t.Errorf("composite bucket = %d, want 1", got)
	}
	// Order and boundaries matter: ("ab","c") and ("a","bc") must differ.
	a, b := NewIDHash(), NewIDHash()
	a.PartString("ab")
	a.PartString("c")
	b.PartString("a")
	b.PartString("bc")
	if a.Sum64() == b.Sum64() {
		t.Error("composite ids with different part boundaries hash alike")
	}
}

func TestEventBucketMatchesStdlib(t *testing.T) {
	ids := [][]byte{nil, []byte("x"), []byte("a much longer identifier, 0123456789"), {0xff, 0, 0x80}}
	for _, id := range ids {
		h := fnv.New64a()
		h.Write(id)
		want := h.Sum64()
		for _, n := range []int{2, 3, 8, 1000} {
			if got := EventBucket(id, n); got != int(want%uint64(n)) {
				t.Errorf("EventBucket(%q, %d) = %d, want %d", id, n, got, want%uint64(n))
			}
		}
	}
}

func FuzzEventBucket(f *testing.F) {
	for _, v := range hashVectors {
		f.Add([]byte(v.id), 4)
	}
	f.Fuzz(func(t *testing.T, id []byte, n int) {
		got := EventBucket(id, n)
		if n <= 1 {
			if got != 0 {
				t.Fatalf("EventBucket(%q, %d) = %d, want 0", id, n, got)
			}
			return
		}
		h := fnv.New64a()
		h.Write(id)
		if want := int(h.Sum64() % uint64(n)); got != want {
			t.Fatalf("EventBucket(%q, %d) = %d, want %d", id, n, got, want)
		}
		if s := EventBucketString(string(id), n); s != got {
			t.Fatalf("EventBucketString disagrees: %d vs %d", s, got)
		}
	})
}
