package mapper

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
	"unsafe"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/bucketer"
	"github.com/bucketsink/sink/codec"
	jsonc "github.com/bucketsink/sink/codec/json"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/packed"
)

// The row, the same for every codec once a record's values are decoded: the event time and its
// accept window, each column's value (decodedValue for a field, sourceValue for the other sources)
// encoded into the scratch's packed.Writer, then the bucket, event bucket, TTL, write timestamp and
// routing key (complete).

// completeRow is complete, with the reason of its error.
func (p *plan) completeRow(out *outcome, rec *Record, s *scratch) (string, error) {
	if err := p.complete(out, rec, s); err != nil {
		if errors.Is(err, errExpired) {
			return ReasonExpired, err
		}
		return ReasonMap, err
	}
	return "", nil
}

// begin readies the scratch buffers that collect a row's values and canonical texts.
func (s *scratch) begin(p *plan) {
	s.w.Reset()
	if cap(s.spans) < len(p.cols) {
		s.spans = make([]packed.Span, len(p.cols))
	}
	s.spans = s.spans[:len(p.cols)]
	s.canonText = s.canonText[:0]
	if cap(s.canon) < p.nhash {
		s.canon = make([]span, p.nhash)
	}
	s.canon = s.canon[:p.nhash]
}

// hashBucket is the event bucket among k of the row being built: the hash of the canonical texts
// of its hash columns (bucketer.IDHash), mod k.
func (p *plan) hashBucket(s *scratch, k int) (int, error) {
	h := bucketer.NewIDHash()
	for _, ci := range p.hashCols {
		c := &p.cols[ci]
		if s.spans[ci].Absent() {
			return 0, fmt.Errorf("event bucket: column %s has no value to hash", c.name)
		}
		sp := s.canon[c.hash]
		h.Part(s.canonText[sp.off : sp.off+sp.n])
	}
	return h.Bucket(k), nil
}

// complete finishes a row whose column values are in s.w and whose event time is out.eventTime:
// bucket, event bucket, TTL, write timestamp, routing key and size. Its errors are ReasonMap.
func (p *plan) complete(out *outcome, rec *Record, s *scratch) error {
	t := out.eventTime
	w := &s.w

	components := len(p.ids)
	var b *bucketEntry
	if !p.latest {
		b = p.bucket(p.policy.Index(t))
		out.bucket = b
		w.Encoded(packed.Scalar(p.bucketKind), b.ser)
		components++
	}
	// The id columns' part of the routing key comes first: a split entity is known by it.
	key := s.key[:0]
	if p.ebColumn {
		components++
	}
	for _, ci := range p.ids {
		at := len(key)
		key = packed.AppendKeyComponent(key, components, w.Wire(s.spans[ci]))
		if n := len(key) - at; n > maxKeyComponent+3 {
			s.key = key[:0]
			return fmt.Errorf("column %s: the value is %d bytes; Cassandra limits a partition key value to %d", p.cols[ci].name, n-3, maxKeyComponent)
		}
	}
	s.key = key
	out.entityLen = len(key)
	if p.ebColumn {
		k, first := p.eventBuckets, 0
		out.split = nil
		if p.routes.HasBucket(b.idx) {
			// Route keeps no reference to the entity: a view of the scratch key allocates nothing.
			if g := p.routes.Route(b.idx, bstr(key), t, rec.Partition, rec.Offset); g != nil {
				k, first, out.split = g.Buckets, g.First, g
			}
		}
		out.eventBucket = first
		if k > 1 {
			eb, err := p.hashBucket(s, k)
			if err != nil {
				return err
			}
			out.eventBucket = first + eb
		}
		w.Integer(kInt, int64(out.eventBucket))
	}
	switch {
	case out.fieldTTL: // the record's ttl_field set out.ttl (ttlField.read)
		w.Integer(kInt, int64(out.ttl/time.Second))
	case p.ttlFromEvent:
		secs, err := p.rowTTL(t)
		if err != nil {
			return err
		}
		w.Integer(kInt, int64(secs))
		out.ttl = time.Duration(secs) * time.Second
	default:
		out.ttl = p.ttl
		if p.ttlWire != nil {
			w.Encoded(packed.Scalar(kInt), p.ttlWire)
		}
	}
	switch p.wts {
	case wtsKafka:
		kt, ok := kafkaTime(rec)
		if !ok {
			return errors.New("write timestamp: the record has no Kafka timestamp (-1); write_timestamp kafka needs one")
		}
		// The offset tiebreak orders records of one partition produced in the same millisecond,
		// but only within a run of 1000 offsets: offset 2000 loses to 1999 (write_timestamp offset
		// has no such wrap).
		out.writeTS = kt.UnixMilli()*1000 + rec.Offset%1000
	case wtsEventTime:
		out.writeTS = t.UnixMicro()
		if p.latest {
			out.writeTS = latestWriteTS(t, rec.Offset)
		}
	case wtsOffset:
		// Strictly increasing along a partition, the same on every replay, and independent of
		// any clock.
		out.writeTS = rec.Offset
	}
	if p.wts != wtsServer {
		w.Integer(kBigint, out.writeTS)
	}

	// Row key: the routing key of the full partition key (ids, then bucket and event bucket).
	target := p.target
	if b != nil {
		key, target = packed.AppendKeyComponent(s.key, components, b.ser), b.target
	}
	if p.ebColumn {
		key = append(key, 0, 4)
		key = binary.BigEndian.AppendUint32(key, uint32(out.eventBucket))
		key = append(key, 0)
	}
	s.key = key

	out.row = batcher.Row{
		Target:      target,
		Offset:      rec.Offset,
		EventMicros: batcher.EventMicros(t),
		Partition:   rec.Partition,
		Size:        int32(rowOverhead + w.Size()),
	}
	if s.joint {
		off := len(s.rows)
		var n int
		s.rows, n = w.AppendRow(s.rows, key)
		s.rowSpans = append(s.rowSpans, rowSpan{off, n, len(s.rows)})
		return nil
	}
	out.row.Packed, out.row.Key = w.Finish(key)
	return nil
}

