package metrics

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
	"time"
	"unsafe"
)

func TestOpenPartitionsRanksAndPrunesClosedBuckets(t *testing.T) {
	t0 := time.Date(2024, 1, 15, 10, 0, 0, 0, time.UTC)
	hourEnd := t0.Add(time.Hour)
	o := newOpenPartitions(100)
	o.add("t", "readings", "small", 1, 100, hourEnd, t0)
	o.add("t", "readings", "big", 3, 900, hourEnd, t0)
	o.add("t", "readings", "big", 2, 600, hourEnd, t0)
	o.add("t", "readings", "soon-closed", 9, 9000, t0.Add(time.Minute), t0)
	o.add("t", "readings", "already-closed", 9, 9000, t0, t0) // a late event: its bucket is closed

	top := o.top("t", 2, t0.Add(2*time.Minute))
	if len(top) != 2 {
		t.Fatalf("top %v, want 2 entries", top)
	}
	if top[0].Key != "big" || top[0].Rows != 5 || top[0].Bytes != 1500 || top[0].Rank != 1 {
		t.Errorf("rank 1 = %+v, want big with 5 rows, 1500 bytes", top[0])
	}
	if top[1].Key != "small" || top[1].Rank != 2 {
		t.Errorf("rank 2 = %+v, want small", top[1])
	}
	if _, ok := o.topics["t"][o.hash("readings", "soon-closed")]; ok {
		t.Error("a closed bucket survived top()")
	}
}

func TestOpenPartitionsStaysBounded(t *testing.T) {
	t0 := time.Date(2024, 1, 15, 10, 0, 0, 0, time.UTC)
	o := newOpenPartitions(100)
	o.add("t", "r", "hot", 1, 1<<20, t0.Add(time.Hour), t0)
	for i := range 10_000 {
		o.add("t", "r", fmt.Sprintf("k%d", i), 1, int64(i%50), t0.Add(time.Hour), t0)
		if n := len(o.topics["t"]); n > 100 {
			t.Fatalf("%d entries after %d adds, cap 100", n, i+1)
		}
	}
	if top := o.top("t", 1, t0); top[0].Key != "hot" {
		t.Errorf("the largest partition was evicted: top is %+v", top[0])
	}
}

func TestPrintableKey(t *testing.T) {
	for in, want := range map[string]string{
		"dev-00042":                           "dev-00042",
		"\x00\x03abc\x00":                     "0x000361626300", // one component is not a composite key
		"\x00\x03abc\x00\x00\x02\x07\xe8\x00": "abc | 0x07e8",
		string([]byte{0xff, 1}):               "0xff01",
	} {
		if got := printableKey(in); got != want {
			t.Errorf("printableKey(%q) = %q, want %q", in, got, want)
		}
	}
}

// top keeps only the n best while it walks the tally; it must rank exactly as sorting everything would,
// ties (equal bytes) included.
func TestOpenPartitionsTopMatchesFullSort(t *testing.T) {
	t0 := time.Date(2024, 1, 15, 10, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(7, 8))
	for round := range 50 {
		o := newOpenPartitions(10_000)
		type kv struct {
			key   string
			bytes int64
		}
		var all []kv
		for i := range rng.IntN(300) {
			k := fmt.Sprintf("k%03d", i)
			b := int64(rng.IntN(20)) // many ties
			o.add("t", "r", k, 1, b, t0.Add(time.Hour), t0)
			all = append(all, kv{k, b})
		}
		sort.Slice(all, func(i, j int) bool {
			if all[i].bytes != all[j].bytes {
				return all[i].bytes > all[j].bytes
			}
			return all[i].key < all[j].key
		})
		n := rng.IntN(15)
		got := o.top("t", n, t0)
		want := all[:min(n, len(all))]
		if len(got) != len(want) {
			t.Fatalf("round %d: top %d gave %d entries, want %d", round, n, len(got), len(want))
		}
		for i := range want {
			if got[i].Key != want[i].key || got[i].Bytes != want[i].bytes || got[i].Rank != i+1 {
				t.Fatalf("round %d: rank %d = %+v, want %s with %d bytes", round, i+1, got[i], want[i].key, want[i].bytes)
			}
		}
	}
}

// The tally keeps its own copy of a key: the key it is given points into a batch's memory.
func TestOpenPartitionsCopiesKeys(t *testing.T) {
	t0 := time.Date(2024, 1, 15, 10, 0, 0, 0, time.UTC)
	o := newOpenPartitions(100)
	buf := []byte("device-1")
	o.add("t", "r", unsafe.String(&buf[0], len(buf)), 1, 10, t0.Add(time.Hour), t0)
	for _, s := range o.topics["t"] {
		if unsafe.StringData(s.key) == &buf[0] {
			t.Fatal("the tally keeps the caller's key memory")
		}
	}
	copy(buf, "xxxxxxxx")
	if top := o.top("t", 1, t0); len(top) != 1 || top[0].Key != "device-1" {
		t.Errorf("top %+v, want device-1", top)
	}
}

// BenchmarkOpenPartitionsAdd is the tally's cost per partition written: 10,000 devices' composite
// routing keys (device and day), as a steady stream writes them, in random order.
func BenchmarkOpenPartitionsAdd(b *testing.B) {
	t0 := time.Date(2024, 1, 15, 10, 0, 0, 0, time.UTC)
	keys := make([]string, 10_000)
	for i := range keys {
		dev, day := fmt.Sprintf("device-%05d", i), "2024-01-15"
		k := append([]byte{0, byte(len(dev))}, dev...)
		k = append(append(append(k, 0, 0, byte(len(day))), day...), 0)
		keys[i] = string(k)
	}
	order := make([]int, 1<<16)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range order {
		order[i] = r.IntN(len(keys))
	}
	o := newOpenPartitions(10_000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		o.add("sensor-readings", "readings", keys[order[i&(len(order)-1)]], 3, 400, t0.Add(24*time.Hour), t0)
	}
}
