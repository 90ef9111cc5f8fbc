package writestage

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/cassandra"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/pipeline/offsets"
)

// A simulated sink and node, in a synctest bubble: the real write stage and batcher, fed by Kafka
// partitions that send rows of Zipf-skewed keys (rand.Zipf, as package gen draws the benchmark's devices),
// held to a byte budget as the pipeline holds them, and written to a node that has a few cores and spends a
// fixed time per request plus a time per row. The clock is synctest's, so the outcome depends on the
// stage's decisions alone, never on how busy the machine running the test is: what it measures (rows per
// request, how long each row waited) is the same on every run.

// simConfig describes one simulated run.
type simConfig struct {
	Batcher     batcher.Config
	MaxInFlight int
	Keys        int     // distinct partition keys
	Skew        float64 // Zipf exponent
	Rows        int     // rows in all
	// Budget is how many rows may be held (sent to the stage and not yet written); a backlog run keeps it
	// full, as the pipeline's poll loop does at writer.max_buffered_bytes.
	Budget int
	// Rate is rows per second for a steady run; zero makes a backlog run.
	Rate       float64
	Partitions int // Kafka partitions, each sending its share every Tick, one after another
	Tick       time.Duration
	RowSize    int // batcher.Row.Size of every row

	Cores      int           // the node's cores: requests served at once
	PerRequest time.Duration // a request's fixed cost on the node
	PerRow     time.Duration // and its cost per row
	// StallEvery and StallFor make the node stop serving for StallFor at the start of every StallEvery
	// (a flush, a collector pause, a neighbour taking the cores): requests arriving then wait it out.
	StallEvery, StallFor time.Duration
}

// simRequest is one request the node served.
type simRequest struct {
	rows, partitions int
	key              string // the partition's key when the request holds one partition
}

// simResult is what a run produced.
type simResult struct {
	requests []simRequest
	rows     []simRow
	elapsed  time.Duration
}

// simRow is what became of one row.
type simRow struct {
	key  string
	held time.Duration // from its arrival at the stage until its request reached the node
	wait time.Duration // from its arrival at the stage until its acknowledgement
}

// simNode is the simulated Cassandra node.
type simNode struct {
	cfg   *simConfig
	cores chan struct{}
	start time.Time
	// owners are the Kafka partitions, by number: a request notes when each of its rows reached the node.
	owners []*simOwner
	mu     sync.Mutex
	reqs   []simRequest
}

func (n *simNode) Write(_ context.Context, b *batcher.Batch) ([]cassandra.RowFailure, error) {
	now := time.Now()
	for i := range b.Rows {
		src := b.Rows[i].Source()
		o := n.owners[src.Partition]
		o.run.mu.Lock() // the producing goroutine grows the owner's slices meanwhile
		o.reached[src.Offset] = now
		o.run.mu.Unlock()
	}
	n.cores <- struct{}{}
	if e := n.cfg.StallEvery; e > 0 {
		if in := time.Since(n.start) % e; in < n.cfg.StallFor {
			time.Sleep(n.cfg.StallFor - in)
		}
	}
	time.Sleep(n.cfg.PerRequest + time.Duration(len(b.Rows))*n.cfg.PerRow)
	<-n.cores
	r := simRequest{rows: len(b.Rows), partitions: max(b.Partitions, 1)}
	if r.partitions == 1 {
		r.key = b.Rows[0].Key
	}
	n.mu.Lock()
	n.reqs = append(n.reqs, r)
	n.mu.Unlock()
	return nil, nil
}

// simOwner is one Kafka partition: it notes when each of its rows arrived and was acknowledged, and gives
// the budget back.
type simOwner struct {
	tp      offsets.TopicPartition
	run     *simRun
	sent    []time.Time // by offset
	keys    []string
	reached []time.Time // when the row's request reached the node
	acked   []time.Duration
}

