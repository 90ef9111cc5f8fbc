package mapper

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/bucketsink/sink/codec"
	avroc "github.com/bucketsink/sink/codec/avro"
	jsonc "github.com/bucketsink/sink/codec/json"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/packed"
)

// Change-data-capture envelopes (topics.<name>.envelope debezium): the record's value is a Debezium
// change event, as Kafka Connect's JsonConverter writes it, with its schema part ({"schema": ...,
// "payload": <event>}) or without it (the event alone); which form a record has is read from the record.
// The event is {"op": "c"|"u"|"r"|"d", "before": <row>|null, "after": <row>|null, "source": {...,
// "ts_ms": ...}, "ts_ms": ...}.
//
// The entry's field columns address the row image: after for a create (c), an update (u) and a snapshot
// read (r), which the entry maps as a record of that row; before for a delete (d), which deletes the
// entity's row on a latest-value entry (its id columns from before, or from the Kafka key, a JSON object
// with or without JsonConverter's schema part, for a field before lacks) and is skipped or dead-lettered
// on a bucketed entry (on_delete). Columns of source change read the envelope itself (op, ts_ms,
// source.lsn), and time.source change is the change's source time, source.ts_ms. The tombstone
// Debezium writes after a delete event is skipped (ReasonTombstone): the delete has already been made.
// A latest-value envelope entry writes at the record's offset by default (write_timestamp offset): the
// changes of one transaction share their source time, and only the offset orders them.
//
// One JSON plan reads every value an event can give (each field column in after and in before, the
// change columns, the event time) from the event. With the schema part, each field's Connect schema says
// what its value is, and the plan reads it as that (a variant per distinct schema part, compiled on its
// first record and kept): a MicroTimestamp as microseconds, a Decimal as its base64 unscaled bytes then
// given the schema's scale, a Date as days. Without it, a value converts by its column's type alone, as
// a field of a plain JSON record does (a number for a timestamp is milliseconds).

// errChangeTombstone is the error of the tombstone that follows a delete event, which an envelope entry
// skips.
var errChangeTombstone = errors.New("the record value is null: the tombstone that follows a Debezium delete event, which an envelope entry skips (the delete event deletes)")

// errDeleteSkipped is wrapped by the error of a delete event a bucketed entry skips (on_delete skip).
var errDeleteSkipped = errors.New("a delete event (op d), and on_delete is skip: a bucketed entry keeps the rows of the entity's earlier changes")

// maxSchemaVariants bounds the schema parts an entry keeps compiled: a table changes its schema rarely,
// and beyond this many a record's schema part is compiled for the record alone.
const maxSchemaVariants = 64

// envelope is a compiled envelope entry's reading of its change events.
type envelope struct {
	slots []envSlot // every value the plan reads: the fields of the variant without a schema part
	// afterSlot and beforeSlot are, per column, the slot its value comes from for an upsert (after) and
	// for a delete (before): the same for a change column; -1 for a column of another source.
	afterSlot, beforeSlot []int
	afterTime, beforeTime int // the event time's slot; -1 when it is the Kafka timestamp
	afterTTL, beforeTTL   int // the ttl_field's slot in after (an upsert's row) and before (on_delete row's); -1 without one
	bare                  *variant
	mu                    sync.RWMutex
	schemas               map[string]*variant // schema part's bytes → its variant
	ids                   sync.Map            // a registry codec's writer schema id (int) → *variant
	// key reads a delete's id fields from the Kafka key when before lacks them: field i of the key at
	// keyBare[i] (a bare JSON object) or keyWrapped[i] (under JsonConverter's payload); per column, -1
	// for a column that is no id read from a field.
	key        codec.Plan
	keyFields  int
	keyBare    []int
	keyWrapped []int
}

// envSlot is one value an event gives.
type envSlot struct {
	img   image
	path  []string    // within the image (the envelope itself for imgChange)
	field codec.Field // how it is read without a schema part; Path is the event's path
}

// variant is a plan of the values an event gives, for one schema part (or none): the fields, how they
// are read, and what is done to them after (fix).
type variant struct {
	plan codec.Plan
	// opSlot is the op's value under a registry codec, whose plan reads it with the rest (-1 for JSON,
	// where mapChange reads it from the event's members).
	opSlot int
	n      int // values: the slots, then the aux values fixes read
	fix    []fixup
	err    error // the schema part cannot feed a column: every record with it is refused, reason schema
}

