package pipeline

import (
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// deadLetter is one record on its way to the dead-letter topic.
type deadLetter struct {
	rec    *kgo.Record
	reason string
	err    error
}

// deadLetterSender produces a partition's bad records to the topic's dead-letter topic, one goroutine per
// partition. A record counts as done only once the produce is acknowledged (acks=all, idempotent
// producer). A failed produce is retried with capped exponential backoff, for as long as the partition is
// ours: meanwhile the partition does not advance past the record, which is counted in
// sink_records_failed_total, logged at ERROR, and makes /readyz fail.
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
	backoff := p.pl.retryInitial
	for attempt := 1; ; attempt++ {
		recs := make([]*kgo.Record, len(batch))
		index := make(map[*kgo.Record]int, len(batch))
		for i, d := range batch {
			recs[i] = deadLetterRecord(p.topic.deadLetterTopic, d.rec, d.reason, d.err)
			index[recs[i]] = i
		}
		results := p.pl.producer.ProduceSync(ctx, recs...)
		if ctx.Err() != nil {
			return false
		}
		var failed []deadLetter
		var acked []int64
		for _, res := range results {
			d := batch[index[res.Record]]
			if res.Err != nil {
				failed = append(failed, d)
				p.pl.metrics.RecordsFailed.WithLabelValues(p.tp.topic).Inc()
				p.log.Error("dead-lettering a record failed; partition stopped before it until the produce succeeds",
					slog.Int64("offset", d.rec.Offset), slog.String("reason", d.reason),
					slog.String("dead_letter_topic", p.topic.deadLetterTopic), slog.Int("attempt", attempt),
					slog.Duration("retry_in", backoff), slog.Any("error", res.Err))
				p.setStuck(d.rec.Offset, true)
				continue
			}
			p.pl.metrics.RecordsDeadLettered.WithLabelValues(p.tp.topic, d.reason).Inc()
			p.log.Info("record dead-lettered", slog.Int64("offset", d.rec.Offset), slog.String("reason", d.reason),
				slog.String("dead_letter_topic", p.topic.deadLetterTopic), slog.Any("error", d.err))
			if attempt > 1 {
				p.setStuck(d.rec.Offset, false)
			}
			acked = append(acked, d.rec.Offset)
		}
		if len(acked) > 0 {
			p.complete(acked)
		}
		if len(failed) == 0 {
			return true
		}
		batch = failed
		t := time.NewTimer(jitter(backoff))
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
		backoff = min(2*backoff, p.pl.retryMax)
	}
}
