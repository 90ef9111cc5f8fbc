package mapper

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/codec"
	jsonc "github.com/bucketsink/sink/codec/json"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/packed"
)

// Latest-value entries (bucket width none) and tombstones.
//
// Write timestamps. A latest-value row is an upsert written at its event time, so Cassandra keeps, cell
// by cell, the value of the newest event, whatever order the records arrive or are replayed in. The
// write timestamp is the event time's millisecond, in microseconds, plus a tie below it taken from the
// record's offset:
//
//	timestamp = unix_ms(event time) × 1000 + offset mod 1000
//
// Of two events of an entity in one millisecond, from one Kafka partition, the later offset wins, on
// every replay (a replay binds the same offset), unless a multiple of 1000 lies between their offsets
// (offset 2000 loses to 1999). That exception cannot be designed away: the writes of one millisecond
// have 1000 timestamps between the millisecond's own and the next one's, so any rule that gives each
// record one of them from its offset meets, somewhere in every 1000 consecutive offsets, a later offset
// with a lower tie. A wider sub-millisecond part would only make that rarer, at the price of every
// timestamp already written (a table written under the old scale would lose to every new write, its
// deletes included) and of every CQL statement stamped by the server's clock, which would then lose to
// the sink's rows; the tie keeps the scale of microseconds instead. Events of one millisecond from
// different Kafka partitions have no order: their offsets' last three digits decide, the same on every
// replay. A row never mixes two events' columns: every column is written with each event (one the event
// lacks as null: New sets absent to nil for a latest-value entry), and the winner's cells all carry the
// higher timestamp; except when two rows of one entity in one millisecond get the same tie (offsets of
// two partitions with the same last three digits, or 1000 apart in one): Cassandra then keeps the larger
// value of each cell, as it does for any two writes at one timestamp. Digits of the event time below the
// millisecond (RFC 3339 with µs or ns, unix_us, unix_ns) take no part in the ordering: events of one
// entity less than a millisecond apart are ordered by their offsets, not by their time.
//
// Under write_timestamp offset (the default of an envelope entry) upserts and deletes are written at
// the record's offset instead: along a partition the later record always wins, with no wrap, which is
// what orders the changes of one database transaction (they share one source time). Records of
// different partitions are then ordered by offset alone, not by time.
//
// Tombstones (a record whose value is null) become what the entry's on_tombstone says: a refusal
// (dead_letter, the default: the codec's decode error, or the framing's), a skip (ReasonTombstone), or a
// delete row (delete, latest-value entries only; see tombstone).

// errTombstoneSkipped is wrapped by the error of a tombstone an entry skips (on_tombstone skip).
var errTombstoneSkipped = errors.New("the record value is null (a tombstone), and on_tombstone is skip")

