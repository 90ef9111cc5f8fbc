package writestage

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bucketsink/sink/batcher"
)

// t0 is the policy tests' time zero; every instant is an offset from it.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// testLinger is the linger of the policy tests' batcher.
const testLinger = 10 * time.Millisecond

// policyHarness drives a slotPolicy as Stage.Run would, at instants given as offsets from t0, and
// checks its decisions.
type policyHarness struct {
	t      *testing.T
	p      *slotPolicy
	owners map[int32]*fakeOwner
	off    int64
}

// policyOf is the shape of a policy under test: batches close at maxRows, maxInFlight write slots,
// requests joined by group up to joinMax partitions (group nil: not joined).
type policyOf struct {
	maxRows, maxInFlight int
	group                func([]*batcher.Batch) []*batcher.Batch
	joinMax              int
}

func newPolicyHarness(t *testing.T, of policyOf) *policyHarness {
	p := newSlotPolicy(batcher.Config{MaxRows: of.maxRows, Linger: testLinger}, of.maxInFlight, of.group, of.joinMax)
	return &policyHarness{t: t, p: p, owners: map[int32]*fakeOwner{}}
}

// add hands the policy one row per key of Kafka partition part, arrived at at.
func (h *policyHarness) add(at time.Duration, part int32, keys ...string) {
	o := h.owners[part]
	if o == nil {
		o = newOwner(part)
		h.owners[part] = o
	}
	var rows []batcher.Row
	for _, k := range keys {
		rows = append(rows, row(o, k, h.off))
		h.off++
	}
	h.p.add(o, rows, t0.Add(at))
}

// next takes a slot at at, with inFlight slots taken (this one included), and checks the request sent
// on it by the keys of its rows, in order; no keys: nothing is to be sent and the slot goes back.
func (h *policyHarness) next(at time.Duration, inFlight int, budgetFull bool, want ...string) {
	h.t.Helper()
	rb, ok := h.p.next(t0.Add(at), inFlight, budgetFull)
	var got []string
	if ok {
		for i := range rb.b.Rows {
			if k := rb.b.Rows[i].Key; !slices.Contains(got, k) {
				got = append(got, k)
			}
		}
	}
	if !slices.Equal(got, want) || ok != (len(want) > 0) {
		h.t.Errorf("slot at %v (%d in flight, budget full %v): sent %s, want %s", at, inFlight, budgetFull, keysOf(ok, got), keysOf(len(want) > 0, want))
	}
}

func keysOf(sent bool, keys []string) string {
	if !sent {
		return "nothing"
	}
	return "[" + strings.Join(keys, " ") + "]"
}

// offer checks whether the policy offers to take a slot at at with inFlight slots taken.
func (h *policyHarness) offer(at time.Duration, inFlight int, wantTake, wantHold bool) {
	h.t.Helper()
	take, hold := h.p.offer(t0.Add(at), inFlight)
	if take != wantTake || hold != wantHold {
		h.t.Errorf("offer at %v (%d in flight): take %v, hold partial %v; want %v, %v", at, inFlight, take, hold, wantTake, wantHold)
	}
}

// never is an offset that stands for the zero time: a timer stopped.
const never = time.Duration(-1)

func instant(d time.Duration) time.Time {
	if d == never {
		return time.Time{}
	}
	return t0.Add(d)
}

// wake checks when the policy sets the timer, armed at armed, after an offer that held partial batches
// back (holdPartial) or not: at wantAt, or left as it is (wantChange false).
func (h *policyHarness) wake(holdPartial bool, armed, wantAt time.Duration, wantChange bool) {
	h.t.Helper()
	at, change := h.p.wake(holdPartial, instant(armed))
	if change != wantChange || (change && !at.Equal(instant(wantAt))) {
		h.t.Errorf("wake (armed %v, holding partial %v): at %v, change %v; want %v, %v", armed, holdPartial, at.Sub(t0), change, wantAt, wantChange)
	}
}

// check fails unless the policy has ready requests waiting for a slot, held ones, and open rows.
func (h *policyHarness) check(ready, held, open int) {
	h.t.Helper()
	if len(h.p.ready) != ready || len(h.p.held) != held || h.p.b.Rows() != open {
		h.t.Errorf("%d requests ready, %d held, %d rows open; want %d, %d, %d", len(h.p.ready), len(h.p.held), h.p.b.Rows(), ready, held, open)
	}
}

