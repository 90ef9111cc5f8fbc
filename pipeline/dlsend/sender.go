package dlsend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/internal/backoff"
	"github.com/bucketsink/sink/pipeline/deadletter"
	"github.com/bucketsink/sink/pipeline/metrics"
)

// Partition is the assignment of a Kafka partition whose dead letters a Sender produces: the sender
// tells it what became of each. The pipeline's partition implements it; its methods are called from
// the sender's goroutine.
type Partition interface {
	// Complete: the dead letters at offsets were produced (acknowledged by Kafka with acks=all).
	Complete(offsets []int64)
	// DeadLetterFailing: the dead letter at offset failed and is retried with backoff (failing), or was
	// produced after failing (not failing): the partition is stuck before the record meanwhile.
	DeadLetterFailing(offset int64, failing bool)
	// Unreadable: the refused row at offset came without the row and its record is gone from Kafka, so
	// no dead letter can be made of it (reason and err are its refusal's).
	Unreadable(offset int64, reason string, err error)
	// DeadLettersAbandoned: the dead letters at offsets were given up at a stop while failing; they
	// cannot finish in this assignment and stay not done.
	DeadLettersAbandoned(offsets []int64)
}

// Config is what the senders of every partition share, made once by the pipeline when it has its
// dead-letter producer.
type Config struct {
	Producer *kgo.Client    // the dead-letter producer (acks=all, idempotent)
	Limits   *Limits        // the dead-letter topics' size limits, described once for the process
	Backoff  backoff.Policy // writer.retry_initial .. writer.retry_max, between failed attempts
	Metrics  *metrics.Metrics
	// ErrorAttr is the error attribute of the log line of a dead letter (log.quote_values decides
	// whether it shows the value).
	ErrorAttr func(error) slog.Attr
	// RereadOptions are the client options of the consumer that reads refused rows' records back.
	RereadOptions func() ([]kgo.Opt, error)
}