// maxTTL is Cassandra's largest TTL, 20 years, in seconds.
const maxTTL = 20 * 365 * 24 * 3600

// rowTTL is the TTL of a row with event time t under ttl_from event_time: what is left of the ttl
// at p.now(), in whole seconds rounded down, so that the row expires at t + ttl (later only by the
// time between mapping and the write). Cassandra counts a TTL from the moment the coordinator
// applies the write, whatever the write timestamp, so that is the only way to make the expiry a
// function of the event: a replay a year later writes a TTL a year shorter, and the same expiry.
// An event in the future gets more than ttl, up to Cassandra's limit of 20 years. Less than one
// second left is errExpired: a TTL of 0 would mean "never expires".
func (p *plan) rowTTL(t time.Time) (int32, error) {
	age := p.now().Sub(t) // Sub saturates at the extremes; the comparisons below never overflow
	switch {
	case age > p.ttl-time.Second:
		// Within the last second of the ttl the end is still ahead, but less than the one second a TTL
		// can say; past it, the distance is said to the second (time.Sub's sub-second digits are noise).
		var ends string
		switch past := age - p.ttl; {
		case past < 0:
			ends = "ends in under a second, and a TTL counts whole seconds (0 would mean never)"
		case past < time.Second:
			ends = "ended under a second ago"
		default:
			ends = "ended " + distance(past) + " ago"
		}
		return 0, fmt.Errorf("%w: event time %s plus ttl %s %s; the row would be born expired (ttl_from event_time)",
			errExpired, t.Format(time.RFC3339Nano), config.Duration(p.ttl), ends)
	case age < p.ttl-maxTTL*time.Second:
		return maxTTL, nil
	}
	return int32((p.ttl - age) / time.Second), nil
}

// read sets out's TTL from v, the field's decoded value, at now: out.fieldTTL when the record has the
// field. The TTL is what is left until the expiry, in whole seconds rounded down, at most max; less
// than a second left is errExpired (a TTL of 0 would mean never). A value that is no instant or
// duration, or a negative duration, is an error naming the field.
func (f *ttlField) read(out *outcome, v *codec.Value, now time.Time) error {
	switch v.State {
	case codec.Absent, codec.Null:
		return nil // the entry's ttl, or none
	case codec.Bad:
		return v.Err.At(fmt.Sprintf("ttl_field: field %q", f.name))
	}
	var left, d time.Duration
	if f.instant {
		left = v.T.Sub(now) // saturates: an instant centuries away is cut to the max below
	} else {
		if v.N < 0 {
			return &codec.ValueError{Plain: fmt.Sprintf("ttl_field: field %q is a negative duration", f.name),
				Quoted: fmt.Sprintf("ttl_field: field %q is %d, a negative duration", f.name, v.N)}
		}
		d = math.MaxInt64
		if v.N <= math.MaxInt64/int64(f.unit) {
			d = time.Duration(v.N) * f.unit
		}
		left = d
		if f.fromEvent {
			if age := now.Sub(out.eventTime); age > 0 || left < math.MaxInt64+age {
				left -= age
			}
		}
	}
	switch {
	case left < time.Second:
		return f.expired(v, d, left, out.eventTime)
	case left > f.max:
		left, out.ttlClamped = f.max, true
	}
	out.ttl, out.fieldTTL = left.Truncate(time.Second), true
	return nil
}

