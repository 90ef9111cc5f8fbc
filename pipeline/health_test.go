package pipeline

import (
	"context"
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
