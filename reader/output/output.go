// Package output prints the rows of a reader's page as `sink query` does: an aligned table, one JSON
// document, or CSV. It prints each row as the reader hands it over (reader.Reader.Scan), so a page of
// any length is never held whole, and the bytes are those of the whole page formatted at once, but for
// the table's rule on long pages (TableBlock).
package output

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"gopkg.in/inf.v0"

	"github.com/bucketsink/sink/reader"
	"github.com/bucketsink/sink/schema"
)

// Formats are the formats Print knows; the first is `sink query`'s default.
var Formats = []string{"table", "json", "csv"}

// TableBlock is how many rows the table format aligns together. A page of up to TableBlock rows is
// aligned as a whole; a longer one is printed a block of TableBlock rows at a time, each aligned on its
// own as soon as it is read, so a column may shift by a few characters from one block to the next.
const TableBlock = 1000

// bufferSize is the bytes gathered before a write to the output: one write per row would cost a
// system call per row.
const bufferSize = 64 << 10

// Scan reads a page, handing each row to fn in order (reader.Reader.Scan with its query bound).
type Scan func(fn func(reader.Row) error) (reader.Page, error)

// Print prints the rows scan reads to w in format (one of Formats), with the table's columns in order,
// each as it comes. It returns the page scan returned and the rows printed. A page's cursor and warnings
// are in the JSON document; the other formats leave them to the caller. When scan fails, the rows printed
// before the failure stay written (a JSON document is then left unclosed; without any, nothing is) and its error is returned;
// errors of w are returned wrapped as "writing the rows".
func Print(w io.Writer, format string, cols []schema.Column, scan Scan) (reader.Page, int, error) {
	bw := bufio.NewWriterSize(w, bufferSize)
	var f formatter
	switch format {
	case "table":
		f = newTable(bw, cols)
	case "json":
		f = &jsonDoc{w: bw}
	case "csv":
		f = &csvRows{w: csv.NewWriter(bw), cols: cols}
	default:
		return reader.Page{}, 0, fmt.Errorf("format %q: use %s", format, strings.Join(Formats, ", "))
	}
	n := 0
	page, err := scan(func(row reader.Row) error {
		if err := f.row(row); err != nil {
			return writeErr(err)
		}
		n++
		return nil
	})
	if err != nil && n == 0 {
		return page, 0, err // nothing printed, not even the header
	}
	if err == nil {
		err = writeErr(f.end(page))
	} else if ferr := f.flush(); ferr != nil {
		err = errors.Join(err, writeErr(ferr))
	}
	if ferr := bw.Flush(); ferr != nil {
		err = errors.Join(err, writeErr(ferr))
	}
	return page, n, err
}

func writeErr(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("writing the rows: %w", err)
}

// formatter is one format: row prints a row, end what follows the last; flush, in place of end after a
// failed scan, writes out the rows printed so far.
type formatter interface {
	row(reader.Row) error
	end(reader.Page) error
	flush() error
}

// table aligns its columns with a tabwriter flushed every TableBlock rows.
type table struct {
	tw   *tabwriter.Writer
	cols []schema.Column
	n    int
	line []byte   // the row's line, reused
	cell []string // the row's cells, reused
}

func newTable(w io.Writer, cols []schema.Column) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0), cols: cols}
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.Name
	}
	fmt.Fprintln(t.tw, strings.Join(names, "\t"))
	return t
}

func (t *table) row(row reader.Row) error {
	t.cell = appendCells(t.cell[:0], t.cols, row, true)
	t.line = t.line[:0]
	for i, c := range t.cell {
		if i > 0 {
			t.line = append(t.line, '\t')
		}
		t.line = append(t.line, c...)
	}
	t.line = append(t.line, '\n')
	if _, err := t.tw.Write(t.line); err != nil {
		return err
	}
	if t.n++; t.n%TableBlock == 0 {
		return t.tw.Flush()
	}
	return nil
}

func (t *table) end(reader.Page) error { return t.tw.Flush() }
func (t *table) flush() error          { return t.tw.Flush() }

// csvRows writes the header, then a record per row.
type csvRows struct {
	w      *csv.Writer
	cols   []schema.Column
	header bool
	cell   []string // the row's cells, reused
}

