package recompute

import (
	"cmp"
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/bucketsink/sink/cassandra"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/internal/testenv"
	"github.com/bucketsink/sink/reader"
	"github.com/bucketsink/sink/schema"
)

const rollupConfig = `
kafka:
  brokers: ["127.0.0.1:9092"]
cassandra:
  hosts: [HOSTS]
  keyspace: KEYSPACE
topics:
  readings:
    topic: sensor-readings
    id: [device_id]
    time: {field: ts}
    bucket: {width: 1d, event_buckets: 4, event_bucket_field: seq}
    table: readings
    columns:
      - {name: device_id, type: text, field: device_id}
      - {name: reading_time, type: timestamp, source: event_time}
      - {name: seq, type: int, field: seq}
      - {name: temperature, type: double, field: temperature}
      - {name: level, type: int, field: level}
      - {name: status, type: text, field: status}
    clustering:
      - {column: reading_time}
      - {column: seq, order: asc}
    rollups:
      - name: hourly
        width: 1h
        table: readings_hourly
        bucket: {width: month}
        aggregates:
          - {column: n, fn: count}
          - {column: temp_n, fn: count, of: temperature}
          - {column: temp_sum, fn: sum, of: temperature}
          - {column: temp_min, fn: min, of: temperature}
          - {column: temp_max, fn: max, of: temperature}
          - {column: temp_avg, fn: avg, of: temperature}
          - {column: level_sum, fn: sum, of: level}
          - {column: level_n, fn: count, of: level}
          - {column: status_first, fn: first, of: status}
          - {column: status_last, fn: last, of: status}
      - name: daily
        width: 1d
        from: hourly
        table: readings_daily
        bucket: {width: year}
        aggregates:
          - {column: n, fn: count}
          - {column: level_sum, fn: sum, of: level}
          - {column: level_avg, fn: avg, of: level}
          - {column: temp_max, fn: max, of: temperature}
          - {column: status_last, fn: last, of: status}
`

// raw is one raw row as the test keeps it, its own oracle.
type raw struct {
	device string
	at     time.Time
	seq    int
	eb     int
	temp   *float64
	level  *int
	status *string
}

var day = time.Date(2024, 1, 15, 0, 0, 0, 0, time.UTC)

type stack struct {
	cfg *config.Config
	gs  *gocql.Session
	rc  *Recomputer
	tbl schema.Table
	ks  string
}

func setUp(t *testing.T) stack {
	t.Helper()
	hosts := testenv.Cassandra(t)
	ks := testenv.Name(t, "rollup")
	text := strings.NewReplacer("HOSTS", `"`+strings.Join(hosts, `", "`)+`"`, "KEYSPACE", ks).Replace(rollupConfig)
	path := filepath.Join(t.TempDir(), "sink.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Cassandra.Replication = map[string]string{"class": "SimpleStrategy", "replication_factor": "1"}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := cassandra.Connect(ctx, cfg.Cassandra)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = s.Driver().Query("DROP KEYSPACE IF EXISTS " + ks).Exec()
		s.Close()
	})
	if err := cassandra.ApplySchema(ctx, s, cfg, nil, day); err != nil {
		t.Fatal(err)
	}
	rc, err := New(s.Driver(), cfg, "readings")
	if err != nil {
		t.Fatal(err)
	}
	tables, err := schema.Describe(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return stack{cfg: cfg, gs: s.Driver(), rc: rc, tbl: tables["readings"], ks: ks}
}

// write inserts raw rows with the raw table's own INSERT, at write timestamp 1.
func (st stack) write(t *testing.T, rows ...raw) {
	t.Helper()
	for _, r := range rows {
		var temp, level, status any
		if r.temp != nil {
			temp = *r.temp
		}
		if r.level != nil {
			level = *r.level
		}
		if r.status != nil {
			status = *r.status
		}
		p := st.tbl.Policy
		args := []any{r.device, r.at, r.seq, temp, level, status, p.Value(p.Index(r.at)), r.eb, int64(1)}
		if err := st.gs.Query(st.tbl.Insert(st.tbl.Name), args...).Exec(); err != nil {
			t.Fatal(err)
		}
	}
}

func randomRows(rng *rand.Rand, device string, n int, from time.Time, span time.Duration) []raw {
	out := make([]raw, n)
	for i := range out {
		r := raw{device: device, at: from.Add(time.Duration(rng.Int64N(int64(span)))).Truncate(time.Millisecond), seq: rng.IntN(1000), eb: rng.IntN(4)}
		if rng.IntN(6) > 0 {
			f := math.Round(rng.NormFloat64()*1000) / 100
			r.temp = &f
		}
		if rng.IntN(6) > 0 {
			l := rng.IntN(200) - 50
			r.level = &l
		}
		if rng.IntN(4) > 0 {
			s := []string{"ok", "warn", "fail"}[rng.IntN(3)]
			r.status = &s
		}
		out[i] = r
	}
	return out
}

