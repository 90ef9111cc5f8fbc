package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/cassandra"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/internal/backoff"
	"github.com/bucketsink/sink/mapper"
	"github.com/bucketsink/sink/packed"
)

// ceilingSetting is one configuration of the direct writer.
type ceilingSetting struct {
	// Writer is "gocql" (batches built and executed here, straight on the driver) or "sink" (the
	// sink's own cassandra.Writer, with its retry loop and observer calls). Both are direct: no
	// Kafka, no decoding in the timed part. Trying both tells the writer's own cost apart.
	Writer      string
	BatchRows   int
	BatchBytes  int
	Concurrency int
	NumConns    int
}

const (
	writerGocql = "gocql"
	writerSink  = "sink"
)

func (s ceilingSetting) String() string {
	return fmt.Sprintf("%s writer, %d rows/batch, %d in flight, %d conns", s.Writer, s.BatchRows, s.Concurrency, s.NumConns)
}

// maxCeilingRowsInFlight bounds the rows a ceiling setting keeps in flight (rows per batch × concurrency):
// the most any setting held while the sink's default batch was 100 rows, and what the node's heap has
// carried in every run since.
const maxCeilingRowsInFlight = 102_400

// ceilingGrid is the settings the ceiling tries. The sink's own limits (its batch rows and bytes, in
// flight, connections) are among them so the ceiling is never worse than what the sink is
// allowed; the others probe larger batches and more or less concurrency, which on a CPU-bound
// single node can go either way.
//
// A setting that would hold more than maxCeilingRowsInFlight rows in flight is left out: with 400-row
// batches, 4× the rows at 4× the concurrency kept 409,600 rows in flight and ran the local stack's
// node (1 GiB heap) out of memory.
func ceilingGrid(quick bool, sinkRows, sinkBytes, sinkInFlight, sinkConns int) []ceilingSetting {
	base := ceilingSetting{Writer: writerGocql, BatchRows: sinkRows, BatchBytes: sinkBytes, Concurrency: sinkInFlight, NumConns: sinkConns}
	if quick {
		return []ceilingSetting{base}
	}
	grid := []ceilingSetting{base}
	for _, s := range []ceilingSetting{
		{Writer: writerSink, BatchRows: sinkRows, BatchBytes: sinkBytes, Concurrency: sinkInFlight, NumConns: sinkConns},
		{Writer: writerGocql, BatchRows: sinkRows, BatchBytes: sinkBytes, Concurrency: 16, NumConns: sinkConns},
		{Writer: writerGocql, BatchRows: sinkRows, BatchBytes: sinkBytes, Concurrency: 256, NumConns: sinkConns},
		{Writer: writerGocql, BatchRows: 4 * sinkRows, BatchBytes: 4 * sinkBytes, Concurrency: sinkInFlight, NumConns: sinkConns},
		{Writer: writerGocql, BatchRows: 4 * sinkRows, BatchBytes: 4 * sinkBytes, Concurrency: 4 * sinkInFlight, NumConns: sinkConns},
		{Writer: writerGocql, BatchRows: sinkRows, BatchBytes: sinkBytes, Concurrency: sinkInFlight, NumConns: 1},
	} {
		if s != base && s.BatchRows*s.Concurrency <= maxCeilingRowsInFlight {
			grid = append(grid, s)
		}
	}
	return grid
}

// ceilingRows maps every record, read from topic, with the sink's mapper for cfg into its row in each
// table of the entries that read topic: the rows the sink would write, record by record, in entry-name
// order within a record. A record any entry refuses is an error: every backlog record is valid.
func ceilingRows(ctx context.Context, cfg *config.Config, topic string, records []record) ([]batcher.Row, error) {
	m, err := newMapper(cfg)
	if err != nil {
		return nil, fmt.Errorf("compiling the mapper for the ceiling: %w", err)
	}
	rows := make([]batcher.Row, 0, len(records)*len(m.Entries(topic)))
	var out []mapper.Mapped
	for _, rec := range records {
		if out, err = m.MapAll(ctx, rec.mapperRecord(topic), out[:0]); err != nil {
			return nil, fmt.Errorf("mapping a backlog record for the ceiling: %w", err)
		}
		for _, o := range out {
			if o.Err != nil {
				return nil, fmt.Errorf("mapping a backlog record for the ceiling: %w", o.Err)
			}
			rows = append(rows, o.Row)
		}
	}
	return rows, nil
}

