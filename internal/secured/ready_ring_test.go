package secured

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bucketsink/sink/internal/testenv"
)

// readyz asks the sink's /readyz and returns its status code and body (0 when it does not answer).
func readyz(addr string) (int, string) {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + addr + "/readyz")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(body))
}

// untilReady polls /readyz every 250 ms until it answers want, and returns how long that took; it fails the
// test after limit.
func untilReady(t *testing.T, addr string, want int, limit time.Duration, what string) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		code, body := readyz(addr)
		if code == want {
			return time.Since(start)
		}
		if time.Since(start) > limit {
			t.Fatalf("%s: /readyz still answers %d (%s) after %s, want %d", what, code, body, limit, want)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// freeAddr is a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestReadinessFollowsWhetherWritesCanSucceedAtQuorum runs one `sink run` at QUORUM on the three-node ring with
// replication factor 3, and reads its /readyz as Kubernetes would:
//   - idle, every node up: ready;
//   - idle, every node answering each request about 2.5 s late (all three frozen and thawed in turn): still
//     ready, for a slow answer is an answer;
//   - idle, two nodes stopped: not ready within the documented bound (docs/PIPELINE.md, "Metrics and health"), though
//     the remaining node answers, because no write can reach QUORUM;
//   - records produced while the quorum is gone: still not ready, and nothing committed past them;
//   - one node back, a quorum again: ready again by itself, and every record written.
func TestReadinessFollowsWhetherWritesCanSucceedAtQuorum(t *testing.T) {
	f, ring := newRingFixture(t, "ready")
	t.Cleanup(func() {
		for n := 1; n <= 3; n++ {
			_ = testenv.RingControl("resume", n)
		}
		testenv.RingNode(t, "start", 2)
		testenv.RingNode(t, "start", 3)
	})

	addr := freeAddr(t)
	writer := "writer:\n  retry_initial: 200ms\n  retry_max: 2s\n"
	metrics := fmt.Sprintf("metrics:\n  address: %q\n", addr)
	cfg := writeConfig(t, "ready", kafkaSide{broker: f.broker}, cassSide{hosts: ring, consistency: "QUORUM"},
		f.keyspace, f.topic, f.group, writer, metrics)
	if code, out := runSink(t, 2*time.Minute, "schema", "--apply", "--config", cfg); code != 0 {
		t.Fatalf("sink schema --apply exited %d:\n%s", code, out)
	}
	f.sink = startSink(t, "run", "--config", cfg)
	const step = 100
	produce(t, f.broker, f.topic, 0, step)
	f.waitFor(step, 2*time.Minute)
	untilReady(t, addr, http.StatusOK, 30*time.Second, "every node up")

	// Slow but answering: for 30 s every node is frozen 2.5 s and thawed 0.5 s, all three together, so each
	// request waits up to 2.5 s for its answer. The sink is idle: only its probe asks Cassandra anything.
	slowEnd := time.Now().Add(30 * time.Second)
	for time.Now().Before(slowEnd) {
		for n := 1; n <= 3; n++ {
			testenv.RingNode(t, "pause", n)
		}
		time.Sleep(2500 * time.Millisecond)
		if code, body := readyz(addr); code != http.StatusOK {
			t.Errorf("an idle sink whose nodes answer late: /readyz %d (%s), want 200", code, body)
		}
		for n := 1; n <= 3; n++ {
			testenv.RingNode(t, "resume", n)
		}
		time.Sleep(500 * time.Millisecond)
	}
	untilReady(t, addr, http.StatusOK, 30*time.Second, "nodes thawed")

	// Two nodes stopped while the sink is idle: one replica of three answers, QUORUM cannot be had.
	testenv.RingNode(t, "stop", 3)
	lost := time.Now()
	testenv.RingNode(t, "stop", 2) // a drain: the node is gone some seconds after it is told
	untilReady(t, addr, http.StatusServiceUnavailable, readinessBound, "two of three nodes stopped")
	t.Logf("not ready %s after the second node was told to stop", time.Since(lost).Round(time.Second))
	if _, body := readyz(addr); !strings.Contains(body, "consistency") {
		t.Errorf("/readyz says %q, want the reason (the write consistency cannot be had)", body)
	}

	// Records arrive while there is no quorum: not ready throughout, nothing committed past them.
	produce(t, f.broker, f.topic, step, step)
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(time.Second) {
		if code, body := readyz(addr); code != http.StatusServiceUnavailable {
			t.Fatalf("with writes failing at QUORUM, /readyz answered %d (%s)", code, body)
		}
		if got := committed(t, f.broker, f.group); got != step {
			t.Fatalf("committed %d with two of three replicas down, want %d", got, step)
		}
	}

	// One node back: a quorum again. The sink, left alone, is ready again and writes what waited.
	back := time.Now()
	testenv.RingNode(t, "start", 2)
	served := time.Since(back)
	untilReady(t, addr, http.StatusOK, 2*readinessBound, "a quorum back")
	t.Logf("ready %s after the node was started (it served after %s)", time.Since(back).Round(time.Second), served.Round(time.Second))
	f.waitFor(2*step, 3*time.Minute)
}

// readinessBound is the longest docs/PIPELINE.md ("Metrics and health") gives an idle daemon to turn not ready once its
// write consistency cannot be had, with the defaults: three ping intervals of write proof, one interval to
// the next turn, and the probe's answer (Unavailable is immediate; a node that does not answer at all takes
// the probe's timeout, cassandra.timeout, 12 s), with a margin for the nodes' own notice of the stop.
const readinessBound = 3*5*time.Second + 5*time.Second + 12*time.Second + 15*time.Second