// dedupe keeps the last of rows with one primary key, as Cassandra does.
func dedupe(rows []raw) []raw {
	seen := map[string]int{}
	var out []raw
	for _, r := range rows {
		k := r.device + r.at.String() + string(rune(r.seq)) + string(rune(r.eb))
		if i, ok := seen[k]; ok {
			out[i] = r
			continue
		}
		seen[k] = len(out)
		out = append(out, r)
	}
	return out
}

// hourlyOracle is the test's own computation of the hourly row of rows (one device, one hour).
func hourlyOracle(rows []raw) map[string]any {
	slices.SortFunc(rows, func(a, b raw) int {
		return cmp.Or(a.at.Compare(b.at), cmp.Compare(a.seq, b.seq), cmp.Compare(a.eb, b.eb))
	})
	want := map[string]any{"sink_rows": int64(len(rows)), "n": int64(len(rows))}
	var temps []float64
	var levels []int
	var statuses []string
	for _, r := range rows {
		if r.temp != nil {
			temps = append(temps, *r.temp)
		}
		if r.level != nil {
			levels = append(levels, *r.level)
		}
		if r.status != nil {
			statuses = append(statuses, *r.status)
		}
	}
	want["temp_n"], want["level_n"] = int64(len(temps)), int64(len(levels))
	if len(temps) > 0 {
		sum := 0.0
		for _, f := range temps {
			sum += f
		}
		want["temp_sum"], want["temp_min"], want["temp_max"], want["temp_avg"] = sum, slices.Min(temps), slices.Max(temps), sum/float64(len(temps))
	}
	if len(levels) > 0 {
		sum := int64(0)
		for _, l := range levels {
			sum += int64(l)
		}
		want["level_sum"] = sum
	}
	if len(statuses) > 0 {
		want["status_first"], want["status_last"] = statuses[0], statuses[len(statuses)-1]
	}
	return want
}

// readRollup reads the rollup row of device and window start from table, with null cells left out,
// and the write timestamp of its sink_rows cell.
func (st stack) readRollup(t *testing.T, r schema.Rollup, device string, start time.Time) (map[string]any, int64) {
	t.Helper()
	p := r.Table.Policy
	q := st.gs.Query("SELECT * FROM "+st.ks+"."+r.Table.Name+" WHERE device_id = ? AND bucket = ? AND window_start = ?",
		device, p.Value(p.Index(start)), start)
	rows, err := reader.ScanAll(q.Iter())
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 {
		t.Fatalf("%s: %d rows for %s at %s, want 1", r.Name, len(rows), device, start)
	}
	var wt int64
	if err := st.gs.Query("SELECT WRITETIME(sink_rows) FROM "+st.ks+"."+r.Table.Name+" WHERE device_id = ? AND bucket = ? AND window_start = ?",
		device, p.Value(p.Index(start)), start).Scan(&wt); err != nil {
		t.Fatal(err)
	}
	row := rows[0]
	for k, v := range row {
		if v == nil || k == "device_id" || k == "bucket" || k == "window_start" {
			delete(row, k) // the oracle leaves out what has no value
		}
	}
	return row, wt
}

