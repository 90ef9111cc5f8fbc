package bench

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/reader"
)

// The steady-rate phase measures what a user pays at a rate well below the maximum: rows per request,
// the sink's and Cassandra's CPU per row, how long a produced event takes to be readable in Cassandra
// (sampled events polled through the reader), and where the time goes (sink_stage_seconds).

// StageLatency is one stage of sink_stage_seconds over the steady phase, from its histogram buckets.
type StageLatency struct {
	Stage     string  `json:"stage"`
	Count     uint64  `json:"count"`
	P50Millis float64 `json:"p50_ms"`
	P99Millis float64 `json:"p99_ms"`
}

// scrape reads every metric family of the daemon.
func (d *daemon) scrape(ctx context.Context) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+d.metrics+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scraping %s metrics: %w", d.name, err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parsing %s metrics: %w", d.name, err)
	}
	return mfs, nil
}

// histogramDelta is the change of one histogram between two scrapes: its sum, its count, and its
// cumulative bucket counts by upper bound. label, when not empty, selects the series with
// label=value.
type histogramDelta struct {
	sum   float64
	count uint64
	upper []float64
	cum   []uint64
}

func histogramOf(mfs map[string]*dto.MetricFamily, name, label, value string) (histogramDelta, bool) {
	mf := mfs[name]
	if mf == nil {
		return histogramDelta{}, false
	}
	for _, m := range mf.GetMetric() {
		if label != "" && !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool {
			return l.GetName() == label && l.GetValue() == value
		}) {
			continue
		}
		h := m.GetHistogram()
		out := histogramDelta{sum: h.GetSampleSum(), count: h.GetSampleCount()}
		for _, b := range h.GetBucket() {
			out.upper = append(out.upper, b.GetUpperBound())
			out.cum = append(out.cum, b.GetCumulativeCount())
		}
		return out, true
	}
	return histogramDelta{}, false
}

// minus is h less an earlier scrape of the same series (absent: nothing).
func (h histogramDelta) minus(before histogramDelta, ok bool) histogramDelta {
	if !ok || len(before.cum) != len(h.cum) {
		return h
	}
	out := histogramDelta{sum: h.sum - before.sum, count: h.count - before.count, upper: h.upper, cum: slices.Clone(h.cum)}
	for i := range out.cum {
		out.cum[i] -= before.cum[i]
	}
	return out
}

// quantile estimates the q-quantile as Prometheus's histogram_quantile does: linear within the bucket
// that holds the rank; the highest finite bound when the rank falls past it. 0 without observations.
func (h histogramDelta) quantile(q float64) float64 {
	if h.count == 0 {
		return 0
	}
	rank := q * float64(h.count)
	lower, below := 0.0, uint64(0)
	for i, c := range h.cum {
		if float64(c) >= rank {
			if math.IsInf(h.upper[i], 1) {
				return lower
			}
			if c == below {
				return h.upper[i]
			}
			return lower + (h.upper[i]-lower)*(rank-float64(below))/float64(c-below)
		}
		lower, below = h.upper[i], c
	}
	return lower
}

// stageLatencies are the stages of sink_stage_seconds between two scrapes; none for a binary that
// does not export them.
func stageLatencies(before, after map[string]*dto.MetricFamily) []StageLatency {
	var out []StageLatency
	for _, stage := range []string{"mapped", "batched", "acknowledged", "committed"} {
		a, ok := histogramOf(after, "sink_stage_seconds", "stage", stage)
		if !ok {
			continue
		}
		b, bok := histogramOf(before, "sink_stage_seconds", "stage", stage)
		d := a.minus(b, bok)
		out = append(out, StageLatency{Stage: stage, Count: d.count,
			P50Millis: d.quantile(0.5) * 1000, P99Millis: d.quantile(0.99) * 1000})
	}
	return out
}

// meanOf is sum/count of a histogram between two scrapes; 0 when the daemon does not export it.
func meanOf(before, after map[string]*dto.MetricFamily, name string) float64 {
	a, ok := histogramOf(after, name, "", "")
	if !ok {
		return 0
	}
	b, bok := histogramOf(before, name, "", "")
	d := a.minus(b, bok)
	if d.count == 0 {
		return 0
	}
	return d.sum / float64(d.count)
}

// cassandraMain is the class every Cassandra server process runs.
const cassandraMain = "org.apache.cassandra.service.CassandraDaemon"

// cassandraPID returns the process id of the Cassandra server: pid when it is not 0 (Options.CassandraPID),
// else the one process on this machine that runs Cassandra. With none, or several (the test stack runs
// more than one), it says so: Cassandra's CPU is then not measured.
func cassandraPID(pid int) (int, error) {
	if pid != 0 {
		if _, err := readCPU(pid); err != nil {
			return 0, err
		}
		return pid, nil
	}
	dirs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		return 0, err
	}
	var found []int
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err != nil || !bytes.Contains(b, []byte(cassandraMain)) {
			continue
		}
		if n, err := strconv.Atoi(filepath.Base(filepath.Dir(d))); err == nil {
			found = append(found, n)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return 0, fmt.Errorf("no process on this machine runs %s (a remote Cassandra): give --cassandra-pid to measure its CPU", cassandraMain)
	}
	return 0, fmt.Errorf("%d processes run Cassandra here (%v): give --cassandra-pid to say which one the bench writes to", len(found), found)
}

