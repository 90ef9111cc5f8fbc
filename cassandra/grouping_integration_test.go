package cassandra

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/internal/testenv"
	"github.com/bucketsink/sink/packed"
)

// wide creates a table of eight columns with a TTL (the table's default_time_to_live: 12 bytes a row more
// to the server than batcher.DataSize counts), whose rows are about the size of the benchmark's.
func (f *fixture) wide(t *testing.T) *batcher.Target {
	t.Helper()
	f.exec(t, fmt.Sprintf(`CREATE TABLE %s.wide (id text, bucket text, ts timestamp, kind text, site text, unit text,
		value double, seq bigint, PRIMARY KEY ((id, bucket), ts)) WITH default_time_to_live = 86400`, f.ks))
	return &batcher.Target{
		Keyspace: f.ks, Table: "wide", Columns: []string{"id", "bucket", "ts", "kind", "site", "unit", "value", "seq"},
		Insert: fmt.Sprintf("INSERT INTO %s.wide (id, bucket, ts, kind, site, unit, value, seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?) USING TIMESTAMP ?", f.ks),
		Shape:  batcher.RowShape{KeyColumns: 2, Clustering: 1, Regular: 5, Timestamp: true},
	}
}

// wideBatch is partition id's rows 0..n-1 of the wide table, each with its Size computed as the mapper
// does (values with their 4-byte lengths, plus the per-row overhead).
func wideBatch(tgt *batcher.Target, id string, n int) *batcher.Batch {
	key := testenv.AppendRoutingKey(nil, []byte(id), []byte("2024-01-15"))
	b := &batcher.Batch{Target: tgt, Partitions: 1}
	for i := range n {
		ts := base.Add(time.Duration(i) * time.Second)
		r := packRow(tgt, []string{"text", "text", "timestamp", "text", "text", "text", "double", "bigint", "bigint"},
			[]any{id, "2024-01-15", ts, "temperature", "plant-north-07", "celsius", 21.5 + float64(i), int64(i), ts.UnixMicro()}, key)
		r.Offset = int64(i)
		b.Key = r.Key
		b.Rows = append(b.Rows, r)
		b.Bytes += int(r.Size)
	}
	return b
}

// TestIntegrationGroupedRequestsAreWrittenWithinTheirCaps: small batches of many partitions due
// together go as few requests, each within writer.group_max_partitions and writer.group_max_bytes,
// every row of every partition is written, and the server warns about none of them (gocql v2.1.2 drops
// the text of a successful batch's warnings; the response's header still says there were some).
func TestIntegrationGroupedRequestsAreWrittenWithinTheirCaps(t *testing.T) {
	seen := &warnings{}
	f := setupProto(t, 0, func(c *gocql.ClusterConfig) { c.FrameHeaderObserver = seen })
	tgt := f.wide(t)
	w := NewWriter(f.s, WriterConfig{}, nil)
	var due []*batcher.Batch
	for i := range 60 {
		due = append(due, wideBatch(tgt, fmt.Sprintf("device-%03d", i), 1+i%3))
	}
	reqs := w.Group(due)
	if len(reqs) >= 20 {
		t.Fatalf("60 partitions went as %d requests; want them joined", len(reqs))
	}
	for _, r := range reqs {
		if n := batcher.DataSize(r); r.Partitions > config.DefaultGroupMaxPartitions || n > int(config.DefaultGroupMaxBytes) {
			t.Errorf("a request of %d partitions and %d bytes, over the defaults", r.Partitions, n)
		}
		before := seen.n.Load() // the keyspace's creation may draw a warning of its own (replication)
		if failed, err := w.Write(t.Context(), r); err != nil || len(failed) > 0 {
			t.Fatalf("Write = %v, %v", failed, err)
		}
		if seen.n.Load() > before {
			t.Errorf("the server warned about a request of %d partitions, %d rows, %d bytes", r.Partitions, len(r.Rows), batcher.DataSize(r))
		}
	}
	for i := range 60 {
		var n int
		if err := f.s.gs.Query(fmt.Sprintf("SELECT count(*) FROM %s.wide WHERE id = ? AND bucket = ?", f.ks),
			fmt.Sprintf("device-%03d", i), "2024-01-15").ScanContext(t.Context(), &n); err != nil {
			t.Fatal(err)
		}
		if n != 1+i%3 {
			t.Fatalf("device-%03d has %d rows, want %d", i, n, 1+i%3)
		}
	}
}

