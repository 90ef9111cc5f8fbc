package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/pipeline/deadletter"
)

// deadLetter is one record on its way to the dead-letter topic.
type deadLetter struct {
	offset int64
	// rec is the source record. A record that failed mapping comes with it (the worker still has it); a
	// row Cassandra refused comes without, because nothing keeps a record once it is mapped, and the
	// sender re-reads it from Kafka (deadletter/reread.go).
	rec *kgo.Record
	// row is the refused row, for a row Cassandra refused: should its record be gone from Kafka when the
	// sender reads it back, the dead letter carries the row instead (deadletter.FromRow).
	row *batcher.Row
	// gone is set when the re-read found the record no longer in the partition's log.
	gone bool
	// refusals say why: one per entry that refused the record at mapping (in entry-name order), the
	// one entry whose row Cassandra refused, or one without an entry for an error of the whole record.
	refusals []deadletter.Refusal
	// limit, when non-zero, caps this dead letter's size below the topic's: the broker refused it as
	// too large at a size the topic's max.message.bytes should have accepted.
	limit int
	// alone: produce it in a request of its own (it was refused as too large together with others).
	alone bool
	// unfit: the last attempt found it could not fit at all; the next one describes the topic again,
	// whose max.message.bytes may have been raised meanwhile.
	unfit bool
}

// record builds the record to produce, or nil while the source record is still to be read back.
func (d *deadLetter) record(dlqTopic string) (r *kgo.Record, ours int) {
	switch {
	case d.rec != nil:
		r := deadletter.FromRecord(dlqTopic, d.rec, d.refusals...)
		return r, len(r.Headers) - len(d.rec.Headers)
	case d.gone && d.row != nil:
		r := deadletter.FromRow(dlqTopic, d.row, d.refusals[0])
		return r, len(r.Headers)
	}
	return nil, 0
}

// reason is the dead letter's reason: its first refusal's (the metric's reason label).
func (d *deadLetter) reason() string { return d.refusals[0].Reason }

// err is the first refusal's error, for logs.
func (d *deadLetter) err() error { return d.refusals[0].Err }

// entries names the refusing entries, for logs.
func (d *deadLetter) entries() []string {
	var out []string
	for _, r := range d.refusals {
		if r.Entry != "" {
			out = append(out, r.Entry)
		}
	}
	return out
}

