package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bucketsink/sink/internal/testenv"
)

// TestReadPhaseReadsTheSameRowsBothWays runs the read phase alone on a small device: the sink's reader and
// the driver loop each return every row written, in the same order (the phase fails otherwise), each with
// one request per day (the days hold fewer rows than a fetch), and the table is dropped afterwards.
func TestReadPhaseReadsTheSameRowsBothWays(t *testing.T) {
	brokers := testenv.Kafka(t)
	hosts := testenv.Cassandra(t)
	prefix := testenv.Name(t, "read")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	res, err := Run(ctx, Options{ReadOnly: true, ReadRows: 3000, ReadRounds: 2, Brokers: brokers, Cassandra: hosts,
		Prefix: prefix, WorkDir: t.TempDir(), Progress: &progress, SettleMax: -1})
	if err != nil {
		t.Fatalf("read phase: %v\nprogress:\n%s", err, progress.String())
	}
	rd := res.Read
	if rd == nil || len(rd.Rounds) != 2 {
		t.Fatalf("read phase result %+v: want two rounds", rd)
	}
	for i, r := range rd.Rounds {
		for name, side := range map[string]ReadSide{"sink": r.Sink, "loop": r.Loop} {
			if side.Rows != 3000 || side.Requests != readDays || side.Seconds <= 0 {
				t.Errorf("round %d, %s: %d rows in %d requests, %.3f s; want 3000 rows in %d requests", i+1, name, side.Rows, side.Requests, side.Seconds, readDays)
			}
		}
		if r.SinkFirst != (i == 0) {
			t.Errorf("round %d: sink first %v; the rounds alternate, the sink first in the first", i+1, r.SinkFirst)
		}
	}
	if rd.WallRatio.Median <= 0 || len(res.Targets) != 2 {
		t.Errorf("wall ratio %+v, %d targets: want a ratio and the two read targets", rd.WallRatio, len(res.Targets))
	}
	sess, err := ceilingSession(hosts, "", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	var name string
	it := sess.Query("SELECT table_name FROM system_schema.tables WHERE keyspace_name = ?", "sinkbench").Iter()
	for it.Scan(&name) {
		if strings.HasPrefix(name, prefix+"_") {
			t.Errorf("table left behind: %s", name)
		}
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
}
