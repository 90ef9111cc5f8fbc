package writestage

import (
	"time"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/pipeline/offsets"
)

// slotPolicy decides, for the stage's goroutine, which batch takes each write slot and when: it owns the
// batcher and the requests taken out of it that wait for a slot. It is a pure state machine (no goroutine,
// no channel, no clock: every decision is given the time and the slots in flight), so every rule below is
// tested without a writer or real time (policy_test.go); Stage.Run only moves data between it, the
// workers' channel, the timer and the writers.
//
// The rules, in the order a slot applies them: full (or flushed) batches first, oldest first; requests of
// an earlier due take held back (see held) next, once no full batch waits or once past the starve bound;
// then the oldest due batches, joined by Config.Group up to Config.JoinMax partitions, while few writes
// are in flight (partial) or the byte budget has room; with busy writers and a full budget, the batch
// that carries the most rows for its wait (batcher.Pick). A batch past its linger by starve goes next
// whatever the budget, behind the full batches. Due batches take a slot only while at most partial
// writes are in flight, unless they are overdue: under load they keep filling instead of going out small.
type slotPolicy struct {
	b      *batcher.Batcher
	owners map[offsets.TopicPartition]Owner // the assignment each buffered row belongs to; see take
	ready  []readyBatch                     // out of the batcher, waiting for a slot, oldest first
	// held are the requests of a due take beyond its first (Group made more than one of them): partial
	// batches, so they wait for a slot on the terms due batches do, oldest first, ahead of later ones.
	held     []readyBatch
	starving bool // the last request of a starve take waits in ready
	due      bool // the timer fired: due batches wait for a slot
	// partial is how many writes may be in flight for a batch that is not full to be sent: above it,
	// partial batches keep filling until a write finishes or they are overdue.
	partial int
	group   func([]*batcher.Batch) []*batcher.Batch // Config.Group; nil: every batch is a request
	joinMax int                                     // Config.JoinMax
	// taken, when set, is told of every batch taken out of the batcher and how long its first row waited
	// there (sink_stage_seconds{stage="batched"}).
	taken func(waited time.Duration)
}

// newSlotPolicy returns the policy of a stage of maxInFlight write slots.
func newSlotPolicy(cfg batcher.Config, maxInFlight int, group func([]*batcher.Batch) []*batcher.Batch, joinMax int) *slotPolicy {
	return &slotPolicy{
		b:       batcher.New(cfg),
		owners:  make(map[offsets.TopicPartition]Owner),
		partial: max(1, maxInFlight/2),
		group:   group,
		joinMax: joinMax,
	}
}

// readyBatch is a batch with the assignment of each of its rows, resolved when it left the batcher.
type readyBatch struct {
	b      *batcher.Batch
	owners []Owner
	// retried: the batch was given back unwritten and waits on its table's gate; probe: it is the one
	// batch of its table sent to find out whether the table works again (tableGate).
	retried, probe bool
	// starved: the last request of a starve take (see slotPolicy.next); the next such take waits until it is sent.
	starved bool
	taken   time.Time // when it left the batcher
}

// overdue is how long past its linger a batch may wait for a slot while full batches keep taking them.
const overdue = 100 * time.Millisecond

// starve bounds how long past its linger a row may be held while the byte budget is full: the oldest
// batch then goes next, behind the full batches already waiting for a slot. Picking by rows × age makes
// a sparse partition wait longer than arrival order would, and the commit watermark waits with it; every
// record behind the watermark keeps its tracker entry charged to the budget, so a long hold also shrinks
// what the batches can hold.
const starve = 3 * time.Second

// empty reports whether no request waits for a slot (the batcher may still hold open batches).
func (p *slotPolicy) empty() bool { return len(p.ready) == 0 && len(p.held) == 0 }

// timerFired records that the timer set at wake went off: due batches wait for a slot.
func (p *slotPolicy) timerFired() { p.due = true }

// offer says whether the stage offers to take a write slot at now, with inFlight slots taken: only with
// something to send, a full (or flushed) batch, or due batches when few writes are in flight or they
// have waited long enough. holdPartial reports due batches held back because many writes are in flight.
func (p *slotPolicy) offer(now time.Time, inFlight int) (take, holdPartial bool) {
	switch {
	case len(p.ready) > 0:
		return true, false
	case p.due || len(p.held) > 0:
		if inFlight < p.partial || p.overdue(now) || p.heldOverdue(now) {
			return true, false
		}
		return false, true
	}
	return false, false
}