// Every hourly row of a day of random rows spread over four event buckets equals the test's own
// computation, the daily row made of them equals the daily computation of the raw rows, each is
// written at the window start plus its raw rows, and a window without rows gets no row.
func TestIntegrationRecomputedRowsEqualTheOracle(t *testing.T) {
	st := setUp(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(36, 1))
	rows := dedupe(randomRows(rng, "dev-1", 600, day.Add(time.Hour), 20*time.Hour))
	st.write(t, rows...)
	// Another device's rows in the same hours must not count, nor rows just outside the day.
	st.write(t, randomRows(rng, "dev-2", 50, day, 24*time.Hour)...)
	st.write(t, randomRows(rng, "dev-1", 20, day.Add(24*time.Hour), time.Hour)...)
	hourly, _ := st.rc.Rollup("hourly")
	daily, _ := st.rc.Rollup("daily")

	var all []raw
	levelSum, levelN := int64(0), int64(0)
	var tempMax *float64
	var lastStatus string
	for h := range 24 {
		start := day.Add(time.Duration(h) * time.Hour)
		var of []raw
		for _, r := range rows {
			if !r.at.Before(start) && r.at.Before(start.Add(time.Hour)) {
				of = append(of, r)
			}
		}
		out, err := st.rc.Recompute(ctx, "hourly", []any{"dev-1"}, start.Add(17*time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if out.Partitions != 4 {
			t.Errorf("hour %d: read %d partitions, want the 4 event buckets", h, out.Partitions)
		}
		if len(of) == 0 {
			if out.Written {
				t.Errorf("hour %d has no rows but a rollup row was written", h)
			}
			continue
		}
		want := hourlyOracle(of)
		got, wt := st.readRollup(t, hourly, "dev-1", start)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("hour %d:\n got %v\nwant %v", h, got, want)
		}
		if w := start.UnixMicro() + int64(len(of)); wt != w || out.Timestamp != w {
			t.Errorf("hour %d: written at %d (outcome %d), want window start + rows = %d", h, wt, out.Timestamp, w)
		}
		all = append(all, of...)
		levelSum += want["level_sum"].(int64)
		levelN += want["level_n"].(int64)
		if m, ok := want["temp_max"].(float64); ok && (tempMax == nil || m > *tempMax) {
			tempMax = &m
		}
		if s, ok := want["status_last"].(string); ok {
			lastStatus = s
		}
	}
	if _, err := st.rc.Recompute(ctx, "daily", []any{"dev-1"}, day.Add(5*time.Hour)); err != nil {
		t.Fatal(err)
	}
	got, wt := st.readRollup(t, daily, "dev-1", day)
	want := map[string]any{"sink_rows": int64(len(all)), "n": int64(len(all)), "level_sum": levelSum,
		"level_avg": float64(levelSum) / float64(levelN), "temp_max": *tempMax, "status_last": lastStatus}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("daily:\n got %v\nwant %v", got, want)
	}
	if wt != day.UnixMicro()+int64(len(all)) {
		t.Errorf("daily written at %d, want %d", wt, day.UnixMicro()+int64(len(all)))
	}
}

// Computing a window twice writes the same cells at the same timestamp; a computation that saw one
// more row wins over the earlier one, even when the earlier one's write lands after it.
func TestIntegrationRecomputeTwiceIsIdenticalAndMoreRowsWin(t *testing.T) {
	st := setUp(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(36, 2))
	start := day.Add(9 * time.Hour)
	rows := dedupe(randomRows(rng, "dev-7", 40, start, time.Hour))
	st.write(t, rows...)
	hourly, _ := st.rc.Rollup("hourly")

	first, err := st.rc.Recompute(ctx, "hourly", []any{"dev-7"}, start)
	if err != nil {
		t.Fatal(err)
	}
	got1, wt1 := st.readRollup(t, hourly, "dev-7", start)
	second, err := st.rc.Recompute(ctx, "hourly", []any{"dev-7"}, start)
	if err != nil {
		t.Fatal(err)
	}
	got2, wt2 := st.readRollup(t, hourly, "dev-7", start)
	if !reflect.DeepEqual(got1, got2) || wt1 != wt2 || first.Timestamp != second.Timestamp {
		t.Fatalf("two computations of the same rows differ: %v at %d, then %v at %d", got1, wt1, got2, wt2)
	}

	temp, level, status := 99.5, 1000, "late"
	late := raw{device: "dev-7", at: start.Add(59 * time.Minute), seq: 5000, eb: 3, temp: &temp, level: &level, status: &status}
	st.write(t, late)
	third, err := st.rc.Recompute(ctx, "hourly", []any{"dev-7"}, start)
	if err != nil {
		t.Fatal(err)
	}
	// The earlier computation's write, landing after the later one's (a slow writer, a replay):
	// the exact statement the recomputer wrote, at its timestamp.
	args := []any{"dev-7", start, first.Result.Rows}
	args = append(args, first.Result.Values...)
	args = append(args, hourly.Table.Policy.Value(hourly.Table.Policy.Index(start)), first.Timestamp)
	if err := st.gs.Query(hourly.Table.Insert(hourly.Table.Name), args...).Exec(); err != nil {
		t.Fatal(err)
	}
	got3, wt3 := st.readRollup(t, hourly, "dev-7", start)
	want := hourlyOracle(append(slices.Clone(rows), late))
	if !reflect.DeepEqual(got3, want) || wt3 != third.Timestamp || wt3 <= wt1 {
		t.Fatalf("after a late row and a stale write: %v at %d, want %v at %d (> %d)", got3, wt3, want, third.Timestamp, wt1)
	}
}
