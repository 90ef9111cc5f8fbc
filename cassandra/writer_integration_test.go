package cassandra

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/internal/testenv"
	"github.com/bucketsink/sink/packed"
)

// pick is what the host selection policy saw for one batch.
type pick struct {
	key      []byte
	keyErr   error
	keyspace string
}

// pickRecorder wraps the session's real policy and records the routing key and keyspace each
// batch presents to it, which is all the token-aware policy routes by.
type pickRecorder struct {
	gocql.HostSelectionPolicy
	mu    sync.Mutex
	picks []pick
}

func (p *pickRecorder) Pick(q gocql.ExecutableStatement) gocql.NextHost {
	if _, ok := q.Statement().(*gocql.Batch); ok {
		key, err := q.GetRoutingKey()
		p.mu.Lock()
		p.picks = append(p.picks, pick{key: bytes.Clone(key), keyErr: err, keyspace: q.Keyspace()})
		p.mu.Unlock()
	}
	return p.HostSelectionPolicy.Pick(q)
}

func (p *pickRecorder) take() []pick {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.picks
	p.picks = nil
	return out
}

// fixture is a session on the test Cassandra, a fresh keyspace, and a policy recorder.
type fixture struct {
	s        *Session
	ks       string
	recorder *pickRecorder
}

func setup(t testing.TB) *fixture { return setupProto(t, 0) }

// setupProto is setup with a fixed native protocol version (0 negotiates); each of opts then changes the
// session's cluster configuration.
func setupProto(t testing.TB, proto int, opts ...func(*gocql.ClusterConfig)) *fixture {
	t.Helper()
	hosts := testenv.Cassandra(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cluster, cons, err := newCluster(config.Cassandra{Hosts: hosts, Consistency: "LOCAL_QUORUM", ProtocolVersion: proto})
	if err != nil {
		t.Fatal(err)
	}
	rec := &pickRecorder{HostSelectionPolicy: cluster.PoolConfig.HostSelectionPolicy}
	cluster.PoolConfig.HostSelectionPolicy = rec
	for _, o := range opts {
		o(cluster)
	}
	s, err := connectCluster(ctx, cluster, cons)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	f := &fixture{s: s, ks: testenv.Name(t, "cw"), recorder: rec}
	f.exec(t, fmt.Sprintf("CREATE KEYSPACE %s WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}", f.ks))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = s.gs.Query("DROP KEYSPACE IF EXISTS " + f.ks).ExecContext(ctx)
	})
	return f
}

func (f *fixture) exec(t testing.TB, stmt string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := f.s.gs.Query(stmt, args...).ExecContext(ctx); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}

// readings creates the table most tests write: a composite partition key, two clustering columns.
func (f *fixture) readings(t testing.TB) *batcher.Target {
	t.Helper()
	f.exec(t, fmt.Sprintf(`CREATE TABLE %s.readings (id text, bucket text, ts timestamp, tag text, value double,
		PRIMARY KEY ((id, bucket), ts, tag))`, f.ks))
	return &batcher.Target{
		Keyspace: f.ks, Table: "readings", Columns: []string{"id", "bucket", "ts", "tag", "value"},
		Insert: fmt.Sprintf("INSERT INTO %s.readings (id, bucket, ts, tag, value) VALUES (?, ?, ?, ?, ?) USING TIMESTAMP ?", f.ks),
		Shape:  batcher.RowShape{KeyColumns: 2, Clustering: 2, Regular: 1, Timestamp: true},
	}
}

var base = time.Date(2024, 1, 15, 14, 0, 0, 0, time.UTC)

// readingRow builds row i of partition (id, bucket), with Key set to the routing key the way the
// mapper does: for text components the UTF-8 bytes, in the composite encoding.
func readingRow(t *batcher.Target, id, bucket string, i int) batcher.Row {
	return batcher.Row{
		Target: t,
		Key:    string(testenv.AppendRoutingKey(nil, []byte(id), []byte(bucket))),
		Packed: packed.MustPack(readingTypes, readingValues(id, bucket, i)...),
		Size:   40,
		Offset: int64(i),
	}
}

// readingTypes are the types of a readings row's values: its columns, then the write timestamp.
var readingTypes = []string{"text", "text", "timestamp", "text", "double", "bigint"}

// readingValues are the values of readingRow, as Go values.
func readingValues(id, bucket string, i int) []any {
	ts := base.Add(time.Duration(i) * time.Second)
	return []any{id, bucket, ts, "t", float64(i), ts.UnixMicro()}
}

