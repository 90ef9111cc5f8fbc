package cassandra

import (
	"fmt"
	"testing"
	"time"

	"github.com/bucketsink/sink/batcher"
)

// testShape is a Target's shape whose rows of Size 100 and 3-byte keys count 170 bytes each
// (batcher.DataSize), a partition 29 more: a batch of n rows counts 170n + 29.
var testShape = batcher.RowShape{KeyColumns: 1, Regular: 5}

// smallBatch is a one-partition batch of rows rows of 100 bytes each, for partition key.
func smallBatch(t *batcher.Target, key string, rows int) *batcher.Batch {
	b := &batcher.Batch{Target: t, Key: key, Partitions: 1}
	for i := range rows {
		b.Rows = append(b.Rows, batcher.Row{Target: t, Key: key, Size: 100, Offset: int64(i)})
		b.Bytes += 100
	}
	return b
}

// TestGroupJoinsOnlyPartitionsWithTheSameReplicas guards the coordinator rule of joined requests: a
// request holds partitions of one table whose replica sets are equal, never more than MaxPartitions or
// MaxBytes, and a batch that is large, or whose replicas are unknown, goes alone.
func TestGroupJoinsOnlyPartitionsWithTheSameReplicas(t *testing.T) {
	a := &batcher.Target{Keyspace: "ks", Table: "a", Shape: testShape}
	b := &batcher.Target{Keyspace: "ks", Table: "b", Shape: testShape}
	replicas := map[string]string{}
	var in []*batcher.Batch
	for i := range 25 {
		key := fmt.Sprintf("k%02d", i)
		replicas[key] = []string{"n1", "n2", "n3"}[i%3]
		in = append(in, smallBatch(a, key, 2))
	}
	in = append(in, smallBatch(b, "k00", 1), smallBatch(b, "k03", 1)) // other table, same replicas as k00
	in = append(in, smallBatch(a, "big", 15))                         // 2579 bytes: more than MaxBytes
	replicas["big"] = "n1"
	in = append(in, smallBatch(a, "lost", 1), smallBatch(a, "lost2", 1)) // no ring known for them

	out := group(GroupConfig{MaxPartitions: 4, MaxBytes: 2048}, in, func(ks, key string) string { return replicas[key] })

	seen := map[string]bool{}
	for _, r := range out {
		if n := batcher.DataSize(r); r.Partitions > 4 || n > 2048 && r.Partitions > 1 {
			t.Errorf("a request of %d partitions and %d bytes; want at most 4 and 2048", r.Partitions, n)
		}
		set := ""
		parts := 0
		r.EachPartition(func(p *batcher.Batch) {
			parts++
			if p.Target != r.Target {
				t.Errorf("partition %s of table %s in a request of table %s", p.Key, p.Target.Table, r.Target.Table)
			}
			id := p.Target.Table + "/" + p.Key
			if seen[id] {
				t.Errorf("partition %s sent twice", id)
			}
			seen[id] = true
			if r.Partitions > 1 {
				if replicas[p.Key] == "" {
					t.Errorf("partition %s without known replicas joined a request", p.Key)
				}
				if set != "" && replicas[p.Key] != set {
					t.Errorf("partition %s (replicas %s) joined a request of replicas %s", p.Key, replicas[p.Key], set)
				}
				set = replicas[p.Key]
			}
		})
		if parts != max(r.Partitions, 1) {
			t.Errorf("request says %d partitions, holds %d", r.Partitions, parts)
		}
	}
	if len(seen) != len(in) {
		t.Errorf("%d partitions went out, want %d", len(seen), len(in))
	}
	// 25 partitions over 3 replica sets, 4 per request: 9, 8, 8 → 3+2+2 requests; table b's two
	// partitions (both on n1) join, apart from table a's; big, lost and lost2 go alone.
	if want := 3 + 2 + 2 + 1 + 3; len(out) != want {
		t.Errorf("%d requests, want %d", len(out), want)
	}
}

// TestGroupWithOnePartitionPerRequestChangesNothing: group_max_partitions 1 turns grouping off.
func TestGroupWithOnePartitionPerRequestChangesNothing(t *testing.T) {
	a := &batcher.Target{Keyspace: "ks", Table: "a"}
	in := []*batcher.Batch{smallBatch(a, "x", 1), smallBatch(a, "y", 1)}
	out := group(GroupConfig{MaxPartitions: 1, MaxBytes: 2048}, in, func(string, string) string {
		t.Fatal("looked up replicas with grouping off")
		return ""
	})
	if len(out) != 2 || out[0].Key != "x" || out[1].Key != "y" {
		t.Fatalf("got %d requests", len(out))
	}
}

// TestGroupNeverJoinsDeletesWithUpsertsOfTheirTable: a latest-value table's deletes have a Target of their
// own (the DELETE statement), so a request built for its upserts never carries a delete, whose values the
// INSERT would bind in the wrong places, even for partitions with the same replicas.
func TestGroupNeverJoinsDeletesWithUpsertsOfTheirTable(t *testing.T) {
	upsert := &batcher.Target{Keyspace: "ks", Table: "latest", Insert: "INSERT INTO ks.latest (id, v) VALUES (?, ?) USING TIMESTAMP ?"}
	del := &batcher.Target{Keyspace: "ks", Table: "latest", Insert: "DELETE FROM ks.latest USING TIMESTAMP ? WHERE id = ?", Delete: true}
	in := []*batcher.Batch{smallBatch(upsert, "a", 1), smallBatch(del, "b", 1), smallBatch(upsert, "c", 1), smallBatch(del, "d", 1)}
	out := group(GroupConfig{MaxPartitions: 10, MaxBytes: 2048}, in, func(string, string) string { return "n1" })
	if len(out) != 2 {
		t.Fatalf("%d requests, want 2: the upserts together, the deletes together", len(out))
	}
	for _, r := range out {
		r.EachPartition(func(p *batcher.Batch) {
			if p.Target != r.Target {
				t.Errorf("partition %s of a %v target in a request of a %v one", p.Key, p.Target.Delete, r.Target.Delete)
			}
		})
	}
}

