package mapper

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/packed"
)

// The fan-out: several entries (topics.<name>) may read one Kafka topic. A record of such a topic is
// decoded once, by the topic's plan of the union of the fields its entries need, and each entry maps
// its row from the shared decoded values. Whenever the shared plan does not map a record (a writer
// schema or a value that some entry's field cannot take), the record goes the way a one-entry topic's
// record goes: it is decoded by each entry on its own. JSON's plan always gives values (a value that
// does not fit is one of State Bad, which only the entries that read it refuse), and a document that is
// not a JSON object is refused by every entry alike. The fields entries' filters test are in the shared
// plan too, and each entry judges its filter on the shared values before it maps them (decoded.go). The
// shared plan only ever spares work: MapAll's outcome for an entry is MapEntry's.

// Mapped is what one entry made of a record.
type Mapped struct {
	Entry string      // the entry's name
	Row   batcher.Row // the row to write; valid when Err is nil
	Err   error       // a *RecordError (its Entry set) when this entry refuses the record, or skips it
}

// share builds the shared decoding of a topic with several entries; reg is the mapper's registry.
func (f *feed) share(reg codec.Registry) {
	for _, p := range f.entries {
		f.filtered = f.filtered || p.where != nil
		f.alone = f.alone || p.env != nil
	}
	if len(f.entries) == 1 {
		return
	}
	if f.alone {
		for _, p := range f.entries {
			p.shared = true // its messages name it
		}
		return
	}
	first := f.entries[0] // the entries agree on the codec (config.Validate)
	f.codecName, f.codec, f.framed, f.json, f.registry = first.codecName, first.codec, first.framed, first.json, reg
	index := map[string]int{}
	slot := func(fd codec.Field) int {
		// The event time (a field of no column) is decoded by rules of its own (codec/json: a time
		// with a unit takes only numbers), so it never shares a slot with a column of the same field.
		tf := &fd.Time
		zone := ""
		if tf.Zone != nil {
			zone = tf.Zone.String()
		}
		key := fmt.Sprintf("%s\x00%d\x00%d\x00%d\x00%d\x00%s\x00%s\x00%t\x00%t", strings.Join(fd.Path, "."), fd.Type.Kind, fd.Type.Elem,
			tf.Form, tf.Unit, tf.Layout, zone, fd.Column == "", fd.AsText)
		i, ok := index[key]
		if !ok {
			i = len(f.fields)
			index[key] = i
			f.fields = append(f.fields, fd)
		}
		return i
	}
	for _, p := range f.entries {
		p.shared = true
		p.sharedSlot = make([]int, len(p.cols))
		for i, s := range p.colSlot {
			p.sharedSlot[i] = -1
			if s >= 0 {
				p.sharedSlot[i] = slot(p.fields[s])
			}
		}
		p.sharedTime = -1
		if p.timeSlot >= 0 {
			p.sharedTime = slot(p.fields[p.timeSlot])
		}
		p.sharedWhere = nil
		for _, s := range p.whereSlot {
			p.sharedWhere = append(p.sharedWhere, slot(p.fields[s]))
		}
		p.sharedTTL = -1
		if p.ttlSlot >= 0 {
			p.sharedTTL = slot(p.fields[p.ttlSlot])
		}
	}
	if !f.framed {
		f.scan, _ = f.codec.Compile(nil, f.fields) // a plan of a nil schema is never an error
	}
}

// Entries lists the names of the entries that read a Kafka topic, sorted; nil for a topic no entry
// reads. The slice is the mapper's, clipped (an append copies it): the caller must not modify it.
func (m *Mapper) Entries(kafkaTopic string) []string {
	if f := m.byKafka[kafkaTopic]; f != nil {
		return slices.Clip(f.names)
	}
	return nil
}

// MapAll maps rec once for every entry that reads rec.Topic (decoding the value once), appending one
// Mapped per entry, in entry-name order, to out. An error that is no entry's fault (the schema
// registry does not answer: a *codec.UnavailableError) is returned, with nothing appended: the
// record waits. A record of a Kafka topic no entry reads is one Mapped with an empty Entry and a
// *RecordError wrapping ErrUnknownTopic.
func (m *Mapper) MapAll(ctx context.Context, rec Record, out []Mapped) ([]Mapped, error) {
	f := m.byKafka[rec.Topic]
	if f == nil {
		return append(out, Mapped{Err: m.unknownTopic(&rec)}), nil
	}
	// Each entry's result is set whole, once it is known (one write of a heap slot per entry).
	s := m.pool.Get().(*scratch)
	start := len(out)
	out = slices.Grow(out, len(f.entries))[:start+len(f.entries)]
	var err error
	if len(f.entries) == 1 || f.alone {
		// One entry: its own path, as Map's. Entries with envelopes: each reads its own row image
		// (envelope.go), and judges its filter on the change event first (decoded.go).
		err = f.eachAlone(ctx, &rec, s, out[start:])
	} else {
		err = f.mapShared(ctx, &rec, s, out[start:])
	}
	m.release(s)
	if err != nil {
		clear(out[start:])
		return out[:start], err
	}
	return out, nil
}

// MapEntry maps rec for one entry only (a split re-maps one entry's row). Its errors are MapContext's;
// an entry that does not read rec.Topic is a *RecordError of reason map.
func (m *Mapper) MapEntry(ctx context.Context, entry string, rec Record) (batcher.Row, error) {
	p := m.byName[entry]
	if p == nil || p.kafkaTopic != rec.Topic {
		return batcher.Row{}, &RecordError{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset, Reason: ReasonMap,
			Entry: entry, Err: fmt.Errorf("no entry topics.%s reads this Kafka topic", entry)}
	}
	return m.mapEntry(ctx, p, &rec)
}

