// Package json is the JSON codec of the codec room: Codec compiles, for the fields a topic needs,
// a plan that reads a record with one Scan of its bytes (a Scanner holds the field paths as a tree
// of keys) and converts each value for its column into a codec.Value, as every codec does. Plain
// JSON is this codec with no writer schema; json_schema is the Confluent framing and this codec.
//
// The mapper's fastjson path is the reference for JSON: a plan maps only the records it is sure
// of and says ErrNotHandled for every other one (and for every value that does not convert), which
// the reference then maps, so every JSON row and error message is the reference's. The parsers of
// the texts JSON carries (IsNumber, ParseFloat, ParseIntegral, ParseUnix, ParseRFC3339) serve both.
//
// Like every package of the codec room, it knows no column plan, table or pipeline.
package json
