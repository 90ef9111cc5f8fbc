package pipeline

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/cassandra"
)

// BatchWriter writes one single-partition batch. *cassandra.Writer implements it; tests and benchmarks
// plug in their own. A nil error means every row not listed in the failures was written; a non-nil error
// means nothing of the batch may be acknowledged.
type BatchWriter interface {
	Write(ctx context.Context, b *batcher.Batch) ([]cassandra.RowFailure, error)
}

// writeStage owns the batcher. One goroutine feeds it from a bounded channel and hands batches to writer
// goroutines, at most maxInFlight at a time: full batches as soon as a slot is free, due ones (linger
// passed, on a single reused timer) likewise. While every slot is taken, due batches stay in the batcher
// and keep growing, so under load batches fill up instead of going out small: the batch size adapts to
// what Cassandra absorbs. The stage keeps taking rows meanwhile; memory stays bounded by the byte budget,
// at which the poll loop stops polling. Workers block only when the channel is full, never the poll loop.
type writeStage struct {
	pl     *Pipeline
	in     chan writeMsg
	b      *batcher.Batcher
	owners map[topicPartition]*partition // the assignment each buffered row belongs to; see take
	ready  []readyBatch                  // out of the batcher, waiting for a slot, oldest first
	due    bool                          // the timer fired: due batches wait for a slot
	slots  chan struct{}
	// partial is how many writes may be in flight for a batch that is not full to be sent: above it,
	// partial batches keep filling until a write finishes (freed) or they are overdue.
	partial int
	freed   chan struct{}   // a write finished and gave its slot back
	jobs    chan readyBatch // batches for the writer goroutines, one per slot taken
	wg      sync.WaitGroup  // writer goroutines
	ctx     context.Context // canceled at hard stop: in-flight writes give up
	done    chan struct{}   // closed when run returns
}

// readyBatch is a batch with the assignment of each of its rows, resolved when it left the batcher.
type readyBatch struct {
	b      *batcher.Batch
	owners []*partition
}

// overdue is how long past its linger a batch may wait for a slot while full batches keep taking them.
const overdue = 100 * time.Millisecond

// starve bounds how long past its linger a row may be held while the byte budget is full: the oldest
// batch then goes next, behind the full batches already waiting for a slot. Picking by rows × age makes
// a sparse partition wait longer than arrival order would, and the commit watermark waits with it; every
// record behind the watermark keeps its tracker entry charged to the budget, so a long hold also shrinks
// what the batches can hold.
const starve = 3 * time.Second

func newWriteStage(pl *Pipeline, ctx context.Context, cfg batcher.Config, maxInFlight int) *writeStage {
	return &writeStage{
		pl:      pl,
		in:      make(chan writeMsg, 2*maxInFlight),
		b:       batcher.New(cfg),
		owners:  make(map[topicPartition]*partition),
		slots:   make(chan struct{}, maxInFlight),
		jobs:    make(chan readyBatch, maxInFlight),
		partial: max(1, maxInFlight/2),
		freed:   make(chan struct{}, 1),
		ctx:     ctx,
		done:    make(chan struct{}),
	}
}

