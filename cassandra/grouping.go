package cassandra

import (
	"slices"
	"strings"
	"sync"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/bucketsink/sink/batcher"
)

// Grouping: batches of several partitions that are due together are sent as one UNLOGGED batch when
// every partition in it has the same replicas. The driver routes a batch by its first entry's partition
// (to one of that partition's replicas, shuffled), so a batch whose partitions share their replica set
// is coordinated by a replica of each of them, whichever the driver picks: no partition is forwarded by
// a coordinator that does not hold it. On a cluster where every node holds every partition (a single
// node, or replication factor = nodes) every due batch of a table may join; on a larger ring only those
// whose token ranges have the same replicas do.

// replicaFallback is the token-aware policy's fallback (round robin, or DC-aware round robin). It passes
// everything on, but offers no host for a replicaLookup: the token-aware policy's iterator then yields
// the partition's live local replicas and nothing after them.
type replicaFallback struct{ gocql.HostSelectionPolicy }

func (f replicaFallback) Pick(q gocql.ExecutableStatement) gocql.NextHost {
	if _, ok := q.(replicaLookup); ok {
		return func() gocql.SelectedHost { return nil }
	}
	return f.HostSelectionPolicy.Pick(q)
}

// replicaLookup is the statement a replica lookup hands the token-aware policy: a keyspace and a
// routing key, as a batch of that partition would carry them. Nothing executes it.
type replicaLookup struct {
	keyspace string
	key      []byte
}

func (l replicaLookup) GetRoutingKey() ([]byte, error) { return l.key, nil }
func (l replicaLookup) Keyspace() string               { return l.keyspace }
func (l replicaLookup) Table() string                  { return "" }
func (l replicaLookup) IsIdempotent() bool             { return true }
func (l replicaLookup) GetHostID() string              { return "" }
func (l replicaLookup) Statement() gocql.Statement     { return nil }

// Replicas returns the hosts the token-aware policy chooses a coordinator among for a batch whose first
// partition has routing key key in keyspace: the partition's live replicas in the local data center (or
// in every one, without cassandra.local_dc), as the host IDs, sorted. It returns nil when the driver
// does not know the ring yet, and then routes by round robin.
func (s *Session) Replicas(keyspace, key string) []string {
	next := s.policy.Pick(replicaLookup{keyspace: keyspace, key: []byte(key)})
	var ids []string
	for h := next(); h != nil; h = next() {
		ids = append(ids, h.Info().HostID())
	}
	slices.Sort(ids)
	return ids
}

// GroupConfig bounds the batches Group makes (writer.group_max_partitions, writer.group_max_bytes).
type GroupConfig struct {
	// MaxPartitions is the most partitions one request holds; 1 turns grouping off. Cassandra logs a
	// warning for an unlogged batch of more partitions than unlogged_batch_across_partitions_warn_threshold
	// (10 by default).
	MaxPartitions int
	// MaxBytes is the most bytes a request of several partitions holds, as Cassandra counts them
	// (batcher.DataSize); a batch larger than it is never joined. Cassandra logs a warning for a
	// multi-partition batch larger than batch_size_warn_threshold (5 KiB by default) and refuses one
	// larger than batch_size_fail_threshold.
	MaxBytes int
}

// Group returns bs with the batches that may share a request joined (batcher.Join): batches of one
// Target whose first partitions have the same replicas (Replicas), at most cfg.MaxPartitions
// partitions and cfg.MaxBytes bytes (batcher.DataSize) per request, in the order of bs (a joined
// request takes the place of its first batch). A batch larger than cfg.MaxBytes goes alone; one that
// does not fit in its open request goes alone too when it is larger than that request, which stays
// open for the smaller batches after it, and otherwise closes it and opens the next. bs must be
// batches of distinct partitions, as Batcher.Due returns them. The slice is reused.
func (s *Session) Group(cfg GroupConfig, bs []*batcher.Batch) []*batcher.Batch {
	if cfg.MaxPartitions <= 1 || len(bs) < 2 {
		return bs
	}
	now := time.Now()
	return group(cfg, bs, func(keyspace, key string) string {
		return s.replicaSets.lookup(keyspace, key, now, func() string { return strings.Join(s.Replicas(keyspace, key), ",") })
	})
}

