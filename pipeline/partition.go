package pipeline

import (
	"context"
	"hash/maphash"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/mapper"
	"github.com/bucketsink/sink/pipeline/budget"
	"github.com/bucketsink/sink/pipeline/consumer"
	"github.com/bucketsink/sink/pipeline/deadletter"
	"github.com/bucketsink/sink/pipeline/dlsend"
	"github.com/bucketsink/sink/pipeline/offsets"
	"github.com/bucketsink/sink/pipeline/rollup"
	"github.com/bucketsink/sink/pipeline/split"
	"github.com/bucketsink/sink/pipeline/writestage"
)

// partition is one assigned Kafka partition for the life of one assignment. A later assignment of the
// same partition gets a new value, so acknowledgements that arrive after a revoke reach the old value,
// whose revoked flag keeps them from marking (DRIVER-NOTES R5.2-2).
//
// Goroutines: the worker (records in offset order → rows or dead letters) and the dead-letter sender.
// The pipeline's rebalance callbacks own both and wait for them.
type partition struct {
	tp    offsets.TopicPartition
	pl    *Pipeline
	topic *topicInfo
	log   *slog.Logger
	lag   prometheus.Gauge

	queue *consumer.Queue
	dl    *dlsend.Sender

	quit       chan struct{} // closed to stop the worker
	workerDone chan struct{}
	ctx        context.Context // canceled when the partition is given up: dead-letter retries stop
	cancel     context.CancelFunc
	workCtx    context.Context // the worker's calls (the routing table of splits); canceled by stop
	stopWork   context.CancelFunc

	// mu guards what follows, down to stuckLogged: the tracker, the marks, what the partition is
	// stuck on and what blocks its records, its stop.
	//
	// The lock order of the whole pipeline: a partition's mu, then the Pipeline's mu (Complete releases
	// bytes and setStuckBy pauses the partition under mu, so that a giveUp cannot come between), then
	// the Kafka client's own (a mark, a pause). The partition's record queue (consumer.Queue) is taken
	// under mu as a leaf (observeHighWatermark). Every other lock of the pipeline's rooms is a leaf held
	// alone, never while one of these is, and never while taking one: the split topic's (split.Topic,
	// when each bucket was read), the session lease's (split.Lease), the dead-letter sender's queue and
	// the dead-letter topics' limits (dlsend), the write stage's retry gates. The split state and the
	// dead-letter sender call back into the partition (split.Worker, dlsend.Partition) with none held.
	mu      sync.Mutex
	tr      *offsets.Tracker
	revoked bool             // set once, under mu, before the revoke commit; no mark after it
	stuck   map[stuckAt]bool // what failed and holds the watermark; non-empty means stuck
	// blockers counts, per record that cannot finish in this assignment, what stops it: each row of it a
	// failed write holds, its dead letter given up at a stop, its rows never handed on, a halt on it. A
	// record counts once, however many it has, when a stopping partition checks what may still finish.
	blockers map[int64]int
	drained  chan struct{}  // closed when stopping and every record that can finish has
	stopping bool           // the worker is stopped; waiting for in-flight work
	hwm      int64          // high watermark of the last fetch, for the lag gauge
	mark     offsets.Marker // hands the watermark to the client for commit
	settled  chan struct{}  // closed when nothing is in flight, for a worker restarting tracking (restartTracking)

	// held is the rows of batches the write stage gave back unwritten, heldRecords how many of each
	// record's rows are held (the partition is stuck on a record while it has any).
	held        map[heldRow]bool
	heldRecords map[int64]int
	stuckLogged time.Time // when a failed write of this partition was last logged at ERROR (stuckLogEvery)
	// skipLogged is when the worker last logged a skipped record, skipped how many it skipped since
	// (skip); the worker's alone.
	skipLogged time.Time
	skipped    int
	// unchargedEntries counts the records with rows taken since the last hand-off, whose tracker entries
	// handOff charges with their rows, in one charge (the worker's alone).
	unchargedEntries int64
	// split is the hot-entity split state of each entry with split on (package split), by entry name.
	split map[string]*split.State
	// mapped is the worker's scratch for what the entries made of a record (MapAll).
	mapped []mapper.Mapped
	// headers is the memory mapRecord hands the record's headers to the mapper in, reused record after
	// record (it holds the last record's until the next one).
	headers []mapper.Header
	// rollup computes the due rollup windows of the partition's entries (package pipeline/rollup), in
	// its own goroutine from start to stop; nil when no entry of the topic has rollups.
	rollup *rollup.Worker
	// markers and markerW are handle's scratch for a record's rollup markers (worker goroutine only).
	markers []batcher.Row
	markerW rollup.Scratch
	// markerIndex finds the marker rows of the hand-off being filled by their identity's hash
	// (heldMarker, foldMarkers); cleared when the hand-off is sent. markerInto is handle's scratch.
	markerIndex map[uint64]int32
	markerSeed  maphash.Seed
	markerInto  []int
	// standing is the markers records of this assignment rely on instead of writing their own
	// (rollup.Standing), shared with the rollup worker.
	standing *rollup.Standing
	// client is the group's consumer that assigned the partition, which the rollup worker asks for the
	// committed offset (committed); nil outside a group's assignment.
	client     *kgo.Client
	stopRollup context.CancelFunc
	rollupDone chan struct{}
}