type fixOp uint8

const (
	fixInstant  fixOp = iota // a Timestamp, MicroTimestamp or NanoTimestamp to a timestamp (unit)
	fixDays                  // a Date (days since the epoch) to a date
	fixNanos                 // a Time, MicroTime or NanoTime to nanoseconds since midnight (× mult)
	fixDecimal               // a Decimal's unscaled bytes to a CQL decimal of scale
	fixVarScale              // a VariableScaleDecimal's value bytes and scale (aux) to a CQL decimal
)

// fixup converts one decoded value the way its Connect schema says.
type fixup struct {
	op    fixOp
	slot  int
	aux   int           // fixVarScale: the slot of the scale
	scale int32         // fixDecimal
	mult  int64         // fixNanos
	unit  time.Duration // fixInstant
	name  string
}

// compileEnvelope compiles the envelope reading of entry p, whose columns, time and key are compiled.
func (p *plan) compileEnvelope() error {
	e := &envelope{afterSlot: make([]int, len(p.cols)), beforeSlot: make([]int, len(p.cols)), schemas: map[string]*variant{}}
	add := func(img image, path []string, f codec.Field) int {
		full := path
		if img != imgChange {
			full = append([]string{imageNames[img]}, path...)
		}
		f.Path = full
		e.slots = append(e.slots, envSlot{img: img, path: path, field: f})
		return len(e.slots) - 1
	}
	for i := range p.cols {
		c := &p.cols[i]
		e.afterSlot[i], e.beforeSlot[i] = -1, -1
		switch c.source {
		case srcField:
			e.afterSlot[i] = add(imgAfter, c.path, c.codecField())
			e.beforeSlot[i] = add(imgBefore, c.path, c.codecField())
		case srcChange:
			s := add(imgChange, c.path, c.codecField())
			e.afterSlot[i], e.beforeSlot[i] = s, s
		}
	}
	switch {
	case p.timeFromKafka:
		e.afterTime, e.beforeTime = -1, -1
	case p.timeFromChange:
		s := add(imgChange, p.timePath, codec.Field{Type: packed.Scalar(kTimestamp), Time: p.timeFormat}) // unix_ms
		e.afterTime, e.beforeTime = s, s
	default:
		f := codec.Field{Type: packed.Scalar(kTimestamp), Time: p.timeFormat}
		e.afterTime = add(imgAfter, p.timePath, f)
		e.beforeTime = add(imgBefore, p.timePath, f)
	}
	e.afterTTL, e.beforeTTL = -1, -1
	if p.ttlField != nil {
		e.afterTTL = add(imgAfter, p.ttlField.field.Path, p.ttlField.field)
		e.beforeTTL = add(imgBefore, p.ttlField.field.Path, p.ttlField.field)
	}
	e.bare = e.compileVariant(nil)
	if e.bare.err != nil {
		return e.bare.err
	}
	// The key of a delete whose before lacks an id field: a JSON object, bare or under payload.
	var kf []codec.Field
	e.keyBare, e.keyWrapped = make([]int, len(p.cols)), make([]int, len(p.cols))
	for i := range p.cols {
		e.keyBare[i], e.keyWrapped[i] = -1, -1
	}
	for _, ci := range p.ids {
		c := &p.cols[ci]
		if c.source != srcField {
			continue
		}
		f := c.codecField()
		e.keyBare[ci] = len(kf)
		kf = append(kf, f)
		f.Path = append([]string{"payload"}, c.path...)
		e.keyWrapped[ci] = len(kf)
		kf = append(kf, f)
	}
	if len(kf) > 0 {
		var err error
		if e.key, err = (jsonc.Codec{Key: true}).Compile(nil, kf); err != nil {
			return err
		}
		e.keyFields = len(kf)
	}
	p.env = e
	return nil
}

