package offsets

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"unsafe"
)

func TestTracker(t *testing.T) {
	type step struct {
		register []int64
		done     []int64
		want     int64 // expected watermark after the step; -1 = none yet
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"nothing done", []step{{register: []int64{0, 1, 2}, want: -1}}},
		{"in order", []step{{register: []int64{0, 1, 2}, done: []int64{0, 1, 2}, want: 3}}},
		{"out of order holds at the gap", []step{
			{register: []int64{0, 1, 2, 3}, done: []int64{1, 3}, want: -1},
			{done: []int64{0}, want: 2},
			{done: []int64{2}, want: 4},
		}},
		{"offset gaps from compaction", []step{
			{register: []int64{10, 13, 20}, done: []int64{13, 10}, want: 14},
			{done: []int64{20}, want: 21},
		}},
		{"duplicate and unknown acks change nothing", []step{
			{register: []int64{5, 6}, done: []int64{5, 5, 7, 4}, want: 6},
		}},
		{"registration after progress", []step{
			{register: []int64{0}, done: []int64{0}, want: 1},
			{register: []int64{1, 2}, done: []int64{2}, want: 1},
			{done: []int64{1}, want: 3},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTracker(0)
			for i, s := range tc.steps {
				for _, o := range s.register {
					if err := tr.Register(o, 1, 0, 1); err != nil {
						t.Fatalf("step %d: register(%d): %v", i, o, err)
					}
				}
				for _, o := range s.done {
					tr.Done(o)
				}
				got, _, ok := tr.Watermark()
				if !ok {
					got = -1
				}
				if got != s.want {
					t.Fatalf("step %d: watermark %d, want %d", i, got, s.want)
				}
			}
		})
	}
}

func TestTrackerRejectsOutOfOrderRegistration(t *testing.T) {
	tr := NewTracker(0)
	if err := tr.Register(5, 0, 0, 1); err != nil {
		t.Fatal(err)
	}
	for _, o := range []int64{5, 4} {
		if err := tr.Register(o, 0, 0, 1); err == nil {
			t.Errorf("register(%d) after 5: no error", o)
		}
	}
}

func TestTrackerDoneReportsKnownOnce(t *testing.T) {
	tr := NewTracker(0)
	_ = tr.Register(1, 0, 0, 1)
	_ = tr.Register(2, 0, 0, 1)
	if _, adv, known := tr.Done(2); adv || !known {
		t.Fatalf("done(2) = %v, %v; want false, true", adv, known)
	}
	if _, _, known := tr.Done(2); known {
		t.Fatal("second done(2) reported known; a duplicate ack would be counted twice")
	}
	if _, adv, known := tr.Done(1); !adv || !known {
		t.Fatalf("done(1) = %v, %v; want true, true", adv, known)
	}
	if _, _, known := tr.Done(1); known {
		t.Fatal("done(1) after retirement reported known")
	}
	if tr.InFlight() != 0 {
		t.Fatalf("inFlight %d, want 0", tr.InFlight())
	}
}

func TestTrackerKeepsBytesUntilDoneAndEntriesUntilRetired(t *testing.T) {
	tr := NewTracker(5)
	_ = tr.Register(1, 0, 10, 1)
	_ = tr.Register(2, 0, 20, 1)
	if b, _, _ := tr.Done(2); b != 20 {
		t.Fatalf("done(2) released %d bytes, want 20: its entry stays until the watermark passes it", b)
	}
	if b, _, known := tr.Done(2); known || b != 0 {
		t.Fatalf("second done(2) released %d bytes (known %v), want nothing", b, known)
	}
	if !tr.IsPending(1) || tr.IsPending(2) || tr.IsPending(3) {
		t.Fatal("isPending wrong")
	}
	if b, _, _ := tr.Done(1); b != 10+2*5 {
		t.Fatalf("done(1) released %d bytes, want its 10 and both entries' 5", b)
	}
}

func TestTrackerEpochIsThatOfTheLastRetiredRecord(t *testing.T) {
	tr := NewTracker(0)
	_ = tr.Register(1, 3, 0, 1)
	_ = tr.Register(2, 4, 0, 1)
	tr.Done(2)
	tr.Done(1)
	if off, ep, _ := tr.Watermark(); off != 3 || ep != 4 {
		t.Fatalf("watermark %d epoch %d, want 3 epoch 4", off, ep)
	}
}