// deadLetterSender produces a partition's bad records to the topic's dead-letter topic, one goroutine per
// partition. A record counts as done only once the produce is acknowledged (acks=all, idempotent
// producer). Every dead letter is sized against what the topic accepts and truncated to fit (see
// deadletter.Fit), so a record too large for it still gets there. A failed produce (the topic does not
// exist, a broker is unreachable) is retried with capped exponential backoff (writer.retry_initial to
// writer.retry_max), for as long as the partition is ours: meanwhile the partition does not advance past
// the record, which is counted in sink_records_failed_total and sink_stuck_partitions and logged at
// ERROR; it resumes by itself once a retry succeeds. When the partition is stopped (revoke, shutdown)
// while its dead letters are failing, the sender gives up on them at once: they stay not done, the
// commit stays below them, and the next owner replays them.
type deadLetterSender struct {
	p      *partition
	mu     sync.Mutex
	queue  []deadLetter
	notify chan struct{}
	done   chan struct{}
	// failing is set while some dead letter of this partition is waiting to be retried: a stop then
	// cancels the produce in progress instead of waiting for the client's own retries.
	failing atomic.Bool
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

// stopped reports whether the partition's worker was stopped (revoke or shutdown under way).
func (s *deadLetterSender) stopped() bool {
	select {
	case <-s.p.quit:
		return true
	default:
		return false
	}
}

// attemptContext is the context of one attempt: canceled when the partition is given up, and also when
// it is stopped while its dead letters are failing, so that a revoke or shutdown does not wait for the
// client's own retries of a produce that keeps failing (a missing topic takes it up to the delivery
// timeout). A request already sent is not affected: the client fails only records it has not sent.
func (s *deadLetterSender) attemptContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(s.p.ctx)
	go func() {
		select {
		case <-s.p.quit:
			if s.failing.Load() {
				cancel()
			}
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// send produces batch until every record is acknowledged. It returns false when the partition was given
// up meanwhile; the unacknowledged records then stay not done and are replayed by the next owner. When
// the partition is stopped while records are failing, it abandons them (abandon) and returns true.
func (s *deadLetterSender) send(batch []deadLetter) bool {
	p := s.p
	for attempt := 1; ; attempt++ {
		backoff := p.pl.backoff.Delay(attempt) // the wait before the next attempt, should this one fail
		ctx, cancel := s.attemptContext()
		failed, again := s.attempt(ctx, batch, attempt, backoff)
		cancel()
		if p.ctx.Err() != nil {
			return false
		}
		if len(failed) == 0 {
			s.failing.Store(false)
			return true
		}
		if s.stopped() {
			s.abandon(failed)
			return true
		}
		batch = failed
		if again {
			continue // smaller or alone now: no reason to wait
		}
		s.failing.Store(true)
		t := time.NewTimer(backoff)
		select {
		case <-p.ctx.Done():
			t.Stop()
			return false
		case <-p.quit:
			t.Stop()
			s.abandon(failed)
			return true
		case <-t.C:
		}
	}
}

// abandon gives up on dead letters at a stop: they cannot finish in this assignment, so the revoke must
// not wait for them, and they stay not done, so nothing is committed past them.
func (s *deadLetterSender) abandon(failed []deadLetter) {
	p := s.p
	p.log.Warn("partition stopped while dead letters were failing; they are left to the next owner, uncommitted",
		slog.Int64("offset", failed[0].offset), slog.Int("records", len(failed)))
	p.mu.Lock()
	for _, d := range failed {
		p.block(d.offset)
	}
	p.mu.Unlock()
	p.checkDrained()
}

// attempt makes one attempt at batch: re-read the records it lacks, fit each dead letter to the topic,
// produce. It returns the dead letters to try again, and again=true when each of them can be retried at
// once (it was refused as too large and is now cut smaller, or is to go alone).
func (s *deadLetterSender) attempt(ctx context.Context, batch []deadLetter, attempt int, backoff time.Duration) (failed []deadLetter, again bool) {
	p := s.p
	dlq := p.topic.deadLetterTopic
	batch, failed = s.reread(ctx, batch, attempt, backoff)
	if ctx.Err() != nil {
		return append(failed, batch...), false
	}
	again = len(failed) == 0
	fail := func(d deadLetter, err error) {
		failed = append(failed, d)
		again = false
		if ctx.Err() != nil {
			return // stopping: not the topic's failure
		}
		p.pl.metrics.RecordsFailed.WithLabelValues(p.tp.Topic).Inc()
		p.log.Error("dead-lettering a record failed; partition stopped before it until the produce succeeds",
			slog.Int64("offset", d.offset), slog.String("reason", d.reason()),
			slog.String("dead_letter_topic", dlq), slog.Int("attempt", attempt),
			slog.Duration("retry_in", backoff), slog.Any("error", err))
		p.setStuckBy(d.offset, stuckDeadLetter, true)
	}

	// Fit every dead letter to the topic, and group them into requests that each fit the topic as one
	// record batch: the client may put every record of a request for one partition into one batch,
	// which the broker measures as a whole.
	topicLimit := p.pl.dlqLimits.get(ctx, p.pl, dlq, slices.ContainsFunc(batch, func(d deadLetter) bool { return d.unfit }))
	var reqs [][]*kgo.Record
	byRec := make(map[*kgo.Record]deadLetter, len(batch))
	truncated := make(map[*kgo.Record]bool, len(batch))
	reqBytes := 0
	for _, d := range batch {
		rec, ours := d.record(dlq)
		limit := topicLimit
		if d.limit > 0 {
			limit = min(limit, d.limit)
		}
		fitted, ok := deadletter.Fit(rec, ours, limit)
		d.unfit = !ok
		if !ok {
			d.limit = 0 // from the topic's limit again next time
			fail(d, fmt.Errorf("the dead letter does not fit the dead-letter topic even without its key, value and original headers (%d bytes allowed)", limit))
			continue
		}
		if fitted != rec {
			p.log.Warn("dead letter larger than the dead-letter topic accepts; sending it truncated",
				slog.Int64("offset", d.offset), slog.String("dead_letter_topic", dlq),
				slog.Int("value_bytes", len(rec.Value)), slog.Int("limit", limit),
				slog.String("truncated", string(fitted.Headers[len(fitted.Headers)-2].Value))) // sink.truncated
		}
		byRec[fitted] = d
		truncated[fitted] = fitted != rec
		size := deadletter.WireSize(fitted)
		if len(reqs) == 0 || d.alone || deadletter.WireBatchOverhead+reqBytes+size > limit {
			reqs = append(reqs, nil)
			reqBytes = 0
		}
		reqs[len(reqs)-1] = append(reqs[len(reqs)-1], fitted)
		reqBytes += size
		if d.alone {
			reqBytes = topicLimit // nothing joins it
		}
	}

	for _, recs := range reqs {
		if ctx.Err() != nil {
			for _, r := range recs {
				failed = append(failed, byRec[r])
			}
			again = false
			continue
		}
		var acked []int64
		recreated := false
		for _, res := range p.pl.producer.ProduceSync(ctx, recs...) {
			d := byRec[res.Record]
			switch {
			case res.Err == nil:
				p.pl.metrics.RecordsDeadLettered.WithLabelValues(p.tp.Topic, d.reason()).Inc()
				for _, rf := range d.refusals {
					if rf.Entry != "" {
						p.pl.metrics.EntryDeadLetters.WithLabelValues(p.tp.Topic, rf.Entry, rf.Reason).Inc()
					}
				}
				if truncated[res.Record] {
					p.pl.metrics.DLTruncated.WithLabelValues(p.tp.Topic).Inc()
				}
				p.log.Info("record dead-lettered", slog.Int64("offset", d.offset), slog.String("reason", d.reason()),
					slog.String("dead_letter_topic", dlq), slog.Any("entries", d.entries()), p.pl.badRecordError(d.err()))
				if attempt > 1 {
					p.setStuckBy(d.offset, stuckDeadLetter, false)
				}
				acked = append(acked, d.offset)
			case errors.Is(res.Err, kerr.MessageTooLarge) && len(recs) > 1:
				// Refused as part of a batch: the next try sends it alone.
				d.alone = true
				failed = append(failed, d)
			case errors.Is(res.Err, kerr.MessageTooLarge):
				// Alone and still too large: the topic accepts less than we knew. Learn its limit again,
				// and in any case cut this one to half the size refused, so that it gets smaller on every
				// try and fits in the end (or is found not to fit at all).
				topicLimit = p.pl.dlqLimits.get(ctx, p.pl, dlq, true)
				d.limit = min(topicLimit, (deadletter.WireBatchOverhead+deadletter.WireSize(res.Record))/2)
				failed = append(failed, d)
				p.log.Warn("the dead-letter topic refused a dead letter as too large; cutting it smaller",
					slog.Int64("offset", d.offset), slog.String("dead_letter_topic", dlq),
					slog.Int("next_limit", d.limit), slog.Any("error", res.Err))
			default:
				recreated = recreated || errors.Is(res.Err, kerr.UnknownTopicID)
				fail(d, res.Err)
			}
		}
		if recreated {
			// The dead-letter topic was deleted and created again: the producer keeps the old topic ID
			// and fails the topic until it is purged, after which the retry produces to the new one
			// (docs/PIPELINE.md, "A topic deleted and created again").
			p.pl.producer.PurgeTopicsFromClient(dlq)
		}
		if len(acked) > 0 {
			p.Complete(acked)
		}
	}
	return failed, again && len(failed) > 0
}

// reread fills in the source records of refused rows by reading them back from Kafka. It returns the
// dead letters ready to produce and those whose record could not be read now (retried after backoff,
// the partition stuck meanwhile). A refused row whose record the log no longer holds is ready too: it
// is dead-lettered as the row (deadletter.FromRow), marked sink.source.missing.
func (s *deadLetterSender) reread(ctx context.Context, batch []deadLetter, attempt int, backoff time.Duration) (ready, failed []deadLetter) {
	var offsets []int64
	for _, d := range batch {
		if d.rec == nil && !d.gone {
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
		recs, gone, err = deadletter.Reread(ctx, opts, p.tp.Topic, p.tp.Partition, offsets, deadletter.RereadTimeout)
	}
	ready = batch[:0:0]
	for _, d := range batch {
		if d.rec != nil || d.gone {
			ready = append(ready, d)
			continue
		}
		i, _ := slices.BinarySearch(offsets, d.offset)
		switch {
		case i < len(recs) && recs[i] != nil:
			d.rec = recs[i]
			ready = append(ready, d)
		case i < len(gone) && gone[i] && d.row != nil:
			d.gone = true
			p.log.Warn("a refused row's record is no longer in Kafka (retention or compaction); dead-lettering the row instead",
				slog.Int64("offset", d.offset), slog.String("reason", d.reason()), slog.Any("refused", d.err()))
			ready = append(ready, d)
		case i < len(gone) && gone[i]:
			p.unreadable(d.offset, d.reason(), d.err())
		default:
			failed = append(failed, d)
			if ctx.Err() != nil {
				continue // stopping: not a failure of Kafka's
			}
			p.pl.metrics.RecordsFailed.WithLabelValues(p.tp.Topic).Inc()
			p.log.Error("re-reading a refused row's record from Kafka to dead-letter it failed; partition stopped before it until it succeeds",
				slog.Int64("offset", d.offset), slog.Int("attempt", attempt), slog.Duration("retry_in", backoff),
				slog.Any("error", err))
			p.setStuckBy(d.offset, stuckDeadLetter, true)
		}
	}
	return ready, failed
}

// Limits of the dead-letter producer. franz-go fails a record larger than its batch cap
// (deadletter.ProducerBatchMaxBytes) before sending it; the broker refuses a batch larger than the
// topic's max.message.bytes. Until a topic's value is known, Kafka's default is assumed.
const (
	producerMaxBatchBytes  = deadletter.ProducerBatchMaxBytes
	defaultMaxMessageBytes = 1048588 // Kafka's message.max.bytes default
	describeTimeout        = 10 * time.Second
)

// dlqLimits caches the effective max.message.bytes of each dead-letter topic, described once and again
// when the broker refuses a dead letter as too large. A topic that cannot be described (it does not
// exist yet, Kafka does not answer, or the sink may not describe its configs) is assumed to have Kafka's
// default, and described again at most every describeRetry, so that a sink without the right to
// describe configs does not ask (and warn) for every dead letter.
type dlqLimits struct {
	mu sync.Mutex
	m  map[string]dlqLimit
}

type dlqLimit struct {
	bytes int
	known bool      // described; otherwise bytes is the default, assumed since at
	at    time.Time // when the describe failed
}

// describeRetry is how long a failed describe stands before the topic is described again.
const describeRetry = time.Minute

// get returns how many bytes one record batch to topic may take; refresh describes the topic again.
func (l *dlqLimits) get(ctx context.Context, pl *Pipeline, topic string, refresh bool) int {
	l.mu.Lock()
	c, ok := l.m[topic]
	l.mu.Unlock()
	if ok && !refresh && (c.known || time.Since(c.at) < describeRetry) {
		return min(c.bytes, producerMaxBatchBytes)
	}
	n, err := describeMaxMessageBytes(ctx, kadm.NewClient(pl.producer), topic)
	switch {
	case err == nil:
		c = dlqLimit{bytes: n, known: true}
	case ctx.Err() != nil:
		return min(defaultMaxMessageBytes, producerMaxBatchBytes) // stopping: nothing learned
	default:
		pl.log.Warn("describing the dead-letter topic's max.message.bytes failed; assuming Kafka's default",
			slog.String("dead_letter_topic", topic), slog.Int("max_message_bytes", defaultMaxMessageBytes),
			slog.Duration("described_again_in", describeRetry), slog.Any("error", err))
		c = dlqLimit{bytes: defaultMaxMessageBytes, at: time.Now()}
	}
	l.mu.Lock()
	if l.m == nil {
		l.m = make(map[string]dlqLimit)
	}
	l.m[topic] = c
	l.mu.Unlock()
	return min(c.bytes, producerMaxBatchBytes)
}

// describeMaxMessageBytes returns the topic's effective max.message.bytes.
func describeMaxMessageBytes(ctx context.Context, adm *kadm.Client, topic string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, describeTimeout)
	defer cancel()
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		return 0, err
	}
	rc, err := rcs.On(topic, nil)
	if err != nil {
		return 0, err
	}
	if rc.Err != nil {
		return 0, rc.Err
	}
	for _, c := range rc.Configs {
		if c.Key == "max.message.bytes" && c.Value != nil {
			n, err := strconv.Atoi(*c.Value)
			if err != nil || n <= 0 {
				return 0, fmt.Errorf("max.message.bytes of %s is %q", topic, *c.Value)
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("the configs of %s have no max.message.bytes", topic)
}