// probe is one sampled event: what identifies its row, and when it was produced.
type probe struct {
	device   string
	event    time.Time
	produced time.Time
}

// freshness polls Cassandra, through the reader, for each probe's row until it is readable, and keeps how
// long after its production that was. A probe unseen for giveUp is counted as missing.
type freshness struct {
	// read reports whether p's row is readable (reader.Reader.Read of its event's millisecond).
	read    func(ctx context.Context, p probe) (bool, error)
	every   time.Duration
	giveUp  time.Duration
	delays  []time.Duration
	missing int
	// reads counts the reads sent to Cassandra, seen or not: what the probes cost it.
	reads int
}

// summary is what the poller saw, for the result.
func (f *freshness) summary() Freshness {
	return Freshness{
		FreshSamples: len(f.delays), FreshMissing: f.missing,
		FreshP50Millis: float64(percentile(f.delays, 0.50)) / 1e6,
		FreshP99Millis: float64(percentile(f.delays, 0.99)) / 1e6,
		FreshMaxMillis: float64(percentile(f.delays, 1)) / 1e6,
		ProbeReads:     f.reads,
	}
}

// newFreshness is the poller every steady run uses: each pending probe read every 5 ms, given up after
// 30 s.
func newFreshness(rd *reader.Reader) *freshness {
	return &freshness{read: readerProbe(rd), every: 5 * time.Millisecond, giveUp: 30 * time.Second}
}

// startFreshness polls the rows of cfg's bench entry for each probe sent on the returned channel, until
// it is closed; wait then returns what the poller saw once every probe is resolved.
func (h *harness) startFreshness(ctx context.Context, cfg *config.Config) (chan<- probe, func() (Freshness, error), error) {
	rd, err := reader.New(reader.Config{Session: h.admin, Sink: cfg, Topic: topicName, Parallelism: 1})
	if err != nil {
		return nil, nil, err
	}
	fresh := newFreshness(rd)
	probes := make(chan probe, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		fresh.run(ctx, probes)
	}()
	return probes, func() (Freshness, error) {
		select {
		case <-done:
			return fresh.summary(), nil
		case <-ctx.Done():
			return Freshness{}, ctx.Err()
		}
	}, nil
}

// cpuMeter reads the CPU of a measured process and of the Cassandra server over a phase.
type cpuMeter struct {
	pid, cassPID int
	own, cass    procSample
	// cassNote says why Cassandra's CPU is not measured (see cassandraPID); empty when it is.
	cassNote string
}

// startCPUMeter takes the first readings: of process pid, and of the Cassandra server cassandraPID
// finds for pid option (Options.CassandraPID).
func startCPUMeter(pid, cassOption int) (*cpuMeter, error) {
	m := &cpuMeter{pid: pid}
	cass, err := cassandraPID(cassOption)
	if err != nil {
		m.cassNote = err.Error()
	}
	if m.own, err = readCPU(pid); err != nil {
		return nil, err
	}
	if cass != 0 {
		if m.cass, err = readCPU(cass); err != nil {
			return nil, err
		}
		m.cassPID = cass
	}
	return m, nil
}

// perRow is the CPU each process used since startCPUMeter, in µs per row of rows; Cassandra's is 0
// when it is not measured. cassWindow is how long Cassandra's CPU was read over, for netOfIdle.
func (m *cpuMeter) perRow(rows int64) (own, cass float64, cassWindow time.Duration, err error) {
	o, err := readCPU(m.pid)
	if err != nil {
		return 0, 0, 0, err
	}
	own = float64((o.CPU - m.own.CPU).Microseconds()) / float64(rows)
	if m.cassPID != 0 {
		c, err := readCPU(m.cassPID)
		if err != nil {
			return 0, 0, 0, err
		}
		cass = float64((c.CPU - m.cass.CPU).Microseconds()) / float64(rows)
		cassWindow = c.At.Sub(m.cass.At)
	}
	return own, cass, cassWindow, nil
}

// Cassandra does work of its own whatever the sink sends it (garbage collection, compaction, the
// commit log's periodic sync, gossip and metrics threads), and the harness reads the probes' rows back
// from it. That background does not scale with the rows, so at a modest rate it could hide what the
// rows cost (on one Cassandra 5.0.8 node it was 0.02 to 0.06 cores, 1 to 4 µs a row at 15,000/s,
// docs/PERFORMANCE.md); the steady phase also reports the figure net of it: Cassandra's CPU rate
// measured over a few seconds just before the run, with nothing writing or reading, is taken out of the
// run's CPU over the run's length.

// idleWindow is how long the background is measured, and then how long one never-readable probe is
// polled to price a probe read: 5 s, 1 s with Quick (a first look, whose steady phase lasts 5 s).
func (o *Options) idleWindow() time.Duration {
	if o.Quick {
		return time.Second
	}
	return 5 * time.Second
}