// TestSlotPolicyOffersASlotOnlyWithSomethingToSend: a full batch takes a slot however many writes are in
// flight; due batches only while at most half the slots are taken, or once overdue; nothing open, or
// open and not yet due, takes none.
func TestSlotPolicyOffersASlotOnlyWithSomethingToSend(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(h *policyHarness)
	}{
		{"nothing buffered", func(h *policyHarness) {
			h.offer(time.Second, 0, false, false)
		}},
		{"a full batch, every slot but one taken", func(h *policyHarness) {
			h.add(0, 0, "a", "a")
			h.offer(time.Millisecond, 3, true, false)
		}},
		{"an open batch the timer has not found due", func(h *policyHarness) {
			h.add(0, 0, "a")
			h.offer(time.Millisecond, 0, false, false)
		}},
		{"due, few writes in flight", func(h *policyHarness) {
			h.add(0, 0, "a")
			h.p.timerFired()
			h.offer(testLinger, 1, true, false)
		}},
		{"due, half the slots taken: held back to fill", func(h *policyHarness) {
			h.add(0, 0, "a")
			h.p.timerFired()
			h.offer(testLinger, 2, false, true)
		}},
		{"due and overdue, half the slots taken", func(h *policyHarness) {
			h.add(0, 0, "a")
			h.p.timerFired()
			h.offer(testLinger+overdue, 2, true, false)
		}},
		{"a held request, half the slots taken, then overdue", func(h *policyHarness) {
			h.p.group, h.p.joinMax = joinBy(1), 10
			h.add(0, 0, "a", "b")
			h.p.timerFired()
			h.next(testLinger, 1, false, "a")
			h.check(0, 1, 0)
			h.offer(testLinger, 2, false, true)
			h.offer(testLinger+overdue, 2, true, false)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(newPolicyHarness(t, policyOf{maxRows: 2, maxInFlight: 4}))
		})
	}
}

