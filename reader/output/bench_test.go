package output

import (
	"io"
	"testing"
	"time"

	"github.com/bucketsink/sink/reader"
	"github.com/bucketsink/sink/schema"
)

// BenchmarkPrint prints b.N rows of a sensor reading in each format to nowhere: the client's cost of
// formatting a row, on top of reading it.
func BenchmarkPrint(b *testing.B) {
	cols := []schema.Column{{Name: "device_id", Type: "text"}, {Name: "day", Type: "text"}, {Name: "reading_time", Type: "timestamp"},
		{Name: "site_id", Type: "text"}, {Name: "temperature", Type: "double"}, {Name: "humidity", Type: "double"}, {Name: "battery", Type: "double"}}
	ts := time.Date(2024, 1, 30, 0, 0, 0, 0, time.UTC)
	row := reader.Row{Values: map[string]any{"device_id": "dense-device-1", "day": "2024-01-30", "reading_time": ts, "site_id": "site-1",
		"temperature": 21.37, "humidity": 44.5, "battery": 3.512}, Partition: reader.Partition{Table: "readings", Bucket: 19752}}
	for _, format := range Formats {
		b.Run(format, func(b *testing.B) {
			b.ReportAllocs()
			_, _, err := Print(io.Discard, format, cols, func(fn func(reader.Row) error) (reader.Page, error) {
				for range b.N {
					if err := fn(row); err != nil {
						return reader.Page{}, err
					}
				}
				return reader.Page{}, nil
			})
			if err != nil {
				b.Fatal(err)
			}
		})
	}
}
