package bench

import (
	"bytes"
	"context"
	"math"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bucketsink/sink/internal/testenv"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestSmoke runs the whole harness on a small backlog so it never rots: it asserts only that every
// phase completes and that the ratios come out finite and positive. The numbers of so short a run
// mean nothing; `make bench` is the measurement.
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("the smoke run builds the sink and needs Kafka and Cassandra; skipped with -short")
	}
	brokers := testenv.Kafka(t)
	hosts := testenv.Cassandra(t)
	prefix := testenv.Name(t, "bench")

	dir := t.TempDir()
	bin := filepath.Join(dir, "sink")
	build := exec.Command("go", "build", "-o", bin, "github.com/bucketsink/sink/cmd/sink")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the sink: %v\n%s", err, out)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	res, err := Run(ctx, Options{
		Events: 20_000, Entities: 1_000, Partitions: 3, Quick: true,
		Brokers: brokers, Cassandra: hosts, Prefix: prefix,
		SinkBinary: bin, HarnessBinary: bin, LatencyFor: 3 * time.Second, WorkDir: dir, Progress: &progress,
		SettleMax: 2 * time.Second, // other packages' tests share the machine: rarely quiet, so keep the waits short
		// One short round: TestReadPhaseReadsTheSameRowsBothWays checks the read phase's figures.
		ReadRows: 3000, ReadRounds: 1,
		Entries: 2,
	})
	if err != nil {
		t.Fatalf("bench run: %v\nprogress:\n%s", err, progress.String())
	}
	if err := res.Finite(); err != nil {
		t.Errorf("%v\nprogress:\n%s", err, progress.String())
	}
	if c := res.Machine.MapNanos; !(c > 0 && c < 1e6) {
		t.Errorf("core speed not measured: %v ns per record", c)
	}
	if res.Sink.PeakRSSBytes <= 0 || res.Pipeline.PeakRSSBytes <= 0 {
		t.Errorf("peak RSS not measured: sink %d, pipeline %d", res.Sink.PeakRSSBytes, res.Pipeline.PeakRSSBytes)
	}
	if l := res.Latency; l.Covered != l.Events || l.Events == 0 || math.IsNaN(l.P99Millis) || l.P99Millis <= 0 || l.PeakRSSBytes <= 0 {
		t.Errorf("latency phase incomplete: %+v", l)
	}
	if c := res.BatchClient; c == nil || c.Rows != res.Latency.Events || c.Requests == 0 || c.RowsPerRequest <= 1 ||
		c.CPUMicrosPerRow <= 0 || c.FreshSamples == 0 || c.SinkRowsPerRequestRatio <= 0 {
		t.Errorf("the 50-row client was not measured: %+v", c)
	}
	if e := res.Entries; e == nil || e.Ceiling.Rows != 2*res.Produce.Events || e.PerTableRatio <= 0 ||
		e.CeilingPerTableRatio <= 0 || e.SinkRatioToCeiling <= 0 || e.SinkVsCeilingRatio <= 0 {
		t.Errorf("the run of two entries or its ceiling of two tables was not measured: %+v", e)
	}
	var before []string
	for _, st := range res.Settles {
		before = append(before, st.Before)
		if st.Seconds <= 0 || st.Seconds > 2+2 { // SettleMax plus the last one-second window, and slack
			t.Errorf("settle before %s took %.1f s; want (0, 4]", st.Before, st.Seconds)
		}
	}
	if got, want := strings.Join(before, " "), "ceiling sink sink_entries2 ceiling_entries2 ceiling_after pipeline latency batch_client read"; got != want {
		t.Errorf("settled before %q, want before %q", got, want)
	}
	if r := res.Read; r == nil || len(r.Rounds) != 1 || r.Rounds[0].Sink.Rows != 3000 || r.Rounds[0].Loop.Rows != 3000 {
		t.Errorf("the read phase was not measured: %+v", r)
	}
	if len(res.Targets) != 7 {
		t.Errorf("%d targets judged, want 7 (three of the backlog, two of two entries, two of the read phase)", len(res.Targets))
	}
	// The run dropped every table and topic it made.
	sess, err := ceilingSession(hosts, "", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	var name string
	var left []string
	it := sess.Query("SELECT table_name FROM system_schema.tables WHERE keyspace_name = ?", "sinkbench").Iter()
	for it.Scan(&name) {
		if strings.HasPrefix(name, prefix+"_") {
			left = append(left, name)
		}
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("tables left behind: %v", left)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	topics, err := kadm.NewClient(cl).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range topics.Names() {
		if strings.HasPrefix(tp, prefix+"_") {
			t.Errorf("topic left behind: %s", tp)
		}
	}
	if res.Produce.Topic == "" || res.Sink.Table == "" {
		t.Errorf("the result does not name the backlog topic (%q) or the sink table (%q)", res.Produce.Topic, res.Sink.Table)
	}
	var table strings.Builder
	res.PrintTable(&table)
	if _, err := res.WriteJSON(t.TempDir()); err != nil {
		t.Error(err)
	}
	t.Logf("\n%s", table.String())
}
