package mapper

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/config"
)

// The one per-record path: Map, MapContext and MapEntry map a record for one entry by mapRecord, a
// registry codec's framing and writer schema (decoder.go), the tombstone rules (latest.go), the plan's
// values into the row (decoded.go, row.go); MapAll (fanout.go) and Explain (explain.go) take it too.

// Map turns one record into the row its topic's policy says, or a *RecordError; see MapContext.
func (m *Mapper) Map(rec Record) (batcher.Row, error) {
	return m.MapContext(context.Background(), rec)
}

// MapContext is Map, with ctx bounding a fetch of the record's writer schema from the registry
// (the first record of each schema id). When the registry does not answer, the error wraps a
// *codec.UnavailableError and is no *RecordError: the record is not at fault, and mapping it again
// later will succeed. It maps for a Kafka topic read by one entry; a topic with several is an error
// that says to use MapAll.
func (m *Mapper) MapContext(ctx context.Context, rec Record) (batcher.Row, error) {
	f := m.byKafka[rec.Topic]
	if f == nil {
		return batcher.Row{}, m.unknownTopic(&rec)
	}
	if len(f.entries) > 1 {
		return batcher.Row{}, fmt.Errorf("mapper: Kafka topic %s is read by %d entries (%s): map its records with MapAll",
			rec.Topic, len(f.entries), strings.Join(f.names, ", "))
	}
	return m.mapEntry(ctx, f.entries[0], &rec)
}

// unknownTopic is the error of a record whose Kafka topic no entry reads.
func (m *Mapper) unknownTopic(rec *Record) error {
	return &RecordError{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset, Reason: ReasonMap,
		Err: fmt.Errorf("%w (configured topics read %s)", ErrUnknownTopic, strings.Join(m.kafkaTopics(), ", "))}
}

// recordError is the error of a record that entry p cannot map: a *RecordError, except while the
// registry does not answer.
func (p *plan) recordError(rec *Record, reason string, err error) error {
	if ue := (*codec.UnavailableError)(nil); errors.As(err, &ue) {
		return fmt.Errorf("topic %s partition %d offset %d: %w", rec.Topic, rec.Partition, rec.Offset, err)
	}
	return &RecordError{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset, Reason: reason, Err: err,
		Entry: p.name, shared: p.shared}
}

// mapRecord maps one record by its topic's codec, the same way for every codec: a registry
// codec's framing and writer schema first (decoder.go), then the plan's values into the row
// (mapValues). Plain JSON is a codec with no writer schema; json_schema is the framing and the
// JSON codec. An entry's filter is judged on the values its decoding gives (decoded.go), before the event
// time and the columns.
func (p *plan) mapRecord(ctx context.Context, rec *Record, s *scratch) (outcome, string, error) {
	if p.keyReg != nil {
		s.keyOf = nil // the key is decoded anew for this record (registryKey)
	}
	if p.env != nil {
		if p.where != nil {
			// A change event's filter reads the event as written (op, after.status), not a row image.
			if reason, err := p.judgeChange(ctx, rec, s); err != nil {
				return outcome{}, reason, err
			}
		}
		if p.keyReg != nil && rec.Value != nil {
			// Columns of key fields under a registry key codec: the key decoded once, before the columns.
			if reason, err := p.keyColumns(ctx, rec, s); err != nil {
				return outcome{}, reason, err
			}
		}
		return p.mapChange(ctx, rec, s)
	}
	if rec.Value == nil {
		if p.where != nil {
			if reason, err := p.judge(ctx, rec, nil, nil, false, s); err != nil {
				return outcome{}, reason, err
			}
		}
		if p.onTombstone != config.OnTombstoneDeadLetter {
			return p.tombstone(ctx, rec, s)
		}
	}
	if !p.framed {
		return p.mapValues(ctx, p.scan, rec, rec.Value, s)
	}
	id, body, err := p.frame(rec)
	if err != nil {
		return p.refuse(ctx, rec, s, ReasonDecode, err)
	}
	wp, reason, err := p.writerPlan(ctx, id)
	if err != nil {
		if reason == "" {
			return outcome{}, reason, err // the registry does not answer
		}
		if se := (*codec.SchemaError)(nil); p.where != nil && errors.As(err, &se) {
			// The schema cannot feed the entry's plan: the filter, by a plan of its own fields, tells a
			// record of another event type (skipped) from one this entry should take (refused).
			vals, slots, readable, ferr := p.valueAlone(ctx, id, body, s)
			if ferr != nil {
				return outcome{}, "", ferr
			}
			if fr, ferr := p.judge(ctx, rec, vals, slots, !readable, s); ferr != nil {
				return outcome{}, fr, ferr
			}
			return outcome{}, reason, err
		}
		return p.refuse(ctx, rec, s, reason, err)
	}
	if p.json {
		// json_schema: from here on the record's value is its JSON body (a raw column writes the body).
		inner := *rec
		inner.Value = body
		rec = &inner
	}
	return p.mapValues(ctx, wp, rec, body, s)
}

// mapEntry maps rec for entry p alone.
func (m *Mapper) mapEntry(ctx context.Context, p *plan, rec *Record) (batcher.Row, error) {
	s := m.pool.Get().(*scratch)
	out, reason, err := p.mapRecord(ctx, rec, s)
	m.release(s)
	if err != nil {
		return batcher.Row{}, p.recordError(rec, reason, err)
	}
	return out.row, nil
}

// isRecordError reports whether err is an entry's verdict on a record, not a failure of no entry's
// making (the registry does not answer).
func isRecordError(err error) bool {
	re := (*RecordError)(nil)
	return errors.As(err, &re)
}
