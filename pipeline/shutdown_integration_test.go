package pipeline

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bucketsink/sink/config"
)

// chartGrace is the chart's default terminationGracePeriodSeconds for a writer.shutdown_timeout
// (deploy/helm/sink, "sink.terminationGracePeriodSeconds"): the time a stop may take before Kubernetes
// kills the pod. docs/PIPELINE.md, "Shutdown", shows the steps it covers.
func chartGrace(shutdownTimeout time.Duration) time.Duration { return shutdownTimeout + 15*time.Second }

// lockedBuffer collects a process's log lines for assertions while the test reads them.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) contains(s string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Contains(b.buf.String(), s)
}

// runSink starts the built daemon on cfgPath, logging to the test and to the returned buffer.
func runSink(t *testing.T, cfgPath string) (*exec.Cmd, *lockedBuffer) {
	t.Helper()
	bin, err := sinkBinary()
	if err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuffer{}
	cmd := exec.Command(bin, "run", "--config", cfgPath)
	cmd.Stderr = io.MultiWriter(tWriter{t}, logs)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd, logs
}

// stopSink sends SIGTERM and returns the exit code and how long the process took to exit.
func stopSink(t *testing.T, cmd *exec.Cmd) (int, time.Duration) {
	t.Helper()
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	took := time.Since(start)
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, took
	case errors.As(err, &ee):
		return ee.ExitCode(), took
	}
	t.Fatalf("waiting for sink run: %v", err)
	return -1, took
}

// streamUntilCommitted produces recs as a stream in the background and returns once n records are
// committed; the returned channel closes when every record is produced.
func (s *stack) streamUntilCommitted(recs []*itRecord, n int64) <-chan struct{} {
	s.t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.produceStream(recs, 100, 20*time.Millisecond)
	}()
	s.waitFor(2*time.Minute, fmt.Sprintf("%d records committed", n), func() bool {
		var sum int64
		for _, o := range s.committed() {
			sum += o
		}
		return sum >= n
	})
	return done
}

// TestIntegrationSIGTERMWithCassandraBlackholedExitsWithinTheGracePeriod: Cassandra stops answering
// mid-stream without closing its connections (a proxy holds all traffic, as a network partition does), and
// then the daemon gets SIGTERM. The drain cannot finish and the driver's session cannot close cleanly, yet
// the process must exit 0 within the chart's grace period, and its committed offsets must cover only what
// Cassandra holds: every good record below them is written.
func TestIntegrationSIGTERMWithCassandraBlackholedExitsWithinTheGracePeriod(t *testing.T) {
	s := newStack(t, 3, nil)
	proxy, shutdown := s.cassandraBehindProxy()
	cmd, logs := runSink(t, s.writeConfig())

	done := s.streamUntilCommitted(makeRecords(4000, 100, 3), 1000)
	before := s.committed()
	proxy.setHeld(true)
	// Hold until the writes pile up behind the hold: the commits stop while records keep arriving.
	var last map[int32]int64
	s.waitFor(30*time.Second, "commits to stop while Cassandra is held", func() bool {
		c := s.committed()
		same := last != nil && maps.Equal(c, last)
		last = c
		if !same {
			time.Sleep(time.Second)
		}
		return same
	})

	code, took := stopSink(t, cmd)
	grace := chartGrace(shutdown)
	t.Logf("exit %d %s after SIGTERM (grace period %s); committed %v before the hold, %v at exit",
		code, took.Round(time.Millisecond), grace, before, s.committed())
	if code != 0 {
		t.Errorf("exit code %d after SIGTERM, want 0 (a stop is clean even when Cassandra does not answer)", code)
	}
	if took >= grace {
		t.Errorf("exited %s after SIGTERM, not within the grace period %s (writer.shutdown_timeout %s + 15 s)", took, grace, shutdown)
	}
	if !logs.contains("did not finish within writer.shutdown_timeout") {
		t.Error("the drain finished although Cassandra was held: the proxy did not blackhole the daemon's writes")
	}
	<-done

	committed := s.committed()
	for p, o := range before {
		if committed[p] < o {
			t.Errorf("partition %d committed %d at exit, below the %d committed before the hold", p, committed[p], o)
		}
	}
	rows := s.rows()
	s.recsMu.Lock()
	defer s.recsMu.Unlock()
	missing := 0
	for _, r := range s.recs {
		if r.bad == "" && r.offset < committed[r.partition] && !rows[s.expectedKey(r)] {
			if missing++; missing <= 10 {
				t.Errorf("partition %d committed at %d, but offset %d is not in Cassandra", r.partition, committed[r.partition], r.offset)
			}
		}
	}
}