func (c *csvRows) row(row reader.Row) error {
	if err := c.writeHeader(); err != nil {
		return err
	}
	c.cell = appendCells(c.cell[:0], c.cols, row, false)
	return c.w.Write(c.cell)
}

func (c *csvRows) writeHeader() error {
	if c.header {
		return nil
	}
	c.header = true
	names := make([]string, len(c.cols))
	for i, col := range c.cols {
		names[i] = col.Name
	}
	return c.w.Write(names)
}

func (c *csvRows) end(reader.Page) error {
	if err := c.writeHeader(); err != nil {
		return err
	}
	return c.flush()
}

func (c *csvRows) flush() error {
	c.w.Flush()
	return c.w.Error()
}

// jsonDoc is one document, {"rows": [...], "cursor": ..., "warnings": [...]}, indented by two spaces:
// its rows are written one by one, the members after them once the page ends.
type jsonDoc struct {
	w *bufio.Writer
	n int
}

// jsonHead is how the document begins, up to its rows.
const jsonHead = "{\n  \"rows\": ["

type jsonPartition struct {
	Table       string `json:"table"`
	Bucket      int64  `json:"bucket"`
	EventBucket int    `json:"event_bucket"`
}

type jsonRow struct {
	Values    map[string]any `json:"values"`
	Partition jsonPartition  `json:"partition"`
}

func (j *jsonDoc) row(row reader.Row) error {
	vals := make(map[string]any, len(row.Values))
	for k, v := range row.Values {
		vals[k] = jsonValue(v)
	}
	b, err := json.MarshalIndent(jsonRow{Values: vals,
		Partition: jsonPartition{Table: row.Partition.Table, Bucket: row.Partition.Bucket, EventBucket: row.Partition.EventBucket}}, "    ", "  ")
	if err != nil {
		return err
	}
	if j.n == 0 {
		j.w.WriteString(jsonHead + "\n    ")
	} else {
		j.w.WriteString(",\n    ")
	}
	j.n++
	_, err = j.w.Write(b)
	return err
}

// end closes the rows and writes the members after them: the document whose rows are empty, from
// where its rows end.
func (j *jsonDoc) end(page reader.Page) error {
	tail, err := json.MarshalIndent(struct {
		Rows     []struct{} `json:"rows"`
		Cursor   string     `json:"cursor,omitempty"`
		Warnings []string   `json:"warnings,omitempty"`
	}{Rows: []struct{}{}, Cursor: page.Cursor, Warnings: page.Warnings}, "", "  ")
	if err != nil {
		return err
	}
	if j.n == 0 {
		j.w.WriteString(jsonHead)
	} else {
		j.w.WriteString("\n  ")
	}
	j.w.Write(tail[len(jsonHead):])
	_, err = j.w.WriteString("\n")
	return err
}

// flush has nothing to do: the rows are written as they come, and the document stays unclosed.
func (j *jsonDoc) flush() error { return nil }

// appendCells appends the text forms of a row's values to out, in column order: a scalar's as
// reader.FormatValue gives it, a collection as JSON (see collectionText); null is empty. For the table
// (quote set), a cell that would not read back from an aligned line is quoted (see tableCell).
func appendCells(out []string, cols []schema.Column, row reader.Row, quote bool) []string {
	for _, c := range cols {
		v := row.Values[c.Name]
		if isNull(v) {
			out = append(out, "")
			continue
		}
		s, err := reader.FormatValue(c.Type, v)
		if err != nil {
			s = collectionText(c.Type, v)
		}
		if quote {
			s = tableCell(s)
		}
		out = append(out, s)
	}
	return out
}

// isNull reports whether v is a null: nil, or a nil decimal or varint.
func isNull(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case *inf.Dec:
		return x == nil
	case *big.Int:
		return x == nil
	}
	return false
}

// tableCell is s as an aligned table shows it: as is, unless it holds a control character (a tab or a
// line break would break the alignment), begins or ends with a space (the padding would hide it) or
// begins with a double quote; then Go-quoted, as strconv.Quote writes it.
func tableCell(s string) string {
	if s == "" {
		return s
	}
	if s[0] == ' ' || s[0] == '"' || s[len(s)-1] == ' ' || strings.IndexFunc(s, unicode.IsControl) >= 0 {
		return strconv.Quote(s)
	}
	return s
}

