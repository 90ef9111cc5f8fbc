package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/mapper"
	"github.com/bucketsink/sink/pipeline/budget"
	"github.com/bucketsink/sink/pipeline/consumer"
	"github.com/bucketsink/sink/pipeline/deadletter"
	"github.com/bucketsink/sink/pipeline/dlsend"
	"github.com/bucketsink/sink/pipeline/offsets"
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

	queue recordQueue
	dl    *dlsend.Sender

	quit       chan struct{} // closed to stop the worker
	workerDone chan struct{}
	ctx        context.Context // canceled when the partition is given up: dead-letter retries stop
	cancel     context.CancelFunc
	workCtx    context.Context // the worker's calls (the routing table of splits); canceled by stop
	stopWork   context.CancelFunc

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
}

func newPartition(pl *Pipeline, tp offsets.TopicPartition, topic *topicInfo) *partition {
	ctx, cancel := context.WithCancel(context.Background())
	p := &partition{
		tp:          tp,
		pl:          pl,
		topic:       topic,
		log:         pl.log.With(slog.String("topic", tp.Topic), slog.Int("partition", int(tp.Partition))),
		lag:         pl.metrics.ConsumerLag.WithLabelValues(tp.Topic, strconv.Itoa(int(tp.Partition))),
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
	p.queue.init()
	p.dl = dlsend.New(&pl.deadLetters, p, tp.Topic, tp.Partition, topic.deadLetterTopic, ctx, p.quit, p.log)
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

func (p *partition) start() {
	go p.work()
	go p.dl.Run()
}

// work takes records in offset order and turns each into its rows for the write stage (one per entry
// that maps it) and, when an entry refuses it, a dead letter.
func (p *partition) work() {
	defer close(p.workerDone)
	defer func() {
		for _, s := range p.split {
			s.Release()
		}
	}()
	rows := consumer.GetHandOff()
	for {
		c, ok := p.queue.next(p.quit)
		if !ok {
			return
		}
		recs := c.recs
		// What the chunk's records were charged when they were queued, returned once the worker lets go
		// of the chunk: after mapping, nothing keeps a record but the dead-letter sender (a bad one, whose
		// cost moves to its tracker entry). The records of a chunk share slabs and decompressed batches,
		// which live until the last of them is mapped, so the release waits for the whole chunk.
		var freed int64
		// flush hands the rows mapped so far to the write stage; false if the partition was stopped first.
		flush := func() bool {
			sent := len(rows) > 0
			if sent {
				p.pl.mapped.Observe(max(p.pl.now().Sub(c.fetched), 0).Seconds())
			}
			ok := p.handOff(rows)
			if sent {
				rows = consumer.GetHandOff() // the write stage gives the sent slice back (consumer.PutHandOff)
			}
			return ok
		}
		// stop gives back the records not handled (so that their bytes are released when the partition is
		// given up) and waits for the stop.
		stop := func(rest []*kgo.Record) {
			p.queue.pushFront(rest, c.fetched)
			p.releaseMapped(freed)
			<-p.quit
		}
		for i, r := range recs {
			if p.rewound(r.Offset) {
				// Everything mapped before r is handed on first: restarting waits for it to finish.
				if !flush() || !p.restartTracking(r.Offset) {
					stop(recs[i:])
					return
				}
			}
			// A record's rows go to the write stage in one message, which the pooled hand-off slice holds
			// without growing.
			if len(rows)+len(p.topic.entries) > cap(rows) && !flush() {
				stop(recs[i:])
				return
			}
			var cont, held bool
			rows, cont, held = p.handle(r, rows)
			if !held {
				freed += budget.RecordCost(r)
			}
			// Nothing refers to the record any more (a dead letter holds a clone): franz-go may reuse its
			// memory once every record of its batch is recycled (consumer/pools.go).
			r.Recycle()
			if (len(rows) == cap(rows) || i == len(recs)-1 || !cont) && !flush() {
				cont = false
			}
			if !cont {
				// Stopped, or halted on a record that cannot be dead-lettered.
				stop(recs[i+1:])
				return
			}
		}
		p.releaseMapped(freed)
	}
}

// releaseMapped returns the queued cost of records the worker has mapped and no longer holds.
func (p *partition) releaseMapped(n int64) {
	if n > 0 {
		p.pl.release(p.tp, n)
	}
}

// handle maps one record for every entry of its topic and registers it with its parts: one per row it
// appends to rows (for the write stage), plus one for its dead letter when an entry refused it. The
// record's offset is committed past once every part is done: each row acknowledged by Cassandra, the dead
// letter by Kafka. A record every entry skips has no part and is skipped. It returns cont=false when
// the worker must stop taking records, and held=true when the record stays referenced after it (a bad
// record on its way to the dead-letter topic), so that its cost stays charged.
//
// A mapped record is not kept: its rows hold copies of what they need (the mapper copies every string
// and the key into the row's own memory), and if Cassandra refuses a row the dead-letter sender reads
// the record back from Kafka (deadletter/reread.go).
func (p *partition) handle(r *kgo.Record, rows []batcher.Row) (out []batcher.Row, cont, held bool) {
	ms, err := p.mapRecord(r)
	defer clear(ms) // kept as the next record's scratch: let go of the rows and errors
	if errors.Is(err, errStopped) {
		return rows, false, false // not registered: the next owner replays it
	}
	var refusals []deadletter.Refusal
	if err != nil {
		// Of the whole record (its mapping panicked): no entry made anything of it.
		refusals = append(refusals, deadletter.Refusal{Reason: refusalReason(err), Err: err})
		ms = nil
	}
	nrows := 0
	// What the record holds until it is done; its tracker entry (budget.EntryCost, charged below) is
	// returned by the tracker when the watermark passes it.
	var bytes int64
	for i := range ms {
		m := &ms[i]
		switch reason := skipReason(m.Err); {
		case m.Err == nil:
			nrows++
			// Charged by handOff, before the row can complete and be released.
			bytes += budget.RowCost(&m.Row)
		case reason != "":
			p.skip(r.Offset, m.Entry, reason, m.Err)
		default:
			rf := deadletter.Refusal{Entry: m.Entry, Reason: refusalReason(m.Err), Err: m.Err}
			if e := p.pl.entries[m.Entry]; e != nil {
				rf.Table = e.table
			}
			refusals = append(refusals, rf)
		}
	}
	parts := nrows
	switch {
	case len(refusals) > 0 && p.topic.deadLetterTopic == "":
		// Halted below: the record's one part never finishes, and its rows are not written.
		parts, nrows, bytes = 1, 0, 0
	case len(refusals) > 0:
		parts++
		// The dead-letter sender holds the record until it is produced: the cost charged when it was
		// queued moves to its tracker entry instead of being released with its chunk.
		bytes += budget.RecordCost(r)
	case parts == 0:
		parts = 1 // every entry skipped it: done at once, below
	}
	p.mu.Lock()
	// Registered before it is handed on, so its acknowledgements always find it.
	rerr := p.tr.Register(r.Offset, r.LeaderEpoch, bytes, parts)
	p.mu.Unlock()
	if rerr != nil {
		// A lower offset than one already taken restarts tracking first (work, restartTracking), so this
		// is an offset the tracker cannot hold at all (negative): stopping is the only choice that cannot
		// commit past an unprocessed record.
		p.log.Error("record offset refused; partition halted", slog.Int64("offset", r.Offset), slog.Any("error", rerr))
		p.pl.metrics.RecordsFailed.WithLabelValues(p.tp.Topic).Inc()
		p.setStuck(r.Offset, true)
		return rows, false, false
	}
	// The tracker entry's cost, returned when the watermark passes it: charged by handOff with the rows
	// when the record has any (it cannot be retired before they are handed on and written), here at once
	// when it has none. One charge per hand-off keeps the pipeline's lock off the per-record path.
	if nrows > 0 {
		p.unchargedEntries++
	} else {
		p.pl.charge(p.tp, budget.EntryCost)
	}
	if len(refusals) == 0 && nrows == 0 {
		p.Complete([]int64{r.Offset})
		return rows, true, false
	}
	for i := range ms {
		if nrows > 0 && ms[i].Err == nil {
			rows = append(rows, ms[i].Row)
		}
	}
	if len(refusals) == 0 {
		return rows, true, false
	}
	if p.topic.deadLetterTopic == "" {
		p.halt(r.Offset, refusals[0].Reason, refusals[0].Err)
		return rows, false, false
	}
	p.dl.Add(dlsend.Letter{Offset: r.Offset, Rec: consumer.CloneRecord(r), Refusals: refusals})
	return rows, true, true
}

// refusalReason is the dead-letter reason of a mapping error.
func refusalReason(err error) string {
	var re *mapper.RecordError
	var pe *mapPanic
	switch {
	case errors.As(err, &re) && re.Reason != "":
		return re.Reason
	case errors.As(err, &pe):
		return deadletter.ReasonPanic
	}
	return mapper.ReasonMap
}

// rewound reports whether offset is at or below a record this assignment already took: the client went
// back in the partition's log. Kafka hands a partition's records in order, but its position can move
// back: after a log truncation (an unclean leader election, or a reset to kafka.start_offset when the
// position fell out of the log's range) or when the group's offset is reset under a live member.
func (p *partition) rewound(offset int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	last, ok := p.tr.Last()
	return ok && offset <= last
}

// restartTracking starts the partition's offset tracking again at offset, a rewound position: it waits
// until every record taken so far is done (written or dead-lettered; rows held by a failing write are
// retried meanwhile), then replaces the tracker, so the records from offset on are tracked afresh and
// the watermark never counts one of them done for an old record at the same offset. Nothing is marked
// while it waits, so no commit runs ahead of a row. The marks from offset on reach the commit as the
// client takes them: a position after a truncation carries a newer leader epoch and is taken though its
// offset is lower; at the same epoch the records below the last commit are the ones already written,
// and the commit stays where it is until the replay passes it. It returns false if the partition is
// stopped while it waits; a partition halted on a bad record without a dead-letter topic waits here
// like anywhere else.
func (p *partition) restartTracking(offset int64) bool {
	p.mu.Lock()
	last, _ := p.tr.Last()
	n := p.tr.InFlight()
	p.mu.Unlock()
	p.log.Warn("partition went back to an offset already taken (log truncated or offsets reset); "+
		"tracking starts again there once the records in flight are done",
		slog.Int64("offset", offset), slog.Int64("last_taken", last), slog.Int("in_flight", n))
	for {
		p.mu.Lock()
		if p.tr.InFlight() == 0 {
			p.tr = offsets.NewTracker(budget.EntryCost)
			p.settled = nil
			p.mu.Unlock()
			return true
		}
		if p.settled == nil {
			p.settled = make(chan struct{})
		}
		settled := p.settled
		p.mu.Unlock()
		select {
		case <-settled:
		case <-p.quit:
			return false
		}
	}
}

// skipReason returns the reason of an entry's error that says the entry skips a record (a skip reason
// of the mapper), or "" for a refusal. A skipped record is good data the entry has no row for: its row
// would be born expired (ttl_from event_time, an event older than the ttl; writing it would store a row
// Cassandra drops at once), or it is a tombstone the entry skips (on_tombstone: skip). It is never
// dead-lettered nor a reason to stop the partition.
func skipReason(err error) string {
	if err == nil {
		return "" // before re: mapped rows cost no allocation here
	}
	var re *mapper.RecordError
	if errors.As(err, &re) && mapper.Skipped(re.Reason) {
		return re.Reason
	}
	return ""
}

// skip counts an entry's skip of a record in sink_records_skipped_total by reason. A consumer behind by
// more than the ttl skips a record per offset, so the log says so at most once a skipLogEvery per
// partition, with the last record's coordinates and how many were skipped since the previous line. The
// record is committed past like a written one once its other parts (if any) are done.
func (p *partition) skip(offset int64, entry, reason string, err error) {
	p.pl.metrics.RecordsSkipped.WithLabelValues(p.tp.Topic, reason).Inc()
	p.skipped++
	if now := p.pl.now(); now.Sub(p.skipLogged) >= skipLogEvery {
		p.log.Info("record skipped by an entry: no row in its table", slog.Int64("offset", offset),
			slog.String("entry", entry), slog.String("reason", reason), slog.Int("skipped", p.skipped), slog.Any("error", err))
		p.skipLogged, p.skipped = now, 0
	}
}

// skipLogEvery rate-limits the log of skipped records per partition.
const skipLogEvery = time.Minute

// mapPanic is the error of a record whose mapping panicked.
type mapPanic struct {
	topic     string
	partition int32
	offset    int64
	value     any
}

func (e *mapPanic) Error() string {
	return fmt.Sprintf("topic %s partition %d offset %d: mapping the record panicked: %v", e.topic, e.partition, e.offset, e.value)
}

// mapRecord maps one record for every entry of its topic (MapAll), then routes the rows of entries
// with split on (package split), mapping an entry's row again (MapEntry) when its routing changes. A panic
// in the mapper is contained to the record: logged at ERROR with its stack, and returned as an error, so
// that the record is dead-lettered with reason panic (or stops the partition when the topic has no
// dead-letter topic) like any record that cannot be mapped, instead of crashing the daemon again on
// every replay. While the schema registry does not answer, the record waits (the partition with it).
func (p *partition) mapRecord(r *kgo.Record) (ms []mapper.Mapped, err error) {
	defer func() {
		if v := recover(); v != nil {
			p.log.Error("mapping a record panicked; treating it as a bad record",
				slog.Int64("offset", r.Offset), slog.Any("panic", v), slog.String("stack", string(debug.Stack())))
			ms, err = nil, &mapPanic{topic: r.Topic, partition: r.Partition, offset: r.Offset, value: v}
		}
	}()
	rec := mapper.Record{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp}
	rec.SchemaIDHeader, rec.KeySchemaIDHeader = SchemaIDHeaders(r)
	// The common path calls the mapper directly; the waits below take closures, kept off it.
	ms, err = p.pl.mapper.MapAll(p.workCtx, rec, p.mapped[:0])
	if err != nil && unavailable(err) {
		ms, err = p.mapAllWaiting(rec, err)
	}
	p.mapped = ms[:0]
	if err != nil || p.split == nil {
		return ms, err
	}
	return ms, p.routeSplits(rec, ms)
}

// unavailable reports whether err says the schema registry did not answer.
func unavailable(err error) bool {
	ue := (*codec.UnavailableError)(nil)
	return errors.As(err, &ue)
}

// mapAllWaiting maps rec for every entry again until the schema registry answers (waitRegistry); first
// is the error of the attempt that found it unavailable.
func (p *partition) mapAllWaiting(rec mapper.Record, first error) (ms []mapper.Mapped, err error) {
	err = p.waitRegistry(rec.Offset, first, func(ctx context.Context) (err error) {
		ms, err = p.pl.mapper.MapAll(ctx, rec, p.mapped[:0])
		return err
	})
	return ms, err
}

// routeSplits routes the rows of the entries with split on (package split); an entry whose row the routing
// changes is mapped again alone (MapEntry), and its refusal, if it now refuses, replaces its row. It
// returns errStopped when the partition stopped meanwhile.
func (p *partition) routeSplits(rec mapper.Record, ms []mapper.Mapped) error {
	for i := range ms {
		m := &ms[i]
		s := p.split[m.Entry]
		if s == nil || m.Err != nil {
			continue
		}
		remap := func() (row batcher.Row, err error) {
			row, err = p.pl.mapper.MapEntry(p.workCtx, m.Entry, rec)
			err = p.waitRegistry(rec.Offset, err, func(ctx context.Context) (err error) {
				row, err = p.pl.mapper.MapEntry(ctx, m.Entry, rec)
				return err
			})
			return row, err
		}
		row, err := s.Route(m.Row, remap)
		if errors.Is(err, errStopped) {
			return err
		}
		m.Row, m.Err = row, err
	}
	return nil
}

// waitRegistry takes the error of a mapping, first, and while the error says the schema registry does
// not answer, runs the mapping (op) again with backoff, the partition stuck at offset (retry), until the
// registry answers or the partition stops (errStopped). Any other error is returned as it is.
func (p *partition) waitRegistry(offset int64, first error, op func(ctx context.Context) error) error {
	if first == nil || !unavailable(first) {
		return first
	}
	// The schema registry does not answer: the record waits, and the partition with it.
	p.pl.metrics.RegistryRetries.WithLabelValues(p.tp.Topic).Inc()
	var last error
	if werr := p.Retry(offset, "fetching the writer schema from the schema registry", func(ctx context.Context) error {
		last = op(ctx)
		if unavailable(last) {
			p.pl.metrics.RegistryRetries.WithLabelValues(p.tp.Topic).Inc()
			return last
		}
		return nil
	}); werr != nil {
		return werr
	}
	return last
}

// errStopped: the partition stopped while a record waited for something unreachable (the routing
// table, the schema registry). The record is not registered and will be replayed by the next owner.
var errStopped = errors.New("partition stopped while a record waited")

// dependencyCallTimeout bounds one call to a dependency (the routing table, the schema registry),
// which retry then repeats. A stop of the partition cancels a call at once (workCtx), so a revoke or
// a shutdown never waits for it.
const dependencyCallTimeout = 30 * time.Second

// Retry runs op until it succeeds, with the pipeline's backoff, or until the partition stops
// (errStopped). A dependency being unreachable (the routing table, the schema registry) is never the
// record's fault. While it fails, the partition is stuck at offset (the record waiting for it): paused in the client and
// counted in sink_stuck_partitions, like a write being retried, so that its fetched records do not
// fill the byte budget that every other partition shares. The failure is logged at once and then at
// most every stuckLogEvery.
func (p *partition) Retry(offset int64, what string, op func(ctx context.Context) error) error {
	var logged time.Time
	for n := 0; ; n++ {
		ctx, cancel := context.WithTimeout(p.workCtx, dependencyCallTimeout)
		err := op(ctx)
		cancel()
		if err == nil {
			if n > 0 {
				p.setStuck(offset, false)
			}
			return nil
		}
		if p.workCtx.Err() != nil { // the partition stops: the call was canceled, not failed
			if n > 0 {
				p.setStuck(offset, false)
			}
			return errStopped
		}
		if n == 0 {
			p.setStuck(offset, true)
		}
		wait := p.pl.backoff.Delay(n)
		if now := time.Now(); now.Sub(logged) >= stuckLogEvery {
			logged = now
			p.log.Warn(what+" failed; partition stuck before the record, retrying with backoff",
				slog.Int64("offset", offset), slog.Int("attempt", n+1), slog.Any("error", err), slog.Duration("backoff", wait))
		}
		select {
		case <-p.quit:
			p.setStuck(offset, false)
			return errStopped
		case <-p.workCtx.Done():
			p.setStuck(offset, false)
			return errStopped
		case <-time.After(wait):
		}
	}
}

// The split state of an entry routes through its partition's worker (package split).
var _ split.Worker = (*partition)(nil)

// Sleep waits d, or returns errStopped as soon as the partition stops.
func (p *partition) Sleep(d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-p.quit:
		return errStopped
	case <-p.workCtx.Done():
		return errStopped
	case <-timer.C:
		return nil
	}
}

// HighWatermark is the partition's high watermark as the fetch that brought the current record
// reported it; false until a fetch has (the fetch reports it just after it queues the records).
func (p *partition) HighWatermark() (int64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hwm, p.hwm >= 0
}

// WorkContext is the worker's calls' context: canceled when the partition stops (stop), so a call the
// worker is in returns at once.
func (p *partition) WorkContext() context.Context { return p.workCtx }

// SchemaIDHeaders reports whether r carries its value's and its key's writer schema id in headers (the
// newer Confluent clients' form, mapper.HeaderValueSchemaID and HeaderKeySchemaID), which the mapper
// refuses with a message saying so.
func SchemaIDHeaders(r *kgo.Record) (value, key bool) {
	for _, h := range r.Headers {
		value = value || h.Key == mapper.HeaderValueSchemaID
		key = key || h.Key == mapper.HeaderKeySchemaID
	}
	return value, key
}

// handOff sends rows to the write stage; it returns false if the partition was stopped first.
func (p *partition) handOff(rows []batcher.Row) bool {
	if len(rows) == 0 {
		return true
	}
	n := budget.EntryCost * p.unchargedEntries
	p.unchargedEntries = 0
	for i := range rows {
		n += budget.RowCost(&rows[i])
	}
	p.pl.charge(p.tp, n)
	select {
	case p.pl.writes.In() <- writestage.Msg{Rows: rows, Owner: p}:
		return true
	case <-p.quit:
		// Registered but never handed on: their records cannot finish in this assignment, so the revoke
		// must not wait for them; they stay undone, so the watermark stops before the first of them.
		p.mu.Lock()
		for i := range rows {
			p.block(rows[i].Offset)
		}
		p.mu.Unlock()
		return false
	}
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
		if first, _, qok := p.queue.firstOffset(); qok {
			next = first
		} else {
			return
		}
	}
	p.lag.Set(float64(max(hwm-next, 0)))
}

