package pipeline

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/pipeline/metrics"
)

// healthPipeline is a pipeline that is never Run: enough for its readiness logic, driven by hand.
func healthPipeline(t *testing.T, ping func(context.Context) error) *Pipeline {
	t.Helper()
	cfg := &config.Config{
		Kafka:  config.Kafka{Brokers: []string{"127.0.0.1:1"}},
		Topics: map[string]config.Topic{"events": {Topic: testTopic, Table: "events", Bucket: config.Bucket{Width: "1h"}}},
	}
	cfg.ApplyDefaults()
	pl, err := New(Config{
		Sink:    cfg,
		Mapper:  oneEntry{fakeMapper{}},
		Writer:  newMemWriter(),
		Metrics: metrics.NewMetrics(prometheus.NewRegistry()),
		Logger:  slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: testLogLevel})),
		Ping:    ping,
	})
	if err != nil {
		t.Fatal(err)
	}
	pl.health.Join()
	return pl
}

// queuedPing is a ping that never gets an answer in time, like one queued behind many large batches.
func queuedPing(ctx context.Context) error {
	<-ctx.Done()
	return ctx.Err()
}

var healthTarget = &batcher.Target{Topic: testTopic, Keyspace: "ks", Table: "events", Columns: []string{"v"}, Entry: "events"}

// writeEvery acknowledges a one-row batch every d until stop is closed, as a slow but progressing
// Cassandra does.
func writeEvery(pl *Pipeline, d time.Duration, stop <-chan struct{}) {
	for {
		b := &batcher.Batch{Target: healthTarget, Key: "k", Bytes: 10,
			Rows: []batcher.Row{{Target: healthTarget, Key: "k", Size: 10, EventMicros: time.Now().UnixMicro()}}}
		pl.observeWritten(b)
		select {
		case <-stop:
			return
		case <-time.After(d):
		}
	}
}

// runReadiness runs a pipeline's readiness ping, whose pings never answer in time, beside writes
// acknowledged every d, inside a synctest bubble. stopWrites ends the writes (once); end stops everything.
func runReadiness(t *testing.T, d time.Duration) (pl *Pipeline, stopWrites, end func()) {
	pl = healthPipeline(t, queuedPing)
	ctx, cancel := context.WithCancel(context.Background())
	stop := make(chan struct{})
	stopWrites = sync.OnceFunc(func() { close(stop) })
	var wg sync.WaitGroup
	wg.Go(func() { writeEvery(pl, d, stop) })
	wg.Go(func() { pl.health.PingLoop(ctx) })
	return pl, stopWrites, func() {
		stopWrites()
		cancel()
		wg.Wait()
	}
}

// TestReadinessTakesAcknowledgedWritesAsProofThatCassandraAnswers: while Cassandra is slow but keeps
// acknowledging batches, /readyz and sink_ready stay ready even though a ping would queue behind the
// batches in flight and never answer in time.
func TestReadinessTakesAcknowledgedWritesAsProofThatCassandraAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pl, stopWrites, end := runReadiness(t, 4*time.Second)
		defer end()
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		if err := pl.Ready(); err != nil {
			t.Errorf("not ready while writes are acknowledged every 4 s: %v", err)
		}
		if got := testutil.ToFloat64(pl.metrics.Ready); got != 1 {
			t.Errorf("sink_ready %v while writes are acknowledged, want 1", got)
		}
		stopWrites()
	})
}

// TestReadinessFailsWhenWritesStopAndCassandraDoesNotAnswer is the other direction: once no write has been
// acknowledged for a while, the ping decides, and a ping that does not answer makes the daemon not ready.
func TestReadinessFailsWhenWritesStopAndCassandraDoesNotAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pl, stopWrites, end := runReadiness(t, time.Second)
		defer end()
		time.Sleep(30 * time.Second)
		stopWrites() // Cassandra stops acknowledging
		time.Sleep(time.Minute)
		synctest.Wait()
		if err := pl.Ready(); err == nil || !strings.Contains(err.Error(), "cassandra") {
			t.Errorf("Ready() = %v a minute after the last acknowledged write with a ping that never answers, want not ready (cassandra)", err)
		}
		if got := testutil.ToFloat64(pl.metrics.Ready); got != 0 {
			t.Errorf("sink_ready %v, want 0", got)
		}
	})
}

