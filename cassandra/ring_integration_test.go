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

// coordinators records the host that coordinated each batch, with every entry's bound values.
type coordinators struct {
	mu   sync.Mutex
	seen []observed
}

type observed struct {
	host    net.IP
	entries [][]any
	err     error
}

func (c *coordinators) ObserveBatch(_ context.Context, b gocql.ObservedBatch) {
	// The bound values are a Binder's arguments, reused once the write returns: keep their Go values.
	var entries [][]any
	for _, e := range b.Values {
		var values []any
		for _, v := range e {
			values = append(values, packed.GoValue(v))
		}
		entries = append(entries, values)
	}
	c.mu.Lock()
	c.seen = append(c.seen, observed{host: b.Host.ConnectAddress(), entries: entries, err: b.Err})
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

// TestEveryBatchIsCoordinatedByAReplicaOfItsPartition writes two rows to each of 150 partitions of a
// keyspace with replication factor 1 on a three-node ring, through the sink's own session configuration:
// the partitions' batches are due together, so the writer joins them (Writer.Group) into requests of up
// to writer.group_max_partitions partitions. From the driver's batch observer it checks that every
// partition of every request was sent to the one node that holds it (by the token ring the nodes
// report): one request, one coordinator that is a replica of every partition in it. With one replica
// per partition, a partition sent anywhere else would be forwarded by its coordinator, which is what
// token-aware routing saves; the test also checks that requests did join several partitions, and that
// they spread over the whole ring.
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
	// The replicas are looked up in the driver's schema metadata, which learns of a new keyspace from a
	// schema-change event, debounced by a second; until then the driver routes by the primary owner.
	deadline := time.Now().Add(30 * time.Second)
	for _, err := s.gs.KeyspaceMetadata(ks); err != nil; _, err = s.gs.KeyspaceMetadata(ks) {
		if time.Now().After(deadline) {
			t.Fatalf("no metadata for keyspace %s: %v", ks, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	const partitions = 150
	var due []*batcher.Batch
	for i := range partitions {
		id := fmt.Sprintf("device-%03d", i)
		b := batchOf(readingRow(tgt, id, "2024-01-15", 0), readingRow(tgt, id, "2024-01-15", 1))
		b.Partitions = 1
		due = append(due, b)
	}
	requests := w.Group(due)
	for _, r := range requests {
		if failed, err := w.Write(ctx, r); err != nil || len(failed) != 0 {
			t.Fatalf("writing a request of %d partitions: %v, %v", r.Partitions, failed, err)
		}
	}

	ringHosts := s.gs.GetHosts()
	if len(ringHosts) != len(hosts) {
		t.Fatalf("the driver knows %d hosts, want the ring's %d", len(ringHosts), len(hosts))
	}
	obs.mu.Lock()
	seen := append([]observed(nil), obs.seen...)
	obs.mu.Unlock()
	if len(seen) != len(requests) {
		t.Fatalf("observed %d batches, want %d (one per request, none retried)", len(seen), len(requests))
	}
	used := map[string]int{}
	entries, joined := 0, 0
	for _, o := range seen {
		if o.err != nil {
			t.Fatalf("a batch failed: %v", o.err)
		}
		parts := map[string]bool{}
		for _, e := range o.entries {
			id, bucket := e[0].(string), e[1].(string)
			parts[id] = true
			token := testenv.Token(testenv.AppendRoutingKey(nil, []byte(id), []byte(bucket)))
			if owner := ringOwner(t, ringHosts, token); !owner.Equal(o.host) {
				t.Errorf("partition (%s, %s), token %d, in a request of %d rows: coordinated by %s, but only %s holds it",
					id, bucket, token, len(o.entries), o.host, owner)
			}
		}
		entries += len(o.entries)
		if len(parts) > 1 {
			joined++
		}
		if len(parts) > config.DefaultGroupMaxPartitions {
			t.Errorf("a request of %d partitions; at most %d by default", len(parts), config.DefaultGroupMaxPartitions)
		}
		used[o.host.String()]++
	}
	if entries != 2*partitions {
		t.Errorf("observed %d rows, want %d", entries, 2*partitions)
	}
	if joined == 0 || len(requests) >= partitions {
		t.Errorf("%d requests for %d partitions, %d of them joining several: the rule was not exercised", len(requests), partitions, joined)
	}
	if len(used) != len(hosts) {
		t.Errorf("batches went to %d of the %d nodes (%v): the partitions should spread over the whole ring", len(used), len(hosts), used)
	}
}
