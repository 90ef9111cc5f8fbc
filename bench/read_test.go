package bench

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestDenseEventsFillEveryDayOfTheRangeEvenly: the read phase's device has a reading every (days / n),
// each at its own millisecond inside the range the query asks for, and every day as many as the others
// give or take one, so all 30 buckets are dense.
func TestDenseEventsFillEveryDayOfTheRangeEvenly(t *testing.T) {
	start := time.Date(2024, 2, 15, 0, 0, 0, 0, time.UTC)
	const n = 130_000
	values, times := denseEvents("dev", start, readDays, n)
	if len(values) != n || len(times) != n {
		t.Fatalf("%d values, %d times; want %d", len(values), len(times), n)
	}
	end := start.AddDate(0, 0, readDays)
	perDay := map[string]int{}
	for i, ts := range times {
		if !ts.After(start) || !ts.Before(end.Add(-time.Millisecond)) || ts.Truncate(time.Millisecond) != ts {
			t.Fatalf("reading %d at %s: want a millisecond in (%s, %s)", i, ts, start, end.Add(-time.Millisecond))
		}
		if i > 0 && !ts.After(times[i-1]) {
			t.Fatalf("reading %d at %s, not after the one before (%s)", i, ts, times[i-1])
		}
		perDay[ts.Format("2006-01-02")]++
	}
	for _, day := range dayKeys("2006-01-02", start, readDays) {
		if c := perDay[day]; c < n/readDays-1 || c > n/readDays+1 {
			t.Errorf("day %s holds %d readings, want %d ± 1", day, c, n/readDays)
		}
	}
	var ev struct {
		Device string `json:"device_id"`
		TS     string `json:"ts"`
		Site   struct {
			ID string `json:"id"`
		} `json:"site"`
		Temperature, Humidity, Battery *float64
	}
	if err := json.Unmarshal(values[n-1], &ev); err != nil {
		t.Fatalf("%s: %v", values[n-1], err)
	}
	if ts, err := time.Parse(time.RFC3339Nano, ev.TS); err != nil || !ts.Equal(times[n-1]) || ev.Device != "dev" ||
		ev.Site.ID == "" || ev.Temperature == nil || ev.Humidity == nil || ev.Battery == nil {
		t.Errorf("last reading %s: want device dev, time %s and every field the bench table maps", values[n-1], times[n-1])
	}
}

// TestRowDigestTellsOrderAndRows: a read that returns the same rows in another order, or one row fewer,
// does not match the written rows' digest.
func TestRowDigestTellsOrderAndRows(t *testing.T) {
	_, times := denseEvents("dev", time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), readDays, 300)
	var newest, oldest, short rowDigest
	for i := range times {
		newest.add(times[len(times)-1-i])
		oldest.add(times[i])
		if i > 0 {
			short.add(times[len(times)-1-i])
		}
	}
	if newest == oldest || newest == short {
		t.Errorf("digests of other orders or fewer rows equal the newest-first one: %v %v %v", newest, oldest, short)
	}
}

// TestDayKeysAreTheRangesDaysNewestFirst: the loop asks for each day of the range, in the order the
// sink reads newest first, formatted as the bucket policy's layout (here across a leap day).
func TestDayKeysAreTheRangesDaysNewestFirst(t *testing.T) {
	keys := dayKeys("2006-01-02", time.Date(2024, 2, 15, 0, 0, 0, 0, time.UTC), readDays)
	if len(keys) != readDays || keys[0] != "2024-03-15" || keys[readDays-1] != "2024-02-15" {
		t.Fatalf("keys %v: want 30 days from 2024-03-15 back to 2024-02-15", keys)
	}
	if !strings.Contains(strings.Join(keys, " "), "2024-03-01 2024-02-29 2024-02-28") {
		t.Errorf("keys %v skip or repeat a day around the leap day", keys)
	}
}

// TestReadRoundsGiveMediansAndRanges: each round's ratios are the sink's figure over the loop's; the
// run keeps the median and the range, leaving out a round where a side was not measured.
func TestReadRoundsGiveMediansAndRanges(t *testing.T) {
	var rd ReadRun
	for _, r := range [][4]float64{ // sink s, loop s, sink µs, loop µs
		{1, 2, 3, 4}, {3, 2, 6, 4}, {1, 1, 0, 4}, {0.5, 2, 4, 4},
	} {
		rd.addRound(ReadRound{Sink: ReadSide{Seconds: r[0], CassandraCPUMicrosPerRow: r[2]},
			Loop: ReadSide{Seconds: r[1], CassandraCPUMicrosPerRow: r[3]}})
	}
	if got := rd.Rounds[1]; got.WallRatio != 1.5 || got.CassandraCPURatio != 1.5 {
		t.Errorf("round 2 ratios %v, %v; want 1.5, 1.5", got.WallRatio, got.CassandraCPURatio)
	}
	if got, want := rd.WallRatio, (Spread{Median: 0.75, Min: 0.25, Max: 1.5}); got != want {
		t.Errorf("wall %+v, want %+v (the mean of the middle two of four)", got, want)
	}
	if got, want := rd.CassandraCPURatio, (Spread{Median: 1, Min: 0.75, Max: 1.5}); got != want {
		t.Errorf("Cassandra CPU %+v, want %+v (the round without the sink's figure left out)", got, want)
	}
	if got := spreadOf(nil); got != (Spread{}) {
		t.Errorf("spread of nothing %+v, want zeros", got)
	}
}

// TestReadReportJudgesAndPrintsTheRatios: a run of the read phase alone is judged by the two read
// figures only, and its table gives every round and the medians.
func TestReadReportJudgesAndPrintsTheRatios(t *testing.T) {
	rd := &ReadRun{Rows: 130000, Days: 30, PageSize: 130000, FetchSize: 5000, Parallelism: 8, ReadAhead: 8,
		SinkFormat: "table", LoopPageSize: 5000, LoadAverage: [2]float64{12.5, 14}}
	rd.addRound(ReadRound{SinkFirst: true, Sink: ReadSide{Seconds: 0.8, Requests: 30, CassandraCPUMicrosPerRow: 4},
		Loop: ReadSide{Seconds: 1, Requests: 30, CassandraCPUMicrosPerRow: 5}})
	r := &Result{Params: Params{ReadOnly: true, ReadRows: 130000}, Read: rd}
	r.judge()
	if len(r.Targets) != 2 || !r.Targets[0].Met || !r.Targets[1].Met || r.Targets[0].Measured != 0.8 {
		t.Errorf("targets %+v: want the two read targets, met, wall measured 0.8", r.Targets)
	}
	out := tableHas(t, r,
		"130000 rows of one device over 30 days",
		"sink: page 130000, fetch 5000, parallelism 8, read-ahead 8, rows printed as table to nowhere; loop: one query per day, page 5000; load average 12.5 to 14.0",
		"sink ÷ loop: wall 0.80, Cassandra CPU per row 0.80",
		"sink first; sink 0.800 s, 30 requests, Cassandra 4.00 µs per row",
		"wall 0.80 (0.80 to 0.80)",
	)
	if strings.Contains(out, "ceiling") {
		t.Errorf("a read-only run prints the backlog phases:\n%s", out)
	}
}
