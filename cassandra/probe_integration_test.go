package cassandra

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestIntegrationProbeAnswersWhetherAWriteCouldSucceedAtItsConsistency: the readiness probe reads at the
// consistency the sink writes with, so it fails where those writes would. On the one test node a keyspace with
// replication factor 3 has one live replica of three: QUORUM is unavailable there (as on a ring that lost two
// nodes), ONE is not; a keyspace with replication factor 1 answers at QUORUM. A table that does not exist yet
// is passed over for the keyspace's next one, and with none at all the probe only asks the node to answer.
func TestIntegrationProbeAnswersWhetherAWriteCouldSucceedAtItsConsistency(t *testing.T) {
	f := setup(t)
	f.readings(t)
	short := f.ks + "_rf3"
	f.exec(t, fmt.Sprintf("CREATE KEYSPACE %s WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}", short))
	t.Cleanup(func() { _ = f.s.gs.Query("DROP KEYSPACE IF EXISTS " + short).Exec() })
	f.exec(t, fmt.Sprintf("CREATE TABLE %s.readings (id text, bucket text, ts timestamp, PRIMARY KEY ((id, bucket), ts))", short))

	probe := func(targets ...ProbeTarget) error {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		return f.s.Probe(ctx, targets)
	}
	key := []string{"id", "bucket"}
	whole := ProbeTarget{Keyspace: f.ks, Table: "readings", PartitionKey: key, Consistency: "QUORUM"}
	if err := probe(whole); err != nil {
		t.Errorf("replication factor 1 at QUORUM: %v, want an answer", err)
	}
	lost := ProbeTarget{Keyspace: short, Table: "readings", PartitionKey: key, Consistency: "QUORUM"}
	err := probe(whole, lost)
	if err == nil || !strings.Contains(err.Error(), short+".readings") {
		t.Errorf("replication factor 3 with one live replica at QUORUM: %v, want a failure naming %s.readings", err, short)
	}
	if c, reason := classify(err); c != classTransient || reason != ReasonUnavailable {
		t.Errorf("that failure classifies as %v/%q, want a transient unavailable (what the writes would meet)", c, reason)
	}
	one := lost
	one.Consistency = "ONE"
	if err := probe(one); err != nil {
		t.Errorf("replication factor 3 with one live replica at ONE: %v, want an answer", err)
	}
	missing := ProbeTarget{Keyspace: f.ks, Table: "not_created_yet", PartitionKey: key, Consistency: "QUORUM"}
	if err := probe(missing, whole); err != nil {
		t.Errorf("a missing table, then one that exists: %v, want the second read", err)
	}
	if err := probe(missing); err != nil {
		t.Errorf("only a missing table: %v, want the node's answer", err)
	}
}
