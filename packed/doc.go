// Package packed is the sink's one row format: the form in which a mapped row's values wait in
// their batch and reach the driver. The mapper writes it (Writer); the cassandra writer reads it
// (Binder); the batcher and the pipeline only carry it, as batcher.Row.Packed, and count it.
//
// # Why
//
// Rows wait in their batches by the hundred thousand, for up to seconds. A row whose values were a
// []any of boxed Go values cost an allocation per value, a scan of every value by the collector at
// every cycle, and an allocation per value again when gocql marshaled it. A packed row is one
// allocation with no pointers, holding the bytes Cassandra receives, which gocql copies into the
// frame as they are.
//
// # Format
//
//	count uint16 | per value: tag [, element kind [, key kind]] [, length uvarint], bytes | routing key
//
// The tag is the value's Kind, or 0xfe for gocql.UnsetValue and 0xff for null, which carry no
// bytes. A list, set or map adds the Kind of its elements (a map's values), and a map then the Kind
// of its keys. A tuple, a UDT and a vector carry their tag alone: what they hold is the column's
// configured type, which the start-up schema check has compared with the table's.
// Only the kinds without a fixed width (Width 0: text, ascii, blob, inet, decimal, varint and the
// collections) carry a length. The bytes are exactly what gocql.Marshal produces for the Go value
// of the column's type (see AppendValue; collections are framed as in native protocol 3 and later,
// a map's entries in key order), with one difference: the zero time.Time, which gocql sends as an
// empty value, is encoded as the instant it is. The routing key follows the values in the same
// allocation; batcher.Row.Key is a string over it (AppendKeyComponent gives its form).
//
// # Binding
//
// A Binder turns packed rows into bind arguments, *Value, gocql.UnsetValue or nil, into memory it
// reuses batch after batch. Value.MarshalCQL returns the bytes in place, and a *BindTypeError for a
// bind marker of another type than the one the bytes were encoded for (the table was altered after
// the configuration was written): the bytes would mean another value there.
//
// # Concurrency
//
// A packed row is immutable once Writer.Finish returns it, and may be read by any number of
// goroutines. A Writer and a Binder each serve one goroutine at a time: the mapper keeps a Writer in
// each pooled scratch, the writers keep Binders in a sync.Pool. The functions are safe for
// concurrent use.
package packed
