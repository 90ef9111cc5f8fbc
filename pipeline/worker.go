package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/codec"
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

// The partition's worker: it takes the records the poll loop queued, in offset order, maps each for
// every entry of its topic (routing the rows of entries with split on), registers it with its tracker
// and hands its rows to the write stage and its refusals to the dead-letter sender.

// start starts the partition's worker and its dead-letter sender; the rebalance callbacks stop and
// wait for both (stop, giveUp).
func (p *partition) start() {
	go p.work()
	go p.dl.Run()
	if p.rollup != nil {
		var ctx context.Context
		ctx, p.stopRollup = context.WithCancel(p.ctx)
		go func() {
			defer close(p.rollupDone)
			p.rollup.Run(ctx)
		}()
	}
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
		c, ok := p.queue.Next(p.quit)
		if !ok {
			return
		}
		recs := c.Recs
		// What the chunk's records were charged when they were queued, returned once the worker lets go
		// of the chunk: after mapping, nothing keeps a record but the dead-letter sender (a bad one, whose
		// cost moves to its tracker entry). The records of a chunk share slabs and decompressed batches,
		// which live until the last of them is mapped, so the release waits for the whole chunk.
		var freed int64
		// flush hands the rows mapped so far to the write stage; false if the partition was stopped first.
		flush := func() bool {
			sent := len(rows) > 0
			if sent {
				p.pl.mapped.Observe(max(p.pl.now().Sub(c.Fetched), 0).Seconds())
			}
			ok := p.handOff(rows)
			clear(p.markerIndex) // it indexes rows of the slice just handed off
			if sent {
				rows = consumer.GetHandOff() // the write stage gives the sent slice back (consumer.PutHandOff)
			}
			return ok
		}
		// stop gives back the records not handled (so that their bytes are released when the partition is
		// given up) and waits for the stop.
		stop := func(rest []*kgo.Record) {
			p.queue.PushFront(rest, c.Fetched)
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
	// The pending rollup markers of the rows: more parts of the record, so its offset is committed only
	// once they are durable too (pipeline/rollup).
	markers := p.markers[:0]
	defer func() { // copied into rows by then: the scratch keeps no row alive
		clear(markers)
		p.markers = markers[:0]
	}()
	for i := range ms {
		m := &ms[i]
		if e := p.rollupsOf(m); e != nil {
			before := len(markers)
			var err error
			if markers, err = e.Markers(markers, &m.Row, &p.markerW, p.standing); err != nil {
				markers, m.Err = markers[:before], err // refused below, like a row the entry cannot map
			}
			for j := before; j < len(markers); j++ {
				nrows++
				bytes += budget.RowCost(&markers[j])
			}
		}
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
	// A marker that stands (written by an earlier record, not taken by the rollup worker since) was
	// left out by Markers: this record relies on it (rollup.Standing). Should the record halt the
	// partition below instead, no later record is mapped in this assignment to rely on a marker it
	// named, and a marker it relied on waits for it, which never commits here. Past what Standing
	// remembers, a marker whose row an earlier record of this hand-off already holds is not added
	// again either: that row takes this record's values instead (foldMarkers).
	into := p.markerInto[:0]
	defer func() { p.markerInto = into[:0] }()
	if len(markers) > 0 && (len(refusals) == 0 || p.topic.deadLetterTopic != "") {
		for i := range markers {
			j := p.heldMarker(rows, &markers[i])
			into = append(into, j)
			if j != markerAdded {
				nrows--
				bytes -= budget.RowCost(&markers[i])
			}
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
	if nrows > 0 {
		rows = p.foldMarkers(rows, markers, into)
	}
	// One return for the three outcomes: with at most five returns the compiler runs handle's defers
	// inline (open-coded) instead of queueing them and walking the queue on the way out, which cost
	// about 300 instructions a record.
	switch {
	case len(refusals) == 0:
		cont = true
	case p.topic.deadLetterTopic == "":
		p.halt(r.Offset, refusals[0].Reason, refusals[0].Err)
	default:
		p.dl.Add(dlsend.Letter{Offset: r.Offset, Rec: consumer.CloneRecord(r), Refusals: refusals})
		cont, held = true, true
	}
	return rows, cont, held
}

// rollupsOf is the rollups of the entry that mapped m into a row; nil when it has none, or m is not a
// row. A topic without rollups does not look its entries up (a map look-up per row).
func (p *partition) rollupsOf(m *mapper.Mapped) *rollup.Entry {
	if !p.topic.rollups || m.Err != nil {
		return nil
	}
	if e := p.pl.entries[m.Entry]; e != nil {
		return e.rollup
	}
	return nil
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
	rec.Headers = Headers(r, p.headers[:0])
	p.headers = rec.Headers[:0]
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
			err = p.withRegistry(rec.Offset, func(ctx context.Context) (err error) {
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

// withRegistry runs op once under the worker's context and, while the schema registry does not answer,
// again until it does (waitRegistry). Rare paths call the mapper through it; the common one (MapAll in
// mapRecord) calls it directly, so that no closure is made per record.
func (p *partition) withRegistry(offset int64, op func(ctx context.Context) error) error {
	return p.waitRegistry(offset, op(p.workCtx), op)
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

// Headers appends r's headers, as the mapper reads them (filters), to buf, whose memory a worker reuses
// record after record: the mapper does not keep them.
func Headers(r *kgo.Record, buf []mapper.Header) []mapper.Header {
	for _, h := range r.Headers {
		buf = append(buf, mapper.Header{Key: h.Key, Value: h.Value})
	}
	return buf
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

// markerAdded is what heldMarker says of a marker that adds a row of its own; an index >= 0 into the
// hand-off's rows is the row it folds into.
const markerAdded = -1

// heldMarker is the index in rows (the hand-off being filled) of the row of the pending table that
// marker m names, when an earlier record of this hand-off added it; markerAdded when none did.
func (p *partition) heldMarker(rows []batcher.Row, m *batcher.Row) int {
	if len(p.markerIndex) == 0 {
		return markerAdded
	}
	id := rollup.Identity(m)
	j, ok := p.markerIndex[maphash.Bytes(p.markerSeed, id)]
	if !ok || int(j) >= len(rows) || rows[j].Target != m.Target || !bytes.Equal(rollup.Identity(&rows[j]), id) {
		return markerAdded
	}
	return int(j)
}

// foldMarkers appends to rows the markers of a record that adds them (into[i] == markerAdded), and
// gives each marker that an earlier record of this hand-off already added
// (into[i] >= 0, from heldMarker) to that row instead: the row keeps the earlier record's part (its
// offset, acknowledged with the earlier record) and takes the later record's values (the record named,
// the write timestamp).
//
// One row then stands for both records, and that is safe: the rollup worker takes a marker only once
// every record below the one it names is committed (Worker.Committed), so the window is computed with the
// earlier record's row and the later one's; the later record commits only after the earlier one, so a
// crash before the row is durable replays the later record, which writes its marker again.
func (p *partition) foldMarkers(rows, markers []batcher.Row, into []int) []batcher.Row {
	for i := range markers {
		if j := into[i]; j >= 0 {
			rows[j].Packed = markers[i].Packed // the same size: only the two integers differ
			continue
		}
		if p.markerIndex == nil {
			p.markerIndex, p.markerSeed = map[uint64]int32{}, maphash.MakeSeed()
		}
		p.markerIndex[maphash.Bytes(p.markerSeed, rollup.Identity(&markers[i]))] = int32(len(rows))
		rows = append(rows, markers[i])
	}
	return rows
}
