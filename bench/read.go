package bench

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/cassandra"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/mapper"
	"github.com/bucketsink/sink/reader"
	"github.com/bucketsink/sink/reader/output"
	"github.com/bucketsink/sink/schema"
)

// The read phase measures what reading one dense entity back costs: the sink's reader over a month of
// daily buckets, as `sink query` reads it, against the loop a user writes with the driver alone, one
// query per bucket at the driver's default page size, one bucket after the other. Both read the same
// rows of the same table in the same order; rounds alternate which goes first, and each round gives the
// sink ÷ loop ratios of wall time and of Cassandra's CPU per row.

// Defaults of the read phase.
const (
	DefaultReadRows   = 130_000 // the busy device had 130,697 rows over 30 days
	DefaultReadRounds = 5
	readDays          = 30
	readDevice        = "dense-device-1"
	// loopPageSize is the driver's default page size (gocql.NewCluster): what the loop gets by not
	// setting one.
	loopPageSize = 5000
)

// ReadRun is the read phase: one device's rows over readDays daily buckets, read by the sink's reader
// and by a driver loop, round after round.
type ReadRun struct {
	Table  string `json:"table"`
	Device string `json:"device"`
	Days   int    `json:"days"`
	Rows   int    `json:"rows"`
	// From and To are the query's range as `sink query --from --to` takes it: newest first, as --last
	// reads, which is also the table's clustering order (reading_time desc).
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// The reader's settings: those of `sink query` (its defaults), with a page that holds every row.
	PageSize    int `json:"sink_page_size"`
	FetchSize   int `json:"sink_fetch_size"`
	Parallelism int `json:"sink_parallelism"`
	ReadAhead   int `json:"sink_read_ahead"`
	// SinkFormat is the format the sink's rows are printed in, to nowhere, as `sink query` prints them
	// (package output), or "none": read only, as the loop reads (Options.ReadFormat). Printed, the sink's
	// figures include formatting every row, which the loop's do not.
	SinkFormat string `json:"sink_format"`
	// LoopPageSize is the loop's page size, the driver's default.
	LoopPageSize int `json:"loop_page_size"`

	Rounds []ReadRound `json:"rounds"`
	// Medians and ranges over the rounds of sink ÷ loop.
	WallRatio         Spread `json:"wall_ratio"`
	CassandraCPURatio Spread `json:"cassandra_cpu_per_row_ratio"`

	CassandraPID     int    `json:"cassandra_pid,omitempty"`
	CassandraCPUNote string `json:"cassandra_cpu_note,omitempty"`
	// LoadAverage is the machine's one-minute load average when the phase began and when it ended.
	LoadAverage [2]float64 `json:"load_average"`
}

// ReadRound is one round: both readers once, in the order given by SinkFirst.
type ReadRound struct {
	SinkFirst bool     `json:"sink_first"`
	Sink      ReadSide `json:"sink"`
	Loop      ReadSide `json:"loop"`
	// Sink ÷ loop, in this round; 0 when either side's figure is not measured.
	WallRatio         float64 `json:"wall_ratio"`
	CassandraCPURatio float64 `json:"cassandra_cpu_per_row_ratio"`
}

// ReadSide is one read of the device's range.
type ReadSide struct {
	Seconds  float64 `json:"seconds"`
	Rows     int     `json:"rows"`
	Requests int     `json:"requests"` // requests sent to Cassandra, pages included
	// CPU per row read: the harness process (the reading client) and the Cassandra server.
	ClientCPUMicrosPerRow    float64 `json:"client_cpu_us_per_row"`
	CassandraCPUMicrosPerRow float64 `json:"cassandra_cpu_us_per_row"`
}

// Spread is the median and the range of a set of ratios.
type Spread struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// spreadOf is the median (the mean of the middle two for an even count), least and greatest of vs,
// leaving out zeros (not measured); all zero without any.
func spreadOf(vs []float64) Spread {
	vs = slices.DeleteFunc(slices.Clone(vs), func(v float64) bool { return v <= 0 })
	if len(vs) == 0 {
		return Spread{}
	}
	slices.Sort(vs)
	n := len(vs)
	return Spread{Median: (vs[(n-1)/2] + vs[n/2]) / 2, Min: vs[0], Max: vs[n-1]}
}