// TestTrackerPropertyNeverPassesUndone completes the parts of randomly gapped records in random order
// (most records have one part, some up to five: a row per table and a dead letter) and checks after
// every step that the watermark is exactly one past the longest prefix of records with every part done:
// never beyond a record with a part outstanding (the at-least-once invariant, across tables), never
// behind the done prefix. It also checks the budget bookkeeping: what is still charged is exactly the
// bytes of the undone records plus one entry for every record the watermark has not passed.
func TestTrackerPropertyNeverPassesUndone(t *testing.T) {
	const entry = 7
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 500 {
		tr := NewTracker(entry)
		n := 1 + rng.IntN(300)
		offsets := make([]int64, n)
		sizes := make([]int64, n)
		off := int64(rng.IntN(1000))
		epochs := make([]int32, n)
		parts := make([]int, n)
		epoch := int32(rng.IntN(3))
		for i := range offsets {
			// Gaps, as compaction and transaction markers leave: mostly small, sometimes across chunks,
			// now and then millions of offsets.
			switch r := rng.IntN(100); {
			case r < 90:
				off += 1 + int64(rng.IntN(3))
			case r < 98:
				off += 1 + int64(rng.IntN(3*trackerChunkLen))
			default:
				off += 1 + int64(rng.IntN(10_000_000))
			}
			offsets[i] = off
			sizes[i] = 1 + int64(rng.IntN(50))
			if rng.IntN(20) == 0 {
				sizes[i] = trackerBig + int64(rng.IntN(1<<20)) // a charge too large for its two bytes
			}
			if rng.IntN(30) == 0 {
				epoch++ // a leader change
			}
			epochs[i] = epoch
			parts[i] = 1
			if rng.IntN(3) == 0 {
				parts[i] = 2 + rng.IntN(4)
			}
		}
		// One step per part, in random order.
		var order []int
		for i, k := range parts {
			for range k {
				order = append(order, i)
			}
		}
		rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
		done := make(map[int64]bool, n)
		left := slices.Clone(parts)
		registered := 0
		var charged int64
		for _, i := range order {
			// Register lazily, in offset order, up to the record about to complete and a bit beyond.
			for registered < n && (registered <= i || rng.IntN(4) == 0) {
				if err := tr.Register(offsets[registered], epochs[registered], sizes[registered], parts[registered]); err != nil {
					t.Fatal(err)
				}
				charged += sizes[registered] + entry
				registered++
			}
			freed, _, known := tr.Done(offsets[i])
			if !known {
				t.Fatalf("round %d: a part of offset %d not known with %d parts left", round, offsets[i], left[i])
			}
			charged -= freed
			left[i]--
			done[offsets[i]] = left[i] == 0
			if !done[offsets[i]] && freed != 0 {
				t.Fatalf("round %d: offset %d gave back %d bytes with %d parts left", round, offsets[i], freed, left[i])
			}
			want, wantEpoch := int64(-1), int32(0)
			for j := 0; j < registered && done[offsets[j]]; j++ {
				want, wantEpoch = offsets[j]+1, epochs[j]
			}
			got, gotEpoch, ok := tr.Watermark()
			if !ok {
				got = -1
			}
			if got != want || (ok && gotEpoch != wantEpoch) {
				t.Fatalf("round %d: watermark %d epoch %d, want %d epoch %d", round, got, gotEpoch, want, wantEpoch)
			}
			if first, ok := tr.FirstUndone(); ok != (tr.InFlight() > 0) || ok && (done[first] || first < got) {
				t.Fatalf("round %d: firstUndone %d (%v) with %d in flight, watermark %d", round, first, ok, tr.InFlight(), got)
			}
			var held int64
			for j := range registered {
				if !done[offsets[j]] && got > offsets[j] {
					t.Fatalf("round %d: watermark %d passes undone offset %d", round, got, offsets[j])
				}
				if !done[offsets[j]] {
					held += sizes[j]
				}
				if offsets[j] >= got {
					held += entry
				}
			}
			if charged != held {
				t.Fatalf("round %d: %d bytes still charged, want %d (undone records and entries above the watermark)", round, charged, held)
			}
		}
		if tr.InFlight() != 0 || tr.live != 0 || charged != 0 || len(tr.big) != 0 {
			t.Fatalf("round %d: %d in flight, %d pending, %d big charges, %d bytes charged after all done", round, tr.InFlight(),
				tr.live, len(tr.big), charged)
		}
		if len(tr.chunks) > 1 {
			t.Fatalf("round %d: %d chunks kept after all done, want at most 1", round, len(tr.chunks))
		}
	}
}

