package pipeline

import (
	"reflect"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bucketsink/sink/batcher"
)

func TestBudgetPausesTheChargedPartitionAndResumesAtLowWater(t *testing.T) {
	a, b := topicPartition{"t", 0}, topicPartition{"t", 1}
	bg := newBudget(100) // low water 50
	if bg.charge(a, 60) {
		t.Fatal("paused under the budget")
	}
	if !bg.charge(b, 50) {
		t.Fatal("b not paused when its charge passed the budget")
	}
	if bg.charge(b, 10) {
		t.Fatal("b paused twice")
	}
	if !bg.charge(a, 1) {
		t.Fatal("a not paused when charged over the budget")
	}
	if got := bg.pausedCount(); got != 2 {
		t.Fatalf("paused %d, want 2", got)
	}
	if r := bg.release(a, 61); r != nil {
		t.Fatalf("resumed %v at 60 bytes, above the low-water mark", r)
	}
	r := bg.release(b, 10)
	slices.SortFunc(r, func(x, y topicPartition) int { return int(x.partition - y.partition) })
	if !slices.Equal(r, []topicPartition{a, b}) {
		t.Fatalf("resumed %v at 50 bytes, want both", r)
	}
	if bg.total != 50 || bg.pausedCount() != 0 {
		t.Fatalf("total %d paused %d, want 50 and 0", bg.total, bg.pausedCount())
	}
}

func TestBudgetStuckOutlivesBudgetResume(t *testing.T) {
	a := topicPartition{"t", 0}
	bg := newBudget(10)
	if pause, _ := bg.setStuck(a, true); !pause {
		t.Fatal("stuck did not pause")
	}
	if bg.charge(a, 20) {
		t.Fatal("already paused: charge must not pause again")
	}
	if r := bg.release(a, 20); len(r) != 0 {
		t.Fatalf("resumed %v while stuck", r)
	}
	if _, resume := bg.setStuck(a, false); !resume {
		t.Fatal("not resumed when unstuck and under budget")
	}
}

func TestBudgetForgetReleasesEverything(t *testing.T) {
	a, b := topicPartition{"t", 0}, topicPartition{"t", 1}
	bg := newBudget(100)
	bg.charge(b, 40)
	bg.charge(a, 70) // pauses a
	bg.charge(b, 1)  // pauses b
	was, resume := bg.forget(a)
	if !was {
		t.Fatal("forget did not report a as paused")
	}
	if !slices.Equal(resume, []topicPartition{b}) {
		t.Fatalf("resume %v, want [b]: the total fell to 41", resume)
	}
	if bg.total != 41 {
		t.Fatalf("total %d, want 41", bg.total)
	}
}

// TestCostsChargeWhatIsPinned: a queued record costs its payload plus the structures franz-go keeps for
// it, each header its own struct and bytes; a row costs its estimated values plus its struct copies, its
// key and one interface per value; a tracker entry costs its struct, twice for the slice's growth.
func TestCostsChargeWhatIsPinned(t *testing.T) {
	r := &kgo.Record{Key: []byte("device-1"), Value: make([]byte, 141)}
	if got, want := recordCost(r), recordOverhead+8+141; got != want {
		t.Errorf("record cost %d, want %d", got, want)
	}
	if recordOverhead < 160 {
		t.Errorf("record overhead %d is below the size of a kgo.Record alone", recordOverhead)
	}
	withHeader := *r
	withHeader.Headers = []kgo.RecordHeader{{Key: "trace", Value: []byte("abc")}}
	if got, want := recordCost(&withHeader)-recordCost(r), headerOverhead+5+3; got != want {
		t.Errorf("a header costs %d, want %d", got, want)
	}
	row := batcher.Row{Key: "device-1", Values: make([]any, 6), Size: 90}
	if got, want := rowCost(&row), rowOverhead+90+8+6*16; got != want {
		t.Errorf("row cost %d, want %d", got, want)
	}
	if entryCost != 48 {
		t.Errorf("entry cost %d, want 48 (a 24-byte pendingRecord, twice)", entryCost)
	}
}

// TestTrackerEntryHoldsNothingOfTheRecord guards the budget's premise that a mapped record is not
// retained: a tracker entry lives until the watermark passes it, so a pointer in it (the tracker once
// kept the *kgo.Record for dead letters) would pin the record's slab, decompressed batch and fetch
// response for as long, uncharged.
func TestTrackerEntryHoldsNothingOfTheRecord(t *testing.T) {
	typ := reflect.TypeFor[pendingRecord]()
	for f := range typ.Fields() {
		switch f.Type.Kind() {
		case reflect.Int64, reflect.Int32, reflect.Bool:
		default:
			t.Errorf("pendingRecord.%s is a %s: entries must hold plain values, no reference to the record", f.Name, f.Type)
		}
	}
}