func (o *simOwner) TopicPartition() offsets.TopicPartition { return o.tp }
func (o *simOwner) Context() context.Context               { return context.Background() }
func (o *simOwner) Complete(offs []int64) {
	now := time.Now()
	o.run.mu.Lock()
	defer o.run.mu.Unlock()
	for _, off := range offs {
		o.acked[off] = now.Sub(o.sent[off])
	}
	o.run.held -= len(offs)
	select {
	case o.run.freed <- struct{}{}:
	default:
	}
}
func (o *simOwner) WriteRetrying([]int64, string, string, int, error) {
	panic("the simulated node never fails")
}
func (o *simOwner) WriteRecovered([]int64, string) {}
func (o *simOwner) WriteAbandoned([]int64, string) { panic("the simulated run abandons nothing") }
func (o *simOwner) DeadLetterWrite(int64, string, string, *batcher.Row, error) {
	panic("the simulated node refuses nothing")
}

// simRun is the shared state of a run: the rows held against the budget.
type simRun struct {
	mu    sync.Mutex
	held  int
	freed chan struct{}
}

// simGroup joins small batches into requests of at most 10 partitions (the stage's JoinMax) and 4 KiB as
// Cassandra counts them, as cassandra's Group does with the default writer.group_max_* on a single node
// (every partition has the same replica): a batch larger than the cap goes alone, and so does one that
// does not fit in the open request and is larger than it. Every row counts simRowData, every partition
// 29 more (batcher.DataSize).
func simGroup(bs []*batcher.Batch) []*batcher.Batch {
	const maxParts, maxBytes = 10, 4 << 10
	count := func(b *batcher.Batch) int { return len(b.Rows)*simRowData + 29 }
	var out, cur []*batcher.Batch
	bytes := 0
	for _, b := range bs {
		n := count(b)
		if b.Partitions != 1 || n > maxBytes {
			out = append(out, b)
			continue
		}
		if len(cur) == maxParts || bytes+n > maxBytes {
			if len(cur) < maxParts && n > bytes {
				out = append(out, b)
				continue
			}
			out = append(out, batcher.Join(cur))
			cur, bytes = nil, 0
		}
		cur = append(cur, b)
		bytes += n
	}
	if len(cur) > 0 {
		out = append(out, batcher.Join(cur))
	}
	return out
}

// simRowData is what Cassandra counts of the benchmark's reading in a batch (batcher.DataSize): its
// liveness with a TTL and its deletion (33), the clustering time (8), a cell of 20 bytes and the value
// for site_id ("site-1") and three doubles.
const simRowData = 33 + 8 + (20 + 6) + 3*(20+8)