func batchOf(rows ...batcher.Row) *batcher.Batch {
	b := &batcher.Batch{Target: rows[0].Target, Key: rows[0].Key, Rows: rows}
	for _, r := range rows {
		b.Bytes += int(r.Size)
	}
	return b
}

func (f *fixture) count(t *testing.T, id, bucket string) int {
	t.Helper()
	var n int
	if err := f.s.gs.Query(fmt.Sprintf("SELECT count(*) FROM %s.readings WHERE id = ? AND bucket = ?", f.ks), id, bucket).
		ScanContext(t.Context(), &n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestIntegrationWriteBatch(t *testing.T) {
	f := setup(t)
	tgt := f.readings(t)
	rows := make([]batcher.Row, 50)
	for i := range rows {
		rows[i] = readingRow(tgt, "sensor-1", "2024-01-15", i)
	}
	rec := &recorder{}
	w := NewWriter(f.s, WriterConfig{}, rec)
	failed, err := w.Write(t.Context(), batchOf(rows...))
	if err != nil || len(failed) != 0 {
		t.Fatalf("Write = %v, %v", failed, err)
	}
	if n := f.count(t, "sensor-1", "2024-01-15"); n != 50 {
		t.Fatalf("%d rows in the partition, want 50", n)
	}
	var v float64
	if err := f.s.gs.Query(fmt.Sprintf("SELECT value FROM %s.readings WHERE id = ? AND bucket = ? AND ts = ? AND tag = 't'", f.ks),
		"sensor-1", "2024-01-15", base.Add(17*time.Second)).ScanContext(t.Context(), &v); err != nil || v != 17 {
		t.Fatalf("row 17 reads back %v, %v", v, err)
	}
	if !equal(rec.outcomes, []string{OutcomeOK}) || rec.inFlight != 0 {
		t.Fatalf("observer saw %v, in flight %d", rec.outcomes, rec.inFlight)
	}
}

// TestIntegrationRouting proves the driver routes our batches by the partition key with the
// target's keyspace (DRIVER-NOTES F2.1/F2.2): the routing key the policy sees equals Row.Key, and
// its keyspace is the target's although the session has none.
//
// Batch.SetKeyspace is documented for protocol 5 only: there it also travels in the frame. On
// protocol 4 the driver still uses it for routing and for the prepared-statement cache, and our
// statements name their keyspace, so both versions are checked.
func TestIntegrationRouting(t *testing.T) {
	for _, proto := range []int{4, 5} {
		t.Run(fmt.Sprint("protocol ", proto), func(t *testing.T) { testRouting(t, proto) })
	}
}

func testRouting(t *testing.T, proto int) {
	f := setupProto(t, proto)
	tgt := f.readings(t)
	f.exec(t, fmt.Sprintf("CREATE TABLE %s.single (k bigint PRIMARY KEY, v text)", f.ks))
	single := &batcher.Target{Keyspace: f.ks, Table: "single", Columns: []string{"k", "v"},
		Insert: fmt.Sprintf("INSERT INTO %s.single (k, v) VALUES (?, ?)", f.ks)}
	w := NewWriter(f.s, WriterConfig{}, nil)

	for _, id := range []string{"a", "sensor-2", "ünïcode-ü"} {
		f.recorder.take()
		b := batchOf(readingRow(tgt, id, "2024-01-15", 1), readingRow(tgt, id, "2024-01-15", 2))
		if failed, err := w.Write(t.Context(), b); err != nil || len(failed) != 0 {
			t.Fatalf("Write = %v, %v", failed, err)
		}
		checkPicks(t, f.recorder.take(), b.Key, f.ks)
	}

	f.recorder.take()
	key := binary.BigEndian.AppendUint64(nil, uint64(42))
	b := batchOf(batcher.Row{Target: single, Key: string(key), Packed: packed.MustPack([]string{"bigint", "text"}, int64(42), "x"), Size: 9})
	if failed, err := w.Write(t.Context(), b); err != nil || len(failed) != 0 {
		t.Fatalf("Write = %v, %v", failed, err)
	}
	checkPicks(t, f.recorder.take(), string(key), f.ks)

	// The replicas are looked up in the driver's schema metadata, which learns of a new keyspace
	// from a schema-change event, debounced by a second.
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := f.s.gs.KeyspaceMetadata(f.ks)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the driver has no metadata for keyspace %s, so the policy cannot find its replicas: %v", f.ks, err)
		}
		t.Logf("waiting for keyspace metadata: %v", err)
		time.Sleep(500 * time.Millisecond)
	}
}

