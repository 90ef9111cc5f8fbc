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

// writeStage owns the batcher. One goroutine feeds it from a bounded channel, flushes full batches at once
// and due ones on a single reused timer, and hands each batch to a writer goroutine; at most maxInFlight of
// those run at a time. When all slots are taken the stage blocks, the channel fills, and the partition
// workers block on it: that is the only place a worker waits, never the poll loop.
type writeStage struct {
	pl     *Pipeline
	in     chan writeMsg
	b      *batcher.Batcher
	owners map[topicPartition]*partition // the assignment each buffered row belongs to; see dispatch
	slots  chan struct{}
	wg     sync.WaitGroup  // writer goroutines
	ctx    context.Context // canceled at hard stop: in-flight writes give up
	done   chan struct{}   // closed when run returns
}

func newWriteStage(pl *Pipeline, ctx context.Context, cfg batcher.Config, maxInFlight int) *writeStage {
	return &writeStage{
		pl:     pl,
		in:     make(chan writeMsg, 4*maxInFlight),
		b:      batcher.New(cfg),
		owners: make(map[topicPartition]*partition),
		slots:  make(chan struct{}, maxInFlight),
		ctx:    ctx,
		done:   make(chan struct{}),
	}
}

// run is the stage's goroutine. It returns when in is closed, after flushing and dispatching what it held.
func (s *writeStage) run() {
	defer close(s.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var armed time.Time // the deadline the timer is set for; zero when stopped
	for {
		select {
		case m, ok := <-s.in:
			if !ok {
				timer.Stop()
				for _, b := range s.b.Flush() {
					s.dispatch(b)
				}
				return
			}
			if m.flush != nil {
				for _, b := range s.b.Flush() {
					s.dispatch(b)
				}
				close(m.flush)
				break
			}
			// Rows are mapped back to their assignment by partition when a batch leaves the batcher, so
			// the batcher must never hold rows of two assignments of one partition. A revoke flushes before
			// the partition can be assigned again; a lost partition does not, so a new assignment's first
			// row flushes out whatever the old one left.
			if old, ok := s.owners[m.owner.tp]; ok && old != m.owner {
				for _, b := range s.b.Flush() {
					s.dispatch(b)
				}
			}
			s.owners[m.owner.tp] = m.owner
			for _, b := range s.b.Add(m.row, s.pl.now()) {
				s.dispatch(b)
			}
		case <-timer.C:
			armed = time.Time{}
			for _, b := range s.b.Due(s.pl.now()) {
				s.dispatch(b)
			}
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

// flush asks the stage to write out every open batch and waits until it has been handed to writers, or
// until ctx ends.
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

// dispatch resolves the owner of every row now, while the batcher holds only rows of current assignments,
// takes a slot and starts the write.
func (s *writeStage) dispatch(b *batcher.Batch) {
	owners := make([]*partition, len(b.Rows))
	for i := range b.Rows {
		src := b.Rows[i].Source
		owners[i] = s.owners[topicPartition{src.Topic, src.Partition}]
	}
	select {
	case s.slots <- struct{}{}:
	case <-s.ctx.Done():
		// Hard stop: the rows stay not done and are replayed after restart.
		return
	}
	s.pl.metrics.BatchRows.Observe(float64(len(b.Rows)))
	s.pl.metrics.BatchBytes.Observe(float64(b.Bytes))
	s.wg.Add(1)
	go s.write(b, owners)
}

func (s *writeStage) write(b *batcher.Batch, owners []*partition) {
	defer s.wg.Done()
	defer func() { <-s.slots }()
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
			rec := p.record(off)
			if rec == nil {
				continue // given up meanwhile
			}
			if p.topic.deadLetterTopic == "" {
				p.halt(off, ReasonWrite, ferr)
				continue
			}
			p.log.Warn("row rejected by Cassandra; dead-lettering it", slog.Int64("offset", off),
				slog.String("table", b.Target.Table), slog.Any("error", ferr))
			p.dl.add(deadLetter{rec: rec, reason: ReasonWrite, err: ferr})
		}
	}
	eachOwner(b, owners, rejected, func(p *partition, offsets []int64) { p.complete(offsets) })
}

// eachOwner calls fn once per run of consecutive rows with the same owner, with their offsets, skipping
// the rows in skip. Rows of one batch usually come from one Kafka partition, so this is one call.
func eachOwner(b *batcher.Batch, owners []*partition, skip map[int]error, fn func(*partition, []int64)) {
	var cur *partition
	offsets := make([]int64, 0, len(b.Rows))
	for i := range b.Rows {
		if _, ok := skip[i]; ok {
			continue
		}
		p := owners[i]
		if p != cur && len(offsets) > 0 {
			if cur != nil {
				fn(cur, offsets)
			}
			offsets = make([]int64, 0, len(b.Rows)-i)
		}
		cur = p
		offsets = append(offsets, b.Rows[i].Source.Offset)
	}
	if cur != nil && len(offsets) > 0 {
		fn(cur, offsets)
	}
}

var _ cassandra.Observer = (*Metrics)(nil)
