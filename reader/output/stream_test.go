package output

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bucketsink/sink/reader"
)

// countingWriter counts the bytes written to it.
type countingWriter struct{ n int }

func (w *countingWriter) Write(p []byte) (int, error) { w.n += len(p); return len(p), nil }

// TestRowsReachTheOutputWhileTheScanStillReads: in every format, bytes of the rows reach the output
// while the scan is still handing rows over, well before it returns, and the rows printed are never
// held whole: the output has received all but a buffer's worth when the scan's last row is printed.
func TestRowsReachTheOutputWhileTheScanStillReads(t *testing.T) {
	const rows = 4 * TableBlock
	ts := time.Date(2024, 1, 30, 0, 0, 0, 0, time.UTC)
	for _, format := range Formats {
		w := &countingWriter{}
		firstAt, atLast := -1, 0 // the row being handed over when bytes first arrived; the bytes then at the last
		scan := func(fn func(reader.Row) error) (reader.Page, error) {
			for i := range rows {
				if firstAt < 0 && w.n > 0 {
					firstAt = i
				}
				row := reader.Row{Values: map[string]any{"device_id": "dev-1", "ts": ts.Add(time.Duration(i) * time.Millisecond), "seq": int64(i),
					"note": strings.Repeat("n", 40)}, Partition: reader.Partition{Table: "readings", Bucket: 19752}}
				if err := fn(row); err != nil {
					return reader.Page{}, err
				}
			}
			atLast = w.n
			return reader.Page{}, nil
		}
		_, n, err := Print(w, format, goldenCols, scan)
		if err != nil || n != rows {
			t.Fatalf("%s: %d rows, %v", format, n, err)
		}
		if firstAt < 0 || firstAt > rows/2 || w.n-atLast > bufferSize+4096 {
			t.Errorf("%s: the first bytes reached the output at row %d of %d; %d of %d bytes were still held when the scan returned; want them written as the rows come",
				format, firstAt, rows, w.n-atLast, w.n)
		}
	}
}

// TestAFailedScanKeepsTheRowsPrintedBeforeIt: when the read fails midway, the rows already handed over
// are written out and the read's error is returned.
func TestAFailedScanKeepsTheRowsPrintedBeforeIt(t *testing.T) {
	boom := errors.New("read timeout")
	for _, format := range Formats {
		var out strings.Builder
		_, n, err := Print(&out, format, goldenCols, func(fn func(reader.Row) error) (reader.Page, error) {
			if err := fn(reader.Row{Values: map[string]any{"device_id": "dev-1", "seq": int64(1)}}); err != nil {
				return reader.Page{}, err
			}
			return reader.Page{}, boom
		})
		if !errors.Is(err, boom) || n != 1 || !strings.Contains(out.String(), "dev-1") {
			t.Errorf("%s: %d rows, error %v, output %q; want the row written and the read's error", format, n, err, out.String())
		}
	}
}