// run is the stage's goroutine. When in is closed it writes out what it holds and returns; when ctx ends
// it returns at once, leaving what it holds unwritten (and unacknowledged).
func (s *writeStage) run() {
	defer close(s.done)
	// maxInFlight writer goroutines for the stage's life: a batch taken a slot for goes to one of them.
	// One goroutine per write cost a goroutine start and the growth of its stack to the driver's depth,
	// every batch. Closing jobs lets them finish what was handed to them and exit.
	for range cap(s.slots) {
		s.wg.Add(1)
		go s.writer()
	}
	defer close(s.jobs)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var armed time.Time // the deadline the timer is set for; zero when stopped
	in := s.in
	for {
		if in == nil && len(s.ready) == 0 {
			return // closed and everything handed to writers
		}
		// Offer to take a slot only with something to send: a full (or flushed) batch, or due batches
		// when few writes are in flight or they have waited long enough.
		var slot chan struct{}
		holdPartial := false
		if len(s.ready) > 0 {
			slot = s.slots
		} else if s.due {
			if len(s.slots) < s.partial || s.overdue(s.pl.now()) {
				slot = s.slots
			} else {
				holdPartial = true
			}
		}
		select {
		case <-s.ctx.Done():
			timer.Stop()
			return
		case <-s.freed:
			// A slot came back: look again at what may be sent.
		case m, ok := <-in:
			if !ok {
				in = nil
				s.take(s.b.Flush()...)
				break
			}
			if m.flush != nil {
				s.take(s.b.Flush()...)
				close(m.flush)
				break
			}
			s.add(m)
		case <-timer.C:
			armed = time.Time{}
			s.due = true
		case slot <- struct{}{}:
			now := s.pl.now()
			if next, ok := s.b.NextDue(); ok && !next.After(now) {
				switch {
				case now.Sub(next) > starve:
					// The oldest batch goes next, before any other partial batch; full batches already
					// waiting for a slot stay ahead of it (they are as old, and they carry the most rows).
					s.take(s.b.Oldest())
				case len(s.ready) > 0:
					// Full batches are the best use of a slot.
				case len(s.slots) <= s.partial || !s.pl.budgetFull.Load():
					// Only the oldest due batches (those whose rows arrived together), not every due
					// batch: the others keep filling while this slot is busy.
					s.take(s.b.Due(next)...)
				default:
					// Busy writers and a full byte budget: the sink is behind (a backlog, or Cassandra
					// slower than the input) and holds all it may. Send the batch that carries the most
					// rows for the wait (see batcher.Pick); every request then does more, and the backlog
					// drains sooner. Below the budget, arrival order keeps latency low.
					if bt := s.b.Pick(now); bt != nil {
						s.take(bt)
					}
				}
			}
			s.due = false
			if len(s.ready) == 0 {
				<-s.slots // nothing to send after all
				break
			}
			rb := s.ready[0]
			s.ready[0] = readyBatch{}
			s.ready = s.ready[1:]
			s.start(rb)
		}
		s.pl.metrics.OpenBatchRows.Set(float64(s.b.Rows()))
		if s.due {
			if holdPartial && armed.IsZero() {
				// Held back while many writes are in flight: wake up when the oldest becomes overdue.
				if next, ok := s.b.NextDue(); ok {
					timer.Reset(max(next.Add(overdue).Sub(s.pl.now()), 0))
					armed = next.Add(overdue)
				}
			}
			continue // otherwise the timer's work waits for a slot; no need to set it again
		}
		next, ok := s.b.NextDue()
		switch {
		case !ok && !armed.IsZero():
			timer.Stop()
			armed = time.Time{}
		case ok && !next.Equal(armed):
			timer.Reset(max(next.Sub(s.pl.now()), 0))
			armed = next
		}
	}
}

// overdue reports whether the oldest open batch has waited past its linger by more than overdue.
func (s *writeStage) overdue(now time.Time) bool {
	next, ok := s.b.NextDue()
	return ok && now.Sub(next) > overdue
}

// add puts a message's rows into the batcher; batches that fill up become ready.
func (s *writeStage) add(m writeMsg) {
	// Rows are mapped back to their assignment by partition when a batch leaves the batcher, so the
	// batcher must never hold rows of two assignments of one partition. A revoke flushes before the
	// partition can be assigned again; a lost partition does not, so a new assignment's first rows flush
	// out whatever the old one left.
	if old, ok := s.owners[m.owner.tp]; ok && old != m.owner {
		s.take(s.b.Flush()...)
	}
	s.owners[m.owner.tp] = m.owner
	now := s.pl.now()
	for _, r := range m.rows {
		s.take(s.b.Add(r, now)...)
	}
	putHandOff(m.rows)
}

// take moves batches out of the batcher into the ready queue, resolving the owner of every row now, while
// the batcher holds only rows of current assignments.
func (s *writeStage) take(bs ...*batcher.Batch) {
	for _, b := range bs {
		owners := getOwners(len(b.Rows))
		var last *partition
		for i := range b.Rows {
			src := b.Rows[i].Source
			if last == nil || last.tp.topic != src.Topic || last.tp.partition != src.Partition {
				last = s.owners[topicPartition{src.Topic, src.Partition}]
			}
			owners[i] = last
		}
		s.ready = append(s.ready, readyBatch{b: b, owners: owners})
	}
}

