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
// JSON codec.
func (p *plan) mapRecord(ctx context.Context, rec *Record, s *scratch) (outcome, string, error) {
	if p.where != nil {
		if err := p.takes(rec, s); err != nil {
			return outcome{}, ReasonFiltered, err
		}
	}
	if p.env != nil {
		return p.mapChange(ctx, rec, s)
	}
	if rec.Value == nil && p.onTombstone != config.OnTombstoneDeadLetter {
		return p.tombstone(ctx, rec, s)
	}
	if !p.framed {
		return p.mapValues(p.scan, rec, rec.Value, s)
	}
	id, body, err := p.frame(rec)
	if err != nil {
		return outcome{}, ReasonDecode, err
	}
	wp, reason, err := p.writerPlan(ctx, id)
	if err != nil {
		return outcome{}, reason, err
	}
	if p.json {
		// json_schema: from here on the record's value is its JSON body (a raw column writes the body).
		inner := *rec
		inner.Value = body
		rec = &inner
	}
	return p.mapValues(wp, rec, body, s)
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