// TestIntegrationRefusedRowInAGroupedRequestIsIsolatedWithinItsPartition: a row Cassandra refuses fails
// the whole joined request; the writer then sends each partition as its own batch, and only the rows
// of the partition Cassandra refuses alone. It returns exactly the refused row and writes the others
// of every partition, in 1 + 10 + 4 requests for 10 partitions of 4 rows (row by row across the whole
// request, as before, it took 1 + 40).
func TestIntegrationRefusedRowInAGroupedRequestIsIsolatedWithinItsPartition(t *testing.T) {
	f := setup(t)
	tgt := f.readings(t)
	rec := &recorder{}
	w := NewWriter(f.s, WriterConfig{RetryAttempts: 3}, rec)
	const parts, perPart = 10, 4
	var due []*batcher.Batch
	for i := range parts {
		id := fmt.Sprintf("g-%d", i)
		var rows []batcher.Row
		for j := range perPart {
			rows = append(rows, readingRow(tgt, id, "2024-01-15", perPart*i+j))
		}
		b := batchOf(rows...)
		b.Partitions = 1
		due = append(due, b)
	}
	const bad = 2*perPart + 1 // partition g-2's second row
	due[2].Rows[1].Packed = packed.MustPack(readingTypes, func() []any {
		v := readingValues("g-2", "2024-01-15", bad)
		v[2] = nil // a null clustering value: Cassandra refuses the row
		return v
	}()...)
	reqs := w.Group(due)
	if len(reqs) != 1 || reqs[0].Partitions != parts {
		t.Fatalf("%d small partitions went as %d requests", parts, len(reqs))
	}
	failed, err := w.Write(t.Context(), reqs[0])
	if err != nil {
		t.Fatalf("Write returned %v; want the refused row as a failure", err)
	}
	if len(failed) != 1 || failed[0].Row.Offset != bad {
		t.Fatalf("failures %v; want only offset %d", failed, bad)
	}
	for i := range parts {
		want := perPart
		if i == 2 {
			want = perPart - 1
		}
		if n := f.count(t, fmt.Sprintf("g-%d", i), "2024-01-15"); n != want {
			t.Errorf("partition g-%d has %d rows, want %d", i, n, want)
		}
	}
	// The joined request, then each partition alone, the refused one followed by its rows alone.
	want := []int{parts * perPart}
	for i := range parts {
		want = append(want, perPart)
		if i == 2 {
			want = append(want, slices.Repeat([]int{1}, perPart)...)
		}
	}
	if got := rec.sent(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("requests sent (rows each) %v, want %v", got, want)
	}
}

// TestIntegrationGroupedRequestRefusedAsTooLargeIsWrittenPartitionByPartition guards writer.group_max_bytes
// raised past the servers' batch_size_fail_threshold (50 KiB by default; config warns of it): Cassandra
// refuses the joined request as too large, though no row of it is bad. The writer sends each partition
// again as its own batch (exempt from the threshold), in 1 + 4 requests, writes every row and reports
// none refused; it must not send the rows one by one, nor dead-letter any.
func TestIntegrationGroupedRequestRefusedAsTooLargeIsWrittenPartitionByPartition(t *testing.T) {
	f := setup(t)
	tgt := f.wide(t)
	rec := &recorder{}
	w := NewWriter(f.s, WriterConfig{RetryAttempts: 3, Group: GroupConfig{MaxBytes: 1 << 20}}, rec)
	const parts, perPart = 4, 250 // about 25 KiB a partition, 100 KiB joined
	var due []*batcher.Batch
	for i := range parts {
		due = append(due, wideBatch(tgt, fmt.Sprintf("big-%d", i), perPart))
	}
	reqs := w.Group(due)
	if len(reqs) != 1 || reqs[0].Partitions != parts {
		t.Fatalf("%d partitions went as %d requests; want them joined", parts, len(reqs))
	}
	failed, err := w.Write(t.Context(), reqs[0])
	if err != nil || len(failed) != 0 {
		t.Fatalf("Write = %d failures, %v; want every row written", len(failed), err)
	}
	for i := range parts {
		var n int
		if err := f.s.gs.Query(fmt.Sprintf("SELECT count(*) FROM %s.wide WHERE id = ? AND bucket = ?", f.ks),
			fmt.Sprintf("big-%d", i), "2024-01-15").ScanContext(t.Context(), &n); err != nil {
			t.Fatal(err)
		}
		if n != perPart {
			t.Errorf("big-%d has %d rows, want %d", i, n, perPart)
		}
	}
	want := []int{parts * perPart}
	for range parts {
		want = append(want, perPart)
	}
	if got := rec.sent(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("requests sent (rows each) %v, want %v", got, want)
	}
}

