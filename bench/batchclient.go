package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/gen"
	"github.com/bucketsink/sink/mapper"
)

// The 50-row client is the steady phase's second ceiling: the events the sink got, at the same rate,
// written straight to Cassandra the way a batching output without partition awareness writes them
// (Redpanda Connect's cassandra output with logged_batch: false and batching.count: 50): each
// UNLOGGED batch holds the next 50 rows in arrival order, whatever their partitions. Under skew over
// many keys that makes large requests whose rows Cassandra must split into one mutation per
// partition; the question is whether the sink makes Cassandra work less per row than that.
//
// It runs as a subprocess of the harness's own binary (`sink bench --batch-client SPEC`), so its CPU is
// read from /proc like the sink's and holds nothing of the harness's polling. Its events are
// generated before its clock starts (the sink's producer is not counted against the sink either), so
// what it measures is mapping, batching and writing. It speaks to the harness in lines on stdout:
// "ready" when its clock may start, "probe DEVICE EVENT_NS PRODUCED_NS" for every sampled event
// (read back like the sink's, for freshness), "done ROWS REQUESTS PARTITIONS SENDING_NS" at the end; it then waits for its stdin to close, so that its CPU is read before it exits.

// Settings of the 50-row client.
const (
	// batchClientRows is the rows per batch: the peer sent 52 rows per request.
	batchClientRows = 50
	// batchClientInFlight is Redpanda Connect's max_in_flight default for its cassandra output.
	batchClientInFlight = 64
)

// batchClientSpec is what the harness hands the client, as JSON in a file.
type batchClientSpec struct {
	Config      string        `json:"config"` // the bench config of the client's table: policy, hosts, consistency
	Rate        float64       `json:"rate"`   // events/s
	For         time.Duration `json:"for"`
	Entities    int           `json:"entities"`
	Seed        uint64        `json:"seed"` // the generator's seed: the steady phase's, so the same events
	Rows        int           `json:"rows"` // rows per batch
	Period      time.Duration `json:"period"`
	InFlight    int           `json:"in_flight"`
	NumConns    int           `json:"num_conns"`    // connections per host: the sink's
	SampleEvery int           `json:"sample_every"` // every n-th event is a freshness probe
}

// multiBatch cuts rows, in arrival order, into batches of up to size rows whatever their partitions, as
// a count-and-period batching policy does: a batch goes when it is full, or when its first row has
// waited period. Pure: the caller passes the time.
type multiBatch struct {
	size   int
	period time.Duration
	rows   []batcher.Row
	first  time.Time
}

// add appends r, arrived at now, and returns the batch r filled, or nil.
func (m *multiBatch) add(r batcher.Row, now time.Time) []batcher.Row {
	if len(m.rows) == 0 {
		m.first = now
		m.rows = make([]batcher.Row, 0, m.size)
	}
	m.rows = append(m.rows, r)
	if len(m.rows) < m.size {
		return nil
	}
	return m.flush()
}

// due returns the pending rows once the first of them has waited period, else nil.
func (m *multiBatch) due(now time.Time) []batcher.Row {
	if len(m.rows) == 0 || now.Sub(m.first) < m.period {
		return nil
	}
	return m.flush()
}

// flush returns whatever is pending (nil when nothing is).
func (m *multiBatch) flush() []batcher.Row {
	out := m.rows
	m.rows = nil
	return out
}

// partitionsOf is how many distinct Cassandra partitions rows touch.
func partitionsOf(rows []batcher.Row) int {
	seen := make(map[string]struct{}, len(rows))
	for _, r := range rows {
		seen[r.Key] = struct{}{}
	}
	return len(seen)
}

