package reader

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"go.uber.org/goleak"

	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/reader/readertest"
)

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

// readerTopics covers every policy shape the issue names, each written across the calendar
// boundaries its width has.
func readerTopics() map[string]config.Topic {
	events := config.Topic{
		ID:     []string{"device_id"},
		Time:   config.EventTime{Source: "field", Field: "ts", Format: "rfc3339"},
		Bucket: config.Bucket{Width: "1h", Key: "timestamp"},
		Columns: []config.Column{
			{Name: "device_id", Type: "text", Field: "device_id"},
			{Name: "event_id", Type: "timeuuid", Source: "timeuuid"},
			{Name: "ts", Type: "timestamp", Source: "event_time"},
			{Name: "seq", Type: "bigint", Field: "seq", Required: true},
		},
		Clustering: []config.Clustering{{Column: "event_id", Order: "desc"}},
	}
	rolling := readertest.Topic(config.Bucket{Width: "1h", Key: "number", Rolling: 48}, "desc", "device_id")
	rolling.TTL = config.Duration(47 * time.Hour) // at most (rolling - 1) buckets: a key is reused 48 h after its bucket starts
	// Two clustering columns in opposite orders, and event buckets hashed from both.
	twocol := readertest.Topic(config.Bucket{Width: "1h", Key: "text", EventBuckets: 2}, "desc", "device_id")
	twocol.Clustering = append(twocol.Clustering, config.Clustering{Column: "seq", Order: "asc"})
	return map[string]config.Topic{
		"twocol":  twocol,
		"daily":   readertest.Topic(config.Bucket{Width: "1d", Key: "text"}, "desc", "device_id"),
		"hourly":  readertest.Topic(config.Bucket{Width: "1h", Key: "timestamp"}, "asc", "device_id"),
		"weekly":  readertest.Topic(config.Bucket{Width: "week", Key: "text"}, "desc", "device_id"),
		"monthly": readertest.Topic(config.Bucket{Width: "month", Key: "int"}, "desc", "device_id"),
		"tenmin":  readertest.Topic(config.Bucket{Width: "10m", Key: "timestamp", EventBuckets: 4}, "desc", "device_id"),
		"sliced":  readertest.Topic(config.Bucket{Width: "1h", Key: "int", Slice: "1d"}, "desc", "site", "device_id"),
		"rolling": rolling,
		"events":  events,
	}
}

// span is a topic's written range and the entity read back.
type span struct {
	id       []string
	from, to time.Time
}

func readerEvents() ([]readertest.Event, map[string]span) {
	var seq int64
	d1 := []string{"d1"}
	spans := map[string]span{
		"daily":   {d1, utc("2023-12-29T00:00:00Z"), utc("2024-01-03T00:00:00Z")}, // a year boundary
		"hourly":  {d1, utc("2024-02-29T22:00:00Z"), utc("2024-03-01T02:00:00Z")}, // leap day to March
		"weekly":  {d1, utc("2020-12-26T00:00:00Z"), utc("2021-01-06T00:00:00Z")}, // 2020-W52, W53, 2021-W01
		"monthly": {d1, utc("2023-11-15T00:00:00Z"), utc("2024-02-15T00:00:00Z")}, // months across a year
		"tenmin":  {d1, utc("2024-03-31T23:40:00Z"), utc("2024-04-01T00:20:00Z")}, // 4 event buckets over a month end
		"sliced":  {[]string{"s1", "d1"}, utc("2024-05-31T20:00:00Z"), utc("2024-06-01T04:00:00Z")},
		"rolling": {d1, utc("2024-12-31T20:00:00Z"), utc("2025-01-01T04:00:00Z")},
		"events":  {d1, utc("2024-01-15T10:00:00Z"), utc("2024-01-15T13:00:00Z")},
		"twocol":  {d1, utc("2024-07-01T10:00:00Z"), utc("2024-07-01T13:00:00Z")},
	}
	steps := map[string]time.Duration{"daily": 5 * time.Hour, "hourly": 7 * time.Minute, "weekly": 13 * time.Hour,
		"monthly": 71 * time.Hour, "tenmin": 17 * time.Second, "sliced": 20 * time.Minute, "rolling": 10 * time.Minute,
		"events": 9 * time.Minute, "twocol": 11 * time.Minute}
	var evs []readertest.Event
	for _, topic := range slices.Sorted(func(yield func(string) bool) {
		for k := range spans {
			if !yield(k) {
				return
			}
		}
	}) {
		s := spans[topic]
		evs = append(evs, readertest.Series(topic, s.id, s.from, s.to, steps[topic], &seq)...)
		// Another entity in the same partitions' neighbourhood, which no read of d1 may return.
		other := slices.Clone(s.id)
		other[len(other)-1] = "d2"
		evs = append(evs, readertest.Series(topic, other, s.from, s.to, 3*steps[topic], &seq)...)
	}
	// The rolling key of 2024-12-31T21:30 comes round again 48 hours later: a row of that next
	// cycle sits in the same partition and must not be read as part of the first.
	seq++
	evs = append(evs, readertest.Event{Topic: "rolling", ID: d1, TS: utc("2025-01-02T21:30:00Z"), Seq: seq})
	// A busy entity for latest-N: 40 rows a day for 10 days.
	evs = append(evs, readertest.Series("daily", []string{"busy"}, utc("2024-03-01T00:00:00Z"), utc("2024-03-11T00:00:00Z"), 36*time.Minute, &seq)...)
	return evs, spans
}