// lookupCounter counts the replica lookups (Session.Replicas) the policy is asked.
type lookupCounter struct {
	gocql.HostSelectionPolicy
	lookups atomic.Int64
}

func (c *lookupCounter) Pick(q gocql.ExecutableStatement) gocql.NextHost {
	if _, ok := q.(replicaLookup); ok {
		c.lookups.Add(1)
	}
	return c.HostSelectionPolicy.Pick(q)
}

// TestIntegrationGroupAsksTheRingOncePerPartition: the replica set of a partition Group has seen is
// remembered, not asked of the driver for every due take (a token computation, a walk of the ring and
// allocations for every partition of every request of a steady stream). The second take of the same
// partitions asks nothing, and is grouped as the first.
func TestIntegrationGroupAsksTheRingOncePerPartition(t *testing.T) {
	f := setup(t)
	tgt := f.wide(t)
	count := &lookupCounter{HostSelectionPolicy: f.s.policy}
	f.s.policy = count
	cfg := GroupConfig{MaxPartitions: 10, MaxBytes: 4096}
	take := func() []*batcher.Batch {
		var bs []*batcher.Batch
		for i := range 6 {
			bs = append(bs, wideBatch(tgt, fmt.Sprint("device-", i), 1))
		}
		return f.s.Group(cfg, bs)
	}
	if got := take(); len(got) != 1 || got[0].Partitions != 6 {
		t.Fatalf("first take: %d requests, want one of 6 partitions (a single node holds them all)", len(got))
	}
	if n := count.lookups.Load(); n != 6 {
		t.Fatalf("first take asked the ring %d times, want 6 (one per partition)", n)
	}
	if got := take(); len(got) != 1 || got[0].Partitions != 6 {
		t.Fatalf("second take: %d requests, want one of 6 partitions", len(got))
	}
	if n := count.lookups.Load(); n != 6 {
		t.Fatalf("the two takes asked the ring %d times, want 6: the second take's partitions were asked again", n)
	}
}

// TestIntegrationRequestsAreWrittenWithoutACoalescingGoroutine guards the driver setting that makes
// each request write its own frame: with the driver's default, every connection runs a goroutine that
// each frame is handed to and that waits 200 µs for more, three goroutine wake-ups a request for
// syscalls it seldom saved at the sink's request rates.
func TestIntegrationRequestsAreWrittenWithoutACoalescingGoroutine(t *testing.T) {
	f := setup(t)
	tgt := f.wide(t)
	w := NewWriter(f.s, WriterConfig{}, nil)
	if failed, err := w.Write(t.Context(), wideBatch(tgt, "device-1", 3)); err != nil || len(failed) > 0 {
		t.Fatalf("Write = %v, %v", failed, err)
	}
	buf := make([]byte, 1<<22)
	stacks := string(buf[:runtime.Stack(buf, true)])
	if strings.Contains(stacks, "writeCoalescer") {
		t.Fatalf("a write-coalescing goroutine runs:\n%s", stacks)
	}
}