// addRound sets the round's sink ÷ loop ratios, keeps it, and sets the medians and ranges over the
// rounds kept.
func (rd *ReadRun) addRound(r ReadRound) {
	r.WallRatio = ratio(r.Sink.Seconds, r.Loop.Seconds)
	r.CassandraCPURatio = ratio(r.Sink.CassandraCPUMicrosPerRow, r.Loop.CassandraCPUMicrosPerRow)
	rd.Rounds = append(rd.Rounds, r)
	walls := make([]float64, len(rd.Rounds))
	cpus := make([]float64, len(rd.Rounds))
	for i, x := range rd.Rounds {
		walls[i], cpus[i] = x.WallRatio, x.CassandraCPURatio
	}
	rd.WallRatio, rd.CassandraCPURatio = spreadOf(walls), spreadOf(cpus)
}

// ratio is a ÷ b, the sink's figure over its peer's; 0 when either is not measured.
func ratio(a, b float64) float64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	return a / b
}

// denseEvents are the JSON values of n readings of device spread evenly over the days from start, one
// millisecond past start and then every (days / n), each rounded down to its millisecond, so every
// reading has its own time (the table's only clustering column) and every day holds n/days of them, give
// or take one.
func denseEvents(device string, start time.Time, days, n int) ([][]byte, []time.Time) {
	span := int64(days) * 24 * int64(time.Hour/time.Millisecond)
	values := make([][]byte, n)
	times := make([]time.Time, n)
	for i := range n {
		t := start.Add(time.Duration(1+int64(i)*span/int64(n)) * time.Millisecond)
		times[i] = t
		v := []byte(`{"device_id":` + strconv.Quote(device) + `,"ts":"` + t.Format("2006-01-02T15:04:05.000Z07:00") + `","site":{"id":"site-1"},`)
		v = fmt.Appendf(v, `"temperature":%.2f,"humidity":%.1f,"battery":%.3f}`, 15+float64(i%1000)/100, 40+float64(i%300)/10, 3.7-float64(i%500)/1000)
		values[i] = v
	}
	return values, times
}

// rowDigest accumulates the reading times of rows in the order read: two reads of the same rows in the
// same order have the same count and sum.
type rowDigest struct {
	rows int
	sum  uint64
}

func (d *rowDigest) add(t time.Time) {
	h := fnv.New64a()
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(t.UnixMilli()))
	h.Write(b[:])
	d.sum = d.sum*31 + h.Sum64()
	d.rows++
}

// dayKeys are the bucket keys a user loops over: the days of [start, start+days), newest first, each
// formatted with the bucket policy's layout.
func dayKeys(layout string, start time.Time, days int) []string {
	keys := make([]string, days)
	for i := range days {
		keys[i] = start.UTC().AddDate(0, 0, days-1-i).Format(layout)
	}
	return keys
}

// requestCounter counts the requests a session sends for the queries it observes.
type requestCounter struct{ n atomic.Int64 }

func (c *requestCounter) ObserveQuery(context.Context, gocql.ObservedQuery) { c.n.Add(1) }