// replicaSets remembers the replica set of each partition Group looked up, for replicaSetTTL.
//
// Group needs the replica set of every partition of every due take: at a steady 15,000 rows/s that was
// 6,000 lookups a second, each a token computation, a walk of the ring and four allocations in the
// driver, and a fifth of the allocations of a steady request. Partitions come back (a hot device's
// every few milliseconds, a cold one's within seconds), so most lookups find their answer here. An
// answer may be up to replicaSetTTL old: the ring or the keyspace's replication changed since then.
// That costs efficiency, never correctness: partitions whose replica sets no longer agree are joined in
// one request, whose coordinator forwards the rows of the partitions it does not hold, as any
// coordinator does for a partition it is not a replica of.
type replicaSets struct {
	mu    sync.Mutex
	since time.Time                    // when sets was last emptied
	sets  map[string]map[string]string // by keyspace, then routing key
	names map[string]string            // each distinct set's one string, so the entries share it
}

// replicaSetTTL bounds how old a remembered replica set may be; maxReplicaSets bounds how many are
// remembered per keyspace (about 100 bytes each). Both empty the whole map: a refill costs a lookup per partition,
// what every lookup cost without it.
const (
	replicaSetTTL  = 5 * time.Second
	maxReplicaSets = 1 << 16
)

// lookup returns the remembered replica set of key in keyspace, or find's answer, remembered, when
// there is none or the remembered ones are older than replicaSetTTL at now. An empty answer (no ring
// known yet) is not remembered.
func (r *replicaSets) lookup(keyspace, key string, now time.Time, find func() string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sets == nil || now.Sub(r.since) >= replicaSetTTL || now.Before(r.since) {
		r.reset(now)
	}
	byKey := r.sets[keyspace]
	if set, ok := byKey[key]; ok {
		return set
	}
	set := find()
	if set == "" {
		return ""
	}
	if name, ok := r.names[set]; ok {
		set = name
	} else {
		r.names[set] = set
	}
	if byKey == nil {
		byKey = make(map[string]string)
		r.sets[keyspace] = byKey
	} else if len(byKey) >= maxReplicaSets {
		r.reset(now)
		byKey = r.sets[keyspace]
	}
	// The key is copied: a batch's key may live in memory the batcher reuses.
	byKey[strings.Clone(key)] = set
	return set
}

// reset forgets every remembered set at now; each keyspace's map starts at the size it had, so a steady
// stream's partitions refill it without the map growing step by step.
func (r *replicaSets) reset(now time.Time) {
	old := r.sets
	r.sets = make(map[string]map[string]string, len(old))
	for ks, byKey := range old {
		r.sets[ks] = make(map[string]string, len(byKey))
	}
	r.names = make(map[string]string)
	r.since = now
}

// group is Group with the replica lookup as a function: replicas names the replica set of a partition
// ("" when unknown), equal for partitions whose replicas are the same.
func group(cfg GroupConfig, bs []*batcher.Batch, replicas func(keyspace, key string) string) []*batcher.Batch {
	if cfg.MaxPartitions <= 1 || len(bs) < 2 {
		return bs
	}
	// The open groups are few (one per table and replica set among the batches due together), so a
	// slice searched in turn costs less than a map made for every take; each group's parts are sized for
	// a full request at once instead of growing to it.
	type open struct {
		key   groupKey
		at    int // index in out
		parts []*batcher.Batch
		bytes int
	}
	var groups []open
	out := bs[:0] // each step appends at most one batch, after reading its own
	for _, b := range bs {
		if b.Partitions != 1 {
			out = append(out, b)
			continue
		}
		n := batcher.DataSize(b)
		if n > cfg.MaxBytes {
			out = append(out, b)
			continue
		}
		set := replicas(b.Target.Keyspace, b.Key)
		if set == "" {
			out = append(out, b) // no ring known: the driver picks any host, so no partition may share it
			continue
		}
		k := groupKey{b.Target, set}
		i := slices.IndexFunc(groups, func(g open) bool { return g.key == k })
		if i >= 0 && (len(groups[i].parts) == cfg.MaxPartitions || groups[i].bytes+n > cfg.MaxBytes) {
			if len(groups[i].parts) < cfg.MaxPartitions && n > groups[i].bytes {
				out = append(out, b) // the open request keeps its room for the smaller batches after b
				continue
			}
			out[groups[i].at] = batcher.Join(groups[i].parts)
			groups[i] = open{key: k, at: len(out), parts: groups[i].parts[:0]} // Join keeps nothing of parts
			out = append(out, nil)
		}
		if i < 0 {
			i = len(groups)
			groups = append(groups, open{key: k, at: len(out), parts: make([]*batcher.Batch, 0, min(cfg.MaxPartitions, len(bs)))})
			out = append(out, nil)
		}
		groups[i].parts = append(groups[i].parts, b)
		groups[i].bytes += n
	}
	for _, g := range groups {
		out[g.at] = batcher.Join(g.parts)
	}
	return out
}

type groupKey struct {
	target   *batcher.Target
	replicas string
}
