package config

import "fmt"

// Change-data-capture envelopes (docs/CONFIG.md, "Change-data-capture envelopes"): with envelope
// debezium a record's value is a Debezium change event, and the entry maps the row image the event
// carries (after for a create, update or snapshot read; before for a delete), takes its event time
// from the change (time.source change) and columns from the envelope itself (source change).

// EnvelopeDebezium is topics.<name>.envelope for a value that is a Debezium change event (the JSON
// of Kafka Connect's JsonConverter, with or without its schema part).
const EnvelopeDebezium = "debezium"

// Envelopes lists every envelope; "" (no envelope) is the default.
var Envelopes = []string{EnvelopeDebezium}

// TimeSourceChange is time.source of an envelope entry whose event time is the change's source time
// (source.ts_ms of a Debezium event: when the change was made in the database).
const TimeSourceChange = "change"

// SourceChange is a column read from the change envelope itself, at its field path (op, ts_ms,
// source.lsn, source.ts_ms, ...), not from the row image.
const SourceChange = "change"

// Values of topics.<name>.on_delete: what a delete event (op d) becomes on a bucketed envelope entry (a
// latest-value entry deletes the row).
const (
	OnDeleteSkip       = "skip"        // skipped and committed, counted in sink_records_skipped_total{reason="deleted"}
	OnDeleteDeadLetter = "dead_letter" // bad input, reason map
	OnDeleteRow        = "row"         // a row of the before image, as a create's row is of after
)

// DefaultOnDelete skips a delete on a bucketed entry: the history it writes keeps the rows of the
// entity's earlier changes, which the delete does not undo.
const DefaultOnDelete = OnDeleteSkip

// Enveloped reports whether the entry's values are change events.
func (t Topic) Enveloped() bool { return t.Envelope != "" }

// validateEnvelope checks envelope, on_delete, time.source change and the change columns of entry t.
func (t Topic) validateEnvelope(v *validator, p string) {
	v.enum(p+".on_delete", t.OnDelete, OnDeleteSkip, OnDeleteDeadLetter, OnDeleteRow)
	if !t.Enveloped() {
		if t.OnDelete != DefaultOnDelete {
			v.add(p+".on_delete", "%q while envelope is not set: only a change event (envelope: debezium) is a delete; remove it", t.OnDelete)
		}
		if t.Time.Source == TimeSourceChange {
			v.add(p+".time.source", "change while envelope is not set: only a change event has a source time; set envelope: debezium, or use field or kafka")
		}
		for i, col := range t.Columns {
			if col.Source == SourceChange {
				v.add(fmt.Sprintf("%s.columns[%d].source", p, i), "change while envelope is not set: only a change event has an envelope to read; set envelope: debezium, or use field")
			}
		}
		return
	}
	v.enum(p+".envelope", t.Envelope, Envelopes...)
	if t.Codec != CodecJSON && t.Codec != CodecAvro {
		v.add(p+".envelope", "%s with codec %s: this build reads Debezium's envelope in JSON (Kafka Connect's JsonConverter, with or without its schema part) or in Avro (Confluent's AvroConverter); use one of those converters, and codec json or avro", t.Envelope, t.Codec)
	}
	if t.OnTombstone != OnTombstoneSkip {
		v.add(p+".on_tombstone", "%q on an envelope entry: the tombstone that follows a delete event carries nothing the delete did not, and is always skipped; remove the key", t.OnTombstone)
	}
	if t.Latest() && t.OnDelete != DefaultOnDelete {
		v.add(p+".on_delete", "%q on a latest-value entry, where a delete event deletes the row; remove it (it applies to bucketed entries)", t.OnDelete)
	}
	for i, col := range t.Columns {
		if col.Source == SourceChange && col.Field == "" {
			v.add(fmt.Sprintf("%s.columns[%d].field", p, i), "empty; source change reads the envelope at this path, e.g. op, ts_ms or source.lsn")
		}
	}
}
