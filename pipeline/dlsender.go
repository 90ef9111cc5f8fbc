package pipeline

import (
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// deadLetter is one record on its way to the dead-letter topic.
type deadLetter struct {
	offset int64
	// rec is the source record. A record that failed mapping comes with it (the worker still has it); a
	// row Cassandra refused comes without, because nothing keeps a record once it is mapped, and the
	// sender re-reads it from Kafka (reread.go).
	rec    *kgo.Record
	reason string
	err    error
}

// deadLetterSender produces a partition's bad records to the topic's dead-letter topic, one goroutine per
// partition. A record counts as done only once the produce is acknowledged (acks=all, idempotent
// producer). A failed produce is retried with capped exponential backoff, for as long as the partition is
// ours: meanwhile the partition does not advance past the record, which is counted in
// sink_records_failed_total and sink_stuck_partitions, and logged at ERROR.
type deadLetterSender struct {
	p      *partition
	mu     sync.Mutex
	queue  []deadLetter
	notify chan struct{}
	done   chan struct{}
}

func newDeadLetterSender(p *partition) *deadLetterSender {
	return &deadLetterSender{p: p, notify: make(chan struct{}, 1), done: make(chan struct{})}
}

func (s *deadLetterSender) add(d deadLetter) {
	s.mu.Lock()
	s.queue = append(s.queue, d)
	s.mu.Unlock()
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

func (s *deadLetterSender) take() []deadLetter {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queue
	s.queue = nil
	return q
}

func (s *deadLetterSender) run() {
	defer close(s.done)
	ctx := s.p.ctx
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.notify:
		}
		for batch := s.take(); len(batch) > 0; batch = s.take() {
			if !s.send(batch) {
				return
			}
		}
	}
}

// send produces batch until every record is acknowledged. It returns false when the partition was given
// up meanwhile; the unacknowledged records then stay not done and are replayed by the next owner.
func (s *deadLetterSender) send(batch []deadLetter) bool {
	p := s.p
	ctx := p.ctx
	for attempt := 1; ; attempt++ {
		backoff := p.pl.backoff.Delay(attempt) // the wait before the next attempt, should this one fail
		var failed []deadLetter
		batch, failed = s.reread(batch, attempt, backoff)
		if ctx.Err() != nil {
			return false
		}
		recs := make([]*kgo.Record, len(batch))
		index := make(map[*kgo.Record]int, len(batch))
		for i, d := range batch {
			recs[i] = deadLetterRecord(p.topic.deadLetterTopic, d.rec, d.reason, d.err)
			index[recs[i]] = i
		}
		var results kgo.ProduceResults
		if len(recs) > 0 {
			results = p.pl.producer.ProduceSync(ctx, recs...)
		}
		if ctx.Err() != nil {
			return false
		}
		var acked []int64
		for _, res := range results {
			d := batch[index[res.Record]]
			if res.Err != nil {
				failed = append(failed, d)
				p.pl.metrics.RecordsFailed.WithLabelValues(p.tp.topic).Inc()
				p.log.Error("dead-lettering a record failed; partition stopped before it until the produce succeeds",
					slog.Int64("offset", d.offset), slog.String("reason", d.reason),
					slog.String("dead_letter_topic", p.topic.deadLetterTopic), slog.Int("attempt", attempt),
					slog.Duration("retry_in", backoff), slog.Any("error", res.Err))
				p.setStuck(d.offset, true)
				continue
			}
			p.pl.metrics.RecordsDeadLettered.WithLabelValues(p.tp.topic, d.reason).Inc()
			p.log.Info("record dead-lettered", slog.Int64("offset", d.offset), slog.String("reason", d.reason),
				slog.String("dead_letter_topic", p.topic.deadLetterTopic), slog.Any("error", d.err))
			if attempt > 1 {
				p.setStuck(d.offset, false)
			}
			acked = append(acked, d.offset)
		}
		if len(acked) > 0 {
			p.complete(acked)
		}
		if len(failed) == 0 {
			return true
		}
		batch = failed
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
	}
}

// reread fills in the source records of refused rows by reading them back from Kafka. It returns the
// dead letters ready to produce and those whose record could not be read now (retried after backoff,
// the partition stuck meanwhile). A record the log no longer holds cannot be dead-lettered as it was:
// the partition stops at it (partition.unreadable) and it is in neither list.
func (s *deadLetterSender) reread(batch []deadLetter, attempt int, backoff time.Duration) (ready, failed []deadLetter) {
	var offsets []int64
	for _, d := range batch {
		if d.rec == nil {
			offsets = append(offsets, d.offset)
		}
	}
	if len(offsets) == 0 {
		return batch, nil
	}
	p := s.p
	// Refused rows are added as their batches finish, so offsets of different batches may come in any
	// order (and one twice, should a row be refused again after a failed attempt: never, but cheap to
	// tolerate).
	slices.Sort(offsets)
	offsets = slices.Compact(offsets)
	var recs []*kgo.Record
	var gone []bool
	_, opts, err := p.pl.kafkaOptions()
	if err == nil {
		recs, gone, err = reread(p.ctx, opts, p.tp.topic, p.tp.partition, offsets, rereadTimeout)
	}
	if p.ctx.Err() != nil {
		return nil, nil
	}
	ready = batch[:0:0]
	for _, d := range batch {
		if d.rec != nil {
			ready = append(ready, d)
			continue
		}
		i, _ := slices.BinarySearch(offsets, d.offset)
		switch {
		case i < len(recs) && recs[i] != nil:
			d.rec = recs[i]
			ready = append(ready, d)
		case i < len(gone) && gone[i]:
			p.unreadable(d.offset, d.reason, d.err)
		default:
			failed = append(failed, d)
			p.pl.metrics.RecordsFailed.WithLabelValues(p.tp.topic).Inc()
			p.log.Error("re-reading a refused row's record from Kafka to dead-letter it failed; partition stopped before it until it succeeds",
				slog.Int64("offset", d.offset), slog.Int("attempt", attempt), slog.Duration("retry_in", backoff),
				slog.Any("error", err))
			p.setStuck(d.offset, true)
		}
	}
	return ready, failed
}