func checkPicks(t *testing.T, picks []pick, key, keyspace string) {
	t.Helper()
	if len(picks) == 0 {
		t.Fatal("the host selection policy saw no batch")
	}
	for _, p := range picks {
		if p.keyErr != nil || string(p.key) != key || p.keyspace != keyspace {
			t.Fatalf("policy saw routing key %x (err %v) keyspace %q; want %x and %q", p.key, p.keyErr, p.keyspace, key, keyspace)
		}
	}
}

// TestIntegrationTokenMatchesCassandra checks Token against the server's token() for single blob
// keys of every tail length and beyond one block, with random bytes (so the sign-extension quirk
// of tail bytes >= 0x80 is exercised), and for composite keys.
func TestIntegrationTokenMatchesCassandra(t *testing.T) {
	f := setup(t)
	f.exec(t, fmt.Sprintf("CREATE TABLE %s.blobs (k blob PRIMARY KEY)", f.ks))
	f.exec(t, fmt.Sprintf("CREATE TABLE %s.pairs (a text, b int, c bigint, PRIMARY KEY ((a, b)))", f.ks))
	rng := rand.New(rand.NewPCG(1, 2))

	serverToken := func(stmt string, args ...any) int64 {
		t.Helper()
		var tok int64
		if err := f.s.gs.Query(stmt, args...).ScanContext(t.Context(), &tok); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
		return tok
	}
	for n := 1; n <= 40; n++ {
		for range 3 {
			k := make([]byte, n)
			for i := range k {
				k[i] = byte(rng.UintN(256))
			}
			k[n-1] |= 0x80 // the last tail byte always has its high bit set
			f.exec(t, fmt.Sprintf("INSERT INTO %s.blobs (k) VALUES (?)", f.ks), k)
			want := serverToken(fmt.Sprintf("SELECT token(k) FROM %s.blobs WHERE k = ?", f.ks), k)
			if got := testenv.Token(k); got != want {
				t.Fatalf("Token(%x) = %d, Cassandra says %d", k, got, want)
			}
		}
	}
	for i, a := range []string{"", "x", "sensor-000042", "ü-unicode-ÿÿÿ", strings.Repeat("long", 20)} {
		b := int32(i*1_000_003 - 7)
		f.exec(t, fmt.Sprintf("INSERT INTO %s.pairs (a, b, c) VALUES (?, ?, 1)", f.ks), a, b)
		want := serverToken(fmt.Sprintf("SELECT token(a, b) FROM %s.pairs WHERE a = ? AND b = ?", f.ks), a, b)
		key := testenv.AppendRoutingKey(nil, []byte(a), binary.BigEndian.AppendUint32(nil, uint32(b)))
		if got := testenv.Token(key); got != want {
			t.Fatalf("Token(%q, %d) = %d, Cassandra says %d", a, b, got, want)
		}
	}
}

// TestIntegrationPoisonRows: rows the server refuses one by one (a null clustering value, a
// clustering value over the 64 KiB key limit) both marshal fine in the driver. They fail the whole
// batch; the writer isolates them, returns exactly them, and writes every other row.
func TestIntegrationPoisonRows(t *testing.T) {
	f := setup(t)
	tgt := f.readings(t)
	rows := make([]batcher.Row, 10)
	for i := range rows {
		rows[i] = readingRow(tgt, "sensor-p", "2024-01-15", i)
	}
	repack := func(i int, edit func(vals []any) []any) {
		rows[i].Packed = packed.MustPack(readingTypes, edit(readingValues("sensor-p", "2024-01-15", i))...)
	}
	repack(3, func(v []any) []any { v[2] = nil; return v })                         // ts: null clustering value
	repack(7, func(v []any) []any { v[3] = strings.Repeat("x", 70_000); return v }) // tag: longer than a clustering value may be
	repack(5, func(v []any) []any { return v[:4] })                                 // a mapper bug: one value short

	rec := &recorder{}
	w := NewWriter(f.s, WriterConfig{RetryAttempts: 3}, rec)
	failed, err := w.Write(t.Context(), batchOf(rows...))
	if err != nil {
		t.Fatalf("Write returned error %v; want the refused rows as failures", err)
	}
	var offsets []int64
	for _, fl := range failed {
		offsets = append(offsets, fl.Row.Offset)
		if IsRetryable(fl.Err) {
			t.Errorf("offset %d fails with a retryable error: %v", fl.Row.Offset, fl.Err)
		}
		t.Logf("offset %d refused: %v", fl.Row.Offset, fl.Err)
	}
	if fmt.Sprint(offsets) != "[5 3 7]" {
		t.Fatalf("failed offsets %v, want [5 3 7]", offsets)
	}
	var invalid *gocql.RequestErrInvalid
	if !errors.As(failed[1].Err, &invalid) {
		t.Fatalf("null clustering value: %T %v, want a *gocql.RequestErrInvalid", errors.Unwrap(failed[1].Err), failed[1].Err)
	}
	if n := f.count(t, "sensor-p", "2024-01-15"); n != 7 {
		t.Fatalf("%d rows written, want the 7 good ones", n)
	}
}

