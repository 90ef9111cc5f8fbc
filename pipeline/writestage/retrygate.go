package writestage

import (
	"time"

	"github.com/bucketsink/sink/batcher"
)

// tableGate paces the write stage's retries of the batches of one table. Without it every failed batch
// would be retried on a schedule of its own: a table that is missing while a high-cardinality topic has
// thousands of batches buffered for it would be asked thousands of times per backoff period, by requests
// that are all bound to fail the same way. Through the gate, while the table fails, one retried batch at a
// time is sent (the probe), the probes spaced by the backoff of the table's failed probes in a row; once a
// probe is written the gate opens and every waiting batch is sent, as slots allow.
//
// The gate is a pure state machine: its decisions (fail, leave, admit) are given the time and the backoff,
// and are tested alone (retrygate_test.go). A gate lives while batches of its table are being retried
// (waiters > 0); the stage keeps it, with the channel that wakes its waiters, in a gateEntry under gatesMu.
type tableGate struct {
	waiters  int       // batches of the table in the retry path
	failures int       // failed probes in a row (and the first failure): the backoff's retry number
	next     time.Time // no probe before this
	open     bool      // a probe was written: waiting batches go without probing
	probing  bool      // a batch is being sent as the probe
}

// fail records that a batch of the table was given back unwritten at now and will be retried: joined
// says it joins the waiters now (its first failure), probe that it was sent as the probe. When the
// table was thought to work (its first failure, a failed probe, or a failure after the gate opened) the
// next probe is pushed back by delay of one more failure.
func (g *tableGate) fail(joined, probe bool, now time.Time, delay func(retry int) time.Duration) {
	if joined {
		g.waiters++
	}
	if probe || g.open || g.failures == 0 {
		g.failures++
		g.next = now.Add(delay(g.failures))
		g.open = false
	}
	if probe {
		g.probing = false
	}
}

// leave records that a retried batch left the retry path: written (ok, which opens the gate), handed to
// the dead-letter topic, or abandoned; probe says it was the probe. It reports whether it was the last
// one out: the gate is then to be removed.
func (g *tableGate) leave(probe, ok bool) (last bool) {
	if probe {
		g.probing = false
	}
	if ok {
		g.open = true
		g.failures = 0
	}
	g.waiters--
	return g.waiters == 0
}

// admit says whether a waiting batch may be sent at now: the gate is open, or no probe is under way and
// the backoff has passed, and then it goes as the probe.
func (g *tableGate) admit(now time.Time) (send, probe bool) {
	if g.open {
		return true, false
	}
	if !g.probing && !now.Before(g.next) {
		g.probing = true
		return true, true
	}
	return false, false
}

// gateEntry is a table's gate with the channel that wakes the batches waiting on it.
type gateEntry struct {
	tableGate
	changed chan struct{} // closed, and replaced, when the gate's state changes
}

// signal wakes every batch waiting on the gate to look at it again.
func (g *gateEntry) signal() {
	close(g.changed)
	g.changed = make(chan struct{})
}

// tableOf names a batch's table, the key of its gate.
func tableOf(b *batcher.Batch) string { return b.Target.Keyspace + "." + b.Target.Table }

// gateFailed records that rb was given back unwritten and will be retried (tableGate.fail), marking it as
// in the retry path and as no longer the probe.
func (s *Stage) gateFailed(rb *readyBatch) {
	table := tableOf(rb.b)
	s.gatesMu.Lock()
	defer s.gatesMu.Unlock()
	g := s.gates[table]
	if g == nil {
		g = &gateEntry{changed: make(chan struct{})}
		s.gates[table] = g
	}
	g.fail(!rb.retried, rb.probe, time.Now(), s.cfg.Backoff.Delay)
	rb.retried, rb.probe = true, false
	g.signal()
}

// gateLeft records that a retried batch left the retry path (tableGate.leave). The last one out removes
// the gate.
func (s *Stage) gateLeft(rb readyBatch, ok bool) {
	if !rb.retried {
		return
	}
	table := tableOf(rb.b)
	s.gatesMu.Lock()
	defer s.gatesMu.Unlock()
	g := s.gates[table]
	last := g.leave(rb.probe, ok)
	g.signal()
	if last {
		delete(s.gates, table)
	}
}

// retryLater sends a batch again once its table's gate lets it (see tableGate), without holding a write
// slot while it waits. It gives up, leaving the rows unwritten and not done (the next owner or the next
// start replays them), when the stage is hard-stopped, the process starts stopping, or every partition of
// the batch's rows was given up.
func (s *Stage) retryLater(rb readyBatch, attempt int) {
	s.wg.Add(1) // called from a goroutine the group counts, so never an Add racing Wait at zero
	go func() {
		defer s.wg.Done()
		table := tableOf(rb.b)
		for s.ctx.Err() == nil && !s.cfg.Stopping() {
			// Wait on an owner still assigned: a batch mixes Kafka partitions, and the context of one
			// already given up is done for good, so waiting on it would turn this loop into a spin.
			owner := ownedBy(rb.owners)
			if owner == nil {
				break
			}
			revoked := owner.Context().Done()
			s.gatesMu.Lock()
			g := s.gates[table]
			send, probe := g.admit(time.Now())
			if probe {
				rb.probe = true
			}
			changed, next, probing := g.changed, g.next, g.probing
			s.gatesMu.Unlock()
			if send {
				select {
				case s.slots <- struct{}{}:
					s.write(rb, attempt+1)
					return
				case <-s.ctx.Done():
				}
				break
			}
			var timeout <-chan time.Time
			var t *time.Timer
			if !probing {
				t = time.NewTimer(time.Until(next))
				timeout = t.C
			}
			select {
			case <-changed:
			case <-timeout:
			case <-s.ctx.Done():
			case <-revoked:
			}
			if t != nil {
				t.Stop()
			}
		}
		eachOwner(rb.b, rb.owners, nil, func(p Owner, offsets []int64) { p.WriteAbandoned(offsets, rb.b.Target.Entry) })
		s.gateLeft(rb, false)
		batcher.Release(rb.b)
		putOwners(rb.owners)
	}()
}
