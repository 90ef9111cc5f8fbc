package bench

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/bucketsink/sink/batcher"
)

// TestBatchClientCutsRowsInArrivalOrderAcrossPartitions: the second ceiling sends the next 50 rows
// in arrival order whatever their partitions, as a count-and-period batching output does; a partial
// batch goes once its first row has waited the period, and nothing is lost or reordered.
func TestBatchClientCutsRowsInArrivalOrderAcrossPartitions(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	m := &multiBatch{size: 50, period: 5 * time.Millisecond}
	var batches [][]batcher.Row
	// 120 rows over 7 partitions, 0.1 ms apart: two full batches, then 20 rows pending.
	for i := range 120 {
		now := t0.Add(time.Duration(i) * 100 * time.Microsecond)
		if b := m.due(now); b != nil {
			batches = append(batches, b)
		}
		r := batcher.Row{Key: fmt.Sprintf("dev-%d", i%7), Offset: int64(i)}
		if b := m.add(r, now); b != nil {
			batches = append(batches, b)
		}
	}
	if len(batches) != 2 || len(batches[0]) != 50 || len(batches[1]) != 50 {
		t.Fatalf("batches of %v rows, want two of 50", lens(batches))
	}
	if p := partitionsOf(batches[0]); p != 7 {
		t.Errorf("the first batch holds %d partitions, want all 7 its rows are in", p)
	}
	last := t0.Add(119 * 100 * time.Microsecond)
	first := t0.Add(100 * 100 * time.Microsecond) // the pending batch's first row
	if b := m.due(first.Add(5*time.Millisecond - time.Nanosecond)); b != nil {
		t.Fatalf("a partial batch went %v after its first row, before the 5 ms period", last.Sub(first))
	}
	b := m.due(first.Add(5 * time.Millisecond))
	if len(b) != 20 {
		t.Fatalf("the partial batch holds %d rows once its period passed, want 20", len(b))
	}
	batches = append(batches, b)
	if m.flush() != nil || m.due(last.Add(time.Hour)) != nil {
		t.Error("rows still pending after the last batch went")
	}
	var next int64
	for _, b := range batches {
		for _, r := range b {
			if r.Offset != next {
				t.Fatalf("row %d came after row %d: arrival order lost", r.Offset, next-1)
			}
			next++
		}
	}
}

func lens(bs [][]batcher.Row) []int {
	out := make([]int, len(bs))
	for i, b := range bs {
		out[i] = len(b)
	}
	return out
}

// TestBatchClientReportLinesParse: the harness reads the client's probes and final counts from its
// stdout, and fails on a line it does not know instead of guessing.
func TestBatchClientReportLinesParse(t *testing.T) {
	p, d, err := parseClientLine("probe dev-00042 1795737600123000000 1795737600125000000")
	if err != nil || d != nil {
		t.Fatalf("probe line: %v, %v", d, err)
	}
	if p.device != "dev-00042" || p.event.UnixNano() != 1795737600123000000 || p.produced.UnixNano() != 1795737600125000000 {
		t.Errorf("probe %+v", p)
	}
	if p.event.Location() != time.UTC {
		t.Errorf("probe event time in %v, want UTC", p.event.Location())
	}
	_, d, err = parseClientLine("done 75000 1500 61000 5002000000")
	if err != nil || d == nil {
		t.Fatalf("done line: %v, %v", d, err)
	}
	if *d != (clientDone{rows: 75000, requests: 1500, partitions: 61000, sending: 5002 * time.Millisecond}) {
		t.Errorf("done %+v", *d)
	}
	for _, bad := range []string{"", "ready", "probe dev 1", "done 1 2 x 4", "done 1 2 3"} {
		if _, _, err := parseClientLine(bad); err == nil {
			t.Errorf("%q parsed without error", bad)
		}
	}
}