// TestTrackerGivesBackChunksAfterASpike: one slow record held 100,000 entries; once it is done, the
// tracker keeps at most one chunk instead of its peak. A steady flow reuses chunks and allocates nothing.
func TestTrackerGivesBackChunksAfterASpike(t *testing.T) {
	tr := NewTracker(0)
	var o int64
	for ; o < 100_000; o++ {
		_ = tr.Register(o, 0, 0, 1)
	}
	if c := len(tr.chunks); c != (100_000+trackerChunkLen-1)/trackerChunkLen {
		t.Fatalf("%d chunks for 100,000 entries", c)
	}
	for i := int64(1); i < o; i++ {
		tr.Done(i)
	}
	if next, _, ok := tr.Watermark(); ok {
		t.Fatalf("watermark %d while the first record is undone", next)
	}
	tr.Done(0)
	if next, _, _ := tr.Watermark(); next != o {
		t.Fatalf("watermark %d after all done, want %d", next, o)
	}
	if c := len(tr.chunks); c > 1 {
		t.Fatalf("%d chunks kept after the spike drained, want at most 1", c)
	}
	cycle := func(n int) {
		for range n {
			_ = tr.Register(o, 0, 0, 1)
			o++
		}
		for i := o - int64(n); i < o; i++ {
			tr.Done(i)
		}
	}
	cycle(20_000)
	// A stretch spans five chunks: a tracker that took new ones would allocate at least those five
	// besides the three a stretch allocates here without the race detector (measured, every run). The
	// race detector drops a quarter of sync.Pool's puts, so a stretch then allocates a chunk or two more
	// (4, and in 2 of 60 runs 5, averaged over 20 stretches; a bound of 4 failed about once in 30 runs).
	if allocs := testing.AllocsPerRun(50, func() { cycle(20_000) }); allocs > 5 {
		t.Errorf("%v allocations per steady 20,000-record stretch, want almost none", allocs)
	}
}

// A gap of millions of offsets (compaction) inside the window allocates no chunk for it.
func TestTrackerSkipsHugeGapsWithoutMemory(t *testing.T) {
	tr := NewTracker(1)
	_ = tr.Register(10, 0, 5, 1)
	_ = tr.Register(50_000_000, 0, 7, 1)
	_ = tr.Register(50_000_001, 1, 9, 1)
	if len(tr.chunks) != 2 {
		t.Fatalf("%d chunks for offsets 10 and 50,000,000-1, want 2", len(tr.chunks))
	}
	if b, adv, _ := tr.Done(50_000_000); adv || b != 7 {
		t.Fatalf("done(50,000,000) = %d bytes, advanced %v; want 7, false", b, adv)
	}
	if f, _ := tr.FirstUndone(); f != 10 {
		t.Fatalf("firstUndone %d, want 10", f)
	}
	if b, adv, _ := tr.Done(10); !adv || b != 5+2 {
		t.Fatalf("done(10) = %d bytes, advanced %v; want 5 and two entries, true", b, adv)
	}
	if next, ep, _ := tr.Watermark(); next != 50_000_001 || ep != 0 {
		t.Fatalf("watermark %d epoch %d, want 50,000,001 epoch 0", next, ep)
	}
	if f, _ := tr.FirstUndone(); f != 50_000_001 {
		t.Fatalf("firstUndone %d, want 50,000,001", f)
	}
	if len(tr.chunks) != 1 {
		t.Fatalf("%d chunks after the watermark passed the gap, want 1", len(tr.chunks))
	}
	if b, _, _ := tr.Done(50_000_001); b != 9+1 {
		t.Fatalf("done(50,000,001) = %d bytes, want 9 and its entry", b)
	}
	if next, ep, _ := tr.Watermark(); next != 50_000_002 || ep != 1 {
		t.Fatalf("watermark %d epoch %d, want 50,000,002 epoch 1", next, ep)
	}
}

func BenchmarkTrackerInOrder(b *testing.B) {
	b.ReportAllocs()
	tr := NewTracker(0)
	var o int64
	for b.Loop() {
		_ = tr.Register(o, 0, 0, 1)
		tr.Done(o)
		o++
	}
}

// BenchmarkTrackerWindow keeps 1,000 records in flight and completes them in shuffled blocks, the shape
// of many concurrent batches acknowledging out of order.
func BenchmarkTrackerWindow(b *testing.B) {
	b.ReportAllocs()
	const window = 1000
	rng := rand.New(rand.NewPCG(3, 4))
	perm := rng.Perm(window)
	tr := NewTracker(0)
	var base int64
	for b.Loop() {
		for i := range window {
			_ = tr.Register(base+int64(i), 0, 0, 1)
		}
		for _, i := range perm {
			tr.Done(base + int64(i))
		}
		base += window
	}
}

