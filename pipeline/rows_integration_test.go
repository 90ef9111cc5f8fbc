package pipeline

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bucketsink/sink/cassandra"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/internal/testenv"
)

// The integration tests of issue 14's "rows that are not what was sent": each runs the pipeline against
// the real Kafka and Cassandra and compares what Cassandra holds with what the producer meant.

// produceTx produces recs in one transaction of a transactional producer and commits or aborts it. The
// records of a committed transaction join s.recs (what must be written); an aborted one's do not.
func (s *stack) produceTx(tcl *kgo.Client, recs []*itRecord, commit bool) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := tcl.BeginTransaction(); err != nil {
		s.t.Fatalf("beginning a transaction: %v", err)
	}
	krs := make([]*kgo.Record, len(recs))
	for i, r := range recs {
		krs[i] = &kgo.Record{Topic: s.topic, Partition: r.partition, Key: []byte(r.device), Value: r.value}
	}
	results := tcl.ProduceSync(ctx, krs...)
	if err := results.FirstErr(); err != nil {
		s.t.Fatalf("producing in a transaction: %v", err)
	}
	for i, kr := range krs {
		recs[i].offset = kr.Offset
	}
	if err := tcl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		s.t.Fatalf("ending a transaction (commit %v): %v", commit, err)
	}
	if commit {
		s.recsMu.Lock()
		s.recs = append(s.recs, recs...)
		s.recsMu.Unlock()
	}
}

// TestIntegrationAbortedTransactionIsNotWritten: a transactional producer commits a transaction, aborts
// the next and commits a third. With the default kafka.isolation_level (read_committed) exactly the
// records of the committed transactions become rows, and the group's offset is committed past the last
// of them.
func TestIntegrationAbortedTransactionIsNotWritten(t *testing.T) {
	s := newStack(t, 1, nil)
	if s.cfg.Kafka.IsolationLevel != "read_committed" {
		t.Fatalf("default kafka.isolation_level %q, want read_committed", s.cfg.Kafka.IsolationLevel)
	}
	tcl, err := kgo.NewClient(kgo.SeedBrokers(s.cfg.Kafka.Brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.TransactionalID(testenv.Name(t, "tx")))
	if err != nil {
		t.Fatal(err)
	}
	defer tcl.Close()
	recs := makeRecords(90, 0, 1)
	s.produceTx(tcl, recs[:30], true)
	s.produceTx(tcl, recs[30:60], false)
	s.produceTx(tcl, recs[60:], true)
	last := recs[89].offset

	m := s.start(nil)
	s.waitFor(2*time.Minute, "the committed offset to pass the last committed record", func() bool {
		return s.committed()[0] >= last+1
	})
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	s.checkPlacement() // exactly the 60 committed records, each in its partition, nothing else
	if got := s.committed()[0]; got != last+1 {
		// The watermark counts records: the commit marker after the last record is not one, so the
		// committed offset stops at the marker (the group shows a lag of 1 there).
		t.Errorf("committed offset %d, want %d (one past the last committed record)", got, last+1)
	}
}

// collectionRows reads every row of ks.coll, each rendered with all its values, keyed by its primary key.
func (s *stack) collectionRows() map[string]string {
	s.t.Helper()
	iter := s.session.Driver().Query("SELECT device_id, bucket, ts, value, tags, codes, attrs FROM " + s.ks + ".coll").
		PageSize(5000).IterContext(context.Background())
	out := make(map[string]string)
	var (
		device, bucket string
		ts             time.Time
		value          float64
		tags           []string
		codes          []int
		attrs          map[string]float64
	)
	for iter.Scan(&device, &bucket, &ts, &value, &tags, &codes, &attrs) {
		slices.Sort(codes) // a set reads back sorted already; sorting keeps the comparison about content
		out[device+"/"+bucket+"/"+ts.UTC().Format(time.RFC3339Nano)] = fmt.Sprintf("value=%v tags=%q codes=%v attrs=%v", value, tags, codes, attrs)
		tags, codes, attrs = nil, nil, nil
	}
	if err := iter.Close(); err != nil {
		s.t.Fatalf("reading %s.coll: %v", s.ks, err)
	}
	return out
}

// TestIntegrationCollectionsIdenticalAfterReplay: a topic with list, set and map columns is consumed to
// the end, then consumed again from offset 0 by a group with no committed offsets (what a group reset
// does) over the same table. Every row holds exactly the values of its record after both passes: the
// replay writes each row again at the same write timestamp, which a non-frozen list would turn into
// two copies of its elements.
func TestIntegrationCollectionsIdenticalAfterReplay(t *testing.T) {
	s := newStack(t, 2, nil)
	tp := s.cfg.Topics["readings"]
	tp.Table = "coll"
	tp.Columns = append(tp.Columns,
		config.Column{Name: "tags", Type: "list<text>", Field: "tags"},
		config.Column{Name: "codes", Type: "set<int>", Field: "codes"},
		config.Column{Name: "attrs", Type: "map<text, double>", Field: "attrs"},
	)
	s.cfg.Topics["readings"] = tp
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cassandra.ApplySchema(ctx, s.session, s.cfg, nil, itBase); err != nil {
		t.Fatal(err)
	}
	recs := makeRecords(400, 0, 2)
	want := make(map[string]string, len(recs))
	for i, r := range recs {
		ts := r.ts.Format(time.RFC3339Nano)
		r.value = fmt.Appendf(nil, `{"device_id":%q,"ts":%q,"value":%d.5,"tags":["a","b","t%d"],"codes":[%d,1,2],"attrs":{"x":%d.25,"y":-1}}`,
			r.device, ts, i, i, i+10, i)
		codes := []int{1, 2, i + 10}
		slices.Sort(codes)
		want[r.device+"/"+s.policy.Text(s.policy.Index(r.ts))+"/"+ts] = fmt.Sprintf("value=%v tags=%q codes=%v attrs=%v",
			float64(i)+0.5, []string{"a", "b", fmt.Sprintf("t%d", i)}, codes, map[string]float64{"x": float64(i) + 0.25, "y": -1})
	}
	s.produce(recs)

	check := func(pass string) {
		t.Helper()
		got := s.collectionRows()
		if len(got) != len(want) {
			t.Errorf("after the %s pass: %d rows, want %d", pass, len(got), len(want))
		}
		bad := 0
		for k, w := range want {
			if g := got[k]; g != w {
				if bad++; bad <= 5 {
					t.Errorf("after the %s pass, row %s:\n got %s\nwant %s", pass, k, g, w)
				}
			}
		}
		if bad > 5 {
			t.Errorf("after the %s pass: %d rows differ in all", pass, bad)
		}
	}

	first := s.group
	t.Cleanup(func() {
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = s.adm.DeleteGroup(dctx, first)
	})
	m := s.start(nil)
	s.waitFor(2*time.Minute, "the first pass to commit the end", s.allCommitted)
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	check("first")

	// The second pass: a group with no committed offsets starts at the earliest offset.
	s.group = testenv.Name(t, "g2")
	s.cfg.Kafka.Group = s.group
	m = s.start(nil)
	s.waitFor(2*time.Minute, "the second pass to commit the end", s.allCommitted)
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	check("second")
}