func newPartition(pl *Pipeline, tp offsets.TopicPartition, topic *topicInfo) *partition {
	ctx, cancel := context.WithCancel(context.Background())
	p := &partition{
		tp:          tp,
		pl:          pl,
		topic:       topic,
		log:         pl.log.With(slog.String("topic", tp.Topic), slog.Int("partition", int(tp.Partition))),
		lag:         pl.metrics.ConsumerLag.WithLabelValues(tp.Topic, strconv.Itoa(int(tp.Partition))),
		queue:       consumer.NewQueue(),
		quit:        make(chan struct{}),
		workerDone:  make(chan struct{}),
		ctx:         ctx,
		cancel:      cancel,
		tr:          offsets.NewTracker(budget.EntryCost),
		mark:        offsets.Marker{Clock: pl.commitClock},
		stuck:       make(map[stuckAt]bool),
		blockers:    make(map[int64]int),
		held:        make(map[heldRow]bool),
		heldRecords: make(map[int64]int),
		hwm:         -1,
	}
	p.workCtx, p.stopWork = context.WithCancel(ctx)
	p.dl = dlsend.New(&pl.deadLetters, p, tp.Topic, tp.Partition, topic.deadLetterTopic, ctx, p.quit, p.log)
	var rollups []*rollup.Entry
	for _, e := range topic.entries {
		if e.rollup != nil {
			rollups = append(rollups, e.rollup)
		}
	}
	if len(rollups) > 0 {
		p.standing = &rollup.Standing{}
		p.rollup = &rollup.Worker{Store: pl.cfg.Rollups, Entries: rollups, Partition: tp.Partition, Metrics: pl.metrics,
			Log: p.log, Now: pl.now, Backoff: pl.backoff, Committed: p.committed, Standing: p.standing}
		p.rollupDone = make(chan struct{})
	}
	for _, e := range topic.entries {
		if e.split != nil {
			if p.split == nil {
				p.split = make(map[string]*split.State)
			}
			p.split[e.name] = split.NewState(e.split, p, tp.Partition, p.log)
		}
	}
	return p
}

// The write stage reports what became of a partition's rows through writestage.Owner.
var _ writestage.Owner = (*partition)(nil)

// TopicPartition is the Kafka partition of this assignment.
func (p *partition) TopicPartition() offsets.TopicPartition { return p.tp }

// Context ends when the partition is given up.
func (p *partition) Context() context.Context { return p.ctx }

// DeadLetterWrite sends a row the write stage cannot write to the dead-letter topic: reason write, a
// row Cassandra refused; reason slice, a row whose slice table does not exist. row is that row, sent
// along in case its record is gone when the sender reads it back. The dead letter is the row's alone
// (the record's rows in other tables are written, or dead-lettered, on their own), naming its entry and
// table; it is the part of the record the row was. Without a dead-letter topic the partition stops at
// it. A row no longer pending (the partition given up meanwhile) is left alone.
func (p *partition) DeadLetterWrite(offset int64, reason, table string, row *batcher.Row, err error) {
	if !p.pending(offset) {
		return // given up meanwhile
	}
	if p.topic.deadLetterTopic == "" {
		p.halt(offset, reason, err) // validation requires a dead_letter_topic for slices; never silent
		return
	}
	if reason == deadletter.ReasonSlice {
		p.log.Warn("slice table does not exist; dead-lettering the record", slog.Int64("offset", offset),
			slog.String("table", table), slog.String("entry", row.Target.Entry))
	} else {
		p.log.Warn("row rejected by Cassandra; dead-lettering it", slog.Int64("offset", offset),
			slog.String("table", table), slog.String("entry", row.Target.Entry), slog.Any("error", err))
	}
	rf := deadletter.Refusal{Entry: row.Target.Entry, Table: row.Target.Keyspace + "." + row.Target.Table, Reason: reason, Err: err}
	p.dl.Add(dlsend.Letter{Offset: offset, Refusals: []deadletter.Refusal{rf}, Row: row})
}