// TestIntegrationReader writes the events of every policy through the pipeline once and checks
// the reader against the oracle in several ways (subtests).
func TestIntegrationReader(t *testing.T) {
	evs, spans := readerEvents()
	// Slice tables exist for 2024-05-31 and 2024-06-01 only (ApplySchema makes the slice of the
	// instant and the next); 2024-06-02 is missing.
	f := readertest.NewFixture(t, readertest.Config(t, readerTopics()), evs, []time.Time{utc("2024-05-31T12:00:00Z")})

	t.Run("ReturnsEveryRowOnceInClusteringOrderAcrossBoundaries", func(t *testing.T) {
		for topic, s := range spans {
			r := reader(t, f, topic, nil)
			mid := s.from.Add(s.to.Sub(s.from) / 3)
			end := s.to.Add(-s.to.Sub(s.from) / 5)
			for _, rg := range [][2]time.Time{{s.from, s.to}, {s.to, s.from}, {mid, end}, {end, mid}} {
				page, err := r.Read(t.Context(), Query{ID: anys(s.id), From: rg[0], To: rg[1]})
				if err != nil {
					t.Fatalf("%s %v: %v", topic, rg, err)
				}
				want := f.Expected(topic, s.id, rg[0], rg[1])
				if got := seqs(page.Rows); !slices.Equal(got, want) || len(want) == 0 {
					t.Errorf("%s from %s to %s: got %d rows %v, want %d %v", topic, rg[0], rg[1], len(got), head(got), len(want), head(want))
				}
				if page.Cursor != "" {
					t.Errorf("%s: a read without a page size or limit left a cursor", topic)
				}
				checkPartitions(t, r, page.Rows)
			}
		}
	})

	t.Run("UnboundedReadOfManyDriverPagesFinishes", func(t *testing.T) {
		// Without a limit or a page size each partition's fetcher reads ahead on its own. A partition of
		// more than two driver pages once made the merge block forever, asking for a page with a demand
		// that nobody reads in that mode.
		s := spans["hourly"]
		r, err := New(Config{Session: f.Session, Sink: f.Config, Topic: "hourly", FetchSize: 2})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		for _, rg := range [][2]time.Time{{s.from, s.to}, {s.to, s.from}} {
			page, err := r.Read(ctx, Query{ID: anys(s.id), From: rg[0], To: rg[1]})
			if err != nil {
				t.Fatalf("from %s to %s in 2-row driver pages: %v", rg[0], rg[1], err)
			}
			want := f.Expected("hourly", s.id, rg[0], rg[1])
			if got := seqs(page.Rows); !slices.Equal(got, want) || len(want) < 10 {
				t.Errorf("from %s to %s: got %d rows %v, want %d %v", rg[0], rg[1], len(got), head(got), len(want), head(want))
			}
		}
	})

	t.Run("WhereRestrictsAClusteringColumnAfterTheTime", func(t *testing.T) {
		s := spans["twocol"]
		all := f.Expected("twocol", s.id, s.to, s.from)
		r := reader(t, f, "twocol", nil)
		for _, v := range []any{all[3], fmt.Sprint(all[5])} { // typed, and text as the command line gives it
			page, err := r.Read(t.Context(), Query{ID: anys(s.id), From: s.to, To: s.from, Where: map[string]any{"seq": v}})
			if err != nil {
				t.Fatal(err)
			}
			if got := seqs(page.Rows); len(got) != 1 || fmt.Sprint(got[0]) != fmt.Sprint(v) {
				t.Errorf("where seq = %v: got %v", v, got)
			}
		}
		for _, where := range []map[string]any{{"ts": s.from}, {"device_id": "d1"}, {"seq": "many"}} {
			if _, err := r.Read(t.Context(), Query{ID: anys(s.id), From: s.to, To: s.from, Where: where}); err == nil {
				t.Errorf("where %v: no error, want one (only clustering columns after the time, of their type)", where)
			}
		}
	})

	t.Run("MissingSliceTableReadsAsEmptyWithOneWarning", func(t *testing.T) {
		s := spans["sliced"]
		r := reader(t, f, "sliced", nil)
		to := utc("2024-06-02T06:00:00Z")
		page, err := r.Read(t.Context(), Query{ID: anys(s.id), From: s.from, To: to})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := seqs(page.Rows), f.Expected("sliced", s.id, s.from, to); !slices.Equal(got, want) {
			t.Errorf("got %v, want %v", head(got), head(want))
		}
		if len(page.Warnings) != 1 || !strings.Contains(page.Warnings[0], "t_20240602") && !strings.Contains(page.Warnings[0], "sliced_20240602") {
			t.Errorf("warnings %q, want one naming the table of 2024-06-02", page.Warnings)
		}
	})

	t.Run("MissingTableOfAnUnslicedTopicIsAnError", func(t *testing.T) {
		cfg := *f.Config
		cfg.Topics = maps.Clone(cfg.Topics)
		tc := cfg.Topics["daily"]
		tc.Table = "not_created"
		cfg.Topics["daily"] = tc
		r, err := New(Config{Session: f.Session, Sink: &cfg, Topic: "daily"})
		if err != nil {
			t.Fatal(err)
		}
		s := spans["daily"]
		if _, err := r.Read(t.Context(), Query{ID: anys(s.id), From: s.from, To: s.to}); err == nil || !strings.Contains(err.Error(), "not_created") {
			t.Errorf("reading a topic whose only table is missing: error %v, want one naming the table", err)
		}
	})

	t.Run("CursorResumedByAFreshReaderReturnsEachRowOnce", func(t *testing.T) {
		for _, topic := range []string{"tenmin", "sliced", "events", "weekly"} {
			s := spans[topic]
			for _, rg := range [][2]time.Time{{s.from, s.to}, {s.to, s.from}} {
				got := readPaged(t, f, topic, Query{ID: anys(s.id), From: rg[0], To: rg[1], PageSize: 7})
				if want := f.Expected(topic, s.id, rg[0], rg[1]); !slices.Equal(got, want) {
					t.Errorf("%s from %s to %s in pages of 7: got %d rows %v, want %d %v", topic, rg[0], rg[1], len(got), head(got), len(want), head(want))
				}
			}
		}
	})

	t.Run("LatestNReadsOnlyThePartitionsItNeeds", func(t *testing.T) {
		var n atomic.Int64
		r := reader(t, f, "daily", countQueries{&n})
		now := utc("2024-03-10T23:59:59Z")
		page, err := r.Read(t.Context(), Query{ID: []any{"busy"}, From: now, To: now.Add(-30 * 24 * time.Hour), Limit: 60})
		if err != nil {
			t.Fatal(err)
		}
		want := f.Expected("daily", []string{"busy"}, now, now.Add(-30*24*time.Hour))[:60]
		if got := seqs(page.Rows); !slices.Equal(got, want) {
			t.Errorf("latest 60: got %v, want %v", head(got), head(want))
		}
		// 40 rows a day: the newest day and the one before it, one request each.
		if n.Load() != 2 {
			t.Errorf("latest 60 of 40 rows a day over 30 days sent %d requests, want 2", n.Load())
		}
	})

	t.Run("APageOfEventBucketsReadsItsShareOfEachPartition", func(t *testing.T) {
		// The tenmin topic spreads a 10-minute bucket (about 35 rows) over 4 event buckets. A page of 8
		// asks each partition for its share (3 rows) and more only on demand; asking each for the whole
		// page (9 rows) read every row of the bucket, the page's work once per partition.
		var rows atomic.Int64
		r := reader(t, f, "tenmin", countRows{&rows})
		s := spans["tenmin"]
		from := utc("2024-04-01T00:09:59Z") // newest first through the full bucket 00:00-00:10
		page, err := r.Read(t.Context(), Query{ID: anys(s.id), From: from, To: s.from, PageSize: 8})
		if err != nil {
			t.Fatal(err)
		}
		if want := f.Expected("tenmin", s.id, from, s.from)[:8]; !slices.Equal(seqs(page.Rows), want) {
			t.Errorf("first page: got %v, want %v", seqs(page.Rows), want)
		}
		if got := rows.Load(); got > 16 {
			t.Errorf("a page of 8 rows over 4 event buckets read %d rows from Cassandra, want at most 16", got)
		}
	})

	t.Run("CursorResumesExactlyWhileRowsAreWritten", func(t *testing.T) {
		s := spans["tenmin"]
		q := Query{ID: anys(s.id), From: s.from, To: s.to, PageSize: 20}
		before := f.Expected("tenmin", s.id, s.from, s.to)
		page, err := reader(t, f, "tenmin", nil).Read(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		got := seqs(page.Rows)
		// New rows land before and after the cursor's position, in several event buckets.
		var seq int64 = 1 << 40
		var more []readertest.Event
		for ts := s.from.Add(3500 * time.Millisecond); ts.Before(s.to); ts = ts.Add(61 * time.Second) {
			seq++
			more = append(more, readertest.Event{Topic: "tenmin", ID: s.id, TS: ts, Seq: seq})
		}
		f.Write(t, more)
		q.Cursor = page.Cursor
		got = append(got, readPaged(t, f, "tenmin", q)...)
		seen := make(map[int64]int)
		for _, v := range got {
			seen[v]++
		}
		for _, v := range before {
			if seen[v] != 1 {
				t.Errorf("row %d, present at the first call, returned %d times", v, seen[v])
			}
		}
		last := got[19]
		var after []int64
		for _, v := range f.Expected("tenmin", s.id, s.from, s.to) {
			if v == last {
				after = nil
				continue
			}
			after = append(after, v)
		}
		if !slices.Equal(got[20:], after) {
			t.Errorf("after the cursor: got %v, want every row after the last one returned %v", head(got[20:]), head(after))
		}
	})

	t.Run("StoppingAtThePageSizeLeavesNoGoroutine", func(t *testing.T) {
		s := spans["tenmin"]
		r := reader(t, f, "tenmin", nil)
		// Warm the driver (connections, prepared statements) so only the reader's goroutines count.
		if _, err := r.Read(t.Context(), Query{ID: anys(s.id), From: s.to, To: s.from, PageSize: 3}); err != nil {
			t.Fatal(err)
		}
		before := goleak.IgnoreCurrent()
		// A page of 3 newest first from 4 event buckets, with read-ahead into later buckets.
		page, err := r.Read(t.Context(), Query{ID: anys(s.id), From: s.to, To: s.from, PageSize: 3})
		if err != nil || len(page.Rows) != 3 || page.Partitions < 4 {
			t.Fatalf("%d rows from %d partitions, error %v", len(page.Rows), page.Partitions, err)
		}
		// The fixture's Kafka clients live on in this process, and franz-go starts a goroutine to read
		// responses whenever one arrives on an idle connection: those are not the reader's.
		goleak.VerifyNone(t, before, goleak.IgnoreAnyFunction("github.com/twmb/franz-go/pkg/kgo.(*brokerCxn).handleResps"))
	})

	t.Run("RandomQueriesMatchTheOracle", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(15, 2026))
		for i := range 40 {
			topic := []string{"tenmin", "daily", "sliced", "hourly", "events"}[i%5]
			s := spans[topic]
			width := s.to.Sub(s.from)
			pick := func() time.Time {
				return s.from.Add(-width/10 + time.Duration(rng.Int64N(int64(width*12/10))))
			}
			from, to := pick(), pick()
			q := Query{ID: anys(s.id), From: from, To: to, PageSize: 5 + rng.IntN(40)}
			if rng.IntN(2) == 0 {
				q.Limit = 1 + rng.IntN(100)
			}
			want := f.Expected(topic, s.id, from, to)
			if q.Limit > 0 && len(want) > q.Limit {
				want = want[:q.Limit]
			}
			if got := readPaged(t, f, topic, q); !slices.Equal(got, want) {
				t.Errorf("%s from %s to %s, limit %d, pages of %d: got %d rows %v, want %d %v",
					topic, from, to, q.Limit, q.PageSize, len(got), head(got), len(want), head(want))
			}
		}
	})
}

