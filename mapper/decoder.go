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

	mu        sync.Mutex
	compiling map[int]chan struct{} // ids whose plan is being compiled; closed once it is in schemas
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
		return v.(*writerPlan).result()
	}
	s, reason, err := d.fetchSchema(ctx, id)
	if err != nil {
		return nil, reason, err
	}
	wp, err := d.awaitCompile(ctx, id, s)
	if err != nil {
		return nil, "", err
	}
	return wp.result()
}

// fetchSchema is writer schema id from the registry: reason schema for one it does not have, "" (and a
// *codec.UnavailableError) while it does not answer.
func (d *decoder) fetchSchema(ctx context.Context, id int) (*codec.Schema, string, error) {
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
	return s, "", nil
}

func (wp *writerPlan) result() (codec.Plan, string, error) {
	if wp.err != nil {
		return nil, ReasonSchema, wp.err
	}
	return wp.compiled, "", nil
}

// awaitCompile returns the plan of schema s (id), compiling it once: when a producer rolls out a new
// schema, every partition worker meets its id at once, and those that come while it is compiled wait
// for that compile instead of each compiling the schema again. A caller whose context ends while it
// waits gets a *codec.UnavailableError (the record is not at fault); when the compile panics (the
// panic is the compiling record's), the waiters compile it themselves.
func (d *decoder) awaitCompile(ctx context.Context, id int, s *codec.Schema) (*writerPlan, error) {
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
	wp.compiled, wp.err = d.codec.Compile(s, d.fields)
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
