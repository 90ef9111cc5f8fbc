package mapper

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/bucketsink/sink/codec"
	jsonc "github.com/bucketsink/sink/codec/json"
	"github.com/bucketsink/sink/config"
)

// Column sources beyond the record's value: a record header (config.SourceHeader) and the Kafka key
// (config.SourceKey).
//
// A header column's value is the first header of its name. Blob takes its bytes as they are, and every
// other type its text as a JSON string value of a field would be (codec/json's DecodeString: text as
// is, numeric strings for numbers, RFC 3339 or epoch milliseconds for a timestamp, and so on), so a
// header and a field of one type convert alike and fail alike. A record without the header leaves the
// column unset, or is bad input for a column that needs a value.
//
// A key column takes the key's whole text the same way, or with a field, that field of the key read as
// a JSON object (key_codec text) by a JSON plan of its own (keyPlan), converted as the same field of
// the value would be. No key, a key that is not a JSON object, or a missing or null field is a missing
// value, with the header's consequences.

// compileKeyPlan gives a column of source key with a field the JSON plan that reads it from the key
// under key_codec text (a registry key codec reads it by plan.keyReg instead: compileKeyFields).
func (c *column) compileKeyPlan(keyCodec string) error {
	if c.source != srcKey || c.path == nil || config.NeedsRegistry(keyCodec) {
		return nil
	}
	var err error
	c.keyPlan, err = jsonc.Codec{}.Compile(nil, []codec.Field{c.codecField()})
	return err
}

// compileKeyFields builds the entry's registry key decoding (keyReg) of the key fields its columns of
// source key and its filter read: each column's field as its column reads it, each filter field as text.
// Nothing under key_codec text, or when nothing reads a key field.
func (p *plan) compileKeyFields() error {
	if !config.NeedsRegistry(p.keyCodec) {
		return nil
	}
	var fields []codec.Field
	for i := range p.cols {
		if c := &p.cols[i]; c.source == srcKey && c.path != nil {
			c.regSlot = len(fields)
			fields = append(fields, c.codecField())
		}
	}
	p.whereKey = nil
	if p.where != nil {
		for _, f := range p.where.kfields {
			p.whereKey = append(p.whereKey, len(fields))
			fields = append(fields, f)
		}
	}
	if len(fields) == 0 {
		return nil
	}
	p.keyReg = &decoder{fields: fields}
	if !p.keyReg.setCodec(p.keyCodec, true) {
		return fmt.Errorf("%s has no decoder in this build", p.keyCodec)
	}
	return nil
}

// registryKey decodes rec's Kafka key by the entry's registry key codec (keyReg), once per record and
// entry: the framing, the writer schema by id (its plan compiled once per id, as a value's), the fields.
// No key gives every field absent. An error is the key's (bad input, reason key), but for a registry
// that does not answer: that *codec.UnavailableError comes back as it is, and the record waits.
func (p *plan) registryKey(ctx context.Context, rec *Record, s *scratch) ([]codec.Value, error) {
	if s.keyOf == p {
		return s.kvals, s.kerr
	}
	k := p.keyReg
	s.kvals = slices.Grow(s.kvals[:0], len(k.fields))[:len(k.fields)]
	clear(s.kvals) // absent
	var err error
	switch {
	case rec.Key == nil: // no key: no field
	case rec.KeySchemaIDHeader:
		err = fmt.Errorf("the record carries its key's writer schema id in the %s header (the newer Confluent clients' header form), which this sink does not read; have the producer write the id into the key (the wire format's 5-byte prefix, the clients' default)", HeaderKeySchemaID)
	default:
		id, body, ferr := codec.Frame(rec.Key)
		if ferr != nil {
			err = fmt.Errorf("decoding the Kafka key (key_codec %s): %w", k.codecName, ferr)
			break
		}
		wp, reason, werr := k.writerPlan(ctx, id)
		if werr != nil {
			if reason == "" {
				return nil, werr // the registry does not answer: nothing is kept, the record waits
			}
			err = fmt.Errorf("the Kafka key (key_codec %s): %w", k.codecName, werr)
			break
		}
		if s.kbuf, err = wp.Decode(body, s.kvals, s.kbuf[:0]); err != nil {
			err = fmt.Errorf("decoding the Kafka key (key_codec %s, schema id %d): %w", k.codecName, id, err)
		}
	}
	s.keyOf, s.kerr = p, err
	return s.kvals, err
}

// keyColumns decodes rec's key for the entry's columns of source key under a registry key codec, before
// the columns are mapped; its error (reason key) names the key fields the key cannot give.
func (p *plan) keyColumns(ctx context.Context, rec *Record, s *scratch) (string, error) {
	if p.keyReg == nil || len(p.keyReg.fields) == len(p.whereKey) {
		return "", nil
	}
	_, err := p.registryKey(ctx, rec, s)
	switch {
	case err == nil:
		return "", nil
	case isUnavailable(err):
		return "", err
	}
	var names []string
	for i := range p.cols {
		if c := &p.cols[i]; c.regSlot >= 0 {
			names = append(names, c.subject()+" (column "+c.name+")")
		}
	}
	return ReasonKey, fmt.Errorf("%s: %w", strings.Join(names, ", "), err)
}

// isUnavailable reports whether err is the registry's not answering, no fault of the record's.
func isUnavailable(err error) bool {
	ue := (*codec.UnavailableError)(nil)
	return errors.As(err, &ue)
}

// from is explain's Value.From of column c: where its value came from when that is not the record's
// value.
func (c *column) from() string {
	if c.source == srcHeader || c.source == srcKey {
		return c.subject()
	}
	return ""
}