// maxKeyComponent is Cassandra's limit on one partition key value (its length is a uint16).
const maxKeyComponent = 65535

// rowOverhead approximates the framing of one batch entry around its values: kind, prepared id
// (16 bytes plus length), value count.
const rowOverhead = batcher.RowOverhead

// kafkaEventTime is the event time of a topic whose time.source is kafka: the record's Kafka timestamp.
func kafkaEventTime(rec *Record) (time.Time, error) {
	kt, ok := kafkaTime(rec)
	if !ok {
		return time.Time{}, errors.New("event time: the record has no Kafka timestamp (-1), and time.source kafka takes the event time from it")
	}
	if !inTimeRange(kt) {
		return time.Time{}, fmt.Errorf("event time: the Kafka timestamp %s is out of range (years 0000 to 9999)", kt.Format(time.RFC3339Nano))
	}
	return kt, nil
}

// admit is the reason and error of a record whose event time is t, or could not be found (err):
// ReasonMap for err, else accept's.
func (p *plan) admit(t time.Time, err error, rec *Record) (string, error) {
	if err != nil {
		return ReasonMap, err
	}
	return p.accept(t, rec)
}

// accept checks event time t against the record's Kafka timestamp and the topic's accept window; the
// error's reason is ReasonLate or ReasonFuture. A record without a usable Kafka timestamp (none, or
// before 1970: Kafka's "no timestamp" is -1) and a topic whose event time is the Kafka timestamp have
// nothing to compare.
func (p *plan) accept(t time.Time, rec *Record) (string, error) {
	kts := rec.Timestamp
	if p.timeFromKafka || kts.IsZero() || kts.UnixMilli() < 0 {
		return "", nil
	}
	const msg = "event time %s is %s %s the record's Kafka timestamp %s; accept.%s allows %s (check the producer's clock and time.format, or widen topics.%s.accept.%s)"
	kts = kts.UTC()
	if d := kts.Sub(t); d > p.acceptBefore {
		return ReasonLate, fmt.Errorf(msg, t.Format(time.RFC3339Nano), distance(d), "before",
			kts.Format(time.RFC3339Nano), "before", config.Duration(p.acceptBefore), p.name, "before")
	}
	if d := t.Sub(kts); d > p.acceptAfter {
		return ReasonFuture, fmt.Errorf(msg, t.Format(time.RFC3339Nano), distance(d), "after",
			kts.Format(time.RFC3339Nano), "after", config.Duration(p.acceptAfter), p.name, "after")
	}
	return "", nil
}

// distance says how far apart two instants are, to the second. time.Time.Sub saturates at about 292
// years, so a larger distance (a year-1 event time against today) is said as such, not as the
// saturated value.
func distance(d time.Duration) string {
	if d == math.MaxInt64 {
		return "more than 292 years"
	}
	return config.Duration(d.Round(time.Second)).String()
}

// sourceValue writes the value of column c, whose source is not a field of the record (the codec
// decodes those: decodedValue), to s.w.
func (p *plan) sourceValue(c *column, rec *Record, t time.Time, s *scratch) error {
	var x codec.Value // store reads only the member of the column's kind
	switch c.source {
	case srcHeader, srcKey:
		return p.headerOrKeyValue(c, rec, s)
	case srcEventTime:
		x.T = t
	case srcKafkaTimestamp:
		kt, ok := kafkaTime(rec)
		if !ok {
			if c.need != "" {
				return fmt.Errorf("column %s: the record has no Kafka timestamp (-1), and %s", c.name, c.need)
			}
			s.w.Absent(c.absent)
			return nil
		}
		x.T = kt
	case srcKafkaKey, srcRaw:
		b, what := rec.Value, "record value"
		if c.source == srcKafkaKey {
			b, what = rec.Key, "Kafka key"
			if b == nil {
				if c.need != "" {
					return fmt.Errorf("column %s: the record has no Kafka key, and %s", c.name, c.need)
				}
				s.w.Absent(c.absent)
				return nil
			}
		}
		if !c.direct { // blob
			s.putWire(c, b)
			return nil
		}
		if c.typ.kind == kASCII {
			for _, ch := range b {
				if ch >= 0x80 {
					return fmt.Errorf("column %s: the %s is not ASCII for CQL ascii", c.name, what)
				}
			}
		} else if msg := codec.UTF8Problem(b); msg != "" {
			return fmt.Errorf("column %s: the %s %s", c.name, what, msg)
		}
		x.B = b
	case srcKafkaTopic:
		// text, ascii or blob: the topic's bytes. A view, not a copy: the writer copies them.
		s.putWire(c, unsafe.Slice(unsafe.StringData(p.kafkaTopic), len(p.kafkaTopic)))
		return nil
	case srcKafkaPartition:
		x.N = int64(rec.Partition)
	case srcKafkaOffset:
		x.N = rec.Offset
	case srcTimeUUID:
		u, ok := timeUUID(t, rec.Topic, rec.Partition, rec.Offset)
		if !ok {
			return fmt.Errorf("column %s: event time %s is outside the range of a timeuuid (1582-10-15 to 5236)", c.name, t.Format(time.RFC3339Nano))
		}
		x.U = u
	default:
		return fmt.Errorf("column %s: unsupported source", c.name)
	}
	store(c, &x, s)
	return nil
}