// readPaged reads q page by page, each page with a new reader (as a new process would), and
// returns the seq values in order.
func readPaged(t *testing.T, f *readertest.Fixture, topic string, q Query) []int64 {
	t.Helper()
	var out []int64
	for pages := 0; ; pages++ {
		if pages > 10000 {
			t.Fatal("more than 10000 pages: the cursor does not advance")
		}
		page, err := reader(t, f, topic, nil).Read(t.Context(), q)
		if err != nil {
			t.Fatalf("%s page %d: %v", topic, pages, err)
		}
		if q.PageSize > 0 && len(page.Rows) > q.PageSize {
			t.Fatalf("%s page %d: %d rows, more than the page size %d", topic, pages, len(page.Rows), q.PageSize)
		}
		out = append(out, seqs(page.Rows)...)
		if page.Cursor == "" {
			return out
		}
		q.Cursor = page.Cursor
	}
}

// checkPartitions checks each row came from the partition the writer's policy puts it in.
func checkPartitions(t *testing.T, r *Reader, rows []Row) {
	t.Helper()
	pol := r.Table().Policy
	for _, row := range rows {
		ts := row.Values["ts"].(time.Time)
		p := row.Partition
		if p.Bucket != pol.Index(ts) || fmt.Sprint(p.Key) != fmt.Sprint(row.Values[r.table.PartitionKey[len(r.ids)]]) {
			t.Fatalf("row at %s reported partition %+v, its bucket is %d", ts, p, pol.Index(ts))
		}
		if suffix := pol.SliceSuffix(ts); suffix != p.Slice {
			t.Fatalf("row at %s reported slice %q, want %q", ts, p.Slice, suffix)
		}
	}
}

// countQueries counts first attempts of requests (retries are not new queries).
type countQueries struct{ n *atomic.Int64 }

func (c countQueries) ObserveQuery(_ context.Context, q gocql.ObservedQuery) {
	if q.Attempt == 0 {
		c.n.Add(1)
	}
}

// countRows counts the rows Cassandra returned to first attempts of requests.
type countRows struct{ n *atomic.Int64 }

func (c countRows) ObserveQuery(_ context.Context, q gocql.ObservedQuery) {
	if q.Attempt == 0 {
		c.n.Add(int64(q.Rows))
	}
}

func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func head(v []int64) []int64 { return v[:min(len(v), 8)] }

// reader is a new Reader of topic on f's stack.
func reader(t testing.TB, f *readertest.Fixture, topic string, obs gocql.QueryObserver) *Reader {
	t.Helper()
	r, err := New(Config{Session: f.Session, Sink: f.Config, Topic: topic, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// seqs are the seq values of rows.
func seqs(rows []Row) []int64 {
	out := make([]int64, len(rows))
	for i, r := range rows {
		out[i] = r.Values["seq"].(int64)
	}
	return out
}