// Debezium's and Kafka Connect's logical type names.
const (
	dbzTimestamp      = "io.debezium.time.Timestamp"
	dbzMicroTimestamp = "io.debezium.time.MicroTimestamp"
	dbzNanoTimestamp  = "io.debezium.time.NanoTimestamp"
	dbzZonedTimestamp = "io.debezium.time.ZonedTimestamp"
	dbzDate           = "io.debezium.time.Date"
	dbzTime           = "io.debezium.time.Time"
	dbzMicroTime      = "io.debezium.time.MicroTime"
	dbzNanoTime       = "io.debezium.time.NanoTime"
	dbzVariableScale  = "io.debezium.data.VariableScaleDecimal"
	connectTimestamp  = "org.apache.kafka.connect.data.Timestamp"
	connectDate       = "org.apache.kafka.connect.data.Date"
	connectTime       = "org.apache.kafka.connect.data.Time"
	connectDecimal    = "org.apache.kafka.connect.data.Decimal"
)

// timestampUnits are the logical types of an instant as a count since the epoch, and their unit.
var timestampUnits = map[string]time.Duration{
	dbzTimestamp: time.Millisecond, connectTimestamp: time.Millisecond,
	dbzMicroTimestamp: time.Microsecond, dbzNanoTimestamp: time.Nanosecond,
}

// timeOfDayNanos are the logical types of a time of day as a count since midnight, and the nanoseconds
// of one count.
var timeOfDayNanos = map[string]int64{dbzTime: 1e6, connectTime: 1e6, dbzMicroTime: 1e3, dbzNanoTime: 1}

// compileVariant compiles the plan of JsonConverter's schema part schema (nil: none, the values
// converted by their columns' types).
func (e *envelope) compileVariant(schema []byte) *variant {
	v := &variant{opSlot: -1}
	fields := e.defaultFields()
	if schema == nil {
		// Without a schema part a date is still Debezium's Date, days since the epoch: Debezium writes
		// every date so, whatever its time.precision.mode.
		for i := range fields {
			if fields[i].Type.Kind == kDate {
				fields[i].Type = packed.Scalar(kBigint)
				v.fix = append(v.fix, fixup{op: fixDays, slot: i, name: dbzDate})
			}
		}
	} else {
		cs, err := jsonc.ParseConnectSchema(schema)
		if err != nil {
			v.err = fmt.Errorf("the change event's schema part cannot be read: %w", err)
			return v
		}
		lookup := func(path []string) (jsonc.ConnectField, error) {
			cf, _ := cs.Field(path)
			return cf, nil
		}
		if fields, v.err = e.typedFields(v, fields, lookup, false); v.err != nil {
			return v
		}
	}
	v.n = len(fields)
	var err error
	v.plan, err = (jsonc.Codec{}).Compile(nil, fields)
	if err != nil {
		v.err = err
	}
	return v
}

// defaultFields are the fields of the slots as read without a schema.
func (e *envelope) defaultFields() []codec.Field {
	fields := make([]codec.Field, len(e.slots))
	for i := range e.slots {
		fields[i] = e.slots[i].field
	}
	return fields
}

// typedFields reads each slot's field as its logical type says (lookup gives the field at a path of the
// event). native: the codec converts Kafka Connect's own logical types itself (Avro, where Confluent's
// AvroConverter writes them as Avro logical types), so only Debezium's are converted here.
func (e *envelope) typedFields(v *variant, fields []codec.Field, lookup func([]string) (jsonc.ConnectField, error), native bool) ([]codec.Field, error) {
	for i := range e.slots {
		sl := &e.slots[i]
		path := sl.path
		if sl.img != imgChange {
			path = append([]string{imageNames[sl.img]}, sl.path...)
		}
		cf, err := lookup(path)
		if err != nil {
			return fields, err
		}
		if cf.Name == "" || native && connectNative[cf.Name] {
			continue // no logical type (or the codec's own): by the column's type
		}
		if fields, err = v.typed(fields, i, cf); err != nil {
			return fields, fmt.Errorf("the change event's schema: %s field %q (%s): %w", imageNames[sl.img], joinPath(sl.path), cf.Name, err)
		}
	}
	return fields, nil
}

// connectNative are Kafka Connect's own logical types, which Confluent's AvroConverter writes as Avro
// logical types (timestamp-millis, date, time-millis, decimal) that the Avro codec converts itself.
var connectNative = map[string]bool{connectTimestamp: true, connectDate: true, connectTime: true, connectDecimal: true}