// store writes the typed value x of direct column c to s.w; only the member of the column's kind is
// read (codec.Value says which), so a value the codec decoded is stored as it is, and a source
// (sourceValue) sets that member alone. A hashed column first records its canonical text, from the
// typed value.
func store(c *column, x *codec.Value, s *scratch) {
	if c.hash >= 0 {
		s.canonical(c, x)
	}
	switch k := c.typ.kind; k {
	case kText, kASCII:
		s.w.Text(k, x.B)
	case kBigint, kInt, kSmallint, kTinyint:
		s.w.Integer(k, x.N)
	case kFloat, kDouble:
		s.w.Floating(k, x.F)
	case kTimestamp, kDate:
		s.w.Time(k, x.T)
	case kUUID, kTimeUUID:
		s.w.UUID(k, x.U)
	default:
		panic("mapper: column " + c.name + " is direct but has no encoding") // layoutColumns makes only the kinds above direct
	}
}

// putWire writes the wire bytes b of column c, a column value encodes without a cell, to s.w,
// and records its canonical text when the event bucket hashes it, read back from the bytes.
func (s *scratch) putWire(c *column, b []byte) {
	t := c.typ.packed()
	if c.hash >= 0 {
		off := len(s.canonText)
		s.canonText = appendCanonical(s.canonText, packed.GoValue(&packed.Value{Type: t, Wire: b}))
		s.canon[c.hash] = span{off, len(s.canonText) - off}
	}
	s.w.Encoded(t, b)
}

// canonical records the canonical text of column c's typed value (the event bucket hash
// contract, see the package comment) in scratch.canon.
func (s *scratch) canonical(c *column, x *codec.Value) {
	off := len(s.canonText)
	b := s.canonText
	switch k := c.typ.kind; k {
	case kText, kASCII:
		b = append(b, x.B...)
	case kTinyint, kSmallint, kInt, kBigint:
		b = strconv.AppendInt(b, x.N, 10)
	case kFloat:
		b = strconv.AppendFloat(b, float64(float32(x.F)), 'g', -1, 32)
	case kDouble:
		b = strconv.AppendFloat(b, x.F, 'g', -1, 64)
	case kTimestamp:
		b = appendTimeCanonical(b, x.T)
	case kDate:
		b = appendDateCanonical(b, x.T)
	case kUUID, kTimeUUID:
		b = appendUUIDCanonical(b, x.U)
	}
	s.canonText = b
	s.canon[c.hash] = span{off, len(b) - off}
}

// mapDecoded maps a record from its decoded values into out: colSlot says which value feeds each
// column (-1: the column is not a field), timeSlot which one is the event time. It reads neither
// s.vals nor s.buf beyond vals, so the entries of one Kafka topic map one after another from the
// same decoded values (fanout.go).
func (p *plan) mapDecoded(out *outcome, vals []codec.Value, colSlot []int, timeSlot, ttlSlot int, rec *Record, s *scratch) (string, error) {
	t, err := p.decodedTime(vals, timeSlot, rec, s)
	if reason, err := p.admit(t, err, rec); err != nil {
		return reason, err
	}
	out.eventTime = t
	return p.mapColumns(out, vals, colSlot, ttlSlot, rec, s)
}