// halt stops the partition at a bad record that has nowhere to go: the topic has no dead_letter_topic.
// Skipping it would lose it, so the partition stops advancing and says so loudly.
func (p *partition) halt(offset int64, reason string, err error) {
	p.log.Error("bad record and no dead_letter_topic configured; partition stopped",
		slog.Int64("offset", offset), slog.String("reason", reason), p.pl.badRecordError(err))
	p.pl.metrics.RecordsFailed.WithLabelValues(p.tp.Topic).Inc()
	p.mu.Lock()
	p.block(offset)
	p.mu.Unlock()
	p.setStuck(offset, true)
}

// block counts one more thing that stops the record at offset from finishing in this assignment (see
// blockers); unblock takes one back. The caller holds mu.
func (p *partition) block(offset int64) { p.blockers[offset]++ }

func (p *partition) unblock(offset int64) {
	if p.blockers[offset]--; p.blockers[offset] <= 0 {
		delete(p.blockers, offset)
	}
}

// WriteRetrying is called when the writer gave a batch back unwritten and the write stage will send it
// again after a backoff. Until then the rows hold the watermark (nothing at or after the first of them is
// committed), the partition is stuck (paused, counted in sink_stuck_partitions), and they count as blocked:
// a revoke does not wait for them, the next owner replays them. The first failure and then one a
// stuckLogEvery is logged at ERROR with the cause.
func (p *partition) WriteRetrying(offsets []int64, entry, reason string, attempt int, err error) {
	p.mu.Lock()
	if p.revoked {
		p.mu.Unlock()
		return // no longer ours: the next owner replays the rows
	}
	newly := 0
	for _, o := range offsets {
		if p.hold(o, entry) {
			newly++
		}
	}
	now := p.pl.now()
	logIt := now.Sub(p.stuckLogged) >= stuckLogEvery
	if logIt {
		p.stuckLogged = now
	}
	p.mu.Unlock()
	if newly > 0 {
		p.pl.metrics.RecordsFailed.WithLabelValues(p.tp.Topic).Add(float64(newly))
	}
	if logIt {
		p.log.Error("writing rows failed; partition stuck before them, retrying with backoff",
			slog.Int64("offset", offsets[0]), slog.Int("rows", len(offsets)), slog.String("entry", entry),
			slog.String("reason", reason), slog.Int("attempt", attempt), slog.Any("error", err))
	}
	for _, o := range offsets {
		p.setStuckBy(o, stuckWrite, true)
	}
	p.checkDrained()
}

// stuckLogEvery rate-limits the ERROR log of a partition whose writes keep failing: a stuck partition
// retries up to every writer.retry_max, and one line per retry would drown every other message.
const stuckLogEvery = time.Minute

// WriteRecovered is called when rows of an entry the write stage was retrying were written (or are about
// to be dead-lettered): they no longer block their records, and the partition is no longer stuck on a
// record none of whose rows is held any more.
func (p *partition) WriteRecovered(offsets []int64, entry string) {
	p.mu.Lock()
	var was []int64
	rows := 0
	for _, o := range offsets {
		row, record := p.unhold(o, entry)
		if row {
			rows++
		}
		if record {
			was = append(was, o)
		}
	}
	p.mu.Unlock()
	for _, o := range was {
		p.setStuckBy(o, stuckWrite, false)
	}
	if rows > 0 {
		p.log.Info("failed write resolved; its rows no longer hold the partition", slog.Int64("offset", offsets[0]),
			slog.String("entry", entry), slog.Int("rows", rows))
	}
}

// heldRow is a record's row of one entry (its table's; two entries may write one table) that a failed
// write holds.
type heldRow struct {
	offset int64
	entry  string
}