// readPhase writes o.ReadRows readings of one device over readDays days to a fresh table and reads them
// back o.ReadRounds times both ways.
func (h *harness) readPhase(ctx context.Context) error {
	o := h.o
	st := setup{Brokers: o.Brokers, Hosts: o.Cassandra, Keyspace: o.Keyspace, Topic: o.Prefix + "_read",
		Table: o.Prefix + "_read", Group: o.Prefix + "_read", CommitInterval: o.CommitInterval}
	_, cfg, err := h.freshTable(ctx, &st, "read")
	if err != nil {
		return err
	}
	end := backlogStart(0) // the start of the current UTC day
	start := end.AddDate(0, 0, -readDays)
	want, err := h.writeDense(ctx, cfg, st, start)
	if err != nil {
		return err
	}
	// Rows just written sit in memtables: a flush (and its compaction) would land in whichever read runs
	// next. Wait for a quiet machine once the rows are in.
	if err := h.settle(ctx, "read"); err != nil {
		return err
	}

	run := &ReadRun{Table: st.Table, Device: readDevice, Days: readDays, Rows: o.ReadRows,
		From: end.Add(-time.Millisecond), To: start, PageSize: o.ReadRows, FetchSize: reader.DefaultFetchSize,
		Parallelism: reader.DefaultParallelism, ReadAhead: reader.DefaultReadAhead, SinkFormat: cmp.Or(o.ReadFormat, "none"), LoopPageSize: loopPageSize}
	run.LoadAverage[0] = loadAverage()

	// The sink reads as `sink query` does: its session (cassandra.Connect of the config) and a reader
	// with the command's defaults,
	sinkSess, err := cassandra.Connect(ctx, cfg.Cassandra)
	if err != nil {
		return err
	}
	defer sinkSess.Close()
	var sinkReqs requestCounter
	rd, err := reader.New(reader.Config{Session: sinkSess.Driver(), Sink: cfg, Topic: topicName,
		FetchSize: run.FetchSize, Parallelism: run.Parallelism, ReadAhead: run.ReadAhead, Observer: &sinkReqs})
	if err != nil {
		return err
	}
	tbl := rd.Table()
	q := reader.Query{ID: []any{readDevice}, From: run.From, To: run.To, PageSize: run.PageSize}
	// streaming the rows as it does; with a format, it prints them as it does, each as it is read, to
	// nowhere (stdout sent to /dev/null).
	readSink := func() (rowDigest, error) {
		var d rowDigest
		scan := func(fn func(reader.Row) error) (reader.Page, error) {
			return rd.Scan(ctx, q, func(row reader.Row) error {
				t, _ := row.Values[tbl.Clustering[0].Name].(time.Time)
				d.add(t)
				return fn(row)
			})
		}
		if run.SinkFormat == "none" {
			_, err := scan(func(reader.Row) error { return nil })
			return d, err
		}
		_, _, err := output.Print(io.Discard, run.SinkFormat, tbl.Columns, scan)
		return d, err
	}

	// The loop: a session as gocql.NewCluster makes it, with the keyspace set.
	c := gocql.NewCluster(o.Cassandra...)
	c.Keyspace = o.Keyspace
	loopSess, err := c.CreateSession()
	if err != nil {
		return fmt.Errorf("connecting the read loop to Cassandra at %v: %w", o.Cassandra, err)
	}
	defer loopSess.Close()
	var loopReqs requestCounter
	stmt, timeAt := loopStatement(tbl)
	keys := dayKeys(tbl.Policy.Layout(), start, readDays)
	readLoop := func() (rowDigest, error) {
		return loopRead(ctx, loopSess, stmt, timeAt, readDevice, keys, &loopReqs)
	}

	measure := func(read func() (rowDigest, error), reqs *requestCounter, side *ReadSide, name string) error {
		m, err := startCPUMeter(os.Getpid(), o.CassandraPID)
		if err != nil {
			return err
		}
		run.CassandraPID, run.CassandraCPUNote = m.cassPID, m.cassNote
		reqs.n.Store(0)
		t0 := time.Now()
		d, err := read()
		el := time.Since(t0)
		if err != nil {
			return fmt.Errorf("reading the dense device (%s): %w", name, err)
		}
		if d != want {
			return fmt.Errorf("the %s read %d rows (digest %x), want the %d written (digest %x)", name, d.rows, d.sum, want.rows, want.sum)
		}
		side.Seconds, side.Rows, side.Requests = el.Seconds(), d.rows, int(reqs.n.Load())
		if d.rows > 0 {
			side.ClientCPUMicrosPerRow, side.CassandraCPUMicrosPerRow, _, err = m.perRow(int64(d.rows))
		}
		return err
	}
	// An untimed pass of each warms the JIT, the caches and the prepared statements.
	for _, read := range []func() (rowDigest, error){readSink, readLoop} {
		if _, err := read(); err != nil {
			return fmt.Errorf("reading the dense device (warm-up): %w", err)
		}
	}
	for i := range max(o.ReadRounds, 1) {
		r := ReadRound{SinkFirst: i%2 == 0}
		sides := []func() error{
			func() error { return measure(readSink, &sinkReqs, &r.Sink, "sink's reader") },
			func() error { return measure(readLoop, &loopReqs, &r.Loop, "driver loop") },
		}
		if !r.SinkFirst {
			slices.Reverse(sides)
		}
		for _, side := range sides {
			if err := side(); err != nil {
				return err
			}
		}
		run.addRound(r)
		h.p.logf("read round %d: sink %.3f s, %d requests, Cassandra %.2f µs/row; loop %.3f s, %d requests, Cassandra %.2f µs/row",
			i+1, r.Sink.Seconds, r.Sink.Requests, r.Sink.CassandraCPUMicrosPerRow, r.Loop.Seconds, r.Loop.Requests, r.Loop.CassandraCPUMicrosPerRow)
	}
	run.LoadAverage[1] = loadAverage()
	h.res.Read = run
	h.drop(ctx, st.Table)
	return nil
}

