package reader

import (
	"testing"
	"time"

	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/reader/readertest"
)

// BenchmarkIntegrationRead30DailyBuckets reads one entity's 30 days of daily buckets (300 rows a
// day, written through the pipeline) through the reader, and the same buckets one by one in
// order, the loop the seeds show: a query per day, each paged through before the next starts.
// Run it alone: go test -run '^$' -bench Read30DailyBuckets -benchtime 20x ./reader/
func BenchmarkIntegrationRead30DailyBuckets(b *testing.B) {
	const days, perDay = 30, 300
	day0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	var seq int64
	evs := readertest.Series("daily", []string{"bench"}, day0, day0.AddDate(0, 0, days), 24*time.Hour/perDay, &seq)
	cfg := readertest.Config(b, map[string]config.Topic{"daily": readertest.Topic(config.Bucket{Width: "1d", Key: "text"}, "desc", "device_id")})
	f := readertest.NewFixture(b, cfg, evs, []time.Time{day0})
	r := reader(b, f, "daily", nil)
	// Newest first, as "the last 30 days" reads; (to, from] takes in the first row, at day0 00:00.
	from, to := day0.AddDate(0, 0, days), day0.Add(-time.Nanosecond)

	b.Run("reader", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			page, err := r.Read(b.Context(), Query{ID: []any{"bench"}, From: from, To: to})
			if err != nil {
				b.Fatal(err)
			}
			if len(page.Rows) != days*perDay {
				b.Fatalf("%d rows, want %d", len(page.Rows), days*perDay)
			}
		}
	})

	b.Run("one-by-one", func(b *testing.B) {
		b.ReportAllocs()
		pol := r.Table().Policy
		stmt := "SELECT " + r.selects + " FROM " + r.table.Keyspace + ".daily WHERE device_id = ? AND bucket = ?"
		for b.Loop() {
			var rows []map[string]any
			for d := days - 1; d >= 0; d-- {
				iter := f.Session.Query(stmt, "bench", pol.Text(pol.Index(day0.AddDate(0, 0, d)))).
					PageSize(DefaultFetchSize).IterContext(b.Context())
				for {
					m := make(map[string]any, len(r.table.Columns))
					if !iter.MapScan(m) {
						break
					}
					rows = append(rows, m)
				}
				if err := iter.Close(); err != nil {
					b.Fatal(err)
				}
			}
			if len(rows) != days*perDay {
				b.Fatalf("%d rows, want %d", len(rows), days*perDay)
			}
		}
	})
}