// next returns the request to send on the slot just taken at now (inFlight counts it) and takes it out
// of the policy, or false when there is nothing to send after all (the slot is to be given back).
// budgetFull reports whether the byte budget is full.
func (p *slotPolicy) next(now time.Time, inFlight int, budgetFull bool) (readyBatch, bool) {
	if len(p.ready) == 0 && len(p.held) > 0 {
		// The requests an earlier due take left are older than anything the batcher holds.
		p.ready = append(p.ready, p.popHeld())
	} else if len(p.held) > 0 && !p.starving && now.Sub(p.held[0].taken) > starve {
		// A held request past the starve bound goes behind the full batches waiting, as a starved batch
		// does: held requests are served only when no full batch waits, which a steady stream of them (a
		// hot partition) never allows.
		rb := p.popHeld()
		rb.starved = true
		p.ready = append(p.ready, rb)
		p.starving = true
	} else if next, ok := p.b.NextDue(); ok && !next.After(now) {
		switch {
		case now.Sub(next) > starve && !p.starving:
			// The oldest batch goes next, before any other partial batch; full batches already waiting for
			// a slot stay ahead of it (they are as old, and they carry the most rows). The next due batches
			// go with it, joined, as for due batches below: what starves is mostly cold partitions of a row
			// or two, and sent one request each they were a third of a backlog's requests for 3% of its rows
			// (TestBacklogStarvedPartitionsShareRequests). One such request waits at a time: in a long
			// backlog the oldest batch is past the bound all the time, and a take on every slot, full
			// batches waiting or not, took batches out to wait in the queue instead of filling
			// (TestStarvedRequestsWaitOneAtATime). Every request of the take goes behind the full batches,
			// none held: held, the ones Group could not join into the first would wait until no full batch
			// does.
			p.take(now, p.joinDue([]*batcher.Batch{p.b.Oldest()}, now)...)
			p.ready[len(p.ready)-1].starved = true // the take waits until its last request goes
			p.starving = true
		case len(p.ready) > 0:
			// Full batches are the best use of a slot.
		case inFlight <= p.partial || !budgetFull:
			// The oldest due batches (those whose rows arrived together) and, while they are fewer than a
			// request may join, the next due batches up to that many: one request's worth, joined into as
			// few requests as their coordinators allow (a request of ten small partitions costs Cassandra
			// far less than ten requests). The other due batches keep filling while this slot is busy, and
			// wait for the next slot the rules above give. When Group makes several requests of them (their
			// coordinators differ, or they exceed what one request may carry), this slot takes the first
			// and the others are held: they are partial too, so they take slots only as due batches may,
			// and at most half the slots carry partial batches whatever the ring.
			p.takeFirstHoldRest(now, p.joinDue(p.b.Due(next), now))
		default:
			// Busy writers and a full byte budget: the sink is behind (a backlog, or Cassandra slower than
			// the input) and holds all it may. Send the batch that carries the most rows for the wait (see
			// batcher.Pick); every request then does more, and the backlog drains sooner. Below the
			// budget, arrival order keeps latency low.
			if bt := p.b.Pick(now); bt != nil {
				p.take(now, bt)
			}
		}
	}
	p.due = false
	if len(p.ready) == 0 {
		return readyBatch{}, false
	}
	rb := p.ready[0]
	p.ready[0] = readyBatch{}
	p.ready = p.ready[1:]
	if rb.starved {
		p.starving = false
	}
	return rb, true
}

// wake returns when the stage's timer is to go off, given the deadline it is armed for (zero: stopped)
// and whether the last offer held partial batches back, and whether that differs from armed (the
// stage then sets the timer to it, or stops it for a zero time).
//
// Held requests wait for a slot while many writes are in flight: the stage wakes up when the oldest is
// overdue. That is armed whenever one is held, also on the pass that held it (a slot was offered there),
// or nothing but a finished write or a new message would wake the stage for it. While due batches wait
// for a slot the timer's work is done, unless they are held back while many writes are in flight: then
// the stage wakes up when the oldest becomes overdue.
func (p *slotPolicy) wake(holdPartial bool, armed time.Time) (at time.Time, change bool) {
	var heldWake time.Time
	if len(p.held) > 0 {
		heldWake = p.held[0].taken.Add(overdue)
	}
	if p.due {
		if !holdPartial || !armed.IsZero() {
			return armed, false
		}
		wake := heldWake
		if next, ok := p.b.NextDue(); ok && (wake.IsZero() || next.Add(overdue).Before(wake)) {
			wake = next.Add(overdue)
		}
		return wake, !wake.IsZero()
	}
	next, ok := p.b.NextDue()
	if !heldWake.IsZero() && (!ok || heldWake.Before(next)) {
		next, ok = heldWake, true
	}
	switch {
	case !ok && !armed.IsZero():
		return time.Time{}, true
	case ok && !next.Equal(armed):
		return next, true
	}
	return armed, false
}

