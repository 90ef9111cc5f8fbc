// Package codec is the decoding room: the seam between a record value's bytes and the mapper.
//
// The mapper knows a topic's columns (package mapper compiles them from config); a codec knows a
// wire format. They meet here. For each topic the mapper lists the values it needs as Fields (a
// field path and the CQL type of the column it feeds, or the event time); a Codec compiles a Plan
// for those fields, once per writer schema (Schema); the Plan decodes one record body at a time
// into a []Value, one typed cell per field, which the mapper encodes into the packed row. No
// map[string]any and no generic tree is built for a record.
//
// A schema-registry codec (Avro, Protobuf, JSON Schema) frames its values in the Confluent wire
// format: Frame reads the magic byte and schema id, MessageIndexes the Protobuf message-index
// array. A Registry fetches the writer schema of an id (package codec/registry is the one that
// talks to a real registry through franz-go's pkg/sr).
//
// Errors say who is at fault. *SchemaError: the writer schema cannot feed a configured field
// (reason schema, naming schema id, field and column), decided when the plan is built, so every
// record of that schema id is dead-lettered the same way and the partition goes on. *Error with
// ReasonDecode: the bytes are not a value of the schema (bad magic byte, framing cut short, a body
// shorter than its schema). *Error with ReasonMap: one value does not fit its column (a long out
// of an int column's range). ErrUnknownSchema: the registry has no such id (reason schema).
// *UnavailableError: the registry did not answer; not the record's fault, the caller retries.
//
// A message about a value of the record is a *ValueError in two forms: plain, without the value
// (what logs carry), and quoted, with it (Quoted: dead letters, and logs when log.quote_values
// asks). The JSON codec hands a value that does not fit its column over as a Value of State Bad
// carrying one, so that the mapper reports it when it reaches that column.
package codec
