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
	"strings"
	"text/tabwriter"

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
	t.cell = appendCells(t.cell[:0], t.cols, row)
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
	c.cell = appendCells(c.cell[:0], c.cols, row)
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
		if d, ok := v.(*inf.Dec); ok {
			v = json.Number(d.String())
		}
		vals[k] = v
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

// appendCells appends the text forms of a row's values to out, in column order; null is empty.
func appendCells(out []string, cols []schema.Column, row reader.Row) []string {
	for _, c := range cols {
		v := row.Values[c.Name]
		if v == nil {
			out = append(out, "")
			continue
		}
		s, err := reader.FormatValue(c.Type, v)
		if err != nil {
			s = fmt.Sprint(v) // collections
		}
		out = append(out, s)
	}
	return out
}
