// Package json is the JSON codec of the codec room: Codec compiles, for the fields a topic needs,
// a plan that reads a record with one Scan of its bytes (a Scanner holds the field paths as a tree
// of keys) and converts each value for its column into a codec.Value, as every codec does. Plain
// JSON is this codec with no writer schema; json_schema is the Confluent framing and this codec.
//
// A record the scan does not map (anything unusual, and every value that does not fit) is parsed
// by fastjson into a tree and read from it (tree.go, convert.go), the reference for JSON: every JSON
// row and error message is the tree's, and the scan maps a record only when it gives the same row. A
// value that does not fit its column is a codec.Value of State Bad whose codec.ValueError says why,
// without the value and with it (Quoted). The parsers of the texts JSON carries (IsNumber,
// ParseFloat, ParseIntegral, ParseUnix, ParseRFC3339) serve both paths.
//
// Like every package of the codec room, it knows no column plan, table or pipeline.
package json
