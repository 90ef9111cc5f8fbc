package config

// Column sources beyond the record's value (docs/CONFIG.md, "Column sources").

// SourceHeader is a column taken from a record header (Column.Header): its bytes as text for text,
// varchar and ascii, as they are for blob, and for any other type its text read as a JSON string value
// of that field would be (numeric strings for numbers, RFC 3339 or epoch milliseconds for a timestamp).
// A missing header leaves the column unset, or is bad input for an id, clustering or required column.
const SourceHeader = "header"

// headerTypes are the CQL types a header column may have: the scalars (a header holds one value).
var headerTypes = []string{"text", "varchar", "ascii", "tinyint", "smallint", "int", "bigint", "float", "double",
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