// tombstone maps a record whose value is null per the entry's on_tombstone: skip or delete (mapRecord
// leaves dead_letter to the codec's own error).
//
// A delete deletes the entity's partition (every row of its clustering) at the write timestamp
// unix_ms(the tombstone's Kafka timestamp) × 1000 + offset mod 1000, the upserts' rule: it erases every
// upsert whose event time is before the tombstone's Kafka timestamp's millisecond, whenever that upsert
// is written, before the delete or replayed after it, and spares every upsert whose event time is
// later. Of the upserts of its own millisecond, from its Kafka partition, it erases those at earlier
// offsets and spares those at later ones (a re-create produced right after the tombstone), with the
// exception of the upserts' rule (a multiple of 1000 between the offsets); Cassandra lets a deletion
// win a tie of timestamps. The
// Kafka timestamp is the deletion's time: producers set it (CreateTime) to when the entity was deleted,
// on the clock of the event times. The Kafka key names the entity. With key_codec text (the default):
//
//   - an entry with one id column read from a field: the key's UTF-8 text is that field's value, as if
//     the record held it as a JSON string (so "42" for an int, a UUID's text for a uuid);
//   - several id columns read from fields: the key is a JSON object holding those fields at their
//     paths, as in the record's value ({"site": "s1", "device": {"id": 7}}).
//
// With a registry key codec (avro, protobuf, json_schema) the key is in the wire format and decoded as
// a value of that codec is (decodeKey): one id column read from a field takes a primitive key whole
// (an Avro "string" or "long", a JSON scalar), or the field at its path of a record or message key;
// several take their fields at their paths; with no id column read from a field, nothing is decoded
// (p.key is nil) and the registry is not asked. Either way an id column of source kafka_key takes the
// key's bytes, kafka_topic and kafka_partition the tombstone's own (config refuses the sources a
// tombstone cannot supply).
//
// A key that does not fit is bad input, reason key: a missing field, a value its column cannot take
// (the value path's conversions and range checks), a key schema id the registry does not have, a
// writer schema that cannot feed an id column. A tombstone with no key or no Kafka timestamp too.
func (p *plan) tombstone(ctx context.Context, rec *Record, s *scratch) (outcome, string, error) {
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
	var vals []codec.Value // the id fields' values, by keySlot
	var err error
	if p.key != nil {
		vals, out.keySchema, err = p.decodeKey(ctx, rec, s)
	} else if err = p.framedTextKey(rec.Key); err == nil {
		vals, err = p.textKey(rec.Key, s)
	}
	if err != nil {
		return out, ReasonKey, err // ReasonKey is not used while the registry does not answer (recordError)
	}
	idValue := func(c *column, ci int) error {
		if p.keySlot[ci] >= 0 {
			return p.decodedValue(c, &vals[p.keySlot[ci]], s)
		}
		return p.sourceValue(c, rec, kt, s)
	}
	if err := p.deleteRow(&out, kt, rec, s, "delete: the Kafka key does not name an entity: ", idValue); err != nil {
		return out, ReasonKey, err
	}
	return out, "", nil
}

// deleteRow makes the row that deletes the entity whose id columns idValue writes (each to s.w), at
// the write timestamp of at, the upserts' rule (latestWriteTS), or at the record's offset under
// write_timestamp offset. An id value's error is prefixed with
// head, which says what failed to name the entity.
func (p *plan) deleteRow(out *outcome, at time.Time, rec *Record, s *scratch, head string, idValue func(c *column, ci int) error) error {
	s.begin(p)
	w := &s.w
	out.writeTS = latestWriteTS(at, rec.Offset)
	if p.wts == wtsOffset {
		out.writeTS = rec.Offset // the upserts' rule too: the later record of the partition wins
	}
	w.Integer(kBigint, out.writeTS)
	key := s.key[:0]
	for _, ci := range p.ids {
		c := &p.cols[ci]
		if err := idValue(c, ci); err != nil {
			return fmt.Errorf("%s%w", head, err)
		}
		s.spans[ci] = w.Last()
		at := len(key)
		key = packed.AppendKeyComponent(key, len(p.ids), w.Wire(s.spans[ci]))
		if n := len(key) - at; n > maxKeyComponent+3 {
			s.key = key[:0]
			return fmt.Errorf("delete: column %s: the value is %d bytes; Cassandra limits a partition key value to %d", c.name, n-3, maxKeyComponent)
		}
	}
	s.key = key
	out.eventTime, out.deleted, out.entityLen = at, true, len(key)
	out.row = batcher.Row{
		Target:      p.deleteTarget,
		Offset:      rec.Offset,
		EventMicros: batcher.EventMicros(at),
		Partition:   rec.Partition,
		Size:        int32(rowOverhead + w.Size()),
	}
	out.row.Packed, out.row.Key = w.Finish(key)
	return nil
}

