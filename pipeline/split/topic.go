package split

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/bucketer"
	"github.com/bucketsink/sink/cassandra"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/packed"
	"github.com/bucketsink/sink/pipeline/metrics"
	"github.com/bucketsink/sink/routing"
	"github.com/bucketsink/sink/schema"
)

// Store is the routing table of hot-entity splits (docs/DESIGN.md, "Hot entities split at
// write time"); StoreOf implements it over a session's cassandra.SplitStores.
type Store interface {
	Bucket(ctx context.Context, keyspace, table string, bucketStart time.Time) ([]routing.Record, error)
	Propose(ctx context.Context, keyspace string, rec routing.Record) (routing.Record, bool, error)
	Newest(ctx context.Context, keyspace string, t schema.Table, row batcher.Row, eventBuckets int) (time.Time, error)
	Count(ctx context.Context, keyspace string, t schema.Table, row batcher.Row, eb int, limit int64) (int64, error)
	// CountIn is Count of the partitions e names: those of another time bucket than a row's.
	CountIn(ctx context.Context, keyspace string, e routing.EntityPartitions, eb int, limit int64) (int64, error)
	Adoptions(ctx context.Context, keyspace, table string, bucketStart time.Time) ([]routing.Adoption, error)
	Adopt(ctx context.Context, keyspace string, a routing.Adoption) (routing.Adoption, bool, error)
}

// StoreOf is the Store of the routing tables of a session: it names the partitions of a row's
// entity, which the cassandra package reads without knowing the mapper's rows.
func StoreOf(ss *cassandra.SplitStores) Store { return cassandraSplits{ss} }

type cassandraSplits struct{ *cassandra.SplitStores }

func (c cassandraSplits) Newest(ctx context.Context, keyspace string, t schema.Table, row batcher.Row, eventBuckets int) (time.Time, error) {
	e, err := routing.Partitions(t, row.Target.Table, row.Target.Columns, packed.Values(row.Packed))
	if err != nil {
		return time.Time{}, err
	}
	return c.SplitStores.Newest(ctx, keyspace, e, eventBuckets)
}

func (c cassandraSplits) Count(ctx context.Context, keyspace string, t schema.Table, row batcher.Row, eb int, limit int64) (int64, error) {
	e, err := routing.Partitions(t, row.Target.Table, row.Target.Columns, packed.Values(row.Packed))
	if err != nil {
		return 0, err
	}
	return c.SplitStores.Count(ctx, keyspace, e, eb, limit)
}

func (c cassandraSplits) CountIn(ctx context.Context, keyspace string, e routing.EntityPartitions, eb int, limit int64) (int64, error) {
	return c.SplitStores.Count(ctx, keyspace, e, eb, limit)
}

// Mapper is what a split topic needs of the mapper beyond mapping: its routes and its table.
// *mapper.Mapper implements it.
type Mapper interface {
	Routes(name string) *routing.Routes
	Table(name string) (schema.Table, bool)
}

// Topic is the immutable split policy of one entry (topics.<name>), shared by its partitions'
// workers; only the record of which buckets were read when (refreshDue) changes, under its own lock.
type Topic struct {
	label    string // the Kafka topic: the metrics' topic label, as everywhere
	keyspace string
	table    schema.Table
	policy   *bucketer.Policy
	routes   *routing.Routes
	store    Store
	base     int   // the configured event buckets (generation 0)
	max      int   // split.max_event_buckets
	budget   int64 // partition_budget, bytes
	maxRows  int64
	ids      int           // id columns in the partition key
	settle   time.Duration // no decision this soon after an assignment (cassandra.timeout)
	refresh  time.Duration // split.refresh_interval
	session  time.Duration // kafka.session_timeout
	clientID string        // kafka.client_id: who decided or adopted, in the routing table

	splits     prometheus.Counter // sink_splits_total of the topic
	overBudget prometheus.Gauge   // sink_partitions_over_budget of the topic

	mu        sync.Mutex          // a leaf: nothing else is locked while it is held
	refreshed map[int64]time.Time // when the routing records of a bucket were last read, by any worker
}

// NewTopic returns the split policy of topics.<name> of sink, or nil when split is off. m and store
// are the pipeline's mapper (nil unless it has routes) and routing table; both are required when
// split is on.
func NewTopic(sink *config.Config, name string, policy *bucketer.Policy, m Mapper, store Store, met *metrics.Metrics) (*Topic, error) {
	tc := sink.Topics[name]
	if !tc.Split.Enabled {
		return nil, nil
	}
	if m == nil || store == nil {
		return nil, fmt.Errorf("pipeline: topics.%s has split on; the pipeline needs a Splits store and the real mapper", name)
	}
	t, ok := m.Table(name)
	if !ok {
		return nil, fmt.Errorf("pipeline: topics.%s: the mapper has no such topic", name)
	}
	// Both series exist from the start, so that a rate or an alert on them is never absent.
	splits := met.Splits.WithLabelValues(tc.Topic)
	overBudget := met.OverBudget.WithLabelValues(tc.Topic)
	routes := m.Routes(name)
	routes.FollowAdoptions()
	refresh := time.Duration(tc.Split.RefreshInterval)
	if refresh <= 0 {
		refresh = time.Duration(config.DefaultSplitRefreshInterval)
	}
	return &Topic{
		label: tc.Topic, keyspace: tc.Keyspace, table: t, policy: policy, routes: routes, store: store,
		base: max(tc.Bucket.EventBuckets, 1), max: tc.Split.MaxEventBuckets,
		budget: int64(tc.PartitionBudget), maxRows: tc.Split.MaxRows,
		ids:     len(t.PartitionKey) - 2,
		settle:  time.Duration(sink.Cassandra.Timeout),
		refresh: refresh, refreshed: map[int64]time.Time{},
		session:  time.Duration(sink.Kafka.SessionTimeout),
		clientID: sink.Kafka.ClientID,
		splits:   splits, overBudget: overBudget,
	}, nil
}

// sizing is the budget of one partition, as routing sizes generations by it.
func (t *Topic) sizing() routing.Budget { return routing.Budget{Rows: t.maxRows, Bytes: t.budget} }

// refreshDue reports whether the routing records of bucket idx are due to be read again, and if
// so marks them read now, so that one worker of the process reads them per interval. It also reports
// whether they were last read a session timeout ago or more: the process may then have been frozen
// or cut off long enough for its group session to be lost and its partitions to have a new owner,
// which may have split or adopted meanwhile, so the read must succeed before another row is routed.
func (t *Topic) refreshDue(idx int64, now time.Time) (due, stale bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	last, ok := t.refreshed[idx]
	if ok && now.Sub(last) < t.refresh {
		return false, false
	}
	for b := range t.refreshed {
		if b < idx-1 {
			delete(t.refreshed, b)
		}
	}
	t.refreshed[idx] = now
	return true, ok && now.Sub(last) >= t.session
}