// simulate runs cfg inside a synctest bubble (the caller's) and returns what the node saw.
func simulate(cfg simConfig) simResult {
	node := &simNode{cfg: &cfg, cores: make(chan struct{}, cfg.Cores), start: time.Now()}
	run := &simRun{freed: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sc := testConfig(node, 0, cfg.MaxInFlight, time.Second)
	sc.Batcher = cfg.Batcher
	sc.Group, sc.JoinMax = simGroup, 10
	sc.BudgetFull = func() bool {
		run.mu.Lock()
		defer run.mu.Unlock()
		return run.held >= cfg.Budget
	}
	s := New(ctx, sc)
	go s.Run()

	keys := make([]string, cfg.Keys)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%05d", i) // k00000 is the busiest
	}
	zipf := rand.NewZipf(rand.New(rand.NewSource(1)), cfg.Skew, 1, uint64(cfg.Keys-1))
	owners := make([]*simOwner, cfg.Partitions)
	node.owners = owners
	for p := range owners {
		owners[p] = &simOwner{tp: offsets.TopicPartition{Topic: "events", Partition: int32(p)}, run: run,
			sent: make([]time.Time, 0, cfg.Rows/cfg.Partitions+1), acked: make([]time.Duration, 0, cfg.Rows/cfg.Partitions+1)}
	}
	perTick := cfg.Rows // a backlog: as much as the budget lets in
	if cfg.Rate > 0 {
		perTick = max(int(cfg.Rate*cfg.Tick.Seconds())/cfg.Partitions, 1)
	}
	start := time.Now()
	for sent := 0; sent < cfg.Rows; {
		for _, o := range owners {
			n := min(perTick, cfg.Rows-sent)
			if cfg.Rate == 0 {
				// Fetch only while the budget has room, in pieces of a fetch's size.
				n = min(n, 500)
				for {
					run.mu.Lock()
					room := cfg.Budget - run.held
					run.mu.Unlock()
					if room > 0 {
						break
					}
					<-run.freed
				}
			}
			if n == 0 {
				break
			}
			rows := make([]batcher.Row, n)
			now := time.Now()
			run.mu.Lock() // the node and the acknowledgements write the owner's slices meanwhile
			for i := range rows {
				off := int64(len(o.sent))
				key := keys[zipf.Uint64()]
				o.sent = append(o.sent, now)
				o.keys = append(o.keys, key)
				o.reached = append(o.reached, time.Time{})
				o.acked = append(o.acked, -1)
				rows[i] = batcher.Row{Target: target, Key: key, Size: int32(cfg.RowSize), EventMicros: now.UnixMicro(),
					Partition: o.tp.Partition, Offset: off}
			}
			run.held += n
			run.mu.Unlock()
			s.In() <- Msg{Rows: rows, Owner: o}
			sent += n
			if cfg.Rate > 0 {
				// Each partition's rows reach the stage at their own moment, as the pipeline's workers
				// send theirs: the stage stamps a message's new batches with the time it arrived.
				time.Sleep(cfg.Tick / time.Duration(cfg.Partitions))
			}
		}
	}
	for {
		run.mu.Lock()
		held := run.held
		run.mu.Unlock()
		if held == 0 {
			break
		}
		<-run.freed
	}
	res := simResult{elapsed: time.Since(start)}
	cancel()
	s.Wait()
	synctest.Wait()
	node.mu.Lock()
	res.requests = node.reqs
	node.mu.Unlock()
	for _, o := range owners {
		for i, w := range o.acked {
			res.rows = append(res.rows, simRow{key: o.keys[i], held: o.reached[i].Sub(o.sent[i]), wait: w})
		}
	}
	return res
}

// rowsPerRequest returns the mean rows per request of the requests keep selects, and how many there were.
func (r simResult) rowsPerRequest(keep func(simRequest) bool) (float64, int) {
	rows, n := 0, 0
	for _, q := range r.requests {
		if keep(q) {
			rows += q.rows
			n++
		}
	}
	if n == 0 {
		return 0, 0
	}
	return float64(rows) / float64(n), n
}

// partsPerRequest returns the mean partitions per request of the requests keep selects, and how many
// there were.
func (r simResult) partsPerRequest(keep func(simRequest) bool) (float64, int) {
	p, n := 0, 0
	for _, q := range r.requests {
		if keep(q) {
			p += q.partitions
			n++
		}
	}
	if n == 0 {
		return 0, 0
	}
	return float64(p) / float64(n), n
}

// busiest is the ten busiest partitions' keys (the Zipf ranks 0 to 9).
func busiest(key string) bool { return key < "k00010" }

