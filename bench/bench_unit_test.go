package bench

import (
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
