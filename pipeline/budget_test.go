package pipeline

import (
	"reflect"
	"testing"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bucketsink/sink/batcher"
)

func TestBudgetIsOverAtTheLimitAndUnderAgainBelowIt(t *testing.T) {
	a, b := topicPartition{"t", 0}, topicPartition{"t", 1}
	bg := newBudget(100)
	bg.charge(a, 60)
	if bg.over() {
		t.Fatal("over the budget at 60 of 100")
	}
	bg.charge(b, 40)
	if !bg.over() {
		t.Fatal("not over the budget at 100 of 100")
	}
	bg.charge(b, 10)
	if bg.release(a, 5) {
		t.Fatal("under again at 105 of 100")
	}
	if !bg.release(a, 6) {
		t.Fatal("not reported under again at 99 of 100")
	}
	if bg.release(b, 1) {
		t.Fatal("reported under again twice: only the crossing wakes the poll loop")
	}
	if bg.total != 98 || bg.held[a] != 49 || bg.held[b] != 49 {
		t.Fatalf("total %d held %v, want 98 and 49 each", bg.total, bg.held)
	}
	if bg.stuckCount() != 0 {
		t.Fatalf("%d partitions paused: the budget never pauses a partition", bg.stuckCount())
	}
}

func TestBudgetStuckPausesAndResumesOnce(t *testing.T) {
	a := topicPartition{"t", 0}
	bg := newBudget(10)
	if pause, _ := bg.setStuck(a, true); !pause {
		t.Fatal("stuck did not pause")
	}
	if pause, resume := bg.setStuck(a, true); pause || resume {
		t.Fatal("stuck twice changed the fetch state again")
	}
	bg.charge(a, 20)
	bg.release(a, 20)
	if bg.stuckCount() != 1 {
		t.Fatal("the budget cleared a stuck pause")
	}
	if _, resume := bg.setStuck(a, false); !resume {
		t.Fatal("not resumed when unstuck")
	}
	if _, resume := bg.setStuck(a, false); resume {
		t.Fatal("resumed twice")
	}
}

func TestBudgetForgetReleasesEverything(t *testing.T) {
	a, b := topicPartition{"t", 0}, topicPartition{"t", 1}
	bg := newBudget(100)
	bg.charge(b, 40)
	bg.charge(a, 70)
	bg.setStuck(a, true)
	was, under := bg.forget(a)
	if !was || !under {
		t.Fatalf("forget reported paused=%v under=%v, want both: a was stuck and the total fell to 40", was, under)
	}
	if bg.total != 40 || bg.stuckCount() != 0 {
		t.Fatalf("total %d stuck %d, want 40 and 0", bg.total, bg.stuckCount())
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
	row := batcher.Row{Key: "device-1", Packed: make([]byte, 70, 80), Size: 90}
	if got, want := rowCost(&row), rowOverhead+80+8; got != want {
		t.Errorf("row cost %d, want %d", got, want)
	}
	if got, want := int64(entryCost), int64((unsafe.Sizeof(trackerChunk{})+trackerChunkLen-1)/trackerChunkLen); got != want {
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
		if f.Type.Kind() != reflect.Array || f.Type.Elem().Kind() == reflect.Pointer || f.Type.Elem().Kind() == reflect.Interface {
			t.Errorf("trackerChunk.%s is a %s: entries must hold plain values, no reference to the record", f.Name, f.Type)
		}
		switch f.Type.Elem().Kind() {
		case reflect.Uint64, reflect.Uint16:
		default:
			t.Errorf("trackerChunk.%s holds %s: entries must hold plain values, no reference to the record", f.Name, f.Type.Elem())
		}
	}
}