// cassandraBehindProxy makes the stack reach Cassandra through a proxy the test can hold, with a short
// drain (writer.shutdown_timeout, returned), which keeps the test short: the bound under test is
// relative to it. The driver's own timeouts are long (a legitimate setting): a stop must not depend on
// them. The driver's close waits for a held heartbeat up to cassandra.timeout and then a reconnect up
// to connect_timeout.
func (s *stack) cassandraBehindProxy() (*cutProxy, time.Duration) {
	proxy := newCutProxy(s.t, s.cfg.Cassandra.Hosts[0])
	s.cfg.Cassandra.Hosts = []string{proxy.addr()}
	shutdown := 5 * time.Second
	s.cfg.Writer.ShutdownTimeout = config.Duration(shutdown)
	s.cfg.Cassandra.Timeout = config.Duration(30 * time.Second)
	s.cfg.Cassandra.ConnectTimeout = config.Duration(20 * time.Second)
	return proxy, shutdown
}

// TestIntegrationSIGTERMWhileConnectingExitsCleanly: a stop requested while the daemon still connects at
// start-up is a clean stop (exit 0, promptly), whether Cassandra does not answer yet (it accepts the
// connection and says nothing) or Kafka refuses every connection.
func TestIntegrationSIGTERMWhileConnectingExitsCleanly(t *testing.T) {
	t.Run("cassandra not answering", func(t *testing.T) {
		s := newStack(t, 1, nil)
		proxy := newCutProxy(t, s.cfg.Cassandra.Hosts[0])
		proxy.setHeld(true)
		s.cfg.Cassandra.Hosts = []string{proxy.addr()}
		s.stopWhileConnecting(proxy, "Cassandra")
	})
	t.Run("kafka not answering", func(t *testing.T) {
		s := newStack(t, 1, nil)
		// A held proxy accepts every connection and answers nothing, as a partitioned broker does, and
		// counts them, so the test knows the daemon got as far as Kafka. (A connection closed at once
		// would be taken, rightly, for a TLS listener refusing a plaintext client: exit 6 before any signal.)
		proxy := newCutProxy(t, s.cfg.Kafka.Brokers[0])
		proxy.setHeld(true)
		s.cfg.Kafka.Brokers = []string{proxy.addr()}
		s.stopWhileConnecting(proxy, "Kafka")
	})
}

// stopWhileConnecting starts the daemon, waits until it has dialed proxy (which does not let it through),
// sends SIGTERM and expects a prompt exit 0.
func (s *stack) stopWhileConnecting(proxy *cutProxy, server string) {
	t := s.t
	t.Helper()
	cmd, _ := runSink(t, s.writeConfig())
	s.waitFor(time.Minute, "the daemon to dial "+server, func() bool { return proxy.accepted.Load() > 0 })
	code, took := stopSink(t, cmd)
	t.Logf("exit %d %s after SIGTERM", code, took.Round(time.Millisecond))
	if code != 0 {
		t.Errorf("exit code %d after SIGTERM while connecting to %s, want 0", code, server)
	}
	if limit := chartGrace(time.Duration(s.cfg.Writer.ShutdownTimeout)); took >= limit {
		t.Errorf("exited %s after SIGTERM, want within %s", took, limit)
	}
}