// Letter is one record on its way to the dead-letter topic.
type Letter struct {
	Offset int64
	// Rec is the source record. A record that failed mapping comes with it (the worker still has it); a
	// row Cassandra refused comes without, because nothing keeps a record once it is mapped, and the
	// sender re-reads it from Kafka (deadletter/reread.go).
	Rec *kgo.Record
	// Row is the refused row, for a row Cassandra refused: should its record be gone from Kafka when the
	// sender reads it back, the dead letter carries the row instead (deadletter.FromRow).
	Row *batcher.Row
	// Refusals say why: one per entry that refused the record at mapping (in entry-name order), the
	// one entry whose row Cassandra refused, or one without an entry for an error of the whole record.
	Refusals []deadletter.Refusal

	// gone is set when the re-read found the record no longer in the partition's log.
	gone bool
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
func (d *Letter) record(dlqTopic string) (r *kgo.Record, ours int) {
	switch {
	case d.Rec != nil:
		r := deadletter.FromRecord(dlqTopic, d.Rec, d.Refusals...)
		return r, len(r.Headers) - len(d.Rec.Headers)
	case d.gone && d.Row != nil:
		r := deadletter.FromRow(dlqTopic, d.Row, d.Refusals[0])
		return r, len(r.Headers)
	}
	return nil, 0
}

// reason is the dead letter's reason: its first refusal's (the metric's reason label).
func (d *Letter) reason() string { return d.Refusals[0].Reason }

// err is the first refusal's error, for logs.
func (d *Letter) err() error { return d.Refusals[0].Err }

// entries names the refusing entries, for logs.
func (d *Letter) entries() []string {
	var out []string
	for _, r := range d.Refusals {
		if r.Entry != "" {
			out = append(out, r.Entry)
		}
	}
	return out
}

// Sender produces a partition's bad records to the topic's dead-letter topic, one goroutine per
// partition. A record counts as done only once the produce is acknowledged (acks=all, idempotent
// producer). Every dead letter is sized against what the topic accepts and truncated to fit (see
// deadletter.Fit), so a record too large for it still gets there. A failed produce (the topic does not
// exist, a broker is unreachable) is retried with capped exponential backoff (writer.retry_initial to
// writer.retry_max), for as long as the partition is ours: meanwhile the partition does not advance past
// the record, which is counted in sink_records_failed_total and sink_stuck_partitions and logged at
// ERROR; it resumes by itself once a retry succeeds. When the partition is stopped (revoke, shutdown)
// while its dead letters are failing, the sender gives up on them at once: they stay not done, the
// commit stays below them, and the next owner replays them.
type Sender struct {
	cfg     *Config
	p       Partition
	topic   string // the Kafka topic of the partition
	part    int32  // and its partition
	dlq     string // its dead-letter topic
	log     *slog.Logger
	given   context.Context // canceled when the partition is given up
	stopped <-chan struct{} // closed when the partition's worker is stopped (revoke or shutdown)

	mu     sync.Mutex // a leaf: guards queue alone
	queue  []Letter
	notify chan struct{}
	done   chan struct{}
	// failing is set while some dead letter of this partition is waiting to be retried: a stop then
	// cancels the produce in progress instead of waiting for the client's own retries.
	failing atomic.Bool
}

// New returns the sender of the dead letters of Kafka partition part of topic to the dead-letter
// topic dlq; start it with Run. given ends when the partition is given up (Run then returns), stopped
// is closed when its worker is stopped; log is the partition's logger.
func New(cfg *Config, p Partition, topic string, part int32, dlq string, given context.Context, stopped <-chan struct{}, log *slog.Logger) *Sender {
	return &Sender{cfg: cfg, p: p, topic: topic, part: part, dlq: dlq, log: log, given: given, stopped: stopped,
		notify: make(chan struct{}, 1), done: make(chan struct{})}
}

// Add queues a dead letter; it never blocks.
func (s *Sender) Add(d Letter) {
	s.mu.Lock()
	s.queue = append(s.queue, d)
	s.mu.Unlock()
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// Done is closed when Run has returned.
func (s *Sender) Done() <-chan struct{} { return s.done }

func (s *Sender) take() []Letter {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queue
	s.queue = nil
	return q
}

// Run is the sender's goroutine: it produces what is added until the partition is given up.
func (s *Sender) Run() {
	defer close(s.done)
	ctx := s.given
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

// isStopped reports whether the partition's worker was stopped (revoke or shutdown under way).
func (s *Sender) isStopped() bool {
	select {
	case <-s.stopped:
		return true
	default:
		return false
	}
}

// attemptContext is the context of one attempt: canceled when the partition is given up, and also when
// it is stopped while its dead letters are failing, so that a revoke or shutdown does not wait for the
// client's own retries of a produce that keeps failing (a missing topic takes it up to the delivery
// timeout). A request already sent is not affected: the client fails only records it has not sent.
func (s *Sender) attemptContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(s.given)
	go func() {
		select {
		case <-s.stopped:
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
func (s *Sender) send(batch []Letter) bool {
	for attempt := 1; ; attempt++ {
		backoff := s.cfg.Backoff.Delay(attempt) // the wait before the next attempt, should this one fail
		ctx, cancel := s.attemptContext()
		failed, again := s.attempt(ctx, batch, attempt, backoff)
		cancel()
		if s.given.Err() != nil {
			return false
		}
		if len(failed) == 0 {
			s.failing.Store(false)
			return true
		}
		if s.isStopped() {
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
		case <-s.given.Done():
			t.Stop()
			return false
		case <-s.stopped:
			t.Stop()
			s.abandon(failed)
			return true
		case <-t.C:
		}
	}
}

// abandon gives up on dead letters at a stop: they cannot finish in this assignment, so the revoke must
// not wait for them, and they stay not done, so nothing is committed past them.
func (s *Sender) abandon(failed []Letter) {
	s.log.Warn("partition stopped while dead letters were failing; they are left to the next owner, uncommitted",
		slog.Int64("offset", failed[0].Offset), slog.Int("records", len(failed)))
	offsets := make([]int64, len(failed))
	for i, d := range failed {
		offsets[i] = d.Offset
	}
	s.p.DeadLettersAbandoned(offsets)
}

// attempt makes one attempt at batch: re-read the records it lacks, fit each dead letter to the topic,
// produce. It returns the dead letters to try again, and again=true when each of them can be retried at
// once (it was refused as too large and is now cut smaller, or is to go alone).
func (s *Sender) attempt(ctx context.Context, batch []Letter, attempt int, backoff time.Duration) (failed []Letter, again bool) {
	dlq := s.dlq
	batch, failed = s.reread(ctx, batch, attempt, backoff)
	if ctx.Err() != nil {
		return append(failed, batch...), false
	}
	again = len(failed) == 0
	fail := func(d Letter, err error) {
		failed = append(failed, d)
		again = false
		if ctx.Err() != nil {
			return // stopping: not the topic's failure
		}
		s.cfg.Metrics.RecordsFailed.WithLabelValues(s.topic).Inc()
		s.log.Error("dead-lettering a record failed; partition stopped before it until the produce succeeds",
			slog.Int64("offset", d.Offset), slog.String("reason", d.reason()),
			slog.String("dead_letter_topic", dlq), slog.Int("attempt", attempt),
			slog.Duration("retry_in", backoff), slog.Any("error", err))
		s.p.DeadLetterFailing(d.Offset, true)
	}

	// Fit every dead letter to the topic, and group them into requests that each fit the topic as one
	// record batch: the client may put every record of a request for one partition into one batch,
	// which the broker measures as a whole.
	topicLimit := s.cfg.Limits.get(ctx, s.cfg.Producer, s.log, dlq, slices.ContainsFunc(batch, func(d Letter) bool { return d.unfit }))
	var reqs [][]*kgo.Record
	byRec := make(map[*kgo.Record]Letter, len(batch))
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
			s.log.Warn("dead letter larger than the dead-letter topic accepts; sending it truncated",
				slog.Int64("offset", d.Offset), slog.String("dead_letter_topic", dlq),
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
		for _, res := range s.cfg.Producer.ProduceSync(ctx, recs...) {
			d := byRec[res.Record]
			switch {
			case res.Err == nil:
				s.cfg.Metrics.RecordsDeadLettered.WithLabelValues(s.topic, d.reason()).Inc()
				for _, rf := range d.Refusals {
					if rf.Entry != "" {
						s.cfg.Metrics.EntryDeadLetters.WithLabelValues(s.topic, rf.Entry, rf.Reason).Inc()
					}
				}
				if truncated[res.Record] {
					s.cfg.Metrics.DLTruncated.WithLabelValues(s.topic).Inc()
				}
				s.log.Info("record dead-lettered", slog.Int64("offset", d.Offset), slog.String("reason", d.reason()),
					slog.String("dead_letter_topic", dlq), slog.Any("entries", d.entries()), s.cfg.ErrorAttr(d.err()))
				if attempt > 1 {
					s.p.DeadLetterFailing(d.Offset, false)
				}
				acked = append(acked, d.Offset)
			case errors.Is(res.Err, kerr.MessageTooLarge) && len(recs) > 1:
				// Refused as part of a batch: the next try sends it alone.
				d.alone = true
				failed = append(failed, d)
			case errors.Is(res.Err, kerr.MessageTooLarge):
				// Alone and still too large: the topic accepts less than we knew. Learn its limit again,
				// and in any case cut this one to half the size refused, so that it gets smaller on every
				// try and fits in the end (or is found not to fit at all).
				topicLimit = s.cfg.Limits.get(ctx, s.cfg.Producer, s.log, dlq, true)
				d.limit = min(topicLimit, (deadletter.WireBatchOverhead+deadletter.WireSize(res.Record))/2)
				failed = append(failed, d)
				s.log.Warn("the dead-letter topic refused a dead letter as too large; cutting it smaller",
					slog.Int64("offset", d.Offset), slog.String("dead_letter_topic", dlq),
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
			s.cfg.Producer.PurgeTopicsFromClient(dlq)
		}
		if len(acked) > 0 {
			s.p.Complete(acked)
		}
	}
	return failed, again && len(failed) > 0
}

// reread fills in the source records of refused rows by reading them back from Kafka. It returns the
// dead letters ready to produce and those whose record could not be read now (retried after backoff,
// the partition stuck meanwhile). A refused row whose record the log no longer holds is ready too: it
// is dead-lettered as the row (deadletter.FromRow), marked sink.source.missing.
func (s *Sender) reread(ctx context.Context, batch []Letter, attempt int, backoff time.Duration) (ready, failed []Letter) {
	var offsets []int64
	for _, d := range batch {
		if d.Rec == nil && !d.gone {
			offsets = append(offsets, d.Offset)
		}
	}
	if len(offsets) == 0 {
		return batch, nil
	}
	// Refused rows are added as their batches finish, so offsets of different batches may come in any
	// order (and one twice, should a row be refused again after a failed attempt: never, but cheap to
	// tolerate).
	slices.Sort(offsets)
	offsets = slices.Compact(offsets)
	var recs []*kgo.Record
	var gone []bool
	opts, err := s.cfg.RereadOptions()
	if err == nil {
		recs, gone, err = deadletter.Reread(ctx, opts, s.topic, s.part, offsets, deadletter.RereadTimeout)
	}
	ready = batch[:0:0]
	for _, d := range batch {
		if d.Rec != nil || d.gone {
			ready = append(ready, d)
			continue
		}
		i, _ := slices.BinarySearch(offsets, d.Offset)
		switch {
		case i < len(recs) && recs[i] != nil:
			d.Rec = recs[i]
			ready = append(ready, d)
		case i < len(gone) && gone[i] && d.Row != nil:
			d.gone = true
			s.log.Warn("a refused row's record is no longer in Kafka (retention or compaction); dead-lettering the row instead",
				slog.Int64("offset", d.Offset), slog.String("reason", d.reason()), slog.Any("refused", d.err()))
			ready = append(ready, d)
		case i < len(gone) && gone[i]:
			s.p.Unreadable(d.Offset, d.reason(), d.err())
		default:
			failed = append(failed, d)
			if ctx.Err() != nil {
				continue // stopping: not a failure of Kafka's
			}
			s.cfg.Metrics.RecordsFailed.WithLabelValues(s.topic).Inc()
			s.log.Error("re-reading a refused row's record from Kafka to dead-letter it failed; partition stopped before it until it succeeds",
				slog.Int64("offset", d.Offset), slog.Int("attempt", attempt), slog.Duration("retry_in", backoff),
				slog.Any("error", err))
			s.p.DeadLetterFailing(d.Offset, true)
		}
	}
	return ready, failed
}