// typed reads field i of fields as its Connect schema cf says, for the column type it feeds: the field
// is changed in place (a decimal is read as its bytes, a date as its days) and the fix that completes
// it added; a VariableScaleDecimal adds the field of its scale.
func (v *variant) typed(fields []codec.Field, i int, cf jsonc.ConnectField) ([]codec.Field, error) {
	f := &fields[i]
	k := f.Type.Kind
	if u, ok := timestampUnits[cf.Name]; ok {
		switch {
		case k == kTimestamp && f.Column == "":
			f.Time = codec.TimeFormat{Form: codec.TimeUnix, Unit: u, Name: codec.UnitName(u)} // the event time counts in its unit
		case k == kTimestamp:
			// A column's number is read as milliseconds: read the count, and make it an instant here.
			f.Type = packed.Scalar(kBigint)
			v.fix = append(v.fix, fixup{op: fixInstant, slot: i, unit: u, name: cf.Name})
		}
		return fields, nil
	}
	if n, ok := timeOfDayNanos[cf.Name]; ok {
		if k == kBigint {
			v.fix = append(v.fix, fixup{op: fixNanos, slot: i, mult: n, name: cf.Name})
		}
		return fields, nil
	}
	switch cf.Name {
	case dbzZonedTimestamp:
		if k == kTimestamp && f.Column == "" {
			f.Time = codec.TimeFormat{Form: codec.TimeRFC3339, Name: config.TimeFormatRFC3339} // the event time: RFC 3339 text, whatever time.format says
		}
	case dbzDate, connectDate:
		if k == kDate {
			f.Type = packed.Scalar(kBigint)
			v.fix = append(v.fix, fixup{op: fixDays, slot: i, name: cf.Name})
		}
	case connectDecimal:
		scale, err := strconv.ParseInt(cf.Parameters["scale"], 10, 32)
		if err != nil {
			return fields, fmt.Errorf("its scale parameter %q is not an integer", cf.Parameters["scale"])
		}
		switch {
		case k == kDecimal:
			f.Type = packed.Scalar(kBlob)
			v.fix = append(v.fix, fixup{op: fixDecimal, slot: i, scale: int32(scale), name: cf.Name})
		case k == kVarint && scale == 0:
			f.Type = packed.Scalar(kBlob) // the unscaled bytes are the varint's
		default:
			return fields, fmt.Errorf("a decimal of scale %d feeds a decimal column (or a varint one at scale 0), not column %s of type %s", scale, f.Column, k)
		}
	case dbzVariableScale:
		if k != kDecimal {
			return fields, fmt.Errorf("a decimal of variable scale feeds a decimal column, not column %s of type %s", f.Column, k)
		}
		path := f.Path
		f.Path = append(path[:len(path):len(path)], "value")
		f.Type = packed.Scalar(kBlob)
		fields = append(fields, codec.Field{Path: append(path[:len(path):len(path)], "scale"), Column: f.Column, Type: packed.Scalar(kInt)})
		v.fix = append(v.fix, fixup{op: fixVarScale, slot: i, aux: len(fields) - 1, name: cf.Name})
	}
	return fields, nil
}

// apply completes the values the variant's fixes convert; a value that does not fit becomes State Bad.
func (v *variant) apply(vals []codec.Value, s *scratch) {
	for _, f := range v.fix {
		x := &vals[f.slot]
		if x.State != codec.Set {
			continue
		}
		switch f.op {
		case fixInstant:
			var t time.Time
			switch f.unit {
			case time.Millisecond:
				t = time.UnixMilli(x.N)
			case time.Microsecond:
				t = time.UnixMicro(x.N)
			default:
				t = time.Unix(0, x.N)
			}
			if t = t.UTC(); !codec.InRange(t) {
				x.State, x.Err = codec.Bad, codec.BadValue(strconv.FormatInt(x.N, 10), "a "+f.name+" outside the years 0000 to 9999")
				continue
			}
			x.T = t
		case fixDays:
			t := time.Unix(0, 0).UTC().AddDate(0, 0, int(x.N))
			if x.N < -1e6 || x.N > 3e6 || !codec.InRange(t) {
				x.State, x.Err = codec.Bad, codec.BadValue(strconv.FormatInt(x.N, 10), "a "+f.name+" (days since the epoch) outside the years 0000 to 9999")
				continue
			}
			x.T = t
		case fixNanos:
			if x.N < 0 || x.N > 86400e9/f.mult {
				x.State, x.Err = codec.Bad, codec.BadValue(strconv.FormatInt(x.N, 10), "a "+f.name+" that is no time of day")
				continue
			}
			x.N *= f.mult
		case fixDecimal:
			x.B, s.buf = decimalWire(s.buf, f.scale, x.B)
		case fixVarScale:
			sc := &vals[f.aux]
			if sc.State != codec.Set {
				x.State, x.Err = codec.Bad, codec.BadValue("", "a "+f.name+" without its scale")
				continue
			}
			x.B, s.buf = decimalWire(s.buf, int32(sc.N), x.B)
		}
	}
}