// writeDense writes the dense device's rows straight to cfg's table in single-partition batches of the
// sink's size, and returns the digest a read of them newest first must match.
func (h *harness) writeDense(ctx context.Context, cfg *config.Config, st setup, start time.Time) (rowDigest, error) {
	o := h.o
	values, times := denseEvents(readDevice, start, readDays, o.ReadRows)
	m, err := newMapper(cfg)
	if err != nil {
		return rowDigest{}, fmt.Errorf("compiling the mapper of the read phase: %w", err)
	}
	rows := make([]batcher.Row, len(values))
	for i, v := range values {
		if rows[i], err = m.Map(mapper.Record{Topic: st.Topic, Offset: int64(i), Value: v, Timestamp: times[i]}); err != nil {
			return rowDigest{}, fmt.Errorf("mapping a reading of the dense device: %w", err)
		}
	}
	w := cfg.Writer
	s := ceilingSetting{BatchRows: w.BatchMaxRows, BatchBytes: int(w.BatchMaxBytes), Concurrency: w.MaxInFlight}
	consistency, err := gocql.ParseConsistencyWrapper(cfg.Topics[topicName].Consistency)
	if err != nil {
		return rowDigest{}, err
	}
	sess, err := ceilingSession(o.Cassandra, o.Keyspace, 1)
	if err != nil {
		return rowDigest{}, err
	}
	defer sess.Close()
	var done atomic.Int64
	h.p.phase("read: write the dense device", int64(len(rows)), "rows", &done)
	_, err = writeCeiling(ctx, func(ctx context.Context, b *batcher.Batch) error { return execBatch(ctx, sess, b, consistency) },
		groupRows(rows, s), s.Concurrency, &done)
	h.p.done()
	if err != nil {
		return rowDigest{}, err
	}
	var d rowDigest
	for i := len(times) - 1; i >= 0; i-- {
		d.add(times[i])
	}
	return d, nil
}

// loopStatement is the loop's query of one day: every column of the table, in its order, by the whole
// partition key (the device, then the day), in the table's own clustering order; timeAt is the index of
// the time column among the columns.
func loopStatement(t schema.Table) (stmt string, timeAt int) {
	names := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		names[i] = c.Name
		if c.Name == t.Clustering[0].Name {
			timeAt = i
		}
	}
	return "SELECT " + strings.Join(names, ", ") + " FROM " + t.Name + " WHERE " + strings.Join(t.PartitionKey, " = ? AND ") + " = ?", timeAt
}

// loopRead is the user's loop: for each day, one query whose iterator pages through it at the driver's
// default page size.
func loopRead(ctx context.Context, s *gocql.Session, stmt string, timeAt int, device string, days []string, obs gocql.QueryObserver) (rowDigest, error) {
	var d rowDigest
	for _, day := range days {
		iter := s.Query(stmt, device, day).Observer(obs).IterContext(ctx)
		rd, err := iter.RowData()
		if err != nil {
			return d, errors.Join(err, iter.Close())
		}
		for iter.Scan(rd.Values...) {
			d.add(*rd.Values[timeAt].(*time.Time))
		}
		if err := iter.Close(); err != nil {
			return d, fmt.Errorf("reading day %s: %w", day, err)
		}
	}
	return d, nil
}

// loadAverage is the machine's one-minute load average; 0 when /proc/loadavg cannot be read.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f, _, _ := strings.Cut(string(b), " ")
	v, _ := strconv.ParseFloat(f, 64)
	return v
}