// TestSteadyReportPutsTheSinkBesideTheBatchClient: the steady phase reports the sink's figures
// divided by the 50-row client's of the same run, and says "not measured" instead of a ratio when
// a side lacks the figure (Cassandra's CPU where several Cassandra processes run).
func TestSteadyReportPutsTheSinkBesideTheBatchClient(t *testing.T) {
	r := &Result{
		Params: Params{SteadyOnly: true},
		Latency: Latency{Events: 75000, RowsPerRequest: 12.5, SinkCPUMicrosPerRow: 30, CassandraCPUMicrosPerRow: 40,
			Freshness: Freshness{FreshP99Millis: 150}},
		BatchClient: &BatchClient{Rate: 15000, Rows: 75000, Requests: 1500, BatchRows: 50, Period: "5ms", InFlight: 64, NumConns: 2,
			Routing: "round robin (token-unaware)", Consistency: "LOCAL_ONE",
			RowsPerRequest: 50, PartitionsPerRequest: 41, CPUMicrosPerRow: 20, CassandraCPUMicrosPerRow: 50,
			Freshness: Freshness{FreshP99Millis: 100}},
	}
	r.compareBatchClient()
	c := r.BatchClient
	for name, got := range map[string][2]float64{
		"rows per request":      {c.SinkRowsPerRequestRatio, 0.25},
		"sink CPU per row":      {c.SinkCPURatio, 1.5},
		"Cassandra CPU per row": {c.CassandraCPURatio, 0.8},
		"readable p99":          {c.FreshP99Ratio, 1.5},
	} {
		if got[0] != got[1] {
			t.Errorf("%s ratio %v, want %v", name, got[0], got[1])
		}
	}
	tableHas(t, r,
		"50.0 rows per request",
		"41.00 partitions per request",
		"UNLOGGED, 50 rows or 5ms, 64 in flight, 2 conns, round robin (token-unaware), LOCAL_ONE",
		"Cassandra CPU per row 0.80",
		"rows per request 0.25; own CPU per row 1.50; readable p99 1.50",
	)

	c.CassandraCPUMicrosPerRow, c.CassandraCPUNote = 0, "2 processes run Cassandra here"
	r.compareBatchClient()
	if c.CassandraCPURatio != 0 {
		t.Errorf("Cassandra ratio %v without the client's figure, want 0", c.CassandraCPURatio)
	}
	tableHas(t, r, "Cassandra CPU per row not measured")
}

// TestSteadyReportGivesCassandraNetOfIdleBesideTheRawFigure: each side's raw Cassandra CPU per row stays
// as it was, and a line next to it gives the figure net of that side's own idle window, the idle
// cores and the probes' cost, with the sink ÷ client ratio of the net figures.
func TestSteadyReportGivesCassandraNetOfIdleBesideTheRawFigure(t *testing.T) {
	sinkIdle := &CassandraIdle{IdleSeconds: 5, IdleCores: 0.2, ProbeCores: 0.3, ProbeWindowReads: 1000, ProbeReadMicros: 500}
	clientIdle := &CassandraIdle{IdleSeconds: 5, IdleCores: 0.1, ProbeCores: 0.2, ProbeWindowReads: 1000, ProbeReadMicros: 500}
	r := &Result{
		Params:  Params{SteadyOnly: true},
		Latency: Latency{Events: 300_000, Seconds: 20, CassandraCPUMicrosPerRow: 60, Freshness: Freshness{FreshSamples: 400, ProbeReads: 6000}},
		BatchClient: &BatchClient{Rows: 300_000, Seconds: 20, CassandraCPUMicrosPerRow: 80,
			Freshness: Freshness{FreshSamples: 400, ProbeReads: 3000}},
	}
	r.Latency.setNet(sinkIdle, 60, 300_000, 20*time.Second, 6000)
	r.BatchClient.setNet(clientIdle, 80, 300_000, 20*time.Second, 3000)
	r.compareBatchClient()
	// Sink: 60 − 0.2 × 20 s / 300,000 rows = 60 − 13.33; client: 80 − 6.67.
	if got, want := r.Latency.CassandraNetCPUMicrosPerRow, 60-0.2*20e6/300_000; math.Abs(got-want) > 1e-9 {
		t.Errorf("sink net %v, want %v", got, want)
	}
	if got, want := r.BatchClient.CassandraNetCPURatio, (60-0.2*20e6/300_000)/(80-0.1*20e6/300_000); math.Abs(got-want) > 1e-9 {
		t.Errorf("net ratio %v, want %v", got, want)
	}
	if r.BatchClient.CassandraCPURatio != 0.75 {
		t.Errorf("raw ratio %v, want 60/80 unchanged", r.BatchClient.CassandraCPURatio)
	}
	tableHas(t, r,
		"CPU per row: sink 0.0 µs, Cassandra 60.0 µs",
		"steady: Cassandra net of idle",
		"46.7 µs per row",
		"idle 0.200 cores over 5 s before the run",
		"probes 20.0 sampled/s, 300 reads/s in the run; one probe polled alone before it: 0.300 cores, 200 reads/s (500 µs a read above idle)",
		"50-row client: Cassandra net of idle",
		"73.3 µs per row",
		"sink ÷ 50-row client, net of idle",
		"Cassandra CPU per row 0.64",
	)
}

// tableHas checks that r's printed table holds every one of wants, and returns the table.
func tableHas(t *testing.T, r *Result, wants ...string) string {
	t.Helper()
	var out strings.Builder
	r.PrintTable(&out)
	for _, want := range wants {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, out.String())
		}
	}
	return out.String()
}
