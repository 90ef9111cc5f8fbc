package pipeline

import (
	"context"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/cassandra"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/pipeline/split"
	"github.com/bucketsink/sink/routing"
	"github.com/bucketsink/sink/schema"
)

// splitFakeMapper is the fixture's one-entry mapper as the split wiring sees the real mapper: it has
// routes and a table. Its row keys are not the mapper's, so no row is counted and nothing is ever
// split: the entry only takes the split topics' path through the pipeline.
type splitFakeMapper struct {
	oneEntry
	routes *routing.Routes
}

func (m splitFakeMapper) Routes(string) *routing.Routes { return m.routes }

func (m splitFakeMapper) Table(string) (schema.Table, bool) {
	return schema.Table{Name: "events", PartitionKey: []string{"k", "bucket", "event_bucket"}}, true
}

// noSplits is a routing table without records or adoptions.
type noSplits struct{ split.Store }

func (noSplits) Bucket(context.Context, string, string, time.Time) ([]routing.Record, error) {
	return nil, nil
}

func (noSplits) Adoptions(context.Context, string, string, time.Time) ([]routing.Adoption, error) {
	return nil, nil
}

// TestSplitBatchBuiltBeforeTheSessionEndedIsNeverWrittenAfterIt reproduces, in one process and
// deterministically, what a member frozen past its session does (issue 23, item 3): the rows of a
// split topic are mapped and batched, then the batches wait (here: the one write slot is held) for
// longer than the member can know its session is alive, and the coordinator forgets the member
// meanwhile. When the batches could go, the member's partitions belong to the next session, which
// replays them and may route them by a split decided in between. A batch sent then would put its
// rows in a second place; it must wait until the session is confirmed, and is dropped when the
// partition turns out lost. The write in flight when the session ended (the held one) may land: it
// was sent while the session was alive.
func TestSplitBatchBuiltBeforeTheSessionEndedIsNeverWrittenAfterIt(t *testing.T) {
	f := newFixture(t, 100, 0)
	f.splits = noSplits{}
	cfg := f.config(func(c *config.Config) {
		c.Writer.MaxInFlight = 1
		c.Writer.CommitInterval = config.Duration(time.Hour) // nothing committed before the stop
		tc := c.Topics["events"]
		tc.Split = config.Split{Enabled: true, MaxEventBuckets: 8, MaxRows: 1000}
		c.Topics["events"] = tc
	})
	w := &frozenWriter{memWriter: newMemWriter(), started: make(chan struct{})}
	mp := splitFakeMapper{oneEntry{fakeMapper{target: &batcher.Target{Topic: testTopic, Keyspace: "ks", Table: "events", Columns: []string{"v"}, Entry: "events"}}}, &routing.Routes{}}
	m := f.startFull(cfg, mp, w, nil)
	// Every record is mapped and waits in the write stage behind the held write.
	f.waitFor(20*time.Second, "every record mapped and handed to the write stage", func() bool {
		m.pl.mu.Lock()
		defer m.pl.mu.Unlock()
		if len(m.pl.parts) != testParts {
			return false
		}
		for _, p := range m.pl.parts {
			p.mu.Lock()
			last, ok := p.tr.Last()
			p.mu.Unlock()
			if !ok || last != f.end[p.tp.Partition]-1 {
				return false
			}
		}
		return true
	})
	// The held write has taken its lease: from now on, nothing renews it (the one writer is busy).
	select {
	case <-w.started:
	case <-time.After(20 * time.Second):
		t.Fatal("the first write was never sent")
	}
	// Longer than a session can be known to be alive without a heartbeat answered since (half the
	// shorter of the session and rebalance timeouts): what a freeze does to the batches waiting.
	time.Sleep(time.Duration(min(cfg.Kafka.SessionTimeout, cfg.Kafka.RebalanceTimeout)) / 2)
	before := map[batcher.Source]int{}
	w.mu.Lock()
	for s, n := range w.rows {
		before[s] = n
	}
	w.mu.Unlock()
	// The coordinator has forgotten the member: every heartbeat and commit of its session is answered
	// UNKNOWN_MEMBER_ID, and the member will join again as a new one.
	f.forgetMember(m)
	m.pl.mu.Lock()
	lost := maps.Clone(m.pl.parts)
	m.pl.mu.Unlock()
	close(w.memWriter.release)
	f.waitFor(30*time.Second, "the partitions to be lost and assigned again, and their replay marked", func() bool {
		m.pl.mu.Lock()
		defer m.pl.mu.Unlock()
		for tp, p := range m.pl.parts {
			if lost[tp] == p {
				return false
			}
		}
		mk := m.pl.client.MarkedOffsets()[testTopic]
		return len(m.pl.parts) == testParts && len(mk) == testParts && mk[0].Offset == 100 && mk[1].Offset == 100 && mk[2].Offset == 100
	})
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	if !f.allCommitted() {
		t.Fatalf("committed %v after the stop, want every record", f.committed())
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	twice := 0
	for s, n := range w.rows {
		if _, held := w.held[s]; !held && n-before[s] > 1 {
			twice++
		}
	}
	if twice > 0 {
		t.Errorf("%d rows built before the session ended were written after it and again by the next session's replay; want none", twice)
	}
}

// frozenWriter is a memWriter whose first write does not return until release is closed, whatever
// its context says: the member is frozen while it is in flight.
type frozenWriter struct {
	*memWriter
	once    sync.Once
	held    map[batcher.Source]struct{} // every row of the held batch (it may carry several)
	started chan struct{}               // closed when the held write is sent: its lease is taken
}

func (w *frozenWriter) Write(ctx context.Context, b *batcher.Batch) ([]cassandra.RowFailure, error) {
	first := false
	w.once.Do(func() {
		first = true
		held := make(map[batcher.Source]struct{}, len(b.Rows))
		for _, r := range b.Rows {
			held[r.Source()] = struct{}{}
		}
		w.mu.Lock()
		w.held = held
		w.mu.Unlock()
		close(w.started)
	})
	if first {
		<-w.release
	}
	return w.memWriter.Write(ctx, b)
}

// forgetMember makes the coordinator forget m's current session for good, as after its expiry: its
// heartbeats and joins are answered UNKNOWN_MEMBER_ID, so its partitions are lost (franz-go reports
// it at the next heartbeat) and it joins again as a new member.
func (f *fixture) forgetMember(m *member) {
	member, gen := m.pl.client.GroupMetadata()
	f.cluster.ControlKey(kmsg.JoinGroup.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		f.cluster.KeepControl()
		if req.(*kmsg.JoinGroupRequest).MemberID != member {
			return nil, nil, false
		}
		resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode = kerr.UnknownMemberID.Code
		return resp, nil, true
	})
	f.cluster.ControlKey(kmsg.Heartbeat.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		f.cluster.KeepControl()
		if hb := req.(*kmsg.HeartbeatRequest); hb.MemberID != member || hb.Generation != gen {
			return nil, nil, false
		}
		resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.ErrorCode = kerr.UnknownMemberID.Code
		return resp, nil, true
	})
}
