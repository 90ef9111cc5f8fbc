package mapper

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/bucketsink/sink/codec"
	jsonc "github.com/bucketsink/sink/codec/json"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/packed"
)

// The schema-registry formats: a record's value is framed (codec.Frame), its writer schema fetched
// by id (codec.Registry, cached for the process), and decoded by the plan its topic's codec
// compiled for that schema id (cached per topic and id) into one codec.Value per field, which the
// columns then encode (mapValues, the same for every codec). json_schema is framing and the JSON codec.

// decoder is a value format and the fields to decode from it: one entry's (plan), or the union of
// the entries of a Kafka topic read by several (feed, fanout.go).
type decoder struct {
	codecName string
	codec     codec.Codec
	framed    bool // the value is in the Confluent wire format (every codec but json)
	// reference: json and json_schema, whose plans map only what they are sure of; fastjson
	// (mapParsed) maps every other record, and gives every error.
	reference bool
	// scan is plain JSON's plan (no writer schema); nil for the other codecs, and when a field is
	// one the JSON plan does not convert (the reference maps all the records).
	scan     codec.Plan
	registry codec.Registry // the mapper's; nil when no topic reads a registry
	fields   []codec.Field  // what codec decodes: an entry's field columns', then its event time
	schemas  sync.Map       // schema id (int) → *writerPlan

	mu        sync.Mutex
	compiling map[int]chan struct{} // ids whose plan is being compiled; closed once it is in schemas
}

// setCodec makes d decode the format of codec name (a topics.<name>.codec, or a registry key_codec);
// false when this build has no such codec.
func (d *decoder) setCodec(name string) bool {
	d.codecName = name
	switch name {
	case config.CodecJSON, config.CodecJSONSchema:
		d.codec, d.reference = jsonc.Codec{}, true
		d.framed = name == config.CodecJSONSchema
		return true
	}
	c, ok := codecs[name]
	d.codec, d.framed = c, ok
	return ok
}

// scannable reports whether the JSON plan converts every field; when it does not (a collection,
// blob, inet, decimal or varint column), there is no plain-JSON plan and the reference maps every
// record, sparing each a scan that cannot map it.
func (d *decoder) scannable() bool {
	for i := range d.fields {
		if !jsonc.Scannable(d.fields[i].Type) {
			return false
		}
	}
	return true
}

// writerPlan is the compiled plan of one writer schema id of a topic, or the *codec.SchemaError
// that every record of the id is dead-lettered with.
type writerPlan struct {
	plan codec.Plan
	err  error
}

// decodeFields lists what the topic's codec must decode: each field column's value, then the
// event time field. colSlot (per column) and timeSlot say where each is in the list.
func (p *plan) decodeFields() {
	p.colSlot = make([]int, len(p.cols))
	p.fields = p.fields[:0]
	for i := range p.cols {
		c := &p.cols[i]
		p.colSlot[i] = -1
		if c.source != srcField {
			continue
		}
		p.colSlot[i] = len(p.fields)
		p.fields = append(p.fields, c.codecField())
	}
	p.timeSlot = -1
	if !p.timeFromKafka {
		p.timeSlot = len(p.fields)
		// time.format rfc3339 reads text; the unix_* formats count their unit (timeuuid.go's unit is
		// nanoseconds per unit).
		p.fields = append(p.fields, codec.Field{Path: p.timePath, Type: packed.Scalar(kTimestamp), Unit: time.Duration(p.timeUnit)})
	}
}

// codecField is what a codec decodes for field column c: its path, for its type; an integer that
// feeds a timestamp counts milliseconds, as JSON's epoch milliseconds do.
func (c *column) codecField() codec.Field {
	return codec.Field{Path: c.path, Column: c.name, Type: c.typ.packed(), Unit: time.Millisecond}
}