// mapShared maps rec for every entry of f into res (one per entry, in order), setting each res[i]
// whole; the error is one that is no entry's fault.
func (f *feed) mapShared(ctx context.Context, rec *Record, s *scratch, res []Mapped) error {
	if rec.Value == nil {
		// A tombstone (Kafka's null value) has nothing to decode; what it means is each entry's to say.
		return f.eachAlone(ctx, rec, s, res)
	}
	mrec := rec // the record as the entries map it: a json_schema record's value is its JSON body
	var wp codec.Plan
	body := rec.Value
	if f.framed {
		id, b, err := f.frame(rec)
		if err != nil {
			return f.refuseAll(ctx, rec, s, res, ReasonDecode, err)
		}
		p, reason, err := f.writerPlan(ctx, id)
		if err != nil {
			if se := (*codec.SchemaError)(nil); errors.As(err, &se) {
				// The schema cannot feed some entry's field: each entry judges the schema for itself.
				return f.eachAlone(ctx, rec, s, res)
			}
			if reason == "" {
				return f.entries[0].recordError(rec, reason, err) // the registry does not answer
			}
			return f.refuseAll(ctx, rec, s, res, reason, err)
		}
		wp, body = p, b
		if f.json {
			inner := *rec
			inner.Value = body
			mrec = &inner
		}
	} else {
		wp = f.scan
	}
	vals, reason, err := decodeValues(wp, f.codecName, f.json, len(f.fields), body, s)
	switch {
	case err == nil:
		return f.mapEach(ctx, vals, mrec, rec, s, res)
	case f.json: // a document that is not a JSON object: no entry can read it
		return f.refuseAll(ctx, rec, s, res, reason, err)
	}
	return f.eachAlone(ctx, rec, s, res)
}

// noTime is no slot of the decoded values: no event time admitted yet.
const noTime = -2

// mapEach maps rec (mrec as the entries see it) for every entry of f from its decoded values vals.
//
// What only depends on the record is done once: an event time read from the same value as an
// entry's before it is that entry's time, and admitted as it was (the entries of a topic share its
// accept window, config.Validate); the rows get one allocation between them (jointRows). An entry
// refusing the record judges it for itself; an entry's filter is judged on the shared values first. The
// error is one that is no entry's fault (the registry does not answer for a key).
func (f *feed) mapEach(ctx context.Context, vals []codec.Value, mrec, rec *Record, s *scratch, res []Mapped) error {
	s.joint, s.rows, s.rowSpans = true, s.rows[:0], s.rowSpans[:0]
	var admitted time.Time
	admittedSlot := noTime
	for i, p := range f.entries {
		var out outcome
		var reason string
		var err error
		if p.where != nil || p.keyReg != nil {
			s.keyOf = nil
			reason, err = p.prepare(ctx, vals, p.sharedWhere, mrec, s)
		}
		switch {
		case err != nil && reason == "":
			s.joint = false
			return p.recordError(rec, reason, err) // the registry does not answer
		case err != nil:
		case p.sharedTime == admittedSlot:
			out.eventTime = admitted
		default:
			t, terr := p.decodedTime(vals, p.sharedTime, mrec, s)
			if reason, err = p.admit(t, terr, mrec); err == nil {
				out.eventTime, admitted, admittedSlot = t, t, p.sharedTime
			}
		}
		if err == nil {
			reason, err = p.mapColumns(&out, vals, p.sharedSlot, p.sharedTTL, mrec, s)
		}
		if err == nil {
			res[i] = Mapped{Entry: p.name, Row: out.row}
		} else {
			res[i] = Mapped{Entry: p.name, Err: p.recordError(rec, reason, err)}
		}
	}
	s.joint = false
	jointRows(res, s)
	return nil
}

// jointRows gives the rows that complete appended to s.rows, one per entry of res that mapped, in
// order, one allocation between them. The rows of a record are held until all of them are written
// (its offset is committed only then, and the byte budget charges them until then), so sharing
// their memory keeps nothing alive for longer.
func jointRows(res []Mapped, s *scratch) {
	if len(s.rowSpans) == 0 {
		return
	}
	own := make([]byte, len(s.rows))
	copy(own, s.rows)
	k := 0
	for i := range res {
		if res[i].Err != nil {
			continue
		}
		r := s.rowSpans[k]
		k++
		res[i].Row.Packed, res[i].Row.Key = packed.Split(own[r.off:r.end:r.end], r.n)
	}
}

// refuseAll gives every entry the same error of the whole record (reason, err), that the value cannot be
// decoded; with filters, each entry judges the record by its own path, which skips it where the entry's
// filter does not take it by a header or the key.
func (f *feed) refuseAll(ctx context.Context, rec *Record, s *scratch, res []Mapped, reason string, err error) error {
	if f.filtered {
		return f.eachAlone(ctx, rec, s, res)
	}
	for i, p := range f.entries {
		res[i] = Mapped{Entry: p.name, Err: p.recordError(rec, reason, err)}
	}
	return nil
}

// eachAlone maps rec for each entry by the entry's own decoding, as a topic with one entry does.
func (f *feed) eachAlone(ctx context.Context, rec *Record, s *scratch, res []Mapped) error {
	for i, p := range f.entries {
		out, reason, err := p.mapRecord(ctx, rec, s)
		if err == nil {
			res[i] = Mapped{Entry: p.name, Row: out.row}
			continue
		}
		if err = p.recordError(rec, reason, err); !isRecordError(err) {
			return err
		}
		res[i] = Mapped{Entry: p.name, Err: err}
	}
	return nil
}