// groupRows cuts rows into single-partition batches under the setting's limits. It sees every row
// before writing, so unlike the sink it never sends a batch short because its linger ran out: each
// partition's rows go out in as few batches as the limits allow. That is the best case the
// ceiling is meant to be.
func groupRows(rows []batcher.Row, s ceilingSetting) []*batcher.Batch {
	b := batcher.New(batcher.Config{MaxRows: s.BatchRows, MaxBytes: s.BatchBytes, Linger: time.Hour})
	now := time.Now()
	var out []*batcher.Batch
	for i := range rows {
		out = append(out, b.Add(&rows[i], now)...)
	}
	return append(out, b.Flush()...)
}

// ceilingSession opens a gocql session tuned for raw write throughput: token-aware routing with the
// keyspace set (so batches route to their replica), the given connections per host.
func ceilingSession(hosts []string, keyspace string, numConns int) (*gocql.Session, error) {
	return clientSession(hosts, keyspace, numConns, gocql.TokenAwareHostPolicy(gocql.RoundRobinHostPolicy(), gocql.ShuffleReplicas()))
}

// clientSession opens a gocql session of the harness's direct writers with the given routing.
func clientSession(hosts []string, keyspace string, numConns int, policy gocql.HostSelectionPolicy) (*gocql.Session, error) {
	c := gocql.NewCluster(hosts...)
	c.Keyspace = keyspace
	c.NumConns = numConns
	c.Timeout = 12 * time.Second
	c.ConnectTimeout = 10 * time.Second
	c.PoolConfig.HostSelectionPolicy = policy
	s, err := c.CreateSession()
	if err != nil {
		return nil, fmt.Errorf("connecting to Cassandra at %v: %w", hosts, err)
	}
	return s, nil
}

// writeCeiling writes batches with a fixed pool of workers and returns the elapsed time. Every
// entry is idempotent, so the driver may retry it; the harness retries a failed batch for up to a minute
// itself (the sink does too), and gives up on the run when one keeps failing.
func writeCeiling(ctx context.Context, write func(context.Context, *batcher.Batch) error, batches []*batcher.Batch, concurrency int, done *atomic.Int64) (time.Duration, error) {
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(len(batches)) || ctx.Err() != nil {
					return
				}
				if err := write(ctx, batches[i]); err != nil {
					errOnce.Do(func() { firstErr = err; cancel() })
					return
				}
				done.Add(int64(len(batches[i].Rows)))
			}
		}()
	}
	wg.Wait()
	return time.Since(start), firstErr
}

func execBatch(ctx context.Context, s *gocql.Session, b *batcher.Batch, consistency gocql.Consistency) error {
	return execRows(ctx, s, b.Target, b.Rows, consistency)
}

// execRows writes rows of table t as one UNLOGGED batch, every entry idempotent, whatever partitions
// they are in, retrying a few times.
func execRows(ctx context.Context, s *gocql.Session, t *batcher.Target, rows []batcher.Row, consistency gocql.Consistency) error {
	gb := s.Batch(gocql.UnloggedBatch).Consistency(consistency)
	gb.Entries = make([]gocql.BatchEntry, len(rows))
	var bd packed.Binder                                 // the arguments point into the rows: no copy of their bytes
	bd.Reserve(len(rows) * packed.Count(rows[0].Packed)) // one table: every row binds as many values
	for i, r := range rows {
		gb.Entries[i] = gocql.BatchEntry{Stmt: t.Insert, Args: bd.Args(r.Packed), Idempotent: true}
	}
	// A timeout on a busy machine is no reason to end the run: retry as the sink would, with capped
	// backoff, for up to a minute of failures in a row.
	var err error
	retry := backoff.Policy{Initial: 100 * time.Millisecond, Max: 2 * time.Second}
	for attempt, start := 1, time.Now(); ; attempt++ {
		if err = gb.ExecContext(ctx); err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Since(start) > time.Minute {
			break
		}
		if backoff.Sleep(ctx, retry.Delay(attempt)) != nil {
			return ctx.Err()
		}
	}
	return fmt.Errorf("writing a batch of %d rows to %s.%s: %w", len(rows), t.Keyspace, t.Table, err)
}

// sinkWrite adapts the sink's cassandra.Writer to writeCeiling. A row the writer gives back as
// refused is an error here: every backlog row is valid, so a refusal means the run is broken.
func sinkWrite(w *cassandra.Writer) func(context.Context, *batcher.Batch) error {
	return func(ctx context.Context, b *batcher.Batch) error {
		failed, err := w.Write(ctx, b)
		if err != nil {
			return err
		}
		if len(failed) > 0 {
			return fmt.Errorf("%d rows of a batch refused; first: %w", len(failed), failed[0].Err)
		}
		return nil
	}
}