// TestBacklogBusyPartitionsFillTheCeilingsBatches guards the batch size of the busy partitions in a backlog:
// with the shipped limits (writer.batch_max_rows, writer.batch_max_bytes) their batches are as large as the
// best single-partition batches `sink bench`'s ceiling found on one Cassandra 5.0.8 node (400 rows), within
// the same budget. With 88f7b98's limits (100 rows, 32 KiB) every busy partition went out in 100-row
// pieces while 400 of the benchmark's rows (122 bytes each) fit in a batch.
func TestBacklogBusyPartitionsFillTheCeilingsBatches(t *testing.T) {
	run := func(maxRows, maxBytes int) simResult {
		var r simResult
		synctest.Test(t, func(t *testing.T) {
			r = simulate(simConfig{
				Batcher:     batcher.Config{MaxRows: maxRows, MaxBytes: maxBytes, Linger: time.Duration(config.DefaultLinger)},
				MaxInFlight: config.DefaultMaxInFlight,
				Keys:        10_000, Skew: 1.1, Rows: 300_000,
				Budget:     int(config.DefaultMaxBufferedBytes) / 380, // a row pins about 380 bytes (docs/PERFORMANCE.md)
				Partitions: 6, RowSize: 122,
				Cores: 2, PerRequest: 250 * time.Microsecond, PerRow: 8 * time.Microsecond,
			})
		})
		return r
	}
	old := run(100, 32<<10)
	shipped := run(config.DefaultBatchMaxRows, int(config.DefaultBatchMaxBytes))
	all := func(simRequest) bool { return true }
	hot := func(q simRequest) bool { return q.partitions == 1 && busiest(q.key) }
	for _, c := range []struct {
		name string
		r    simResult
	}{{"100 rows, 32 KiB", old}, {"shipped", shipped}} {
		a, n := c.r.rowsPerRequest(all)
		h, hn := c.r.rowsPerRequest(hot)
		s, sn := c.r.rowsPerRequest(func(q simRequest) bool { return q.partitions == 1 && !busiest(q.key) })
		g, gn := c.r.rowsPerRequest(func(q simRequest) bool { return q.partitions > 1 })
		t.Logf("%s: %.1f rows per request (%d); the 10 busiest partitions %.1f (%d); other single-partition %.1f (%d); joined %.1f (%d)",
			c.name, a, n, h, hn, s, sn, g, gn)
	}
	if h, _ := shipped.rowsPerRequest(hot); h < 0.95*400 {
		t.Errorf("the busiest partitions' batches carry %.1f rows on average, want about 400", h)
	}
	if a, _ := shipped.rowsPerRequest(all); a <= 0 {
		t.Errorf("no requests")
	} else if o, _ := old.rowsPerRequest(all); a < o {
		t.Errorf("%.1f rows per request with the shipped limits, fewer than %.1f with 100 rows and 32 KiB", a, o)
	}
}

// TestBacklogStarvedPartitionsShareRequests guards the requests of a backlog on a node whose cost per
// request is high against its cost per row, as the benchmark's single Cassandra 5.0.8 node's is: fitted
// to the ceiling's trials of one `sink bench` run (20261127T012303Z: 9,226 batches of 200,000 rows and
// 11,702 of 1,000,000, two cores each time), a request costs it about 1.05 ms and a row 5.4 µs. Rows are
// then held for seconds, the cold partitions (a row or two each) until the starve bound, and in a long
// backlog the oldest batch is past that bound all the time. When each starved batch went out alone, a
// third of the requests carried 3 rows each: 38 rows per request over 300,000 rows, 41 over 1,000,000
// (drained in 15.3 s). Joined like due batches, 53 and 57 (11.9 s); one starved request at a time, so
// full batches keep the slots and the rest keep filling, 53 and 65 (10.7 s).
func TestBacklogStarvedPartitionsShareRequests(t *testing.T) {
	for _, tc := range []struct {
		rows    int
		minRows float64 // rows per request
	}{
		{300_000, 48},
		{1_000_000, 61}, // the full benchmark's backlog
	} {
		t.Run(fmt.Sprintf("%d rows", tc.rows), func(t *testing.T) {
			var r simResult
			synctest.Test(t, func(t *testing.T) {
				r = simulate(simConfig{
					Batcher:     batcher.Config{MaxRows: config.DefaultBatchMaxRows, MaxBytes: int(config.DefaultBatchMaxBytes), Linger: time.Duration(config.DefaultLinger)},
					MaxInFlight: config.DefaultMaxInFlight,
					Keys:        10_000, Skew: 1.1, Rows: tc.rows,
					Budget:     int(config.DefaultMaxBufferedBytes) / 380,
					Partitions: 6, RowSize: 122,
					Cores: 2, PerRequest: 1050 * time.Microsecond, PerRow: 5400 * time.Nanosecond,
				})
			})
			a, n := r.rowsPerRequest(func(simRequest) bool { return true })
			few, fn := r.rowsPerRequest(func(q simRequest) bool { return q.partitions == 1 && q.rows <= 3 })
			all := func(simRow) bool { return true }
			wait := func(x simRow) time.Duration { return x.wait }
			t.Logf("%.1f rows per request (%d); single-partition requests of at most 3 rows: %d (%.1f rows); drained in %v; wait p99 %v, max %v",
				a, n, fn, few, r.elapsed, r.quantile(.99, all, wait), r.quantile(1, all, wait))
			if a < tc.minRows {
				t.Errorf("%.1f rows per request, want at least %.0f", a, tc.minRows)
			}
		})
	}
}

