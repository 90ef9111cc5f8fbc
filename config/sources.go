package config

// Column sources beyond the record's value (docs/CONFIG.md, "Column sources").

// SourceHeader is a column taken from a record header (Column.Header): its bytes as text for text,
// varchar and ascii, as they are for blob, and for any other type its text read as a JSON string value
// of that field would be (numeric strings for numbers, RFC 3339 or epoch milliseconds for a timestamp).
// A missing header leaves the column unset, or is bad input for an id, clustering or required column.
const SourceHeader = "header"

// SourceKey is a column taken from the Kafka key, read by the entry's key_codec. Under key_codec text:
// with field, the field at that dot path of the key read as a JSON object, converted as the same field
// of the value would be; without, the key's whole text, converted as a JSON string value is. Under a
// registry key codec (avro, protobuf, json_schema): the field at that dot path of the key in the wire
// format, decoded as a value of that codec is (field is required then). A key without the field (no
// key, a key under key_codec text that is not a JSON object, a missing or null field) leaves the column
// unset, or is bad input for an id, clustering or required column; a registry-framed key that cannot be
// decoded, or whose writer schema cannot give the field, is bad input (reason key). kafka_key is the
// key's bytes as they are.
const SourceKey = "key"

// oneValueTypes are the CQL types a header or key column may have: the scalars (each holds one value).
var oneValueTypes = []string{"text", "varchar", "ascii", "tinyint", "smallint", "int", "bigint", "float", "double",
	"boolean", "timestamp", "date", "uuid", "timeuuid", "blob", "inet", "decimal", "varint"}

// validateColumnHeader checks the header key of column col at path cp.
func validateColumnHeader(v *validator, cp string, col Column) {
	switch {
	case col.Source == SourceHeader && col.Header == "":
		v.add(cp+".header", "empty; source header takes the value of the record header this names, e.g. header: trace-id")
	case col.Source != SourceHeader && col.Header != "":
		v.add(cp+".header", "set while source is not header; remove it, or set source: header")
	}
}

// validateColumnKey checks a column of source key at path cp of entry t.
func validateColumnKey(v *validator, cp string, t Topic, col Column) {
	if col.Source != SourceKey {
		return
	}
	if col.Field != "" && !fieldPathRE.MatchString(col.Field) {
		v.add(cp+".field", "%q is not a field path into the Kafka key; use names separated by dots, e.g. tenant.id", col.Field)
	}
	if col.Field == "" && NeedsRegistry(t.KeyCodec) {
		v.add(cp+".field", "empty while key_codec is %s: a column of source key reads a field of a registry-framed key; name it (field: id), "+
			"or take the key's bytes with source kafka_key", t.KeyCodec)
	}
}

// readsKeyFields reports whether the entry reads fields of the Kafka key: a column of source key with a
// field, or a filter test of a key field.
func (t Topic) readsKeyFields() bool {
	for _, c := range t.Columns {
		if c.Source == SourceKey && c.Field != "" {
			return true
		}
	}
	return t.Where != nil && t.Where.readsKey()
}