// hold records that the row of the record at offset of entry is held by a failed write (a blocker of
// the record). It reports whether the row was not held before. A record no longer pending is left
// alone. The caller holds mu.
func (p *partition) hold(offset int64, entry string) bool {
	k := heldRow{offset, entry}
	if p.held[k] || !p.tr.IsPending(offset) {
		return false
	}
	p.held[k] = true
	p.heldRecords[offset]++
	p.block(offset)
	return true
}

// unhold undoes hold for a row written after all (or handed to the dead-letter sender). It reports
// whether the row was held, and whether the record has no row held any more. The caller holds mu.
func (p *partition) unhold(offset int64, entry string) (row, record bool) {
	k := heldRow{offset, entry}
	if !p.held[k] {
		return false, false
	}
	delete(p.held, k)
	p.unblock(offset)
	if p.heldRecords[offset]--; p.heldRecords[offset] > 0 {
		return true, false
	}
	delete(p.heldRecords, offset)
	return true, true
}

// WriteAbandoned is called when the write stage drops a batch it will not send again: the process is
// stopping, or the partition was given up. The rows stay not done, so the watermark stops before the
// first of them and the next owner (or the next start) replays them; they count as blocked so that a
// stopping partition does not wait for them.
func (p *partition) WriteAbandoned(offsets []int64, entry string) {
	p.mu.Lock()
	if !p.revoked {
		for _, o := range offsets {
			p.hold(o, entry)
		}
	}
	p.mu.Unlock()
	p.checkDrained()
}

// Complete marks records done (written or dead-lettered), moves the watermark and marks it for commit
// while the partition is still ours, and releases their bytes.
func (p *partition) Complete(offsets []int64) {
	var freed int64
	p.mu.Lock()
	moved := false
	for _, o := range offsets {
		bytes, advanced, known := p.tr.Done(o)
		if !known {
			continue
		}
		moved = moved || advanced
		freed += bytes
	}
	if p.revoked {
		// The partition's budget was forgotten as a whole when it was given up; releasing again would
		// count these bytes twice.
		freed = 0
	}
	if moved && !p.revoked {
		// Marking under mu with the revoked check is what keeps a late acknowledgement from re-creating
		// a mark for a partition another member now owns.
		next := p.mark.Mark(p.pl.client, p.tp, p.tr)
		if p.hwm >= 0 {
			p.lag.Set(float64(max(p.hwm-next, 0)))
		}
	}
	if freed > 0 {
		// Under mu, so that giveUp cannot forget the partition's bytes between the two steps (lock order:
		// partition before pipeline).
		p.pl.release(p.tp, freed)
	}
	p.mu.Unlock()
	p.checkDrained()
}

// pending reports whether the record at offset is registered and not yet done: false once the
// partition was given up and a new assignment's tracker took over, or when it is already done.
func (p *partition) pending(offset int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.revoked && p.tr.IsPending(offset)
}

// Unreadable stops the partition at a row Cassandra refused whose source record the partition's log no
// longer holds (deadletter/reread.go) and whose dead letter came without the row to send instead (the write stage
// always hands the row over, so this is a safeguard). Skipping it would lose it without a trace, so the
// partition stops advancing before it, loudly; an operator decides.
func (p *partition) Unreadable(offset int64, reason string, cause error) {
	p.log.Error("row refused by Cassandra and its record can no longer be read from Kafka to dead-letter it; partition stopped",
		slog.Int64("offset", offset), slog.String("reason", reason), slog.Any("refused", cause),
		slog.Any("error", deadletter.ErrRecordGone))
	p.pl.metrics.RecordsFailed.WithLabelValues(p.tp.Topic).Inc()
	p.mu.Lock()
	p.block(offset)
	p.mu.Unlock()
	p.setStuck(offset, true)
	p.checkDrained()
}

// The dead-letter sender tells its partition what became of each dead letter (package dlsend).
var _ dlsend.Partition = (*partition)(nil)

// DeadLetterFailing marks the partition stuck on the record at offset while its dead letter fails to be
// produced, and no longer once it is produced.
func (p *partition) DeadLetterFailing(offset int64, failing bool) {
	p.setStuckBy(offset, stuckDeadLetter, failing)
}