// mapColumns is mapDecoded once the event time is known and admitted (out.eventTime); ttlSlot is
// the ttl_field's value in vals (-1 without one).
func (p *plan) mapColumns(out *outcome, vals []codec.Value, colSlot []int, ttlSlot int, rec *Record, s *scratch) (string, error) {
	t := out.eventTime
	var err error
	s.begin(p)
	for i := range p.cols {
		c := &p.cols[i]
		if slot := colSlot[i]; slot >= 0 {
			err = p.decodedValue(c, &vals[slot], s)
		} else {
			err = p.sourceValue(c, rec, t, s) // not a field: the record's coordinates, key or time
		}
		if err != nil {
			return ReasonMap, err
		}
		s.spans[i] = s.w.Last()
	}
	if ttlSlot >= 0 { // out is fresh: without a value, fieldTTL stays false
		if err := p.ttlField.read(out, &vals[ttlSlot], p.now()); err != nil {
			if errors.Is(err, errExpired) {
				return ReasonExpired, err
			}
			return ReasonMap, err
		}
	}
	return p.completeRow(out, rec, s)
}

// decodedTime is the event time of a decoded record, value timeSlot of vals.
func (p *plan) decodedTime(vals []codec.Value, timeSlot int, rec *Record, s *scratch) (time.Time, error) {
	if p.timeFromKafka {
		return kafkaEventTime(rec)
	}
	switch v := &vals[timeSlot]; v.State {
	case codec.Set:
		return v.T, nil
	case codec.Absent:
		return time.Time{}, fmt.Errorf("event time: field %q is missing", p.timeField)
	case codec.Null:
		return time.Time{}, fmt.Errorf("event time: field %q is null", p.timeField)
	default: // codec.Bad
		return time.Time{}, v.Err.At(fmt.Sprintf("event time: field %q", p.timeField))
	}
}

// decodedValue writes the decoded value v of field column c to s.w: a missing or null value leaves
// the column unset (never a null, which would be a tombstone, unless the column has write_null), or
// is an error when the column needs a value.
func (p *plan) decodedValue(c *column, v *codec.Value, s *scratch) error {
	if v.State != codec.Set {
		if v.State == codec.Bad {
			return v.Err.At("column " + c.name + ": " + p.subjectOf(c, s))
		}
		state := "missing"
		if v.State == codec.Null {
			state = "null"
		}
		if c.need != "" {
			return fmt.Errorf("column %s: %s is %s, and %s", c.name, p.subjectOf(c, s), state, c.need)
		}
		if c.typ.kind == packed.KTuple {
			s.w.NullTuple(c.typ.packed()) // bound element by element, none of which may be unset
			return nil
		}
		s.w.Absent(c.absent)
		return nil
	}
	if !c.direct {
		s.putWire(c, v.B)
		return nil
	}
	store(c, v, s)
	return nil
}

// subjectOf names where column c's value comes from in messages: for a field of an envelope entry's row
// image, the image being mapped (s.image) first.
func (p *plan) subjectOf(c *column, s *scratch) string {
	if p.env != nil && c.source == srcField {
		return imageNames[s.image] + " " + c.subject()
	}
	return c.subject()
}

// headerOrKeyValue writes the value of column c (source header or key) to s.w.
func (p *plan) headerOrKeyValue(c *column, rec *Record, s *scratch) error {
	if s.src == nil {
		s.src = &sourceScratch{}
	}
	v := &s.src.vals[0]
	*v = codec.Value{}
	b := rec.Key
	if c.source == srcHeader {
		b = header(rec, c.header)
	}
	switch {
	case b == nil && c.regSlot < 0: // absent
	case c.source == srcHeader && c.typ.kind == kBlob:
		s.putWire(c, b)
		return nil
	case c.regSlot >= 0:
		// Decoded before the columns (keyColumns): a key that cannot be decoded was refused then.
		if s.keyOf == p {
			*v = s.kvals[c.regSlot]
		}
	case c.keyPlan != nil:
		var err error
		if s.src.buf, err = c.keyPlan.Decode(b, s.src.vals[:], s.src.buf[:0]); err != nil {
			*v = codec.Value{} // a key that is not a JSON object has no fields
		}
	default:
		f := c.codecField()
		s.src.buf = jsonc.DecodeString(&f, b, v, s.src.buf[:0])
	}
	return p.decodedValue(c, v, s)
}

// latestWriteTS is the write timestamp of a latest-value entry's row, an upsert at its event time or a
// delete at its tombstone's Kafka timestamp: at's millisecond in microseconds, plus the record's offset
// mod 1000.
func latestWriteTS(at time.Time, offset int64) int64 {
	return at.UnixMilli()*1000 + (offset%1000+1000)%1000 // Kafka offsets are not negative; explain's may be anything
}