// framedTextKey refuses a key that key_codec text would read as an entity's text while it is in the
// Confluent wire format: its first byte is 0, the format's magic byte. Read as text, such a key names an
// entity that does not exist ("\x00\x00\x00\x00\x07dev-0042" is valid UTF-8), and every delete of the
// topic would silently delete nothing. No identifier a producer writes as text starts with a NUL
// character, so the rule refuses nothing real. Entries with no id column read from a field take the key's
// bytes as they are, as their upserts do, and are not checked.
func (p *plan) framedTextKey(key []byte) error {
	if p.keyFields == 0 || len(key) == 0 || key[0] != 0 {
		return nil
	}
	const fix = "set key_codec to the key's format (avro, protobuf or json_schema), or have the producer write the key as plain text"
	if len(key) >= 5 {
		return fmt.Errorf("delete: the Kafka key is in the schema registry's wire format (magic byte 0, schema id %d), "+
			"which key_codec %s would read as the entity's text and so delete nothing; %s", binary.BigEndian.Uint32(key[1:5]), config.KeyCodecText, fix)
	}
	return fmt.Errorf("delete: the Kafka key starts with byte 0, the magic byte of the schema registry's wire format, "+
		"which no text id starts with (key_codec %s); %s", config.KeyCodecText, fix)
}

// textKey decodes a tombstone's key read as text (key_codec text) into the values of its id fields
// (indexed by keySlot): one id field is the key's text, as if the record held it as a JSON string; several
// are read from the key as a JSON object holding them at their paths (keyText). nil when no id column
// reads a field.
func (p *plan) textKey(key []byte, s *scratch) ([]codec.Value, error) {
	if p.keyFields == 0 {
		return nil, nil
	}
	vals := s.values(len(p.keyIDs))
	if p.keyFields == 1 {
		s.buf = jsonc.DecodeString(&p.keyIDs[0], key, &vals[0], s.buf[:0])
		return vals, nil
	}
	var err error
	if s.buf, err = p.keyText.Decode(key, vals, s.buf[:0]); err != nil {
		return nil, p.notAnObject()
	}
	return vals, nil
}

// notAnObject is the error of a key that must name several id fields and is not a JSON object.
func (p *plan) notAnObject() error {
	return fmt.Errorf("delete: the Kafka key is not a JSON object, which names an entity of %d id fields (%s)", p.keyFields, p.keyFieldList())
}

// decodeKey decodes a tombstone's key by the entry's registry key codec, the way a value of that codec
// is decoded: the framing, the writer schema by id (fetched from the registry once, its plan cached per
// id), the plan's values. It returns the id fields' values (in s.vals, indexed by keySlot) and the key's
// writer schema id. Every error
// is the key's (ReasonKey), but for a registry that does not answer: that *codec.UnavailableError comes
// back as it is, and the record waits.
func (p *plan) decodeKey(ctx context.Context, rec *Record, s *scratch) ([]codec.Value, int, error) {
	k := p.key
	if rec.KeySchemaIDHeader {
		return nil, 0, fmt.Errorf("delete: the tombstone carries its key's writer schema id in the %s header (the newer Confluent clients' header form), which this sink does not read; have the producer write the id into the key (the wire format's 5-byte prefix, the clients' default)", HeaderKeySchemaID)
	}
	if len(rec.Key) == 0 {
		return nil, 0, fmt.Errorf("delete: the Kafka key is empty (0 bytes), and key_codec %s reads the wire format: magic byte 0, a 4-byte schema id, the body", k.codecName)
	}
	id, body, err := codec.Frame(rec.Key)
	if err != nil {
		return nil, 0, fmt.Errorf("delete: decoding the Kafka key (key_codec %s): %w", k.codecName, err)
	}
	wp, reason, err := k.writerPlan(ctx, id)
	if err != nil {
		if reason == "" {
			return nil, id, err
		}
		return nil, id, fmt.Errorf("delete: the Kafka key (key_codec %s): %w", k.codecName, err)
	}
	vals, _, err := decodeValues(wp, k.codecName, k.json, len(k.fields), body, s)
	switch {
	case err == nil:
		return vals, id, nil
	case errors.Is(err, jsonc.ErrNotObject):
		return nil, id, p.notAnObject()
	case k.json:
		return nil, id, fmt.Errorf("delete: the Kafka key's body is not JSON (key_codec %s): %w", k.codecName, err)
	}
	return nil, id, fmt.Errorf("delete: the Kafka key: %w", err)
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