// decimalWire appends to buf a CQL decimal's wire bytes (the scale, 4 bytes big-endian, then the unscaled
// value's two's complement bytes, big-endian: what Kafka Connect's Decimal writes) and returns them.
func decimalWire(buf []byte, scale int32, unscaled []byte) ([]byte, []byte) {
	at := len(buf)
	buf = binary.BigEndian.AppendUint32(buf, uint32(scale))
	if len(unscaled) == 0 {
		unscaled = []byte{0}
	}
	buf = append(buf, unscaled...)
	return buf[at:], buf
}

// variant is the compiled variant of schema part schema, compiled on its first sight.
func (e *envelope) variant(schema []byte) *variant {
	e.mu.RLock()
	v := e.schemas[string(schema)]
	e.mu.RUnlock()
	if v != nil {
		return v
	}
	v = e.compileVariant(schema)
	e.mu.Lock()
	if len(e.schemas) < maxSchemaVariants {
		e.schemas[string(schema)] = v
	}
	e.mu.Unlock()
	return v
}

// Where the parts of a change event are found (jsonc.Members).
var envelopeKeys = [...]string{"schema", "payload", "op", "before", "after"}

const (
	memSchema = iota
	memPayload
	memOp
	memBefore
	memAfter
)

// mapChange maps a change event for entry p (see the comment at the top of this file).
func (p *plan) mapChange(ctx context.Context, rec *Record, s *scratch) (outcome, string, error) {
	var out outcome
	e := p.env
	if rec.Value == nil {
		return out, ReasonTombstone, errChangeTombstone
	}
	var vals []codec.Value
	var hasAfter bool
	var reason string
	var err error
	if p.framed {
		vals, out.op, hasAfter, reason, err = p.decodeFramedChange(ctx, rec, s)
	} else {
		vals, out.op, hasAfter, reason, err = p.decodeJSONChange(rec, s)
	}
	if err != nil {
		return out, reason, err
	}
	s.image = imgAfter
	if out.op == 'd' {
		s.image = imgBefore
	}
	if out.op != 'd' {
		if !hasAfter {
			return out, ReasonDecode, fmt.Errorf("decoding a debezium change event: op %c has no after (the row it writes)", out.op)
		}
		reason, err := p.mapDecoded(&out, vals, e.afterSlot, e.afterTime, e.afterTTL, rec, s)
		return out, reason, err
	}
	switch {
	case p.latest:
		reason, err := p.deleteChange(&out, vals, rec, s)
		return out, reason, err
	case p.onDelete == config.OnDeleteSkip:
		return out, ReasonDeleted, errDeleteSkipped
	case p.onDelete == config.OnDeleteRow:
		// The history records the delete as a row of the image it removed (often its key columns alone).
		reason, err := p.mapDecoded(&out, vals, e.beforeSlot, e.beforeTime, e.beforeTTL, rec, s)
		return out, reason, err
	}
	return out, ReasonMap, fmt.Errorf("a delete event (op d), and topics.%s.on_delete is dead_letter: a bucketed entry does not delete", p.name)
}