// TestReplicaSetsRememberEachPartitionForAWhile guards the replica sets Group remembers: a partition's
// set is asked of the ring once, then found; its key is copied (a batch's key may live in memory the
// batcher reuses); an unknown ring is asked again; and everything is asked again once replicaSetTTL has
// passed, so a changed ring is seen within it.
func TestReplicaSetsRememberEachPartitionForAWhile(t *testing.T) {
	var r replicaSets
	asked := 0
	ask := func(set string) func() string { return func() string { asked++; return set } }
	t0 := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)

	key := []byte("device-1")
	if got := r.lookup("ks", string(key), t0, ask("n1,n2")); got != "n1,n2" || asked != 1 {
		t.Fatalf("first lookup = %q after %d asks, want n1,n2 after 1", got, asked)
	}
	keyCopy := string(key)
	key[0] = 'X' // the memory the batcher reuses changes; the remembered key must not
	if got := r.lookup("ks", keyCopy, t0.Add(time.Second), ask("other")); got != "n1,n2" || asked != 1 {
		t.Fatalf("second lookup = %q after %d asks, want the remembered n1,n2", got, asked)
	}
	if got := r.lookup("other_ks", keyCopy, t0.Add(time.Second), ask("n3")); got != "n3" || asked != 2 {
		t.Fatalf("another keyspace = %q after %d asks, want n3 asked anew", got, asked)
	}
	if got := r.lookup("ks", "device-2", t0, ask("")); got != "" || asked != 3 {
		t.Fatalf("unknown ring = %q after %d asks", got, asked)
	}
	if got := r.lookup("ks", "device-2", t0, ask("n1,n2")); got != "n1,n2" || asked != 4 {
		t.Fatalf("an unknown ring's answer was remembered: %q after %d asks", got, asked)
	}
	if got := r.lookup("ks", keyCopy, t0.Add(replicaSetTTL), ask("n2,n3")); got != "n2,n3" || asked != 5 {
		t.Fatalf("after the TTL = %q after %d asks, want the ring's new n2,n3", got, asked)
	}
}

// TestReplicaSetsAreBounded: past maxReplicaSets partitions the remembered sets start over.
func TestReplicaSetsAreBounded(t *testing.T) {
	var r replicaSets
	t0 := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	for i := range maxReplicaSets + 10 {
		r.lookup("ks", fmt.Sprint(i), t0, func() string { return "n1" })
		if len(r.sets["ks"]) > maxReplicaSets {
			t.Fatalf("%d sets remembered, want at most %d", len(r.sets["ks"]), maxReplicaSets)
		}
	}
}

// TestGroupJoinsBatchesOfMoreThanHalfTheCap guards the rows per request: a batch that counts more than
// half of MaxBytes joins the others as long as the request stays within it (it used to go alone, full
// enough, with room for others left unused), and one too large for its open request goes alone when it
// is the larger of the two, leaving the request's room to the small batches after it.
func TestGroupJoinsBatchesOfMoreThanHalfTheCap(t *testing.T) {
	// Rows of Size 100 count 78 bytes each here (three clustering columns, no cell): a batch of n rows
	// counts 78n + 29.
	tgt := &batcher.Target{Keyspace: "ks", Table: "a", Shape: batcher.RowShape{KeyColumns: 1, Clustering: 3}}
	one := func(rows int, keys ...string) []*batcher.Batch {
		var bs []*batcher.Batch
		for _, k := range keys {
			bs = append(bs, smallBatch(tgt, k, rows))
		}
		return bs
	}
	cfg := GroupConfig{MaxPartitions: 10, MaxBytes: 1000}
	requests := func(in []*batcher.Batch) [][]string {
		var out [][]string
		for _, r := range group(cfg, in, func(string, string) string { return "n1" }) {
			if n := batcher.DataSize(r); n > cfg.MaxBytes && r.Partitions > 1 {
				t.Errorf("a joined request of %d bytes, over %d", n, cfg.MaxBytes)
			}
			var keys []string
			r.EachPartition(func(p *batcher.Batch) { keys = append(keys, p.Key) })
			out = append(out, keys)
		}
		return out
	}
	// 575 (more than half of 1000) + 263 + 107 = 945: one request.
	in := append(append(one(7, "big"), one(3, "mid")...), one(1, "s")...)
	if got := fmt.Sprint(requests(in)); got != "[[big mid s]]" {
		t.Errorf("requests %s, want [[big mid s]]", got)
	}
	// Three small ones (321), then one of 731 that does not fit with them: it goes alone, and the five
	// small ones after it join the first three (856), two requests in all (closing the small request
	// for the large one took three).
	in = append(append(one(1, "s1", "s2", "s3"), one(9, "big")...), one(1, "s4", "s5", "s6", "s7", "s8")...)
	if got := fmt.Sprint(requests(in)); got != "[[s1 s2 s3 s4 s5 s6 s7 s8] [big]]" {
		t.Errorf("requests %s, want [[s1 s2 s3 s4 s5 s6 s7 s8] [big]]", got)
	}
}
