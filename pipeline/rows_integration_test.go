package pipeline

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

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