// writerPlan returns the plan of schema id, fetching the schema and compiling the plan on first
// sight. A schema the registry does not have is reason schema (no plan is kept: it may be registered
// yet; the registry client keeps the answer for registry.UnknownTTL so that a flood of such records
// does not ask once per record); a registry that does not answer is a *codec.UnavailableError, reason "".
func (d *decoder) writerPlan(ctx context.Context, id int) (codec.Plan, string, error) {
	if v, ok := d.schemas.Load(id); ok {
		return v.(*writerPlan).result()
	}
	if d.registry == nil {
		return nil, ReasonSchema, fmt.Errorf("codec %s: no schema_registry is configured", d.codecName)
	}
	s, err := d.registry.Schema(ctx, id)
	if errors.Is(err, codec.ErrUnknownSchema) {
		return nil, ReasonSchema, fmt.Errorf("decoding %s: %w", d.codecName, err)
	}
	if err != nil {
		return nil, "", err
	}
	wp, err := d.compile(ctx, id, s)
	if err != nil {
		return nil, "", err
	}
	return wp.result()
}

func (wp *writerPlan) result() (codec.Plan, string, error) {
	if wp.err != nil {
		return nil, ReasonSchema, wp.err
	}
	return wp.plan, "", nil
}

// compile returns the plan of schema s (id), compiling it once: when a producer rolls out a new
// schema, every partition worker meets its id at once, and those that come while it is compiled wait
// for that compile instead of each compiling the schema again. A caller whose context ends while it
// waits gets a *codec.UnavailableError (the record is not at fault); when the compile panics (the
// panic is the compiling record's), the waiters compile it themselves.
func (d *decoder) compile(ctx context.Context, id int, s *codec.Schema) (*writerPlan, error) {
	for {
		d.mu.Lock()
		if v, ok := d.schemas.Load(id); ok {
			d.mu.Unlock()
			return v.(*writerPlan), nil
		}
		done, waiting := d.compiling[id]
		if !waiting {
			done = make(chan struct{})
			if d.compiling == nil {
				d.compiling = map[int]chan struct{}{}
			}
			d.compiling[id] = done
		}
		d.mu.Unlock()
		if !waiting {
			return d.compileOnce(id, s, done), nil
		}
		select {
		case <-done:
		case <-ctx.Done():
			return nil, &codec.UnavailableError{Err: fmt.Errorf("schema id %d: waiting for its plan: %w", id, ctx.Err())}
		}
	}
}

// compileOnce compiles the plan of s and keeps it for id, then releases those waiting for it (done),
// also when Compile panics.
func (d *decoder) compileOnce(id int, s *codec.Schema, done chan struct{}) *writerPlan {
	defer func() {
		d.mu.Lock()
		delete(d.compiling, id)
		d.mu.Unlock()
		close(done)
	}()
	wp := &writerPlan{}
	wp.plan, wp.err = d.codec.Compile(s, d.fields)
	d.schemas.Store(id, wp)
	return wp
}

// frame is codec.Frame for rec, whose errors are ReasonDecode; a record that carries its schema id in
// a header is refused as such, whatever its value holds.
func (d *decoder) frame(rec *Record) (int, []byte, error) {
	if rec.SchemaIDHeader {
		return 0, nil, fmt.Errorf("decoding %s: the record carries its writer schema id in the %s header (the newer Confluent clients' header form), which this sink does not read; have the producer write the id into the value (the wire format's 5-byte prefix, the clients' default)",
			d.codecName, HeaderValueSchemaID)
	}
	id, body, err := codec.Frame(rec.Value)
	if err != nil {
		return 0, nil, fmt.Errorf("decoding %s: %w", d.codecName, err)
	}
	return id, body, nil
}

// mapValues maps a record whose body wp decodes: the values of its fields, then the columns and
// the rest of the row, the same for every codec. A reference codec's (JSON's) errors come back
// as its plan gave them: the caller maps such a record again with the reference.
func (p *plan) mapValues(wp codec.Plan, rec *Record, body []byte, s *scratch) (outcome, string, error) {
	var out outcome
	vals, reason, err := decodeValues(wp, p.codecName, p.reference, len(p.fields), body, s)
	if err == nil {
		reason, err = p.mapDecoded(&out, vals, p.colSlot, p.timeSlot, rec, s)
	}
	return out, reason, err
}