// coresOver is the CPU used between two samples of one process, in cores (CPU-seconds per second).
func coresOver(a, b procSample) float64 {
	wall := b.At.Sub(a.At)
	if wall <= 0 {
		return 0
	}
	return float64(b.CPU-a.CPU) / float64(wall)
}

// netOfIdle is a CPU per row (µs) measured over window, less what idleCores would have used over that
// window anyway, per row; never below 0 (a run quieter than its idle window would say so otherwise).
func netOfIdle(perRow float64, rows int64, window time.Duration, idleCores float64) float64 {
	if rows <= 0 {
		return 0
	}
	idle := idleCores * float64(window.Microseconds()) / float64(rows)
	return max(0, perRow-idle)
}

// probeReadCost is Cassandra's CPU per probe read (µs): the cores it used while only probes were
// polled, less its idle cores, over window, per read. 0 without reads.
func probeReadCost(probeCores, idleCores float64, window time.Duration, reads int) float64 {
	if reads <= 0 {
		return 0
	}
	return max(0, (probeCores-idleCores)*float64(window.Microseconds())/float64(reads))
}

// measureIdle reads Cassandra's CPU (process cassPID) for Options.idleWindow with nothing sent to it,
// then as long again while the freshness poller polls one probe of a device never written to cfg's
// table: its background rate, and what one probe read costs it on top.
func (h *harness) measureIdle(ctx context.Context, cassPID int, cfg *config.Config) (CassandraIdle, error) {
	var out CassandraIdle
	wait := func() error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(h.o.idleWindow()):
			return nil
		}
	}
	a, err := readCPU(cassPID)
	if err != nil {
		return out, err
	}
	if err := wait(); err != nil {
		return out, err
	}
	b, err := readCPU(cassPID)
	if err != nil {
		return out, err
	}
	out.IdleCores, out.IdleSeconds = coresOver(a, b), b.At.Sub(a.At).Seconds()

	rd, err := reader.New(reader.Config{Session: h.admin, Sink: cfg, Topic: topicName, Parallelism: 1})
	if err != nil {
		return out, err
	}
	fresh := newFreshness(rd)
	probes := make(chan probe, 1)
	probes <- probe{device: "never-written", event: time.Now().UTC(), produced: time.Now()}
	pctx, cancel := context.WithTimeout(ctx, h.o.idleWindow())
	defer cancel()
	a, err = readCPU(cassPID)
	if err != nil {
		return out, err
	}
	fresh.run(pctx, probes)
	if b, err = readCPU(cassPID); err != nil {
		return out, err
	}
	if err := ctx.Err(); err != nil {
		return out, err
	}
	window := b.At.Sub(a.At)
	out.ProbeCores = coresOver(a, b)
	out.ProbeWindowReads = fresh.reads
	out.ProbeReadMicros = probeReadCost(out.ProbeCores, out.IdleCores, window, fresh.reads)
	return out, nil
}

// sweepParallel bounds the reads of one sweep. Reads one after another would make a probe wait for the
// reads of every probe polled before it: once rows take long enough to become readable that probes pile
// up, the sweep itself would add to what is measured.
const sweepParallel = 16

// readerProbe is freshness.read through r: one entity's rows in the probe's event millisecond.
func readerProbe(r *reader.Reader) func(context.Context, probe) (bool, error) {
	return func(ctx context.Context, p probe) (bool, error) {
		from := p.event.Truncate(time.Millisecond)
		page, err := r.Read(ctx, reader.Query{ID: []any{p.device}, From: from, To: from.Add(time.Millisecond), Limit: 1})
		return err == nil && len(page.Rows) > 0, err
	}
}

// run polls until probes is closed and every probe is resolved, or ctx ends.
func (f *freshness) run(ctx context.Context, probes <-chan probe) {
	var pending []probe
	tick := time.NewTicker(f.every)
	defer tick.Stop()
	for probes != nil || len(pending) > 0 {
		select {
		case <-ctx.Done():
			return
		case p, ok := <-probes:
			if !ok {
				probes = nil
				continue
			}
			pending = append(pending, p)
			continue
		case <-tick.C:
		}
		pending = f.sweep(ctx, pending)
	}
}

// sweep reads every pending probe once, up to sweepParallel at a time, each timed when its own read
// returned, and gives back those still unseen.
func (f *freshness) sweep(ctx context.Context, pending []probe) []probe {
	seen := make([]time.Time, len(pending))
	sem := make(chan struct{}, sweepParallel)
	var wg sync.WaitGroup
	for i, p := range pending {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if ok, _ := f.read(ctx, p); ok {
				seen[i] = time.Now()
			}
		})
	}
	wg.Wait()
	f.reads += len(pending)
	now := time.Now()
	kept := pending[:0]
	for i, p := range pending {
		switch {
		case !seen[i].IsZero():
			f.delays = append(f.delays, seen[i].Sub(p.produced))
		case now.Sub(p.produced) > f.giveUp:
			f.missing++
		default:
			kept = append(kept, p)
		}
	}
	return kept
}