// DeadLettersAbandoned takes the dead letters at offsets, given up at a stop while failing, as blockers:
// they cannot finish in this assignment, so the revoke must not wait for them, and they stay not done,
// so nothing is committed past them.
func (p *partition) DeadLettersAbandoned(offsets []int64) {
	p.mu.Lock()
	for _, o := range offsets {
		p.block(o)
	}
	p.mu.Unlock()
	p.checkDrained()
}

// setStuck records that the record at offset cannot make progress (or no longer is stuck), and tells
// the pipeline when the partition as a whole becomes stuck or recovers.
func (p *partition) setStuck(offset int64, stuck bool) { p.setStuckBy(offset, stuckRecord, stuck) }

// stuckAt is one thing a partition is stuck on: a record's offset and what of the record failed. A
// record has several parts (a row per entry and its dead letter), which fail and recover apart: one
// part recovering must not unstick the partition while another of the same record still fails.
type stuckAt struct {
	offset int64
	by     stuckCause
}

// stuckCause says what of a record failed.
type stuckCause uint8

const (
	stuckRecord     stuckCause = iota // the record itself: a dependency it waits for, a refused offset, a halt
	stuckWrite                        // rows of it that failed writes hold (partition.hold counts them)
	stuckDeadLetter                   // its dead letter, failing to be produced
)

// setStuckBy marks the partition stuck (or no longer) on what by says of the record at offset.
func (p *partition) setStuckBy(offset int64, by stuckCause, stuck bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.revoked {
		return
	}
	before := len(p.stuck) > 0
	if stuck {
		p.stuck[stuckAt{offset, by}] = true
	} else {
		delete(p.stuck, stuckAt{offset, by})
	}
	if after := len(p.stuck) > 0; before != after {
		// Under mu, so that a concurrent giveUp cannot clear the pipeline's state for this partition
		// and then have it set again by us.
		p.pl.partitionStuck(p.tp, after)
	}
}

// observeHighWatermark updates the lag gauge from a fetch's high watermark.
func (p *partition) observeHighWatermark(hwm int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hwm = hwm
	next, _, ok := p.tr.Watermark()
	if !ok {
		if first, _, qok := p.queue.FirstOffset(); qok {
			next = first
		} else {
			return
		}
	}
	p.lag.Set(float64(max(hwm-next, 0)))
}

// committed is the offset below which the partition's records are committed, as the group last
// acknowledged a commit of this member's (or told it at the assignment); -1 while unknown. Every record
// below it is done, and no later owner reads one of them again.
func (p *partition) committed() int64 {
	if p.client == nil {
		return -1
	}
	if eo, found := p.client.CommittedOffsets()[p.tp.Topic][p.tp.Partition]; found {
		return eo.Offset
	}
	return -1
}

// stop stops the worker and waits for it, then returns the queued records' bytes, which no one will
// process. In-flight rows and dead letters continue; see waitDrained.
func (p *partition) stop() {
	if p.rollup != nil {
		p.stopRollup()
		<-p.rollupDone
	}
	select {
	case <-p.quit:
	default:
		close(p.quit)
	}
	p.stopWork() // a call the worker is in returns now, not at its timeout
	<-p.workerDone
	if n := p.queue.Drain(budget.RecordCost); n > 0 {
		p.pl.release(p.tp, n)
	}
	p.mu.Lock()
	p.stopping = true
	p.drained = make(chan struct{})
	p.mu.Unlock()
	p.checkDrained()
}

// checkDrained closes drained once a stopping partition has nothing left that can finish, and settled
// once a worker restarting its tracking has nothing in flight.
func (p *partition) checkDrained() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.settled != nil && p.tr.InFlight() == 0 {
		close(p.settled)
		p.settled = nil
	}
	if !p.stopping || p.drained == nil {
		return
	}
	if p.tr.InFlight() <= len(p.blockers) {
		select {
		case <-p.drained:
		default:
			close(p.drained)
		}
	}
}

// giveUp sets revoked, so that nothing marks or releases bytes for this partition again, and stops the
// dead-letter sender. The caller then forgets the partition's remaining bytes in one step.
func (p *partition) giveUp() {
	p.mu.Lock()
	p.revoked = true
	p.mu.Unlock()
	p.cancel()
	<-p.dl.Done()
}

// undone reports the records still not done and the first of them, for logging an abandoned revoke.
func (p *partition) undone() (int, int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	first, _ := p.tr.FirstUndone()
	return p.tr.InFlight(), first
}
