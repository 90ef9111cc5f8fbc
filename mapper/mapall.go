package mapper

import (
	"context"
	"errors"
	"fmt"

	"github.com/bucketsink/sink/batcher"
)

// Mapped is what one entry made of a record.
type Mapped struct {
	Entry string      // the entry's name
	Row   batcher.Row // the row to write; valid when Err is nil
	Err   error       // a *RecordError (its Entry set) when this entry refuses the record, or skips it
}

// MapAll maps rec once for every entry that reads rec.Topic, appending one Mapped per entry, in
// entry-name order, to out. An error that is no entry's fault (the schema registry does not answer:
// a *codec.UnavailableError) is returned, with nothing appended: the record waits.
func (m *Mapper) MapAll(ctx context.Context, rec Record, out []Mapped) ([]Mapped, error) {
	plans := m.entries[rec.Topic]
	if len(plans) == 0 {
		_, err := m.MapContext(ctx, rec) // the unknown-topic error, of no entry
		return append(out, Mapped{Err: err}), nil
	}
	start := len(out)
	for _, p := range plans {
		row, err := m.mapPlan(ctx, p, rec)
		var re *RecordError
		if err != nil && !errors.As(err, &re) {
			return out[:start], err
		}
		out = append(out, Mapped{Entry: p.name, Row: row, Err: err})
	}
	return out, nil
}

// MapEntry maps rec for one entry only (a split re-maps one entry's row).
func (m *Mapper) MapEntry(ctx context.Context, entry string, rec Record) (batcher.Row, error) {
	p := m.byName[entry]
	if p == nil || p.kafkaTopic != rec.Topic {
		return batcher.Row{}, &RecordError{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset,
			Reason: ReasonMap, Entry: entry, Err: fmt.Errorf("no entry topics.%s reads this Kafka topic", entry)}
	}
	return m.mapPlan(ctx, p, rec)
}

// Entries lists the names of the entries that read a Kafka topic, sorted.
func (m *Mapper) Entries(kafkaTopic string) []string {
	out := make([]string, 0, len(m.entries[kafkaTopic]))
	for _, p := range m.entries[kafkaTopic] {
		out = append(out, p.name)
	}
	return out
}

// mapPlan maps rec by one entry's plan; a refusal is a *RecordError naming the entry.
func (m *Mapper) mapPlan(ctx context.Context, p *plan, rec Record) (batcher.Row, error) {
	s := m.pool.Get().(*scratch)
	out, reason, err := p.mapRecord(ctx, &rec, s)
	m.release(s)
	if err != nil {
		err = recordError(&rec, reason, err)
		if re := (*RecordError)(nil); errors.As(err, &re) {
			re.Entry = p.name
		}
		return batcher.Row{}, err
	}
	return out.row, nil
}

// ReasonTombstone: the entry skips a tombstone (on_tombstone: skip); the pipeline counts it in
// sink_records_skipped_total and commits past it.
const ReasonTombstone = "tombstone"
