// Package json holds the JSON codec's own reading of record bytes, apart from the mapper that
// turns values into rows: the single-pass Scanner that finds a topic's field paths in one read of
// a record, and the parsers of the texts JSON carries (IsNumber and ParseFloat for numbers,
// ParseRFC3339 for date-times), which the scan and the mapper's fastjson reference path share.
//
// Like every package of the codec room, it knows no column plan, table or pipeline.
package json