// collectionText is a collection cell of the table and CSV formats: a list, set, tuple or vector as a JSON
// array, a map or a UDT as a JSON object, each element in its text form (reader.FormatValue) as a JSON
// number or boolean for the number types and boolean (NaN and the infinities as strings), a JSON string
// for the others; a map's keys in their text form; nested collections alike.
func collectionText(typ string, v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(cellDoc(elemType(typ), reflect.ValueOf(v))); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// cellDoc is v as collectionText writes it; elem is the type of its elements when known.
func cellDoc(elem string, rv reflect.Value) any {
	if rv.Kind() == reflect.Interface {
		if rv.IsNil() {
			return nil
		}
		rv = rv.Elem()
	}
	if !rv.IsValid() {
		return nil
	}
	x := rv.Interface()
	if isNull(x) {
		return nil
	}
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		// A slice of bytes (a blob, or an inet's net.IP) is one value, not a list.
		if rv.Type().Elem().Kind() != reflect.Uint8 {
			items := make([]any, rv.Len())
			for i := range items {
				items[i] = cellDoc(elem, rv.Index(i))
			}
			return items
		}
	case reflect.Map:
		items := make(map[string]any, rv.Len())
		for it := rv.MapRange(); it.Next(); {
			k := it.Key().Interface()
			key, err := reader.FormatValue("", k)
			if err != nil {
				key = fmt.Sprint(k)
			}
			items[key] = cellDoc(elem, it.Value())
		}
		return items
	}
	s, err := reader.FormatValue(elem, x)
	if err != nil {
		return fmt.Sprint(x)
	}
	switch f := x.(type) {
	case float32:
		if nonFinite(float64(f)) != "" {
			return s
		}
		return json.Number(s)
	case float64:
		if nonFinite(f) != "" {
			return s
		}
		return json.Number(s)
	case int, int8, int16, int32, int64, *big.Int, *inf.Dec:
		return json.Number(s)
	case bool:
		return f
	}
	return s
}

// elemType is the type of the elements of a collection type: T of list<T> and set<T>, V of map<K, V>.
func elemType(typ string) string {
	_, inner, ok := strings.Cut(typ, "<")
	if !ok {
		return ""
	}
	inner = strings.TrimSuffix(strings.TrimSpace(inner), ">")
	if _, v, ok := strings.Cut(inner, ","); ok {
		return strings.TrimSpace(v)
	}
	return strings.TrimSpace(inner)
}

// jsonValue is v as the JSON format writes it: a decimal as a JSON number, a float's NaN and infinities
// as the strings "NaN", "Infinity" and "-Infinity" (JSON has no such numbers; encoding/json refuses
// them), inside collections too; the other values as encoding/json writes them.
func jsonValue(v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case float64:
		if s := nonFinite(x); s != "" {
			return s
		}
		return x
	case float32:
		if s := nonFinite(float64(x)); s != "" {
			return s
		}
		return x
	case *inf.Dec:
		if x == nil {
			return nil
		}
		return json.Number(x.String())
	case []float64:
		return jsonSlice(x)
	case []float32:
		return jsonSlice(x)
	case []*inf.Dec:
		return jsonSlice(x)
	case map[string]float64:
		return jsonMap(x)
	case map[string]float32:
		return jsonMap(x)
	case map[string]*inf.Dec:
		return jsonMap(x)
	case time.Duration: // CQL time
		return reader.FormatTimeOfDay(x)
	case gocql.Duration:
		return reader.FormatDuration(x)
	case []any: // a tuple
		return jsonSlice(x)
	case map[string]any: // a UDT
		return jsonMap(x)
	}
	return v
}

// nonFinite is the name of a NaN or an infinity; "" for a number JSON can hold.
func nonFinite(x float64) string {
	switch {
	case math.IsNaN(x):
		return "NaN"
	case math.IsInf(x, 1):
		return "Infinity"
	case math.IsInf(x, -1):
		return "-Infinity"
	}
	return ""
}

func jsonSlice[T any](s []T) []any {
	out := make([]any, len(s))
	for i, e := range s {
		out[i] = jsonValue(e)
	}
	return out
}

func jsonMap[T any](m map[string]T) map[string]any {
	out := make(map[string]any, len(m))
	for k, e := range m {
		out[k] = jsonValue(e)
	}
	return out
}