// TestReadinessFalseAfterTheGroupIsLostUntilRejoined: the coordinator forgets the member (as after a Kafka
// outage that outlasted the session), so its partitions are lost; while it cannot join again /readyz and
// sink_ready say not ready, and once it joins they say ready again.
func TestReadinessFalseAfterTheGroupIsLostUntilRejoined(t *testing.T) {
	f := newFixture(t, 10, 0)
	m := f.start(f.config(nil), newMemWriter())
	ready := func() bool { return m.pl.Ready() == nil && testutil.ToFloat64(m.pl.metrics.Ready) == 1 }
	f.waitFor(20*time.Second, "ready after joining", ready)

	var holdJoins atomic.Bool
	holdJoins.Store(true)
	f.cluster.ControlKey(kmsg.JoinGroup.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		f.cluster.KeepControl()
		if !holdJoins.Load() {
			return nil, nil, false
		}
		resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
		return resp, nil, true
	})
	f.forgetMemberOnce()
	f.waitFor(30*time.Second, "not ready while out of the group", func() bool {
		err := m.pl.Ready()
		return err != nil && strings.Contains(err.Error(), "consumer group") && testutil.ToFloat64(m.pl.metrics.Ready) == 0
	})
	holdJoins.Store(false)
	f.waitFor(30*time.Second, "ready again after rejoining", ready)
}

// TestReadinessWaitsOutASlowButAnsweringProbe: an idle daemon whose Cassandra answers the probe, however slowly
// within cassandra.timeout, stays ready; readiness is about whether a write could succeed, not how fast a ping
// comes back.
func TestReadinessWaitsOutASlowButAnsweringProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var probes atomic.Int64
		slow := func(ctx context.Context) error {
			probes.Add(1)
			select {
			case <-time.After(3 * time.Second): // a node answering every request 3 s late
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		pl := healthPipeline(t, slow)
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() { pl.health.PingLoop(ctx) })
		for range 24 {
			time.Sleep(5 * time.Second)
			synctest.Wait()
			if err := pl.Ready(); err != nil {
				t.Fatalf("an idle daemon whose probe answers in 3 s is not ready: %v", err)
			}
		}
		cancel()
		wg.Wait()
		if probes.Load() < 10 {
			t.Errorf("%d probes in two idle minutes, want one about every interval", probes.Load())
		}
	})
}

// TestReadinessAsksTheProbeWhileWritesFail: writes of one table keep being acknowledged while batches of the
// others come back with their retries run out (a quorum lost for some replicas, say). Recent acknowledgements
// then prove nothing: the probe at the write consistency decides, and a failing one makes the daemon not ready
// within an interval. Once no batch has failed for three intervals, acknowledged writes prove it ready again.
func TestReadinessAsksTheProbeWhileWritesFail(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var probes atomic.Int64
		unavailable := func(context.Context) error {
			probes.Add(1)
			return errors.New("Cannot achieve consistency level QUORUM")
		}
		pl := healthPipeline(t, unavailable)
		ctx, cancel := context.WithCancel(context.Background())
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() { writeEvery(pl, time.Second, stop) })
		wg.Go(func() { pl.health.PingLoop(ctx) })
		time.Sleep(20 * time.Second)
		synctest.Wait()
		// The loop's first turn may come before the first write (one probe) or after it (none).
		if err := pl.Ready(); err != nil || probes.Load() > 1 {
			t.Errorf("with writes acknowledged every second: Ready() = %v after %d probes, want ready after at most the first", err, probes.Load())
		}
		failing := make(chan struct{})
		wg.Go(func() {
			for {
				pl.health.WriteFailed(errors.New("write timeout"))
				select {
				case <-failing:
					return
				case <-time.After(700 * time.Millisecond):
				}
			}
		})
		time.Sleep(6 * time.Second)
		synctest.Wait()
		err := pl.Ready()
		if err == nil || !strings.Contains(err.Error(), "QUORUM") {
			t.Errorf("Ready() = %v while batches fail and the probe cannot reach QUORUM, want not ready naming the probe's error", err)
		}
		if got := testutil.ToFloat64(pl.metrics.Ready); got != 0 {
			t.Errorf("sink_ready %v while writes fail, want 0", got)
		}
		close(failing)
		time.Sleep(21 * time.Second) // the failures' shadow (three intervals), then a turn

		synctest.Wait()
		if err := pl.Ready(); err != nil {
			t.Errorf("Ready() = %v once the failures stopped and writes are acknowledged, want ready", err)
		}
		close(stop)
		cancel()
		wg.Wait()
	})
}
