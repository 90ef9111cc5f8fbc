package budget

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/pipeline/offsets"
)

func TestBudgetIsOverAtTheLimitAndUnderAgainBelowIt(t *testing.T) {
	a, b := offsets.TopicPartition{Topic: "t", Partition: 0}, offsets.TopicPartition{Topic: "t", Partition: 1}
	bg := New(100)
	bg.Charge(a, 60)
	if bg.Over() {
		t.Fatal("over the budget at 60 of 100")
	}
	bg.Charge(b, 40)
	if !bg.Over() {
		t.Fatal("not over the budget at 100 of 100")
	}
	bg.Charge(b, 10)
	if bg.Release(a, 5) {
		t.Fatal("under again at 105 of 100")
	}
	if !bg.Release(a, 6) {
		t.Fatal("not reported under again at 99 of 100")
	}
	if bg.Release(b, 1) {
		t.Fatal("reported under again twice: only the crossing wakes the poll loop")
	}
	if bg.total != 98 || bg.held[a] != 49 || bg.held[b] != 49 {
		t.Fatalf("total %d held %v, want 98 and 49 each", bg.total, bg.held)
	}
	if bg.StuckCount() != 0 {
		t.Fatalf("%d partitions paused: the budget never pauses a partition", bg.StuckCount())
	}
}

func TestBudgetStuckPausesAndResumesOnce(t *testing.T) {
	a := offsets.TopicPartition{Topic: "t", Partition: 0}
	bg := New(10)
	if pause, _ := bg.SetStuck(a, true); !pause {
		t.Fatal("stuck did not pause")
	}
	if pause, resume := bg.SetStuck(a, true); pause || resume {
		t.Fatal("stuck twice changed the fetch state again")
	}
	bg.Charge(a, 20)
	bg.Release(a, 20)
	if bg.StuckCount() != 1 {
		t.Fatal("the budget cleared a stuck pause")
	}
	if _, resume := bg.SetStuck(a, false); !resume {
		t.Fatal("not resumed when unstuck")
	}
	if _, resume := bg.SetStuck(a, false); resume {
		t.Fatal("resumed twice")
	}
}

func TestBudgetForgetReleasesEverything(t *testing.T) {
	a, b := offsets.TopicPartition{Topic: "t", Partition: 0}, offsets.TopicPartition{Topic: "t", Partition: 1}
	bg := New(100)
	bg.Charge(b, 40)
	bg.Charge(a, 70)
	bg.SetStuck(a, true)
	was, under := bg.Forget(a)
	if !was || !under {
		t.Fatalf("forget reported paused=%v under=%v, want both: a was stuck and the total fell to 40", was, under)
	}
	if bg.total != 40 || bg.StuckCount() != 0 {
		t.Fatalf("total %d stuck %d, want 40 and 0", bg.total, bg.StuckCount())
	}
}

// TestCostsChargeWhatIsPinned: a queued record costs its payload plus the structures franz-go keeps for
// it, each header its own struct and bytes; a row costs its estimated values plus its struct copies, its
// key and one interface per value; a tracker entry costs its struct, twice for the slice's growth.
func TestCostsChargeWhatIsPinned(t *testing.T) {
	r := &kgo.Record{Key: []byte("device-1"), Value: make([]byte, 141)}
	if got, want := RecordCost(r), RecordOverhead+8+141; got != want {
		t.Errorf("record cost %d, want %d", got, want)
	}
	if RecordOverhead < 160 {
		t.Errorf("record overhead %d is below the size of a kgo.Record alone", RecordOverhead)
	}
	withHeader := *r
	withHeader.Headers = []kgo.RecordHeader{{Key: "trace", Value: []byte("abc")}}
	if got, want := RecordCost(&withHeader)-RecordCost(r), HeaderOverhead+5+3; got != want {
		t.Errorf("a header costs %d, want %d", got, want)
	}
	row := batcher.Row{Key: "device-1", Packed: make([]byte, 70, 80), Size: 90}
	if got, want := RowCost(&row), RowOverhead+80+8; got != want {
		t.Errorf("row cost %d, want %d", got, want)
	}
}