// flush asks the stage to take every open batch out of the batcher and waits until it has, or until ctx
// ends. The batches are then written as slots allow.
func (s *writeStage) flush(ctx context.Context) bool {
	done := make(chan struct{})
	select {
	case s.in <- writeMsg{flush: done}:
	case <-ctx.Done():
		return false
	}
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

// start hands one batch to a writer goroutine, on the slot the caller took. jobs holds as many batches as
// there are slots, so this never blocks.
func (s *writeStage) start(rb readyBatch) {
	s.pl.metrics.BatchRows.Observe(float64(len(rb.b.Rows)))
	s.pl.metrics.BatchBytes.Observe(float64(rb.b.Bytes))
	s.jobs <- rb
}

// writer writes the batches handed to it until jobs is closed.
func (s *writeStage) writer() {
	defer s.wg.Done()
	for rb := range s.jobs {
		s.write(rb.b, rb.owners)
	}
}

func (s *writeStage) write(b *batcher.Batch, owners []*partition) {
	defer batcher.Release(b) // after everything below: none of it keeps b.Rows
	defer putOwners(owners)
	defer func() {
		<-s.slots
		select {
		case s.freed <- struct{}{}:
		default:
		}
	}()
	failures, err := s.pl.writer.Write(s.ctx, b)
	if err != nil {
		eachOwner(b, owners, nil, func(p *partition, offsets []int64) { p.writeFailed(offsets, err) })
		return
	}
	m := s.pl.metrics
	topic := b.Rows[0].Source.Topic
	written := len(b.Rows) - len(failures)
	if written > 0 {
		m.RecordsWritten.WithLabelValues(topic).Add(float64(written))
		s.pl.observeWritten(b)
	}
	var rejected map[int]error
	if len(failures) > 0 {
		rejected = make(map[int]error, len(failures))
		for _, f := range failures {
			for i := range b.Rows {
				if b.Rows[i].Source == f.Row.Source {
					rejected[i] = f.Err
				}
			}
		}
		for i, ferr := range rejected {
			p := owners[i]
			if p == nil {
				continue
			}
			off := b.Rows[i].Source.Offset
			if !p.pending(off) {
				continue // given up meanwhile
			}
			if p.topic.deadLetterTopic == "" {
				p.halt(off, ReasonWrite, ferr)
				continue
			}
			p.log.Warn("row rejected by Cassandra; dead-lettering it", slog.Int64("offset", off),
				slog.String("table", b.Target.Table), slog.Any("error", ferr))
			// The sender re-reads the record; the row goes along in case the record is gone by then.
			row := b.Rows[i]
			p.dl.add(deadLetter{offset: off, reason: ReasonWrite, err: ferr, row: &row})
		}
	}
	eachOwner(b, owners, rejected, func(p *partition, offsets []int64) { p.complete(offsets) })
}

// eachOwner calls fn once per run of consecutive rows with the same owner, with their offsets, skipping
// the rows in skip. Rows of one batch usually come from one Kafka partition, so this is one call.
func eachOwner(b *batcher.Batch, owners []*partition, skip map[int]error, fn func(*partition, []int64)) {
	var cur *partition
	buf := offsetsPool.Get().(*[]int64)
	defer offsetsPool.Put(buf)
	offsets := (*buf)[:0]
	for i := range b.Rows {
		if _, ok := skip[i]; ok {
			continue
		}
		p := owners[i]
		if p != cur && len(offsets) > 0 {
			if cur != nil {
				fn(cur, offsets)
			}
			offsets = offsets[:0] // fn keeps nothing of it
		}
		cur = p
		offsets = append(offsets, b.Rows[i].Source.Offset)
	}
	if cur != nil && len(offsets) > 0 {
		fn(cur, offsets)
	}
	*buf = offsets[:0]
}

// Per-batch bookkeeping is reused: a batch's owners live until its write is acknowledged, the
// offsets only during eachOwner.
var (
	ownersPool  = sync.Pool{New: func() any { return new([]*partition) }}
	offsetsPool = sync.Pool{New: func() any { return new([]int64) }}
)

func getOwners(n int) []*partition {
	if p := ownersPool.Get().(*[]*partition); cap(*p) >= n {
		return (*p)[:n]
	}
	return make([]*partition, n)
}

// putOwners takes back a batch's owners once its write is acknowledged; cleared, it keeps no
// partition alive.
func putOwners(o []*partition) {
	clear(o)
	ownersPool.Put(&o)
}
