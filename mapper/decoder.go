package mapper

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/bucketsink/sink/codec"
	jsonc "github.com/bucketsink/sink/codec/json"
	"github.com/bucketsink/sink/config"
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
	// json: json and json_schema, whose errors are whole messages ("decoding JSON: ..."), and whose
	// values that do not fit are Values of State Bad (codec/json).
	json bool
	// scan is plain JSON's plan (no writer schema); nil for the other codecs.
	scan     codec.Plan
	registry codec.Registry // the mapper's; nil when no topic reads a registry
	fields   []codec.Field  // what codec decodes: an entry's field columns', then its event time
	schemas  sync.Map       // schema id (int) → *writerPlan
}

// setCodec makes d decode the format of codec name (a topics.<name>.codec, or a registry key_codec:
// key); false when this build has no such codec.
func (d *decoder) setCodec(name string, key bool) bool {
	d.codecName = name
	switch name {
	case config.CodecJSON, config.CodecJSONSchema:
		d.codec, d.json = jsonc.Codec{Key: key}, true
		d.framed = name == config.CodecJSONSchema
		return true
	}
	c, ok := codecs[name]
	d.codec, d.framed = c, ok
	return ok
}

// writerPlan is the compiled plan of one writer schema id of a topic, or the *codec.SchemaError
// that every record of the id is dead-lettered with.
type writerPlan struct {
	compiled codec.Plan
	err      error
}

// writerPlan returns the plan of schema id, fetching the schema and compiling the plan on first
// sight. A schema the registry does not have is reason schema (no plan is kept: it may be registered
// yet; the registry client keeps the answer for registry.UnknownTTL so that a flood of such records
// does not ask once per record); a registry that does not answer is a *codec.UnavailableError, reason "".
func (d *decoder) writerPlan(ctx context.Context, id int) (codec.Plan, string, error) {
	if v, ok := d.schemas.Load(id); ok {
		wp := v.(*writerPlan)
		if wp.err != nil {
			return nil, ReasonSchema, wp.err
		}
		return wp.compiled, "", nil
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
	wp := &writerPlan{}
	wp.compiled, wp.err = d.codec.Compile(s, d.fields)
	v, _ := d.schemas.LoadOrStore(id, wp)
	wp = v.(*writerPlan)
	if wp.err != nil {
		return nil, ReasonSchema, wp.err
	}
	return wp.compiled, "", nil
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