// A missing table is the statement's fault, not the rows': the batch comes back whole, marked as a
// missing table (the pipeline creates the slice or waits for the table), instead of every row going
// to the dead-letter topic.
func TestIntegrationMissingTableIsNotPoison(t *testing.T) {
	f := setup(t)
	for _, ks := range []string{f.ks, f.ks + "_none"} { // a missing table, then a missing keyspace
		tgt := &batcher.Target{Keyspace: ks, Table: "nope", Insert: fmt.Sprintf("INSERT INTO %s.nope (id) VALUES (?)", ks)}
		w := NewWriter(f.s, WriterConfig{RetryAttempts: 2}, nil)
		failed, err := w.Write(t.Context(), batchOf(batcher.Row{Target: tgt, Key: "a", Packed: packed.MustPack([]string{"text"}, "a")}))
		var we *WriteError
		if len(failed) != 0 || !errors.As(err, &we) || we.Table != "nope" || we.Reason != FailMissingTable || !IsMissingTable(err) {
			t.Fatalf("Write = %v, %v; want a *WriteError for a missing table nope and no row failures", failed, err)
		}
		t.Logf("error: %v", err)
	}
}

// A statement prepared while its table existed, then run after the table was dropped (an old slice
// dropped under a late record), fails as a missing table too: the outcome must not depend on
// whether the statement happened to be cached, and no row may be dead-lettered for it.
func TestIntegrationDroppedTableWithCachedStatementIsNotDeadLettered(t *testing.T) {
	f := setup(t)
	tgt := f.readings(t)
	w := NewWriter(f.s, WriterConfig{RetryAttempts: 2}, nil)
	if failed, err := w.Write(t.Context(), batchOf(readingRow(tgt, "sensor-d", "2024-01-15", 0))); err != nil || len(failed) != 0 {
		t.Fatalf("first write = %v, %v", failed, err)
	}
	f.exec(t, "DROP TABLE "+f.ks+".readings")
	rows := []batcher.Row{readingRow(tgt, "sensor-d", "2024-01-15", 1), readingRow(tgt, "sensor-d", "2024-01-15", 2)}
	failed, err := w.Write(t.Context(), batchOf(rows...))
	var we *WriteError
	if len(failed) != 0 || !errors.As(err, &we) || we.Reason != FailMissingTable {
		for _, fl := range failed {
			t.Logf("refused: %T %v", errors.Unwrap(fl.Err), fl.Err)
		}
		t.Fatalf("Write after DROP TABLE = %d row failures, %v; want a missing-table *WriteError and no row failures", len(failed), err)
	}
	t.Logf("error: %v", err)
}

// A request that cannot finish within its attempt timeout is retried, and once the attempts run out
// the batch is reported as not written: a timeout is never taken for success.
func TestIntegrationAttemptTimeoutIsNeverSuccess(t *testing.T) {
	f := setup(t)
	tgt := f.readings(t)
	rec := &recorder{}
	w := NewWriter(f.s, WriterConfig{RetryAttempts: 3, RetryInitial: time.Millisecond, AttemptTimeout: time.Microsecond}, rec)
	// Prepare while the timeout allows it, so the attempts below time out on the write itself.
	if _, err := f.s.statement(t.Context(), tgt.Keyspace, tgt.Insert); err != nil {
		t.Fatal(err)
	}
	failed, err := w.Write(t.Context(), batchOf(readingRow(tgt, "sensor-t", "2024-01-15", 1)))
	var we *WriteError
	if len(failed) != 0 || !errors.As(err, &we) || we.Attempts != 3 {
		t.Fatalf("Write = %v, %v; want a *WriteError after 3 attempts", failed, err)
	}
	if !IsRetryable(err) || retryReason(err) != ReasonTimeout {
		t.Fatalf("error %v: retryable %v reason %q, want a retryable timeout", err, IsRetryable(err), retryReason(err))
	}
	if !equal(rec.outcomes, []string{OutcomeRetry, OutcomeRetry, OutcomeError}) || !equal(rec.retries, []string{ReasonTimeout, ReasonTimeout}) {
		t.Fatalf("observer saw outcomes %v retries %v", rec.outcomes, rec.retries)
	}
}