// RunBatchClient is the 50-row client's process (`sink bench --batch-client SPEC`): see the comment at
// the top of this file for what it does and how it reports.
func RunBatchClient(ctx context.Context, specPath string, stdin io.Reader, stdout io.Writer) error {
	b, err := os.ReadFile(specPath)
	if err != nil {
		return fmt.Errorf("reading the client spec: %w", err)
	}
	var sp batchClientSpec
	if err := json.Unmarshal(b, &sp); err != nil {
		return fmt.Errorf("decoding the client spec %s: %w", specPath, err)
	}
	cfg, err := config.Load(sp.Config, nil)
	if err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	entry := cfg.Topics[topicName]
	consistency, err := gocql.ParseConsistencyWrapper(entry.Consistency)
	if err != nil {
		return fmt.Errorf("topics.%s.consistency: %w", topicName, err)
	}
	m, err := newMapper(cfg)
	if err != nil {
		return fmt.Errorf("compiling the mapper for the client: %w", err)
	}
	sess, err := clientSession(cfg.Cassandra.Hosts, "", sp.NumConns, gocql.RoundRobinHostPolicy())
	if err != nil {
		return err
	}
	defer sess.Close()

	// The events, made before the clock starts.
	n := int(sp.Rate * sp.For.Seconds())
	g, err := gen.New(gen.Config{Entities: sp.Entities, Seed: sp.Seed, Start: time.Now(), Rate: sp.Rate})
	if err != nil {
		return err
	}
	events := make([]gen.Event, n)
	for i := range events {
		_, events[i] = g.Append(make([]byte, 0, 192))
	}

	out := bufio.NewWriter(stdout)
	fmt.Fprintln(out, "ready")
	if err := out.Flush(); err != nil {
		return err
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	work := make(chan []batcher.Row)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		requests int
		parts    int
	)
	for range sp.InFlight {
		wg.Go(func() {
			for rows := range work {
				if err := execRows(ctx, sess, rows[0].Target, rows, consistency); err != nil {
					cancel(err)
					continue // drain, so the pacing loop never blocks on a dead pool
				}
				p := partitionsOf(rows) // a report, not the client's work: well under 1% of its CPU per row
				mu.Lock()
				requests++
				parts += p
				mu.Unlock()
			}
		})
	}

	mb := &multiBatch{size: sp.Rows, period: sp.Period}
	send := func(rows []batcher.Row) {
		if rows != nil {
			work <- rows
		}
	}
	start := time.Now()
	tick := time.NewTicker(2 * time.Millisecond) // the steady producer's pacing
	defer tick.Stop()
	sent := 0
	for sent < n && ctx.Err() == nil {
		<-tick.C
		due := min(n, int(time.Since(start).Seconds()*sp.Rate))
		for ; sent < due; sent++ {
			ev := events[sent]
			now := time.Now()
			row, err := m.Map(mapper.Record{Topic: entry.Topic, Offset: int64(sent), Key: ev.Key, Value: ev.Value, Timestamp: now})
			if err != nil {
				cancel(fmt.Errorf("mapping event %d: %w", sent, err))
				break
			}
			if sp.SampleEvery > 0 && sent%sp.SampleEvery == 0 {
				fmt.Fprintf(out, "probe %s %d %d\n", ev.Key, ev.Time.UnixNano(), now.UnixNano())
			}
			send(mb.add(row, now))
		}
		send(mb.due(time.Now()))
		if err := out.Flush(); err != nil {
			cancel(err)
		}
	}
	send(mb.flush())
	sending := time.Since(start)
	close(work)
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return err
	}
	fmt.Fprintf(out, "done %d %d %d %d\n", sent, requests, parts, sending.Nanoseconds())
	if err := out.Flush(); err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, stdin) // until the harness has read this process's CPU
	return err
}

// clientDone is the client's last report.
type clientDone struct {
	rows, requests, partitions int
	sending                    time.Duration
}

// parseClientLine reads one line of the client's report: a probe, or the final counts.
func parseClientLine(line string) (p probe, done *clientDone, err error) {
	f := strings.Fields(line)
	ints := func(fs []string) ([]int64, error) {
		out := make([]int64, len(fs))
		for i, s := range fs {
			if out[i], err = strconv.ParseInt(s, 10, 64); err != nil {
				return nil, fmt.Errorf("the client reported %q: %w", line, err)
			}
		}
		return out, nil
	}
	switch {
	case len(f) == 4 && f[0] == "probe":
		v, err := ints(f[2:])
		if err != nil {
			return probe{}, nil, err
		}
		return probe{device: f[1], event: time.Unix(0, v[0]).UTC(), produced: time.Unix(0, v[1])}, nil, nil
	case len(f) == 5 && f[0] == "done":
		v, err := ints(f[1:])
		if err != nil {
			return probe{}, nil, err
		}
		return probe{}, &clientDone{rows: int(v[0]), requests: int(v[1]), partitions: int(v[2]), sending: time.Duration(v[3])}, nil
	}
	return probe{}, nil, errors.New("the client reported an unknown line: " + line)
}