// decodeValues decodes body by wp into n values in s.vals (their bytes in s.buf), which it returns.
// A reference codec's (JSON's) errors come back as its plan gave them.
func decodeValues(wp codec.Plan, codecName string, reference bool, n int, body []byte, s *scratch) ([]codec.Value, string, error) {
	if cap(s.vals) < n {
		s.vals = make([]codec.Value, n)
	}
	vals := s.vals[:n]
	var err error
	if s.buf, err = wp.Decode(body, vals, s.buf[:0]); err != nil {
		if reference {
			return nil, ReasonDecode, err
		}
		reason := ReasonDecode
		var ce *codec.Error
		if errors.As(err, &ce) {
			reason = ce.Reason
		}
		return nil, reason, fmt.Errorf("decoding %s: %w", codecName, err)
	}
	return vals, "", nil
}

// mapDecoded maps a record from its decoded values into out: colSlot says which value feeds each
// column (-1: the column is not a field), timeSlot which one is the event time. It reads neither
// s.vals nor s.buf beyond vals, so the entries of one Kafka topic map one after another from the
// same decoded values (fanout.go).
func (p *plan) mapDecoded(out *outcome, vals []codec.Value, colSlot []int, timeSlot int, rec *Record, s *scratch) (string, error) {
	t, err := p.decodedTime(vals, timeSlot, rec, s)
	if reason, err := p.admit(t, err, rec); err != nil {
		return reason, err
	}
	out.eventTime = t
	return p.mapColumns(out, vals, colSlot, rec, s)
}

// mapColumns is mapDecoded once the event time is known and admitted (out.eventTime).
func (p *plan) mapColumns(out *outcome, vals []codec.Value, colSlot []int, rec *Record, s *scratch) (string, error) {
	t := out.eventTime
	var err error
	s.begin(p)
	for i := range p.cols {
		c := &p.cols[i]
		if slot := colSlot[i]; slot >= 0 {
			err = p.decodedValue(c, &vals[slot], s)
		} else {
			err = p.value(c, nil, rec, t, s) // not a field: value reads the record
		}
		if err != nil {
			return ReasonMap, err
		}
		s.spans[i] = s.w.Last()
	}
	return p.completeRow(out, rec, s)
}

// decodedTime is the event time of a decoded record, value timeSlot of vals.
func (p *plan) decodedTime(vals []codec.Value, timeSlot int, rec *Record, s *scratch) (time.Time, error) {
	if p.timeFromKafka {
		return p.eventTime(nil, rec, s)
	}
	switch v := &vals[timeSlot]; v.State {
	case codec.Absent:
		return time.Time{}, fmt.Errorf("event time: field %q is missing", p.timeField)
	case codec.Null:
		return time.Time{}, fmt.Errorf("event time: field %q is null", p.timeField)
	default:
		return v.T, nil
	}
}

// decodedValue writes the decoded value v of field column c to s.w: a missing or null value leaves
// the column unset (never a null, which would be a tombstone, unless the column has write_null), or
// is an error when the column needs a value.
func (p *plan) decodedValue(c *column, v *codec.Value, s *scratch) error {
	if v.State != codec.Set {
		state := "missing"
		if v.State == codec.Null {
			state = "null"
		}
		if c.need != "" {
			return fmt.Errorf("column %s: field %q is %s, and %s", c.name, c.field, state, c.need)
		}
		s.w.Absent(c.absent)
		return nil
	}
	if !c.direct {
		s.putWire(c, v.B)
		return nil
	}
	var x cell // only the member of the column's kind: store reads no other
	switch c.typ.kind {
	case kText, kASCII:
		x.b = v.B
	case kFloat, kDouble:
		x.f = v.F
	case kTimestamp, kDate:
		x.t = v.T
	case kUUID, kTimeUUID:
		x.u = v.U
	default:
		x.n = v.N
	}
	store(c, &x, s)
	return nil
}
