package reader

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/reader/readertest"
)

// cursorReader is a reader of a topic clustered by time then seq, in hourly buckets of 4 event
// buckets, with no session: what `sink query --cursor` checks before it reads anything.
func cursorReader(t testing.TB) *Reader {
	t.Helper()
	tc := readertest.Topic(config.Bucket{Width: "1h", EventBuckets: 4}, "desc", "device_id")
	tc.Table = "t"
	tc.Clustering = append(tc.Clustering, config.Clustering{Column: "seq", Order: "asc"})
	r, err := New(Config{Sink: topicConfig(t, tc), Topic: "x", MaxPartitions: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// FuzzCursor feeds `sink query --cursor` text two ways: as typed (mostly refused at decoding),
// and as a well-formed cursor of the right entity carrying the fuzzed fields, which is what a
// user editing a real cursor produces. Either the cursor is refused with an error wrapping
// ErrCursor or a *RangeError, or the prepared scan keeps the cursor's range and limit and may
// return only what the limit leaves.
func FuzzCursor(f *testing.F) {
	r := cursorReader(f)
	id := []any{"d1"}
	e, err := r.entity(Query{ID: id})
	if err != nil {
		f.Fatal(err)
	}
	from := time.Date(2024, 1, 15, 10, 30, 0, 0, time.UTC)
	valid := cursor{V: cursorVersion, Query: e.fingerprint, From: from.UnixNano(), To: from.Add(-5 * time.Hour).UnixNano(),
		Limit: 10, Returned: 3, Bucket: from.Unix() / 3600, Event: 2, Last: []string{"2024-01-15T10:20:00Z", "7"}}
	f.Add(valid.encode(), valid.From, valid.To, valid.Limit, valid.Returned, valid.Bucket, valid.Event, valid.Last[0], valid.Last[1])
	f.Add("", valid.From, valid.From, 0, 0, valid.Bucket, 0, "2024-01-15T10:20:00.123456789+01:00", "-1")
	f.Add("e30", int64(math.MinInt64), int64(math.MaxInt64), -1, -5, int64(-1), -3, "", "9223372036854775808")
	f.Fuzz(func(t *testing.T, raw string, from, to int64, limit, returned int, bucket int64, event int, last0, last1 string) {
		check := func(text string) {
			if text == "" { // no cursor: a query of its own range, not fuzzed here
				return
			}
			s, _, err := r.prepare(context.Background(), Query{ID: id, Cursor: text}, nil)
			if err != nil {
				var re *RangeError
				if !errors.Is(err, ErrCursor) && !errors.As(err, &re) {
					t.Fatalf("cursor %q: error %v wraps neither ErrCursor nor a *RangeError", text, err)
				}
				return
			}
			c, _ := decodeCursor(text)
			if s == nil {
				if c.Limit <= 0 || c.Returned < c.Limit {
					t.Fatalf("cursor %+v: an empty page before its limit", c)
				}
				return
			}
			if s.next.From != c.From || s.next.To != c.To || s.next.Limit != c.Limit || s.next.Returned != c.Returned {
				t.Fatalf("cursor %+v: the scan resumes %+v", c, s.next)
			}
			if c.Limit > 0 && (s.want <= 0 || s.want > c.Limit-c.Returned || s.want > c.Limit) {
				t.Fatalf("cursor %+v: the page may return %d rows", c, s.want)
			}
			if s.want < 0 {
				t.Fatalf("cursor %+v: the page may return %d rows", c, s.want)
			}
		}
		check(raw)
		check(cursor{V: cursorVersion, Query: e.fingerprint, From: from, To: to, Limit: limit, Returned: returned,
			Bucket: bucket, Event: event, Last: []string{last0, last1}}.encode())
	})
}

// TestCursorWithANegativeCountIsRefused guards --limit against an edited cursor: one whose count of rows
// returned is negative (found by FuzzCursor) used to let the next page return that many rows more than
// the limit.
func TestCursorWithANegativeCountIsRefused(t *testing.T) {
	r := cursorReader(t)
	e, err := r.entity(Query{ID: []any{"d1"}})
	if err != nil {
		t.Fatal(err)
	}
	from := time.Date(2024, 1, 15, 10, 30, 0, 0, time.UTC)
	for _, c := range []cursor{
		{Limit: 60, Returned: -80},
		{Limit: -1, Returned: 0},
	} {
		c.V, c.Query, c.From, c.To = cursorVersion, e.fingerprint, from.UnixNano(), from.Add(-time.Hour).UnixNano()
		c.Bucket, c.Last = from.Unix()/3600, []string{"2024-01-15T10:20:00Z", "0"}
		if _, _, err := r.prepare(context.Background(), Query{ID: []any{"d1"}, Cursor: c.encode()}, nil); !errors.Is(err, ErrCursor) {
			t.Errorf("limit %d, returned %d: error %v, want ErrCursor", c.Limit, c.Returned, err)
		}
	}
}

// A reader given Columns selects those and the clustering columns, in the table's order, and nothing
// else: a rollup's computation reads what its aggregates use. Guards against every computation
// reading and scanning whole raw rows.
func TestColumnsNarrowWhatAReadSelects(t *testing.T) {
	tc := readertest.Topic(config.Bucket{Width: "1h", EventBuckets: 4}, "desc", "device_id")
	tc.Table = "t"
	all, err := New(Config{Sink: topicConfig(t, tc), Topic: "x"})
	if err != nil {
		t.Fatal(err)
	}
	var other string
	for _, c := range tc.Columns {
		if c.Name != "ts" && c.Name != "device_id" {
			other = c.Name
		}
	}
	if other == "" {
		t.Fatalf("the test topic has no column besides the keys: %+v", tc.Columns)
	}
	r, err := New(Config{Sink: topicConfig(t, tc), Topic: "x", Columns: []string{other}})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, n := range strings.Split(all.selects, ", ") {
		if n == other || n == r.clus[0].name {
			want = append(want, n)
		}
	}
	if got := strings.Split(r.selects, ", "); !slices.Equal(got, want) {
		t.Fatalf("selects %v, want %v (of %s)", got, want, all.selects)
	}
}