// decodeJSONChange decodes a change event in JSON, with or without JsonConverter's schema part: its
// values, its op, and whether it has an after image.
func (p *plan) decodeJSONChange(rec *Record, s *scratch) ([]codec.Value, byte, bool, string, error) {
	e := p.env
	var sp [len(envelopeKeys)]jsonc.Span
	body := rec.Value
	if !jsonc.Members(body, envelopeKeys[:], sp[:]) {
		return nil, 0, false, ReasonDecode, errors.New("decoding a debezium change event: the value is not a JSON object")
	}
	var schema []byte
	if pl := sp[memPayload]; pl.Found() && pl.Null(body) && !sp[memOp].Found() {
		// {"schema": null, "payload": null}: a null value in JsonConverter's envelope, a tombstone.
		return nil, 0, false, ReasonTombstone, errChangeTombstone
	}
	if sp[memPayload].Found() && !sp[memOp].Found() {
		// JsonConverter's schema part: {"schema": ..., "payload": <the event>}.
		if sc := sp[memSchema]; sc.Found() && !sc.Null(body) {
			schema = body[sc.Off:sc.End]
		}
		body = body[sp[memPayload].Off:sp[memPayload].End]
		if !jsonc.Members(body, envelopeKeys[:], sp[:]) {
			return nil, 0, false, ReasonDecode, errors.New("decoding a debezium change event: its payload is not a JSON object")
		}
	}
	op, err := jsonOp(body, sp[memOp])
	if err != nil {
		return nil, 0, false, ReasonDecode, err
	}
	v := e.bare
	if schema != nil {
		v = e.variant(schema)
	}
	if v.err != nil {
		return nil, 0, false, ReasonSchema, v.err
	}
	vals, reason, err := decodeValues(v.plan, p.codecName, true, v.n, body, s)
	if err != nil {
		return nil, 0, false, reason, err
	}
	v.apply(vals, s)
	a := sp[memAfter]
	return vals, op, a.Found() && !a.Null(body), "", nil
}

// decodeFramedChange decodes a change event under a registry codec (Debezium's Avro envelope): its
// framing, the plan of its writer schema id (each Debezium logical type read as the schema's
// connect.name says), its values and op. Without the JSON envelope's members to look at, an event has
// an after image when some field of it is set.
func (p *plan) decodeFramedChange(ctx context.Context, rec *Record, s *scratch) ([]codec.Value, byte, bool, string, error) {
	e := p.env
	id, body, err := p.frame(rec)
	if err != nil {
		return nil, 0, false, ReasonDecode, err
	}
	v, reason, err := p.framedVariant(ctx, id)
	if err != nil {
		return nil, 0, false, reason, err
	}
	vals, reason, err := decodeValues(v.plan, p.codecName, false, v.n, body, s)
	if err != nil {
		return nil, 0, false, reason, err
	}
	v.apply(vals, s)
	var op byte
	switch x := &vals[v.opSlot]; x.State {
	case codec.Set:
		op, err = checkOp(string(x.B), strconv.Quote(string(x.B)))
	default:
		err = errors.New("decoding a debezium change event: it has no op")
	}
	if err != nil {
		return nil, 0, false, ReasonDecode, err
	}
	hasAfter := false
	for i, slot := range e.afterSlot {
		if slot >= 0 && p.cols[i].source == srcField && vals[slot].State == codec.Set {
			hasAfter = true
		}
	}
	return vals, op, hasAfter, "", nil
}

// framedVariant is the plan of writer schema id, fetched and compiled on its first sight (errors as
// decoder.writerPlan's: reason schema, or "" while the registry does not answer).
func (p *plan) framedVariant(ctx context.Context, id int) (*variant, string, error) {
	e := p.env
	if v, ok := e.ids.Load(id); ok {
		return v.(*variant).result()
	}
	sc, reason, err := p.fetchSchema(ctx, id)
	if err != nil {
		return nil, reason, err
	}
	v := &variant{}
	fields := e.defaultFields()
	lookup := func(path []string) (jsonc.ConnectField, error) {
		name, err := avroc.ConnectName(sc, path)
		return jsonc.ConnectField{Name: name}, err
	}
	if fields, v.err = e.typedFields(v, fields, lookup, true); v.err == nil {
		v.opSlot = len(fields)
		fields = append(fields, codec.Field{Path: []string{"op"}, Column: "op", Type: packed.Scalar(kText)})
		v.n = len(fields)
		v.plan, v.err = p.codec.Compile(sc, fields)
	}
	if v.err != nil {
		v.err = &codec.SchemaError{SchemaID: id, Err: v.err}
	}
	e.ids.Store(id, v)
	return v.result()
}

func (v *variant) result() (*variant, string, error) {
	if v.err != nil {
		return nil, ReasonSchema, v.err
	}
	return v, "", nil
}