// overdue reports whether the oldest open batch has waited past its linger by overdue or more: the timer
// set for that moment finds it overdue. With a strict comparison a timer that fired exactly then found it
// not overdue, and was set again for that same moment, at once: the stage spun until the clock moved on
// (under testing/synctest it never does).
func (p *slotPolicy) overdue(now time.Time) bool {
	next, ok := p.b.NextDue()
	return ok && now.Sub(next) >= overdue
}

// heldOverdue reports whether the oldest held request has waited for a slot overdue or more since it
// left the batcher (it was due then), as overdue does for open batches.
func (p *slotPolicy) heldOverdue(now time.Time) bool {
	return len(p.held) > 0 && now.Sub(p.held[0].taken) >= overdue
}

// joinDue returns the requests of due batches bs (the oldest open ones). With a Group, bs is topped up
// with the next due batches to what one request may join (Config.JoinMax) and joined; without one,
// each batch is a request of its own.
func (p *slotPolicy) joinDue(bs []*batcher.Batch, now time.Time) []*batcher.Batch {
	if p.group == nil {
		return bs
	}
	if len(bs) < p.joinMax {
		bs = append(bs, p.b.DueN(now, p.joinMax-len(bs))...)
	}
	return p.group(bs)
}

// takeFirstHoldRest takes the requests rs of a due take for the slot just taken: with a Group, the first
// goes on this slot and the others are held (see held); without one, all are ready, as before requests
// were joined.
func (p *slotPolicy) takeFirstHoldRest(now time.Time, rs []*batcher.Batch) {
	if p.group == nil || len(rs) <= 1 {
		p.take(now, rs...)
		return
	}
	p.take(now, rs[0])
	n := len(p.ready)
	p.take(now, rs[1:]...)
	p.held = append(p.held, p.ready[n:]...)
	clear(p.ready[n:])
	p.ready = p.ready[:n]
}

// popHeld removes and returns the oldest held request.
func (p *slotPolicy) popHeld() readyBatch {
	rb := p.held[0]
	p.held[0] = readyBatch{}
	p.held = p.held[1:]
	return rb
}

// add puts rows of owner's partition into the batcher at now; batches that fill up become ready. The
// rows are copied: the caller may reuse the slice.
func (p *slotPolicy) add(owner Owner, rows []batcher.Row, now time.Time) {
	// Rows are mapped back to their assignment by partition when a batch leaves the batcher, so the
	// batcher must never hold rows of two assignments of one partition. A revoke flushes before the
	// partition can be assigned again; a lost partition does not, so a new assignment's first rows flush
	// out whatever the old one left.
	if old, ok := p.owners[owner.TopicPartition()]; ok && old != owner {
		p.flushAll(now)
	}
	p.owners[owner.TopicPartition()] = owner
	for i := range rows {
		p.take(now, p.b.Add(&rows[i], now)...)
	}
}

// flushAll takes every open batch out of the batcher. The batcher is then empty, so no row needs an owner
// resolved any more: forgetting them all keeps a revoked partition (its tracker, its queue) from staying
// reachable from the stage until another assignment of the same partition replaces it.
func (p *slotPolicy) flushAll(now time.Time) {
	p.ready = append(p.ready, p.held...) // a flush sends everything: held requests wait no more
	clear(p.held)
	p.held = p.held[:0]
	p.take(now, p.joinAll(p.b.Flush())...)
	clear(p.owners)
}

// joinAll joins batches taken out of the batcher together into fewer requests, when there is a Group.
func (p *slotPolicy) joinAll(bs []*batcher.Batch) []*batcher.Batch {
	if p.group == nil {
		return bs
	}
	return p.group(bs)
}

// take moves batches out of the batcher into the ready queue, resolving the owner of every row now, while
// the batcher holds only rows of current assignments.
func (p *slotPolicy) take(now time.Time, bs ...*batcher.Batch) {
	for _, b := range bs {
		owners := getOwners(len(b.Rows))
		var last Owner
		tp := offsets.TopicPartition{Topic: b.Target.Topic} // every row of a batch is of its Target's topic
		for i := range b.Rows {
			if part := b.Rows[i].Partition; last == nil || tp.Partition != part {
				tp.Partition = part
				last = p.owners[tp]
			}
			owners[i] = last
		}
		if p.taken != nil {
			p.taken(max(now.Sub(b.First), 0))
		}
		p.ready = append(p.ready, readyBatch{b: b, owners: owners, taken: now})
	}
}
