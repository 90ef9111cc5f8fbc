package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
)

// Environment variables of the Cassandra ring of `scripts/stack up --cassandra-nodes N`.
const (
	EnvRing         = "SINK_TEST_RING"           // the nodes' host:port, comma-separated
	EnvRingStackDir = "SINK_TEST_RING_STACK_DIR" // the stack directory, for `scripts/stack ring`
)

// Ring returns the contact points of a multi-node Cassandra ring, one per node. Without SINK_TEST_RING the test
// is skipped, except under CI=true, where it fails like every integration test without its servers: `make test`
// starts the ring and runs the ring tests in a pass of their own.
func Ring(t testing.TB) []string {
	t.Helper()
	addrs := splitAddrs(os.Getenv(EnvRing))
	if len(addrs) < 3 {
		msg := "no three-node Cassandra ring for this test (SINK_TEST_RING lists " + strconv.Itoa(len(addrs)) +
			" nodes): run `scripts/stack up --cassandra-nodes 3` and export $(scripts/stack env)"
		if isTrue(os.Getenv(EnvCI)) {
			t.Fatal(msg + "; CI=true, so this is a failure, not a skip")
		}
		t.Skip(msg)
	}
	return addrs
}

// RingNode stops ("stop": SIGTERM, a drain), kills ("kill": SIGKILL) or starts again ("start", keeping its data,
// returning once it serves) ring node n (1-based) through `scripts/stack ring`, and fails t if that fails.
func RingNode(t testing.TB, action string, n int) {
	t.Helper()
	if err := RingControl(action, n); err != nil {
		t.Fatal(err)
	}
}

// RingControl is RingNode for a goroutine: it returns the failure instead of ending the test.
func RingControl(action string, n int) error {
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "..", "scripts", "stack")
	cmd := exec.Command(script, "ring", action, strconv.Itoa(n))
	cmd.Env = os.Environ()
	if dir := os.Getenv(EnvRingStackDir); dir != "" {
		cmd.Env = append(cmd.Env, "SINK_STACK_DIR="+dir)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("scripts/stack ring %s %d: %w\n%s", action, n, err, out)
	}
	return nil
}