// stop stops the worker and waits for it, then returns the queued records' bytes, which no one will
// process. In-flight rows and dead letters continue; see waitDrained.
func (p *partition) stop() {
	select {
	case <-p.quit:
	default:
		close(p.quit)
	}
	p.stopWork() // a call the worker is in returns now, not at its timeout
	<-p.workerDone
	if n := p.queue.drain(); n > 0 {
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

// recordQueue hands fetched records from the poll loop to the worker. Push never blocks: the poll loop
// must reach AllowRebalance promptly whatever the worker is doing (DRIVER-NOTES R5.2-3). Its size is
// bounded by the byte budget, at which the poll loop stops polling instead.
type recordQueue struct {
	mu     sync.Mutex
	chunks []chunk
	notify chan struct{}
}

// chunk is the records of one fetch of one partition, and when the poll loop handed them over.
type chunk struct {
	recs    []*kgo.Record
	fetched time.Time
}

func (q *recordQueue) init() { q.notify = make(chan struct{}, 1) }

func (q *recordQueue) push(recs []*kgo.Record, fetched time.Time) {
	q.mu.Lock()
	q.chunks = append(q.chunks, chunk{recs, fetched})
	q.mu.Unlock()
	select {
	case q.notify <- struct{}{}:
	default:
	}
}

// pushFront returns records the worker took but did not handle.
func (q *recordQueue) pushFront(recs []*kgo.Record, fetched time.Time) {
	if len(recs) == 0 {
		return
	}
	q.mu.Lock()
	q.chunks = append([]chunk{{recs, fetched}}, q.chunks...)
	q.mu.Unlock()
}

// next waits for records or for quit.
func (q *recordQueue) next(quit <-chan struct{}) (chunk, bool) {
	for {
		select {
		case <-quit:
			return chunk{}, false
		default:
		}
		q.mu.Lock()
		if len(q.chunks) > 0 {
			c := q.chunks[0]
			q.chunks[0] = chunk{}
			q.chunks = q.chunks[1:]
			q.mu.Unlock()
			return c, true
		}
		q.mu.Unlock()
		select {
		case <-q.notify:
		case <-quit:
			return chunk{}, false
		}
	}
}

// firstOffset is the offset of the first queued record.
func (q *recordQueue) firstOffset() (int64, int32, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, c := range q.chunks {
		if len(c.recs) > 0 {
			return c.recs[0].Offset, c.recs[0].LeaderEpoch, true
		}
	}
	return 0, 0, false
}

// drain empties the queue and returns the bytes its records held.
func (q *recordQueue) drain() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	var n int64
	for _, c := range q.chunks {
		for _, r := range c.recs {
			n += budget.RecordCost(r)
		}
	}
	q.chunks = nil
	return n
}