// jsonOp is the op of the JSON event whose op member is at sp of body.
func jsonOp(body []byte, sp jsonc.Span) (byte, error) {
	if !sp.Found() {
		return 0, errors.New("decoding a debezium change event: it has no op")
	}
	raw := body[sp.Off:sp.End]
	if len(raw) < 2 || raw[0] != '"' {
		return 0, codec.BadValue(string(raw), "no op: op is a string, one of c, u, r, d").At("decoding a debezium change event: op")
	}
	return checkOp(string(raw[1:len(raw)-1]), string(raw))
}

// checkOp is op if it is one Debezium writes for a row (c, u, r, d); shown is how the record holds it.
func checkOp(op, shown string) (byte, error) {
	const head = "decoding a debezium change event: "
	switch op {
	case "c", "u", "r", "d":
		return op[0], nil
	case "t":
		return 0, errors.New(head + "a truncate event (op t) names no row; exclude truncates in the connector (skipped.operations: t), or filter them with where")
	case "m":
		return 0, errors.New(head + "a logical decoding message (op m) names no row; filter it with where")
	}
	return 0, codec.BadValue(shown, "not an op Debezium writes for a row (c, u, r, d)").At(head + "op")
}

// deleteChange makes the row that deletes the entity a delete event names, on a latest-value entry: its
// id columns from before (a field before lacks from the Kafka key), at the write timestamp of the event
// time (unix_ms × 1000 + offset mod 1000, the upserts' rule).
func (p *plan) deleteChange(out *outcome, vals []codec.Value, rec *Record, s *scratch) (string, error) {
	e := p.env
	t, err := p.decodedTime(vals, e.beforeTime, rec, s)
	if err != nil && !p.timeFromKafka && !p.timeFromChange {
		err = fmt.Errorf("%w (a delete event's row image is before, which often holds the key columns only: take the event time from the change, time: {source: change})", err)
	}
	if reason, err := p.admit(t, err, rec); err != nil {
		return reason, err
	}
	var key []codec.Value
	keyRead := false
	idValue := func(c *column, ci int) error {
		slot := e.beforeSlot[ci]
		if slot < 0 {
			return p.sourceValue(c, rec, t, s)
		}
		v := &vals[slot]
		if v.State != codec.Set && e.keyBare[ci] >= 0 {
			if !keyRead {
				keyRead, key = true, e.readKey(rec.Key, s)
			}
			if key != nil {
				if k := &key[e.keyBare[ci]]; k.State == codec.Set {
					v = k
				} else if k := &key[e.keyWrapped[ci]]; k.State == codec.Set {
					v = k
				}
			}
			if v.State == codec.Set {
				out.fromKey |= 1 << (ci % 64)
			}
		}
		return p.decodedValue(c, v, s)
	}
	return ReasonMap, p.deleteRow(out, t, rec, s, "delete: neither before nor the Kafka key names the row: ", idValue)
}

// readKey decodes the id fields of a delete from the Kafka key (nil: no key, or not a JSON object).
func (e *envelope) readKey(key []byte, s *scratch) []codec.Value {
	if key == nil || e.key == nil {
		return nil
	}
	if s.src == nil {
		s.src = &sourceScratch{}
	}
	vals := make([]codec.Value, e.keyFields)
	var err error
	if s.src.buf, err = e.key.Decode(key, vals, s.src.buf[:0]); err != nil {
		return nil
	}
	return vals
}

// from is explain's Value.From of column ci of an envelope entry for op: the image or the envelope its
// value came from.
func (e *envelope) from(c *column, ci int, op byte, fromKey uint64) string {
	switch c.source {
	case srcField:
		if op == 'd' {
			if fromKey&(1<<(ci%64)) != 0 {
				return "key field " + strconv.Quote(c.field) + ", which before lacks"
			}
			return "before field " + strconv.Quote(c.field)
		}
		return "after field " + strconv.Quote(c.field)
	case srcChange:
		return "change field " + strconv.Quote(c.field)
	}
	return c.from()
}

func joinPath(path []string) string {
	var b []byte
	for i, p := range path {
		if i > 0 {
			b = append(b, '.')
		}
		b = append(b, p...)
	}
	return string(b)
}

// opNames say what each op is, for explain.
var opNames = map[byte]string{'c': "create", 'u': "update", 'r': "read (snapshot)", 'd': "delete"}