// quantile returns the q-quantile of f over the rows keep selects.
func (r simResult) quantile(q float64, keep func(simRow) bool, f func(simRow) time.Duration) time.Duration {
	var ds []time.Duration
	for _, x := range r.rows {
		if keep(x) {
			ds = append(ds, f(x))
		}
	}
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[min(int(q*float64(len(ds))), len(ds)-1)]
}

// TestDueBatchesJoinedKeepFreshAt40000RowsPerSecond guards produce → readable at 40,000 rows/s, each
// Kafka partition's rows reaching the stage at their own moment as the workers send them, on a node of
// one core at 250 µs per request and 8 µs per row. A slot taken for due batches took only the oldest
// cohort (the batches that one message opened), so once the writes were busy each joined request held
// the new partitions of one message, 2.8 on average against a cap of 10: the requests cost the node more
// than it had, and rows waited 800 ms at the 99th percentile with no stall at all (1.35 s when the node
// stops for 100 ms every second). With the cohort topped up to a request's worth of due batches,
// requests hold about 8 partitions, the node keeps up, and the tail is the linger, or the stall and its
// drain.
func TestDueBatchesJoinedKeepFreshAt40000RowsPerSecond(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		rate                   float64
		stallEvery, stallFor   time.Duration
		maxP99                 time.Duration
		minPartitionsPerJoined float64
	}{
		{"40,000/s, no stall", 40_000, 0, 0, 50 * time.Millisecond, 7},                                                  // 801.6 ms and 2.8 before
		{"40,000/s, 100 ms stop every 1 s", 40_000, time.Second, 100 * time.Millisecond, 200 * time.Millisecond, 7},     // 1.35 s and 2.6
		{"40,000/s, 300 ms stop every 2 s", 40_000, 2 * time.Second, 300 * time.Millisecond, 450 * time.Millisecond, 7}, // 1.71 s and 2.5
		// The node keeps up: one cohort is due at a time, as before (5.7 ms and 3.2).
		{"15,000/s, no stall", 15_000, 0, 0, 10 * time.Millisecond, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r simResult
			synctest.Test(t, func(t *testing.T) {
				r = simulate(simConfig{
					Batcher:     batcher.Config{MaxRows: config.DefaultBatchMaxRows, MaxBytes: int(config.DefaultBatchMaxBytes), Linger: time.Duration(config.DefaultLinger)},
					MaxInFlight: config.DefaultMaxInFlight,
					Keys:        10_000, Skew: 1.1, Rows: int(tc.rate * 10), Rate: tc.rate, Tick: 2 * time.Millisecond,
					Budget:     int(config.DefaultMaxBufferedBytes) / 380,
					Partitions: 6, RowSize: 122,
					Cores: 1, PerRequest: 250 * time.Microsecond, PerRow: 8 * time.Microsecond,
					StallEvery: tc.stallEvery, StallFor: tc.stallFor,
				})
			})
			all := func(simRow) bool { return true }
			wait := func(x simRow) time.Duration { return x.wait }
			a, n := r.rowsPerRequest(func(simRequest) bool { return true })
			joined := func(q simRequest) bool { return q.partitions > 1 }
			jp, jn := r.partsPerRequest(joined)
			sp, sn := r.rowsPerRequest(func(q simRequest) bool { return q.partitions == 1 })
			p99 := r.quantile(.99, all, wait)
			t.Logf("%.1f rows per request (%d); joined: %.1f partitions per request (%d); single-partition: %.1f rows (%d); wait p50 %v, p99 %v, max %v",
				a, n, jp, jn, sp, sn, r.quantile(.5, all, wait), p99, r.quantile(1, all, wait))
			if p99 > tc.maxP99 {
				t.Errorf("p99 of a row's wait = %v, want at most %v", p99, tc.maxP99)
			}
			if jp < tc.minPartitionsPerJoined {
				t.Errorf("joined requests hold %.1f partitions on average, want at least %.1f", jp, tc.minPartitionsPerJoined)
			}
		})
	}
}
