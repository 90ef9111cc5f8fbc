package cassandra

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/internal/testenv"
	"github.com/bucketsink/sink/packed"
)

// coordinators records the host that coordinated each batch, with the batch's first bound values.
type coordinators struct {
	mu   sync.Mutex
	seen []observed
}

type observed struct {
	host   net.IP
	values []any
	err    error
}

func (c *coordinators) ObserveBatch(_ context.Context, b gocql.ObservedBatch) {
	// The bound values are a Binder's arguments, reused once the write returns: keep their Go values.
	var values []any
	if len(b.Values) > 0 {
		for _, v := range b.Values[0] {
			values = append(values, packed.GoValue(v))
		}
	}
	c.mu.Lock()
	c.seen = append(c.seen, observed{host: b.Host.ConnectAddress(), values: values, err: b.Err})
	c.mu.Unlock()
}

// ringOwner returns the address of the node that owns token: the one with the smallest token at or above it,
// wrapping around the ring (a keyspace with replication factor 1 has that node as its only replica).
func ringOwner(t *testing.T, hosts []*gocql.HostInfo, token int64) net.IP {
	t.Helper()
	type point struct {
		token int64
		host  net.IP
	}
	var ring []point
	for _, h := range hosts {
		for _, s := range h.Tokens() {
			v, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				t.Fatalf("token %q of %s: %v", s, h.ConnectAddress(), err)
			}
			ring = append(ring, point{v, h.ConnectAddress()})
		}
	}
	sort.Slice(ring, func(i, j int) bool { return ring[i].token < ring[j].token })
	for _, p := range ring {
		if p.token >= token {
			return p.host
		}
	}
	return ring[0].host
}

// TestEveryBatchIsCoordinatedByAReplicaOfItsPartition writes one batch to each of 150 partitions of a keyspace
// with replication factor 1 on a three-node ring, through the sink's own session configuration, and checks from
// the driver's batch observer that each batch was sent to the one node that holds its partition (by the token
// ring the nodes report). With one replica per partition, a batch sent anywhere else would be forwarded by its
// coordinator: that is what token-aware routing saves.
func TestEveryBatchIsCoordinatedByAReplicaOfItsPartition(t *testing.T) {
	hosts := testenv.Ring(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cluster, cons, err := newCluster(config.Cassandra{Hosts: hosts, Consistency: "ONE"})
	if err != nil {
		t.Fatal(err)
	}
	obs := &coordinators{}
	cluster.BatchObserver = obs
	s, err := connectCluster(ctx, cluster, cons)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	ks := testenv.Name(t, "ring")
	for _, stmt := range []string{
		"CREATE KEYSPACE " + ks + " WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE " + ks + ".readings (id text, bucket text, ts timestamp, tag text, value double, PRIMARY KEY ((id, bucket), ts, tag))",
	} {
		if err := s.gs.Query(stmt).ExecContext(ctx); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = s.gs.Query("DROP KEYSPACE IF EXISTS " + ks).ExecContext(ctx)
	})
	tgt := &batcher.Target{
		Keyspace: ks, Table: "readings", Columns: []string{"id", "bucket", "ts", "tag", "value"},
		Insert: fmt.Sprintf("INSERT INTO %s.readings (id, bucket, ts, tag, value) VALUES (?, ?, ?, ?, ?) USING TIMESTAMP ?", ks),
	}
	w := NewWriter(s, WriterConfig{}, nil)
	const partitions = 150
	for i := range partitions {
		id := fmt.Sprintf("device-%03d", i)
		rows := []batcher.Row{readingRow(tgt, id, "2024-01-15", 0), readingRow(tgt, id, "2024-01-15", 1)}
		if failed, err := w.Write(ctx, batchOf(rows...)); err != nil || len(failed) != 0 {
			t.Fatalf("writing partition %s: %v, %v", id, failed, err)
		}
	}

	ringHosts := s.gs.GetHosts()
	if len(ringHosts) != len(hosts) {
		t.Fatalf("the driver knows %d hosts, want the ring's %d", len(ringHosts), len(hosts))
	}
	obs.mu.Lock()
	seen := append([]observed(nil), obs.seen...)
	obs.mu.Unlock()
	if len(seen) != partitions {
		t.Fatalf("observed %d batches, want %d (one per partition, none retried)", len(seen), partitions)
	}
	used := map[string]int{}
	for _, o := range seen {
		if o.err != nil {
			t.Fatalf("a batch failed: %v", o.err)
		}
		id, bucket := o.values[0].(string), o.values[1].(string)
		token := Token(AppendRoutingKey(nil, []byte(id), []byte(bucket)))
		if owner := ringOwner(t, ringHosts, token); !owner.Equal(o.host) {
			t.Errorf("partition (%s, %s), token %d: coordinated by %s, but only %s holds it", id, bucket, token, o.host, owner)
		}
		used[o.host.String()]++
	}
	if len(used) != len(hosts) {
		t.Errorf("batches went to %d of the %d nodes (%v): the partitions should spread over the whole ring", len(used), len(hosts), used)
	}
}