// BenchmarkIntegrationWrite writes 100-row single-partition batches from 32 goroutines to the test
// Cassandra and reports rows per second (the local stack is one node on a shared machine, so the
// number is a floor, not a capacity).
func BenchmarkIntegrationWrite(b *testing.B) {
	f := setup(b)
	tgt := f.readings(b)
	w := NewWriter(f.s, WriterConfig{MaxInFlight: 32}, nil)
	var seq atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(16) // 16 × GOMAXPROCS goroutines
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n := seq.Add(1)
			rows := make([]batcher.Row, 100)
			for i := range rows {
				rows[i] = readingRow(tgt, fmt.Sprint("bench-", n%1000), "2024-01-15", int(n)*100+i)
			}
			if failed, err := w.Write(b.Context(), batchOf(rows...)); err != nil || len(failed) > 0 {
				b.Fatalf("Write = %v, %v", failed, err)
			}
		}
	})
	b.ReportMetric(float64(b.N*100)/time.Since(start).Seconds(), "rows/s")
}

func TestIntegrationConnect(t *testing.T) {
	hosts := testenv.Cassandra(t)
	s, err := Connect(t.Context(), config.Cassandra{Hosts: hosts})
	if err != nil {
		t.Fatal(err)
	}
	var v string
	if err := s.Driver().Query("SELECT release_version FROM system.local").ScanContext(t.Context(), &v); err != nil {
		t.Fatal(err)
	}
	t.Logf("Cassandra %s, default write consistency %v", v, s.Consistency())
	s.Close()
	s.Close() // idempotent

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, err = Connect(ctx, config.Cassandra{Hosts: []string{"127.0.0.1:1"}, ConnectTimeout: config.Duration(time.Second)})
	if err == nil || !strings.Contains(err.Error(), "cassandra.hosts") {
		t.Fatalf("connecting to a closed port: %v, want an error naming cassandra.hosts", err)
	}
}

// BenchmarkIntegrationWriteSteady is one request as a steady stream of a few thousand rows a second
// sends it: six partitions of two rows, due together, joined by Group and written, one request at a
// time. What it measures is what the writer and the driver spend on such a request (the rows are
// made before the clock starts); run it under callgrind for instructions per request (see
// docs/PERFORMANCE.md).
func BenchmarkIntegrationWriteSteady(b *testing.B) {
	f := setup(b)
	tgt := f.readings(b)
	w := NewWriter(f.s, WriterConfig{MaxInFlight: 32}, nil)
	const parts, perPart, sets = 6, 2, 64
	made := make([][]batcher.Row, sets*parts)
	for k := range made {
		for i := range perPart {
			made[k] = append(made[k], readingRow(tgt, fmt.Sprint("steady-", k), "2024-01-15", k*perPart+i))
		}
	}
	bs := make([]*batcher.Batch, 0, parts)
	b.ReportAllocs()
	for n := 0; b.Loop(); n++ {
		bs = bs[:0]
		for p := range parts {
			bb := batchOf(made[(n%sets)*parts+p]...)
			bb.Partitions = 1
			bs = append(bs, bb)
		}
		for _, req := range w.Group(bs) {
			if failed, err := w.Write(b.Context(), req); err != nil || len(failed) > 0 {
				b.Fatalf("Write = %v, %v", failed, err)
			}
			batcher.Release(req)
		}
	}
	b.ReportMetric(float64(parts*perPart), "rows/op")
}

// TestIntegrationCachedStatementTakesNoInFlightSlot: once a statement is prepared, a write takes one
// in-flight slot, for its request. The statement's cache lookup went through the retry loop like a
// request, taking a slot (and, in the daemon, an attempt's deadline) on every write for a map lookup.
func TestIntegrationCachedStatementTakesNoInFlightSlot(t *testing.T) {
	f := setup(t)
	tgt := f.readings(t)
	rec := &recorder{}
	w := NewWriter(f.s, WriterConfig{}, rec)
	for i := range 2 {
		if failed, err := w.Write(t.Context(), batchOf(readingRow(tgt, "sensor-c", "2024-01-15", i))); err != nil || len(failed) > 0 {
			t.Fatalf("Write = %v, %v", failed, err)
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.starts != 3 {
		t.Fatalf("two writes took %d in-flight slots, want 3 (the first write's prepare, then one request each)", rec.starts)
	}
}
