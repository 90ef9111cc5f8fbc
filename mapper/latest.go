package mapper

import (
	"errors"
	"fmt"

	"github.com/valyala/fastjson"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/bucketer"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/packed"
)

// Latest-value entries (bucket width none) and tombstones.
//
// Write timestamps. A latest-value row is an upsert written at its event time, so Cassandra keeps, cell
// by cell, the value of the newest event, whatever order the records arrive or are replayed in. The
// write timestamp is the event time's millisecond, in microseconds, plus a tie-break below it:
//
//	timestamp = unix_ms(event time) × 1000 + tie,  tie = FNV-1a-64(the row's packed column values) mod 1000
//
// The tie is a function of the row's content alone, so of two events of an entity in the same
// millisecond the same one wins on every run, in every arrival order, and a replay writes each row at
// the timestamp of its first write. A row never mixes two events' columns: every column is written with
// each event (one the event lacks as null: New sets absent to nil for a latest-value entry), and the
// winner's cells all carry the higher timestamp; except when two different rows of one entity in one millisecond draw the
// same tie (one chance in 1000): Cassandra then keeps the larger value of each cell, as it does for any
// two writes at one timestamp. Digits of the event time below the millisecond (RFC 3339 with µs or ns,
// unix_us, unix_ns) take no part in the ordering: events of one entity less than a millisecond apart
// are ordered by the tie, not by their time.
//
// Tombstones (a record whose value is null) become what the entry's on_tombstone says: a refusal
// (dead_letter, the default: mapParsed's or the framing's decode error), a skip (ReasonTombstone), or a
// delete row (delete, latest-value entries only; see tombstone).

// tieBreak is the write timestamp's microseconds below the event time's millisecond: FNV-1a 64 of the
// row's packed values, mod 1000 (the event-bucket hash, bucketer.EventBucket).
func tieBreak(values []byte) int64 { return int64(bucketer.EventBucket(values, 1000)) }

// deleteTie is the microseconds a delete adds to its millisecond: the most any upsert of that
// millisecond can have, so that the delete wins against all of them (and Cassandra lets a deletion win
// a tie of timestamps anyway).
const deleteTie = 999

// errTombstoneSkipped is wrapped by the error of a tombstone an entry skips (on_tombstone skip).
var errTombstoneSkipped = errors.New("the record value is null (a tombstone), and on_tombstone is skip")

// tombstone maps a record whose value is null per the entry's on_tombstone: skip or delete (mapRecord
// leaves dead_letter to the codec's own error).
//
// A delete deletes the entity's partition (every row of its clustering) at the write timestamp
// unix_ms(the tombstone's Kafka timestamp) × 1000 + 999: it erases every upsert whose event time is at
// or before the tombstone's Kafka timestamp (to the millisecond), whenever that upsert is written,
// before the delete or replayed after it, and spares every upsert whose event time is later. The
// Kafka timestamp is the deletion's time: producers set it (CreateTime) to when the entity was deleted,
// on the clock of the event times. The Kafka key names the entity:
//
//   - an entry with one id column read from a field: the key's UTF-8 text is that field's value, as if
//     the record held it as a JSON string (so "42" for an int, a UUID's text for a uuid);
//   - several id columns read from fields: the key is a JSON object holding those fields at their
//     paths, as in the record's value ({"site": "s1", "device": {"id": 7}});
//   - an id column of source kafka_key takes the key's bytes, kafka_topic and kafka_partition the
//     tombstone's own (config refuses the sources a tombstone cannot supply).
//
// A key that does not fit is bad input, reason key; a tombstone with no key or no Kafka timestamp too.
func (p *plan) tombstone(rec *Record, s *scratch) (outcome, string, error) {
	var out outcome
	if p.onTombstone == config.OnTombstoneSkip {
		return out, ReasonTombstone, errTombstoneSkipped
	}
	kt, ok := kafkaTime(rec)
	if !ok {
		return out, ReasonKey, errors.New("delete: the tombstone has no Kafka timestamp (-1), and on_tombstone delete takes it as the time of the deletion")
	}
	if rec.Key == nil {
		return out, ReasonKey, errors.New("delete: the tombstone has no Kafka key, and on_tombstone delete needs it to name the entity")
	}
	root, err := p.keyRoot(rec, s)
	if err != nil {
		return out, ReasonKey, err
	}
	s.begin(p)
	w := &s.w
	out.writeTS = kt.UnixMilli()*1000 + deleteTie
	w.Integer(kBigint, out.writeTS)
	key := s.key[:0]
	for _, ci := range p.ids {
		c := &p.cols[ci]
		if err := p.value(c, root, rec, kt, s); err != nil {
			return out, ReasonKey, fmt.Errorf("delete: the Kafka key does not name an entity: %w", err)
		}
		s.spans[ci] = w.Last()
		at := len(key)
		key = packed.AppendKeyComponent(key, len(p.ids), w.Wire(s.spans[ci]))
		if n := len(key) - at; n > maxKeyComponent+3 {
			s.key = key[:0]
			return out, ReasonKey, fmt.Errorf("delete: column %s: the value is %d bytes; Cassandra limits a partition key value to %d", c.name, n-3, maxKeyComponent)
		}
	}
	s.key = key
	out.eventTime, out.deleted, out.entityLen = kt, true, len(key)
	out.row = batcher.Row{
		Target:      p.deleteTarget,
		Offset:      rec.Offset,
		EventMicros: batcher.EventMicros(kt),
		Partition:   rec.Partition,
		Size:        int32(rowOverhead + w.Size()),
	}
	out.row.Packed, out.row.Key = w.Finish(key)
	return out, "", nil
}

// keyRoot is the tombstone's key as the value tree its id columns read their fields from (see
// tombstone); nil when no id column reads a field.
func (p *plan) keyRoot(rec *Record, s *scratch) (*fastjson.Value, error) {
	switch {
	case p.keyFields == 0:
		return nil, nil
	case p.keyFields == 1:
		var path []string
		for _, ci := range p.ids {
			if c := &p.cols[ci]; c.source == srcField {
				path = c.path
			}
		}
		s.arena.Reset()
		v := s.arena.NewStringBytes(rec.Key)
		for i := len(path) - 1; i >= 0; i-- {
			o := s.arena.NewObject()
			o.Set(path[i], v)
			v = o
		}
		return v, nil
	}
	root, err := s.parser.ParseBytes(rec.Key)
	if err != nil || root.Type() != fastjson.TypeObject {
		return nil, fmt.Errorf("delete: the Kafka key is not a JSON object, which names an entity of %d id fields (%s)", p.keyFields, p.keyFieldList())
	}
	return root, nil
}

// keyFieldList names the fields a tombstone's key must hold.
func (p *plan) keyFieldList() string {
	var b []byte
	for _, ci := range p.ids {
		if c := &p.cols[ci]; c.source == srcField {
			if len(b) > 0 {
				b = append(b, ", "...)
			}
			b = append(b, c.field...)
		}
	}
	return string(b)
}