// batchClient runs the 50-row client at rate for LatencyFor on a fresh table, after the sink's steady
// phase, and measures it as that phase measures the sink: its own CPU and Cassandra's per row, rows per
// request, and freshness from the same kind of probes read back through the reader.
func (h *harness) batchClient(ctx context.Context, rate float64) error {
	o := h.o
	st := setup{
		Brokers: o.Brokers, Hosts: o.Cassandra, Keyspace: o.Keyspace, Topic: o.Prefix + "_live",
		Table: o.Prefix + "_batch50", Group: o.Prefix + "_batch50", CommitInterval: o.CommitInterval,
	}
	// The daemons' overrides too, so that the period is the sink's linger and the connections its own.
	// (The metrics address is unused: the client serves nothing.)
	path, cfg, err := h.freshTable(ctx, &st, "batch50")
	if err != nil {
		return err
	}
	defer h.drop(ctx, st.Table)
	sp := batchClientSpec{
		Config: path, Rate: rate, For: o.LatencyFor, Entities: o.Entities, Seed: steadySeed,
		Rows: batchClientRows, Period: cfg.Writer.Linger.Std(), InFlight: batchClientInFlight, NumConns: cfg.Cassandra.NumConns,
		SampleEvery: o.sampleEvery(rate),
	}
	specPath := path + ".client.json"
	b, err := json.Marshal(sp)
	if err != nil {
		return err
	}
	if err := os.WriteFile(specPath, b, 0o644); err != nil {
		return fmt.Errorf("writing the client spec: %w", err)
	}
	if err := h.settle(ctx, "batch_client"); err != nil {
		return err
	}
	idle, err := h.idle(ctx, "the 50-row client", cfg)
	if err != nil {
		return err
	}

	c := &BatchClient{
		Rate: rate, BatchRows: sp.Rows, Period: sp.Period.String(), InFlight: sp.InFlight,
		NumConns: sp.NumConns, Routing: "round robin (token-unaware)",
		Consistency: cfg.Topics[topicName].Consistency,
	}
	logPath := filepath.Join(o.WorkDir, "batch50.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("creating the client log: %w", err)
	}
	defer logf.Close()
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := exec.CommandContext(cctx, o.HarnessBinary, "bench", "--batch-client", specPath)
	cmd.Stderr = logf
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the 50-row client %s: %w", o.HarnessBinary, err)
	}
	waited := false
	defer func() {
		if !waited {
			cancel()
			cmd.Wait()
		}
	}()
	failed := func(err error) error {
		return fmt.Errorf("the 50-row client: %w; last lines of %s:\n%s", err, logPath, tail(logPath, 20))
	}
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() || lines.Text() != "ready" {
		return failed(fmt.Errorf("no ready line (%q, %v)", lines.Text(), lines.Err()))
	}

	meter, err := startCPUMeter(cmd.Process.Pid, o.CassandraPID)
	if err != nil {
		return err
	}
	c.CassandraCPUNote = meter.cassNote
	probes, freshWait, err := h.startFreshness(ctx, cfg)
	if err != nil {
		return err
	}
	var done *clientDone
	var written atomic.Int64
	h.p.phase(fmt.Sprintf("50-row client at %s events/s", num(rate)), int64(rate*o.LatencyFor.Seconds()), "events", &written)
	for lines.Scan() {
		p, d, err := parseClientLine(lines.Text())
		if err != nil {
			close(probes)
			return failed(err)
		}
		if d != nil {
			done = d
			break
		}
		written.Add(int64(sp.SampleEvery)) // progress only: a probe line stands for the events since the last
		select {
		case probes <- p:
		default: // as the sink's producer does: a probe the poller cannot take is skipped
		}
	}
	close(probes)
	h.p.done()
	if done == nil {
		return failed(fmt.Errorf("it stopped before its report (%v)", lines.Err()))
	}
	var cassWindow time.Duration
	if c.CPUMicrosPerRow, c.CassandraCPUMicrosPerRow, cassWindow, err = meter.perRow(int64(done.rows)); err != nil {
		return err
	}
	c.CassandraPID = meter.cassPID
	stdin.Close()
	waited = true
	if err := cmd.Wait(); err != nil {
		return failed(err)
	}
	if c.Freshness, err = freshWait(); err != nil {
		return err
	}
	c.setNet(idle, c.CassandraCPUMicrosPerRow, int64(done.rows), cassWindow, c.ProbeReads)
	c.Rows, c.Requests, c.Seconds = done.rows, done.requests, done.sending.Seconds()
	c.AchievedRate = float64(done.rows) / done.sending.Seconds()
	if done.requests > 0 {
		c.RowsPerRequest = float64(done.rows) / float64(done.requests)
		c.PartitionsPerRequest = float64(done.partitions) / float64(done.requests)
	}
	h.res.BatchClient = c
	h.res.compareBatchClient()
	h.p.logf("50-row client: %.1f rows per request, CPU per row %.1f µs, Cassandra %.1f µs; readable p50 %.0f ms, p99 %.0f ms",
		c.RowsPerRequest, c.CPUMicrosPerRow, c.CassandraCPUMicrosPerRow, c.FreshP50Millis, c.FreshP99Millis)
	return nil
}
