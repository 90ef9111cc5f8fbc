package output

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"gopkg.in/inf.v0"

	"github.com/bucketsink/sink/reader"
	"github.com/bucketsink/sink/schema"
)

var goldenCols = []schema.Column{{Name: "device_id", Type: "text"}, {Name: "ts", Type: "timestamp"}, {Name: "seq", Type: "bigint"},
	{Name: "temp", Type: "double"}, {Name: "price", Type: "decimal"}, {Name: "note", Type: "text"}, {Name: "tags", Type: "list<text>"}}

// goldenPages are pages that exercise each format's escaping and alignment: quotes, commas, markup, wide
// runes, nulls, a decimal, a collection, a cursor and warnings, no rows; and a table of TableBlock rows
// whose widest cell is in its last row.
func goldenPages() map[string]reader.Page {
	ts := time.Date(2024, 1, 30, 10, 0, 0, 123e6, time.UTC)
	part := reader.Partition{Table: "readings", Bucket: 19752, EventBucket: 3}
	mixed := reader.Page{Cursor: "AbC-123_x", Warnings: []string{"table ks.readings_2 does not exist: its slice is read as empty"}, Rows: []reader.Row{
		{Values: map[string]any{"device_id": "dev-1", "ts": ts, "seq": int64(7), "temp": 21.5, "price": inf.NewDec(12345, 2),
			"note": `he said "a, b"`, "tags": []string{"x", "y"}}, Partition: part},
		{Values: map[string]any{"device_id": "dév-2 ☃", "ts": ts.Add(-time.Second), "seq": int64(-1234567890123), "temp": 1e-7,
			"note": "<b>&amp;</b>\nline"}, Partition: part},
		{Values: map[string]any{"device_id": "d", "ts": ts.Add(-time.Hour), "seq": int64(0), "temp": 0.0, "note": ""}, Partition: reader.Partition{Table: "readings", Bucket: 19751}},
	}}
	block := reader.Page{Cursor: "next"}
	for i := range TableBlock {
		seq := int64(i)
		if i == TableBlock-1 {
			seq = 1 << 60
		}
		block.Rows = append(block.Rows, reader.Row{Values: map[string]any{"device_id": "dev-1", "ts": ts.Add(-time.Duration(i) * time.Second), "seq": seq}, Partition: part})
	}
	return map[string]reader.Page{"mixed": mixed, "empty": {}, "block": block}
}

// TestEveryFormatPrintsTheBytesOfTheWholePage: printed a row at a time, each golden page is the bytes
// `sink query` printed when it formatted the whole page at once (testdata was written by that code, the
// last before rows were streamed; since then a collection prints as JSON in the table and CSV, and the
// table quotes a cell with a line break); the table's golden pages hold at most TableBlock rows.
func TestEveryFormatPrintsTheBytesOfTheWholePage(t *testing.T) {
	for name, page := range goldenPages() {
		for _, format := range Formats {
			if name == "block" && format != "table" {
				continue // the other formats print each row on its own
			}
			file := filepath.Join("testdata", fmt.Sprintf("%s.%s", name, format))
			var got bytes.Buffer
			scan := func(fn func(reader.Row) error) (reader.Page, error) {
				for _, row := range page.Rows {
					if err := fn(row); err != nil {
						return reader.Page{}, err
					}
				}
				return reader.Page{Cursor: page.Cursor, Warnings: page.Warnings}, nil
			}
			_, n, err := Print(&got, format, goldenCols, scan)
			if err != nil || n != len(page.Rows) {
				t.Fatalf("%s: %d rows printed, %v; want %d", file, n, err, len(page.Rows))
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Errorf("%s: printed\n%s\nwant\n%s", file, got.Bytes(), want)
			}
		}
	}
}
