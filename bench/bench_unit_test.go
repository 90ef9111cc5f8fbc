package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bucketsink/sink/cassandra"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/gen"
)

func TestParseStatCPU(t *testing.T) {
	// A command name with spaces and a ')' must not shift the fields.
	stat := "4242 (sink (x) y) S 1 4242 4242 0 -1 4194560 1893 0 0 0 250 50 0 0 20 0 12 0 1234 1000 200 18446744073709551615\n"
	got, err := parseStatCPU([]byte(stat))
	if err != nil {
		t.Fatal(err)
	}
	want := time.Duration(300) * time.Second / time.Duration(clockTicks)
	if got != want {
		t.Errorf("cpu = %v, want %v (300 ticks at %d Hz)", got, want, clockTicks)
	}
	if _, err := parseStatCPU([]byte("12 (x) S 1 2")); err == nil {
		t.Error("a short stat line parsed without error")
	}
}

func TestReadOwnProcess(t *testing.T) {
	// Burn a little CPU so the counter is above zero even on a coarse clock.
	deadline := time.Now().Add(30 * time.Millisecond)
	for x := 0; time.Now().Before(deadline); x++ {
		_ = math.Sqrt(float64(x))
	}
	s, err := readCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if s.CPU <= 0 {
		t.Errorf("own CPU time %v, want > 0", s.CPU)
	}
	rss, err := readPeakRSS(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if rss < 1<<20 {
		t.Errorf("own peak RSS %d bytes, want at least 1 MiB", rss)
	}
}

func TestParseStatusKB(t *testing.T) {
	status := "Name:\tsink\nVmPeak:\t  900 kB\nVmHWM:\t   123456 kB\nVmRSS:\t 1000 kB\n"
	got, err := parseStatusKB([]byte(status), "VmHWM")
	if err != nil || got != 123456*1024 {
		t.Errorf("VmHWM = %d, %v; want %d", got, err, 123456*1024)
	}
	if _, err := parseStatusKB([]byte(status), "VmSwap"); err == nil {
		t.Error("a missing line parsed without error")
	}
}

func TestCommitLatencies(t *testing.T) {
	t0 := time.Date(2024, 1, 15, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	produced := map[int32][]stamp{
		0: {{0, at(0)}, {1, at(10)}, {2, at(20)}},
		1: {{0, at(5)}},
	}
	seen := []commitSeen{
		{Partition: 0, Offset: 0, At: at(50)},  // nothing committed yet
		{Partition: 0, Offset: 2, At: at(100)}, // covers offsets 0 and 1
		{Partition: 1, Offset: 1, At: at(105)},
		{Partition: 0, Offset: 1, At: at(110)}, // stale answer: must not cover anything again
		{Partition: 0, Offset: 3, At: at(200)},
	}
	got := commitLatencies(produced, seen)
	want := map[time.Duration]int{100 * time.Millisecond: 1, 90 * time.Millisecond: 1, 180 * time.Millisecond: 1}
	want[100*time.Millisecond]++ // partition 1 offset 0: 105 - 5
	if len(got) != 4 {
		t.Fatalf("got %d latencies %v, want 4", len(got), got)
	}
	for _, d := range got {
		want[d]--
	}
	for d, n := range want {
		if n != 0 {
			t.Errorf("latency %v: count off by %d in %v", d, n, got)
		}
	}
}

func TestPercentile(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 50 * time.Millisecond}, {0.99, 99 * time.Millisecond}, {1, 100 * time.Millisecond}, {0.001, time.Millisecond}} {
		if got := percentile(ds, c.q); got != c.want {
			t.Errorf("percentile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	if got := percentile(nil, 0.5); got != 0 {
		t.Errorf("percentile of nothing = %v, want 0", got)
	}
}

func TestAllCommitted(t *testing.T) {
	end := map[int32]int64{0: 10, 1: 5}
	if n, ok := allCommitted(map[int32]int64{0: 10}, end); ok || n != 10 {
		t.Errorf("partition 1 uncommitted: got %d, %v", n, ok)
	}
	if n, ok := allCommitted(map[int32]int64{0: 10, 1: 5}, end); !ok || n != 15 {
		t.Errorf("all committed: got %d, %v", n, ok)
	}
}

func TestSumSamples(t *testing.T) {
	text := `# HELP sink_records_written_total Rows written.
# TYPE sink_records_written_total counter
sink_records_written_total{topic="a"} 1500
sink_records_written_total{topic="b"} 2.5e+03
sink_records_written_totally 7
sink_records_consumed_total{topic="a"} 9
`
	got, ok := sumSamples(strings.NewReader(text), "sink_records_written_total")
	if !ok || got != 4000 {
		t.Errorf("sum = %v, %v; want 4000, true", got, ok)
	}
	if _, ok := sumSamples(strings.NewReader(text), "sink_missing_total"); ok {
		t.Error("a missing metric was reported present")
	}
}

func TestNum(t *testing.T) {
	for v, want := range map[float64]string{1234567: "1,234,567", 999: "999", 1.5: "1.500", -12345: "-12,345"} {
		if got := num(v); got != want {
			t.Errorf("num(%v) = %q, want %q", v, got, want)
		}
	}
}

// The config the harness hands the daemon must pass the daemon's own loader and validation.
func TestSetupConfigLoads(t *testing.T) {
	s := setup{
		Brokers: []string{"127.0.0.1:9092"}, Hosts: []string{"127.0.0.1:9042"}, Keyspace: "sinkbench",
		Topic: "bench_1_backlog", Table: "bench_1_sink", Group: "bench_1_sink", Metrics: "127.0.0.1:9999",
		CommitInterval: time.Second,
	}
	_, cfg, err := s.write(t.TempDir(), "sink", nil)
	if err != nil {
		t.Fatal(err)
	}
	tp := cfg.Topics[topicName]
	if tp.Topic != s.Topic || tp.Table != s.Table || cfg.Kafka.Group != s.Group {
		t.Errorf("names did not survive loading: topic %q table %q group %q", tp.Topic, tp.Table, cfg.Kafka.Group)
	}
	if cfg.Writer.CommitInterval != config.Duration(time.Second) {
		t.Errorf("commit interval %v, want 1s", cfg.Writer.CommitInterval)
	}
	if cfg.Writer.BatchMaxRows != config.DefaultBatchMaxRows || cfg.Writer.MaxInFlight != config.DefaultMaxInFlight {
		t.Errorf("writer limits %+v are not the defaults the sink ships with", cfg.Writer)
	}
}

// The codec run's config reads the same topic in its format from the registry.
func TestSetupConfigOfACodecRunLoads(t *testing.T) {
	s := setup{
		Brokers: []string{"127.0.0.1:9092"}, Hosts: []string{"127.0.0.1:9042"}, Keyspace: "sinkbench",
		Topic: "bench_1_backlog_avro", Table: "bench_1_sink_avro", Group: "bench_1_sink_avro", Metrics: "127.0.0.1:9999",
		CommitInterval: time.Second, Codec: config.CodecAvro, Registry: "http://127.0.0.1:8081/apis/ccompat/v7",
	}
	_, cfg, err := s.write(t.TempDir(), "sink_avro", nil)
	if err != nil {
		t.Fatal(err)
	}
	if tp := cfg.Topics[topicName]; tp.Codec != config.CodecAvro || len(cfg.SchemaRegistry.URLs) != 1 || cfg.SchemaRegistry.URLs[0] != s.Registry {
		t.Errorf("codec %q, registry %v: want avro from %s", tp.Codec, cfg.SchemaRegistry.URLs, s.Registry)
	}
}

// The run of two entries reads the backlog's Kafka topic twice in one config: the bench's readings by
// device and day, and readings by site and hour into a table of its own; the schema creates both.
func TestSetupConfigOfTwoEntriesReadsOneTopicIntoTwoTables(t *testing.T) {
	s := setup{
		Brokers: []string{"127.0.0.1:9092"}, Hosts: []string{"127.0.0.1:9042"}, Keyspace: "sinkbench",
		Topic: "bench_1_backlog", Table: "bench_1_sink_e2", SiteTable: "bench_1_sink_e2_site", Group: "bench_1_sink_e2",
		Metrics: "127.0.0.1:9999", CommitInterval: time.Second,
	}
	_, cfg, err := s.write(t.TempDir(), "sink_entries2", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Topics) != 2 {
		t.Fatalf("%d entries, want 2", len(cfg.Topics))
	}
	dev, site := cfg.Topics[topicName], cfg.Topics[siteEntryName]
	if dev.Topic != s.Topic || site.Topic != s.Topic {
		t.Errorf("Kafka topics %q and %q, want both %q", dev.Topic, site.Topic, s.Topic)
	}
	if dev.Table != s.Table || site.Table != s.SiteTable {
		t.Errorf("tables %q and %q, want %q and %q", dev.Table, site.Table, s.Table, s.SiteTable)
	}
	if !slices.Equal(site.ID, []string{"site_id"}) || site.Bucket.Width != "1h" || dev.Bucket.Width != "1d" {
		t.Errorf("site entry id %v width %q, device entry width %q: want [site_id] by 1h beside the device's 1d", site.ID, site.Bucket.Width, dev.Bucket.Width)
	}
	ddl, err := cassandra.Schema(cfg, nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{s.Table, s.SiteTable} {
		if !slices.ContainsFunc(ddl, func(stmt string) bool {
			return strings.Contains(stmt, "CREATE TABLE IF NOT EXISTS sinkbench."+table+" ")
		}) {
			t.Errorf("no CREATE TABLE for %s in:\n%s", table, strings.Join(ddl, "\n"))
		}
	}
	one := s
	one.SiteTable = ""
	if _, cfg, err := one.write(t.TempDir(), "sink", nil); err != nil || len(cfg.Topics) != 1 {
		t.Errorf("without a site table: %v, %d entries; want the one entry", err, len(cfg.Topics))
	}
}

// A run of two entries is judged by the two figures.
func TestJudgeEntriesRun(t *testing.T) {
	r := &Result{Entries: &EntriesRun{Entries: 2, PerTableRatio: 0.85, CPUPerRecordRatio: 1.7}}
	r.judge()
	met := map[string]bool{}
	for _, tg := range r.Targets {
		met[tg.Name] = tg.Met
	}
	if m, ok := met["sink rows/s per table, two entries ÷ one"]; !ok || !m {
		t.Errorf("rows/s per table 0.85 (want ≥ 0.8): met %v, judged %v", m, ok)
	}
	if m, ok := met["sink CPU per record, two entries ÷ one"]; !ok || m {
		t.Errorf("CPU per record 1.7 (want ≤ 1.6): met %v, judged %v", m, ok)
	}
}

func TestResultFinite(t *testing.T) {
	r := &Result{
		Ceiling:  Ceiling{RowsPerS: 100},
		Sink:     Process{PerSec: 90, RatioToCeiling: 0.9, CPUPerMillion: 3},
		Pipeline: Process{PerSec: 200, PerCPUSecond: 600},
	}
	if err := r.Finite(); err != nil {
		t.Errorf("finite result rejected: %v", err)
	}
	r.Sink.RatioToCeiling = math.Inf(1)
	if err := r.Finite(); err == nil {
		t.Error("an infinite ratio passed")
	}
}

func TestParseProcStat(t *testing.T) {
	stat := "cpu  100 5 50 800 20 3 2 0 7 0\ncpu0 50 2 25 400 10 1 1 0 0 0\nintr 1\n"
	busy, total, err := parseProcStat([]byte(stat))
	if err != nil {
		t.Fatal(err)
	}
	tick := time.Second / time.Duration(clockTicks)
	// Guest time (the ninth field) is already inside user, so it is not added again.
	if want := time.Duration(100+5+50+3+2) * tick; busy != want {
		t.Errorf("busy = %v, want %v", busy, want)
	}
	if want := time.Duration(100+5+50+800+20+3+2) * tick; total != want {
		t.Errorf("total = %v, want %v", total, want)
	}
	a := machineSample{At: time.Unix(0, 0), Busy: 0}
	b := machineSample{At: time.Unix(2, 0), Busy: 3 * time.Second}
	if got := coresBusy(a, b); got != 1.5 {
		t.Errorf("coresBusy = %v, want 1.5", got)
	}
}

// TestBacklogEndsBeforeNowAtAnyTimeOfDay: the backlog's last event is never ahead of the clock (the broker
// refuses records timestamped more than an hour ahead), and it starts on a UTC day boundary. Started on the
// current day, a 1,000,000-event backlog produced at 01:17 UTC ended at 02:46 and was refused.
func TestBacklogEndsBeforeNowAtAnyTimeOfDay(t *testing.T) {
	for _, now := range []time.Time{
		time.Date(2026, 11, 27, 1, 17, 42, 0, time.UTC),
		time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 11, 27, 2, 47, 0, 0, time.UTC),
		time.Date(2026, 11, 27, 23, 59, 0, 0, time.UTC),
	} {
		for _, n := range []int{0, 200_000, 1_000_000, 30_000_000} {
			start := backlogStartAt(now, n)
			last := start.Add(time.Duration(float64(n) / gen.DefaultRate * float64(time.Second)))
			if last.After(now) {
				t.Errorf("now %s, %d events: the backlog ends at %s, after now", now.Format(time.TimeOnly), n, last)
			}
			if !start.Equal(start.Truncate(24 * time.Hour)) {
				t.Errorf("now %s, %d events: start %s is not a UTC day boundary", now.Format(time.TimeOnly), n, start)
			}
			if now.Sub(start) > 24*time.Hour+time.Duration(float64(n)/gen.DefaultRate*float64(time.Second)) {
				t.Errorf("now %s, %d events: start %s is a day earlier than it needs to be", now.Format(time.TimeOnly), n, start)
			}
		}
	}
}

// TestCeilingGridKeepsTheNodesHeap: no setting the full run tries keeps more rows in flight than the
// local node carries; with the 400-row default, the 4×-rows-at-4×-concurrency corner (409,600 rows in
// flight) ran a 1 GiB heap out of memory. The sink's own setting is always tried.
func TestCeilingGridKeepsTheNodesHeap(t *testing.T) {
	grid := ceilingGrid(false, 400, 64<<10, 64, 2)
	if len(grid) < 5 || grid[0].BatchRows != 400 || grid[0].Concurrency != 64 {
		t.Fatalf("grid %+v: want the sink's setting first and the other probes", grid)
	}
	for _, s := range grid {
		if s.BatchRows*s.Concurrency > maxCeilingRowsInFlight {
			t.Errorf("setting %+v keeps %d rows in flight, over %d", s, s.BatchRows*s.Concurrency, maxCeilingRowsInFlight)
		}
	}
}

// TestCeilingOfTwoEntriesWritesEachRecordsRowIntoEachTable: the ceiling of a run of two entries maps every
// record, with the sink's mapper, into its row in each of the two tables (the rows the sink's entries
// write), and cuts them into batches of one table's partition each; with one entry, one row a record.
func TestCeilingOfTwoEntriesWritesEachRecordsRowIntoEachTable(t *testing.T) {
	g, err := gen.New(gen.Config{Entities: 50, Seed: 1, Start: backlogStart(500)})
	if err != nil {
		t.Fatal(err)
	}
	var records []record
	for i := range 500 {
		_, ev := g.Append(nil)
		records = append(records, record{Partition: int32(i % 3), Offset: int64(i / 3), Key: ev.Key, Value: ev.Value, Timestamp: ev.Time})
	}
	s := setup{
		Brokers: []string{"127.0.0.1:9092"}, Hosts: []string{"127.0.0.1:9042"}, Keyspace: "sinkbench",
		Topic: "bench_1_backlog", Table: "bench_1_ceiling_entries2", SiteTable: "bench_1_ceiling_entries2_site",
		Group: "bench_1_sink_e2", Metrics: "127.0.0.1:9999", CommitInterval: time.Second,
	}
	one := s
	one.SiteTable = ""
	for _, c := range []struct {
		st     setup
		tables []string
	}{{one, []string{s.Table}}, {s, []string{s.Table, s.SiteTable}}} {
		_, cfg, err := c.st.write(t.TempDir(), "ceiling", nil)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := ceilingRows(context.Background(), cfg, s.Topic, records)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != len(records)*len(c.tables) {
			t.Fatalf("%d tables: %d rows of %d records, want %d", len(c.tables), len(rows), len(records), len(records)*len(c.tables))
		}
		m, err := newMapper(cfg)
		if err != nil {
			t.Fatal(err)
		}
		entries := m.Entries(s.Topic)
		for i, rec := range records {
			for j, table := range c.tables {
				got := rows[i*len(c.tables)+j]
				want, err := m.MapEntry(context.Background(), entries[j], rec.mapperRecord(s.Topic))
				if err != nil {
					t.Fatal(err)
				}
				if got.Target.Table != table || !bytes.Equal(got.Packed, want.Packed) || got.Key != want.Key {
					t.Fatalf("record %d, table %s: got a row of %s that is not entry %s's row", i, table, got.Target.Table, entries[j])
				}
			}
		}
		perTable := map[string]int{}
		for _, b := range groupRows(rows, ceilingSetting{Writer: writerGocql, BatchRows: 40, BatchBytes: 64 << 10, Concurrency: 1, NumConns: 1}) {
			for _, r := range b.Rows {
				if r.Target != b.Target || r.Key != b.Rows[0].Key {
					t.Fatalf("a batch of %s.%s holds a row of another partition or table (%s)", b.Target.Keyspace, b.Target.Table, r.Target.Table)
				}
			}
			perTable[b.Target.Table] += len(b.Rows)
		}
		for _, table := range c.tables {
			if perTable[table] != len(records) {
				t.Errorf("%d tables: the batches hold %d rows of %s, want one a record (%d)", len(c.tables), perTable[table], table, len(records))
			}
		}
	}
}

// TestEntriesRunSetsTheCeilingsRatiosBesideTheTargets: the run of two entries reports the two-table
// ceiling per table ÷ the one-table ceiling, and the two-entry sink's rows/s in all ÷ the two-table ceiling's
// beside the one-entry sink ÷ the one-table ceiling; the targets stay as they are. The figures
// are a quiet run's of 2026-11-27.
func TestEntriesRunSetsTheCeilingsRatiosBesideTheTargets(t *testing.T) {
	r := &Result{
		Ceiling: Ceiling{RowsPerS: 75_500},
		Sink:    Process{PerSec: 60_000, RatioToCeiling: 60_000.0 / 75_500},
		Entries: &EntriesRun{Entries: 2, Sink: Process{PerSec: 36_400}, PerTableRatio: 36_400.0 / 60_000, CPUPerRecordRatio: 1.4,
			Ceiling: CeilingTrial{Writer: writerGocql, RowsPerS: 91_000, Rows: 400_000, Final: true}},
	}
	r.compareEntries()
	r.judge()
	e := r.Entries
	near := func(got, want float64) bool { return math.Abs(got-want) < 1e-9 }
	if !near(e.CeilingPerTable, 45_500) || !near(e.CeilingPerTableRatio, 45_500.0/75_500) {
		t.Errorf("ceiling per table %v, two ÷ one %v; want 45,500 and %v", e.CeilingPerTable, e.CeilingPerTableRatio, 45_500.0/75_500)
	}
	if !near(e.SinkRatioToCeiling, 72_800.0/91_000) {
		t.Errorf("sink ÷ ceiling with two tables %v, want the sink's 72,800 rows/s in all ÷ 91,000 = %v", e.SinkRatioToCeiling, 72_800.0/91_000)
	}
	// The sink's ratio to the node, two tables ÷ one, is its per-table two ÷ one over the ceiling's.
	if want := e.PerTableRatio / e.CeilingPerTableRatio; !near(e.SinkVsCeilingRatio, want) {
		t.Errorf("sink ÷ ceiling two ÷ one %v, want %v", e.SinkVsCeilingRatio, want)
	}
	var names []string
	for _, tg := range r.Targets {
		names = append(names, tg.Name+" "+tg.Want)
	}
	if got, want := strings.Join(names, "; "), "sink rows/s ÷ ceiling rows/s ≥ 0.9; pipeline-only events per CPU-second ≥ 500000; sink peak RSS (MiB) ≤ 256; "+
		"sink rows/s per table, two entries ÷ one ≥ 0.8; sink CPU per record, two entries ÷ one ≤ 1.6"; got != want {
		t.Errorf("targets %q, want the issue's, unchanged: %q", got, want)
	}
	var out strings.Builder
	r.PrintTable(&out)
	printed := strings.Join(strings.Fields(out.String()), " ") // the columns' padding aside
	for _, line := range []string{
		"ceiling, 2 tables 91,000 rows/s in all 45,500 rows/s per table, 0.603 × the one-table ceiling",
		"sink ÷ ceiling, 2 tables 0.800 in all one table: 0.795; two ÷ one 1.007",
	} {
		if !strings.Contains(printed, line) {
			t.Errorf("the table has no line %q:\n%s", line, out.String())
		}
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"ceiling_rows_per_s_per_table":45500`, `"ceiling_per_table_rows_ratio":0.60`, `"sink_ratio_to_ceiling":0.8`, `"sink_ratio_to_ceiling_two_to_one":1.00`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("the JSON has no %s:\n%s", key, b)
		}
	}
}

// TestDefaultPrefixesOfRunsStartedInOneSecondDiffer: two runs started a few milliseconds apart (one after
// the other, or by two people on one stack) name their topics differently. With a prefix of whole
// seconds the second run failed creating its topic: TOPIC_ALREADY_EXISTS.
func TestDefaultPrefixesOfRunsStartedInOneSecondDiffer(t *testing.T) {
	var a, b Options
	if err := a.defaults(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Millisecond)
	if err := b.defaults(); err != nil {
		t.Fatal(err)
	}
	if a.Prefix == b.Prefix {
		t.Errorf("two runs 2 ms apart both named %q", a.Prefix)
	}
}