// TestSlotPolicyPicksTheRequestForEachSlot: which request a slot takes, in the order of the rules: full
// batches first; held requests when no full batch waits; a batch past the starve bound behind the full
// batches, one such take at a time; due batches joined up to JoinMax, the requests Group could not join
// into the first held; with busy writers and a full budget, the most rows for the wait.
func TestSlotPolicyPicksTheRequestForEachSlot(t *testing.T) {
	for _, tc := range []struct {
		name string
		of   policyOf
		run  func(h *policyHarness)
	}{
		{"a full batch before an older due one", policyOf{maxRows: 2, maxInFlight: 4}, func(h *policyHarness) {
			h.add(0, 0, "a")
			h.add(5*time.Millisecond, 0, "b", "b")
			h.p.timerFired()
			h.next(20*time.Millisecond, 1, false, "b")
			h.check(0, 0, 1)
			h.next(20*time.Millisecond, 1, false, "a")
		}},
		{"the oldest due cohort, topped up with the next due batches to JoinMax", policyOf{maxRows: 10, maxInFlight: 4, group: joinBy(10), joinMax: 3}, func(h *policyHarness) {
			h.add(0, 0, "a", "b")
			h.add(time.Millisecond, 0, "c", "d")
			h.next(testLinger+time.Millisecond, 1, false, "a", "b", "c")
			h.check(0, 0, 1)
		}},
		{"requests Group could not join: the first goes, the others are held until no full batch waits", policyOf{maxRows: 2, maxInFlight: 4, group: joinBy(2), joinMax: 10}, func(h *policyHarness) {
			h.add(0, 0, "a", "b", "c", "d")
			h.next(testLinger, 1, false, "a", "b")
			h.check(0, 1, 0)
			h.add(testLinger, 1, "f", "f")
			h.next(testLinger, 1, false, "f")
			h.next(testLinger, 1, false, "c", "d")
		}},
		{"a held request past the starve bound goes behind the full batches waiting", policyOf{maxRows: 2, maxInFlight: 4, group: joinBy(1), joinMax: 10}, func(h *policyHarness) {
			h.add(0, 0, "a", "b")
			h.next(testLinger, 1, false, "a")
			h.add(starve, 1, "f", "f", "g", "g")
			h.next(testLinger+starve+time.Millisecond, 1, false, "f")
			h.check(2, 0, 0) // g, then b marked starved
			h.next(testLinger+starve+time.Millisecond, 1, false, "g")
			h.next(testLinger+starve+time.Millisecond, 1, false, "b")
		}},
		{"without a Group each due batch is a request, oldest first", policyOf{maxRows: 10, maxInFlight: 4}, func(h *policyHarness) {
			h.add(0, 0, "a")
			h.add(time.Millisecond, 0, "b")
			h.next(20*time.Millisecond, 1, false, "a") // b is not of a's cohort: it was not due at a's time
			h.check(0, 0, 1)
			h.next(20*time.Millisecond, 1, false, "b")
		}},
		{"busy writers and a full budget: the most rows for the wait", policyOf{maxRows: 10, maxInFlight: 4}, func(h *policyHarness) {
			h.add(0, 0, "a")
			h.add(time.Millisecond, 0, "b", "b", "b")
			h.next(20*time.Millisecond, 3, true, "b")
			h.check(0, 0, 1)
		}},
		{"busy writers and room in the budget: arrival order", policyOf{maxRows: 10, maxInFlight: 4}, func(h *policyHarness) {
			h.add(0, 0, "a")
			h.add(time.Millisecond, 0, "b", "b", "b")
			h.next(20*time.Millisecond, 3, false, "a")
		}},
		{"past the starve bound the oldest goes next, behind the full batches, one take at a time", policyOf{maxRows: 2, maxInFlight: 4}, func(h *policyHarness) {
			h.add(0, 0, "a")
			h.add(time.Millisecond, 0, "c")
			h.add(starve, 1, "f", "f", "g", "g")
			at := testLinger + starve + 2*time.Millisecond
			h.next(at, 3, true, "f")
			h.check(2, 0, 1) // g, then a marked starved; c stays open
			if !h.p.starving {
				h.t.Error("the starved take is not marked as waiting")
			}
			h.next(at, 3, true, "g")
			h.check(1, 0, 1) // the starved take waits: no second one while it does
			h.next(at, 3, true, "a")
			if h.p.starving {
				h.t.Error("the starved take is sent, yet still marked as waiting")
			}
			h.next(at, 3, true, "c")
		}},
		{"nothing due after all: the slot goes back and the timer's work is done", policyOf{maxRows: 2, maxInFlight: 4}, func(h *policyHarness) {
			h.add(0, 0, "a")
			h.p.timerFired()
			h.next(time.Millisecond, 1, false)
			if h.p.due {
				h.t.Error("still due after a slot found nothing to send")
			}
		}},
		{"a new assignment of a partition flushes what the old one left", policyOf{maxRows: 10, maxInFlight: 4}, func(h *policyHarness) {
			h.add(0, 0, "a")
			old := h.owners[0]
			h.owners[0] = nil // the partition assigned again: a new owner
			h.add(time.Millisecond, 0, "b")
			h.check(1, 0, 1)
			if rb := h.p.ready[0]; rb.owners[0] != old {
				h.t.Error("the old assignment's row is not resolved to its owner")
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(newPolicyHarness(t, tc.of))
		})
	}
}

// TestSlotPolicySetsTheTimer: the timer is set for when the oldest open batch becomes due, or the oldest
// held request overdue if that is sooner, stopped when nothing waits, and left alone when already right;
// while due batches wait for a slot it is set only when they are held back, for when they become overdue.
func TestSlotPolicySetsTheTimer(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(h *policyHarness)
	}{
		{"nothing open, stopped", func(h *policyHarness) {
			h.wake(false, never, never, false)
		}},
		{"nothing open, armed: stopped", func(h *policyHarness) {
			h.wake(false, time.Second, never, true)
		}},
		{"an open batch: when it is due", func(h *policyHarness) {
			h.add(5*time.Millisecond, 0, "a")
			h.wake(false, never, 5*time.Millisecond+testLinger, true)
		}},
		{"armed for when it is due already", func(h *policyHarness) {
			h.add(5*time.Millisecond, 0, "a")
			h.wake(false, 5*time.Millisecond+testLinger, 0, false)
		}},
		{"due, not held back: left for the slot", func(h *policyHarness) {
			h.add(0, 0, "a")
			h.p.timerFired()
			h.wake(false, never, 0, false)
		}},
		{"due, held back: when it becomes overdue", func(h *policyHarness) {
			h.add(0, 0, "a")
			h.p.timerFired()
			h.wake(true, never, testLinger+overdue, true)
		}},
		{"a held request sooner overdue than the next batch is due", func(h *policyHarness) {
			h.p.group, h.p.joinMax = joinBy(1), 10
			h.add(0, 0, "a", "b")
			h.next(testLinger, 1, false, "a")
			h.add(200*time.Millisecond, 0, "c")
			h.wake(false, never, testLinger+overdue, true)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(newPolicyHarness(t, policyOf{maxRows: 2, maxInFlight: 4}))
		})
	}
}
