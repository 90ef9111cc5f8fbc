package cassandra

import (
	"context"
	"fmt"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/bucketsink/sink/config"
)

// PendingTable is the table of rollup windows still to compute, one per keyspace with rollups
// (docs/DESIGN.md, "Rollups"). A marker is written with the raw row that makes its window pending,
// as another part of the same record, at the record's offset as its write timestamp; the rollup
// worker of the marker's Kafka partition deletes it at that timestamp once the window is written.
const PendingTable = "sink_rollup_pending"

// pendingGCGrace is the pending table's gc_grace_seconds: markers live seconds to hours, and a delete
// shadows the marker of the same offset only, so a short grace loses nothing but the tombstones.
const pendingGCGrace = 3600

// pendingTableDDL creates keyspace's pending table: one partition per (entry, Kafka partition), its
// markers by due time, so a worker reads its due markers with one slice query.
func pendingTableDDL(keyspace string) string {
	return "CREATE TABLE IF NOT EXISTS " + keyspace + "." + PendingTable + " (\n" +
		"    entry text,\n" +
		"    kafka_partition int,\n" +
		"    due timestamp,\n" +
		"    rollup text,\n" +
		"    entity blob,\n" +
		"    window_start timestamp,\n" +
		"    record_offset bigint,\n" +
		"    PRIMARY KEY ((entry, kafka_partition), due, rollup, entity, window_start)\n" +
		") WITH gc_grace_seconds = " + fmt.Sprint(pendingGCGrace)
}

// pendingKeyspaces lists the keyspaces of the given topics that have rollups, in order, once each.
func pendingKeyspaces(cfg *config.Config, topics []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, name := range topics {
		tc := cfg.Topics[name]
		if len(tc.Rollups) > 0 && !seen[tc.Keyspace] {
			seen[tc.Keyspace] = true
			out = append(out, tc.Keyspace)
		}
	}
	return out
}

// PendingInsert is the INSERT of a marker: entry, kafka_partition, due, rollup, entity, window_start,
// record_offset, then the write timestamp (the record's offset).
func PendingInsert(keyspace string) string {
	return "INSERT INTO " + keyspace + "." + PendingTable +
		" (entry, kafka_partition, due, rollup, entity, window_start, record_offset) VALUES (?, ?, ?, ?, ?, ?, ?) USING TIMESTAMP ?"
}

// PendingColumns are the columns PendingInsert binds, in order.
var PendingColumns = []string{"entry", "kafka_partition", "due", "rollup", "entity", "window_start", "record_offset"}

// Marker is one pending rollup window.
type Marker struct {
	Due    time.Time
	Rollup string
	Entity []byte // the id components of the raw rows' routing key (routing.KeyParts)
	Window time.Time
	// Record is the offset of the record whose raw row made the window pending (for a coarser
	// rollup's window, the finer marker's); Timestamp the marker's write timestamp, which Done
	// deletes at: the record's offset for a raw row's marker, the worker's clock for a coarser one.
	Record, Timestamp int64
}

// Pending reads and deletes the markers of one keyspace.
type Pending struct {
	s        *Session
	keyspace string
	cons     gocql.Consistency
}

// NewPending returns the markers of keyspace, read and deleted at consistency cons.
func NewPending(s *Session, keyspace string, cons gocql.Consistency) *Pending {
	return &Pending{s: s, keyspace: keyspace, cons: cons}
}

// Due reads up to limit markers of (entry, partition) due at or before upTo, oldest first.
func (p *Pending) Due(ctx context.Context, entry string, partition int32, upTo time.Time, limit int) ([]Marker, error) {
	iter := p.s.gs.Query("SELECT due, rollup, entity, window_start, record_offset, WRITETIME(record_offset) FROM "+p.keyspace+"."+PendingTable+
		" WHERE entry = ? AND kafka_partition = ? AND due <= ? LIMIT ?", entry, partition, upTo, limit).
		Consistency(p.cons).IterContext(ctx)
	var out []Marker
	var m Marker
	var wt int64
	for iter.Scan(&m.Due, &m.Rollup, &m.Entity, &m.Window, &m.Record, &wt) {
		m.Timestamp = wt
		out = append(out, m)
		m = Marker{}
	}
	if err := iter.Close(); err != nil {
		return nil, fmt.Errorf("reading the due rollup windows of %s partition %d from %s.%s: %w", entry, partition, p.keyspace, PendingTable, err)
	}
	return out, nil
}

// Done deletes marker m of (entry, partition) at the timestamp it was written with: a marker written
// again since, by a later record of its window, has a larger one and stays.
func (p *Pending) Done(ctx context.Context, entry string, partition int32, m Marker) error {
	err := p.s.gs.Query("DELETE FROM "+p.keyspace+"."+PendingTable+" USING TIMESTAMP ? WHERE entry = ? AND kafka_partition = ? AND due = ? AND rollup = ? AND entity = ? AND window_start = ?",
		m.Timestamp, entry, partition, m.Due, m.Rollup, m.Entity, m.Window).Consistency(p.cons).Idempotent(true).ExecContext(ctx)
	if err != nil {
		return fmt.Errorf("deleting a done rollup window of %s partition %d from %s.%s: %w", entry, partition, p.keyspace, PendingTable, err)
	}
	return nil
}

// Mark writes marker m of (entry, partition) at m.Timestamp: the window of a rollup made from a finer
// one whose row was just written. Its timestamp is the worker's clock, not an offset: a finer window
// may be computed after its coarser window's marker was deleted at a larger offset than its own.
func (p *Pending) Mark(ctx context.Context, entry string, partition int32, m Marker) error {
	err := p.s.gs.Query(PendingInsert(p.keyspace), entry, partition, m.Due, m.Rollup, m.Entity, m.Window, m.Record, m.Timestamp).
		Consistency(p.cons).Idempotent(true).ExecContext(ctx)
	if err != nil {
		return fmt.Errorf("marking a rollup window of %s partition %d in %s.%s: %w", entry, partition, p.keyspace, PendingTable, err)
	}
	return nil
}
