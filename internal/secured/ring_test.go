package secured

import (
	"context"
	"sync"
	"syscall"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/bucketsink/sink/internal/testenv"
)

// ringFixture is a running `sink run` writing one topic into a keyspace with replication factor 3 on the ring, at
// LOCAL_QUORUM.
type ringFixture struct {
	t        *testing.T
	broker   string
	topic    string
	group    string
	keyspace string
	session  *gocql.Session // QUORUM reads through every node
	sink     *sinkProc
}

// rows counts the rows at QUORUM (two of the three replicas answer).
func (f *ringFixture) rows() (int, error) {
	var n int
	err := f.session.Query("SELECT count(*) FROM " + f.keyspace + ".events").Consistency(gocql.Quorum).Scan(&n)
	return n, err
}

// waitFor polls until rows and committed offsets both reach want, failing after limit or when the sink exits.
func (f *ringFixture) waitFor(want int, limit time.Duration) {
	t := f.t
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		rows, err := f.rows()
		done := err == nil && rows == want && committed(t, f.broker, f.group) == int64(want)
		if done {
			return
		}
		select {
		case err := <-f.sink.done:
			t.Fatalf("the sink exited (%v) before %d rows were written and committed; output:\n%s", err, want, f.sink.out.String())
		default:
		}
		if time.Now().After(deadline) {
			out := f.sink.out.String()
			t.Fatalf("after %s: %d rows (read error %v), committed %d; want %d of each; the sink's last output:\n%s",
				limit, rows, err, committed(t, f.broker, f.group), want, out[max(0, len(out)-12000):])
		}
		time.Sleep(time.Second)
	}
}

// newRingFixture makes a topic of three partitions, a consistency-QUORUM session on the ring and a keyspace with
// replication factor 3 for one ring test, and returns it with the ring's contact points.
func newRingFixture(t *testing.T, name string) (*ringFixture, []string) {
	t.Helper()
	ring := testenv.Ring(t)
	brokers := testenv.Kafka(t)
	f := &ringFixture{t: t, broker: brokers[0], topic: testenv.Name(t, name), group: testenv.Name(t, "group"),
		keyspace: testenv.Name(t, "ks")}
	testenv.CreateTopic(t, brokers, f.topic, 3)

	cluster := gocql.NewCluster(ring...)
	cluster.Timeout = 10 * time.Second
	cluster.ConnectTimeout = 10 * time.Second
	cluster.ReconnectInterval = 2 * time.Second
	var err error
	if f.session, err = cluster.CreateSession(); err != nil {
		t.Fatalf("connecting to the ring %v: %v", ring, err)
	}
	t.Cleanup(f.session.Close)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := f.session.Query("CREATE KEYSPACE " + f.keyspace +
		" WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}").ExecContext(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.session.Query("DROP KEYSPACE IF EXISTS " + f.keyspace).Exec() })
	return f, ring
}

// TestLocalQuorumKeepsWritingWithOneReplicaDownAndResumesAfterTwo runs one `sink run` at LOCAL_QUORUM on a
// three-node ring with replication factor 3 while replicas go down:
//   - all up: every record written and committed;
//   - one node stopped mid-stream: writing and committing go on, nothing is lost;
//   - a second node stopped: no quorum, so no write succeeds, and the committed offsets stay where they were
//     (no committed offset passes an unwritten row);
//   - both nodes started again: the same sink process resumes by itself and every row arrives, once.
//
// The nodes are stopped with SIGTERM, which drains them. A SIGKILL would be harsher but not more telling here:
// the stack's nodes run with cassandra.unsafesystem and a periodic commit log, so a killed node can come back
// without the test's keyspace and, until it pulls the schema again, answer "keyspace does not exist".
func TestLocalQuorumKeepsWritingWithOneReplicaDownAndResumesAfterTwo(t *testing.T) {
	f, ring := newRingFixture(t, "ring")
	// Whatever happens below, the ring is whole again for the next test.
	t.Cleanup(func() {
		testenv.RingNode(t, "start", 2)
		testenv.RingNode(t, "start", 3)
	})

	// Short backoffs, so a test of minutes sees the retries resume quickly.
	writer := "writer:\n  retry_initial: 200ms\n  retry_max: 2s\n"
	cfg := writeConfig(t, "ring", kafkaSide{broker: f.broker}, cassSide{hosts: ring, consistency: "LOCAL_QUORUM"},
		f.keyspace, f.topic, f.group, writer)
	if code, out := runSink(t, 2*time.Minute, "schema", "--apply", "--config", cfg); code != 0 {
		t.Fatalf("sink schema --apply exited %d:\n%s", code, out)
	}
	f.sink = startSink(t, "run", "--config", cfg)

	const step = 150
	produce(t, f.broker, f.topic, 0, step)
	f.waitFor(step, 2*time.Minute)

	testenv.RingNode(t, "stop", 3)
	produce(t, f.broker, f.topic, step, step)
	f.waitFor(2*step, 2*time.Minute)

	testenv.RingNode(t, "stop", 2)
	produce(t, f.broker, f.topic, 2*step, step)
	// With one replica of three, LOCAL_QUORUM is unavailable: for 20 s the commits must not move.
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(time.Second) {
		if got := committed(t, f.broker, f.group); got != 2*step {
			t.Fatalf("with two of three replicas down, the group committed %d, want %d: an offset passed unwritten rows", got, 2*step)
		}
	}

	// Both nodes back, started side by side; the sink is left alone.
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, n := range []int{2, 3} {
		wg.Go(func() { errs[i] = testenv.RingControl("start", n) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	f.waitFor(3*step, 4*time.Minute)

	var sum int64
	iter := f.session.Query("SELECT value FROM " + f.keyspace + ".events").Consistency(gocql.Quorum).Iter()
	var v int64
	for iter.Scan(&v) {
		sum += v
	}
	if err := iter.Close(); err != nil {
		t.Fatal(err)
	}
	if want := int64(3 * step * (3*step - 1) / 2); sum != want {
		t.Errorf("the values sum to %d, want %d: a row is missing or wrong", sum, want)
	}
	if err := f.sink.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := f.sink.wait(t, 2*time.Minute); code != 0 {
		t.Fatalf("sink run exited %d after SIGTERM; output:\n%s", code, f.sink.out.String())
	}
}