// TestEntryBytesIsAChunksShareOfAnOffset: a tracker entry costs the budget its chunk's bytes per offset
// (moved here from the budget's TestCostsChargeWhatIsPinned with the tracker).
func TestEntryBytesIsAChunksShareOfAnOffset(t *testing.T) {
	if got, want := int64(EntryBytes), int64((unsafe.Sizeof(trackerChunk{})+trackerChunkLen-1)/trackerChunkLen); got != want {
		t.Errorf("entry cost %d, want %d (a chunk's bytes per offset, rounded up)", got, want)
	}
}

// TestTrackerEntryHoldsNothingOfTheRecord guards the budget's premise that a mapped record is not
// retained: a tracker entry lives until the watermark passes it, so a pointer in it (the tracker once
// kept the *kgo.Record for dead letters) would pin the record's slab, decompressed batch and fetch
// response for as long, uncharged.
func TestTrackerEntryHoldsNothingOfTheRecord(t *testing.T) {
	typ := reflect.TypeFor[trackerChunk]()
	for f := range typ.Fields() {
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem() // the side array of parts: plain values too
		}
		if ft.Kind() != reflect.Array {
			t.Errorf("trackerChunk.%s is a %s: entries must hold plain values, no reference to the record", f.Name, f.Type)
			continue
		}
		switch ft.Elem().Kind() {
		case reflect.Uint64, reflect.Uint16, reflect.Uint8:
		default:
			t.Errorf("trackerChunk.%s holds %s: entries must hold plain values, no reference to the record", f.Name, ft.Elem())
		}
	}
}

// TestTrackerRecordOfSeveralPartsIsDoneWithItsLast: a record with a row in two tables and a dead letter
// holds the watermark until its third part is done, and a fourth acknowledgement is not counted.
func TestTrackerRecordOfSeveralPartsIsDoneWithItsLast(t *testing.T) {
	tr := NewTracker(1)
	if err := tr.Register(7, 0, 30, 3); err != nil {
		t.Fatal(err)
	}
	_ = tr.Register(8, 0, 5, 1)
	for part := range 2 {
		if b, adv, known := tr.Done(7); b != 0 || adv || !known {
			t.Fatalf("part %d of 3: done = %d bytes, advanced %v, known %v; want 0, false, true", part+1, b, adv, known)
		}
		if !tr.IsPending(7) {
			t.Fatalf("offset 7 not pending with %d parts left", 2-part)
		}
	}
	tr.Done(8)
	if _, _, ok := tr.Watermark(); ok {
		t.Fatal("watermark moved while offset 7 has a part left")
	}
	if b, adv, known := tr.Done(7); b != 30+2 || !adv || !known {
		t.Fatalf("last part: done = %d bytes, advanced %v, known %v; want 32, true, true", b, adv, known)
	}
	if next, _, _ := tr.Watermark(); next != 9 {
		t.Fatalf("watermark %d, want 9", next)
	}
	if _, _, known := tr.Done(7); known {
		t.Fatal("an acknowledgement beyond the record's parts was counted")
	}
}

// TestTrackerOnePartRecordsAllocateNoSideArray: the count of parts costs a record of one part nothing.
func TestTrackerOnePartRecordsAllocateNoSideArray(t *testing.T) {
	tr := NewTracker(0)
	for o := range int64(3 * trackerChunkLen) {
		_ = tr.Register(o, 0, 0, 1)
	}
	_ = tr.Register(3*trackerChunkLen+1, 0, 0, 2)
	for k, c := range tr.chunks {
		if (c.more != nil) != (k == 3) {
			t.Errorf("chunk %d has a side array %v; want one only in the chunk with a record of two parts", k, c.more != nil)
		}
	}
}

func TestTrackerRefusesPartsOutOfRange(t *testing.T) {
	tr := NewTracker(0)
	for i, n := range []int{0, -1, MaxParts + 1} {
		if err := tr.Register(int64(i), 0, 0, n); err == nil {
			t.Errorf("register with %d parts: no error", n)
		}
	}
	if err := tr.Register(5, 0, 0, MaxParts); err != nil {
		t.Fatalf("register with %d parts: %v", MaxParts, err)
	}
	for range MaxParts - 1 {
		tr.Done(5)
	}
	if _, adv, _ := tr.Done(5); !adv {
		t.Fatalf("the %dth part did not complete the record", MaxParts)
	}
}
