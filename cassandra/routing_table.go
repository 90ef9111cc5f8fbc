package cassandra

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/mapper"
	"github.com/bucketsink/sink/packed"
)

// RoutingTable is the name of the table, one per keyspace holding split topics, in which the sink
// records its hot-entity splits (docs/DESIGN.md, "Hot entities split at write time"). Its schema
// is part of the on-disk contract: readers in any language consult it (README.md).
const RoutingTable = "sink_splits"

// routingTableDDL creates the routing table of keyspace. One partition per (data table, time
// bucket) lists every split entity of that bucket, so loading the splits of an open bucket is one
// query; within it, entity then generation order the decisions.
func routingTableDDL(keyspace string) string {
	return "CREATE TABLE IF NOT EXISTS " + keyspace + "." + RoutingTable + " (\n" +
		"    table_name text,\n" +
		"    bucket_start timestamp,\n" +
		"    entity blob,\n" +
		"    generation int,\n" +
		"    from_time timestamp,\n" +
		"    first_event_bucket int,\n" +
		"    event_buckets int,\n" +
		"    decided_at timestamp,\n" +
		"    decided_by text,\n" +
		"    PRIMARY KEY ((table_name, bucket_start), entity, generation)\n" +
		") WITH CLUSTERING ORDER BY (entity ASC, generation ASC)"
}

// routingTableKeyspaces lists, once each in first-seen order, the keyspaces of the given topics
// that have split on.
func routingTableKeyspaces(cfg *config.Config, topics []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, name := range topics {
		tc := cfg.Topics[name]
		if tc.Split.Enabled && !seen[tc.Keyspace] {
			seen[tc.Keyspace] = true
			out = append(out, tc.Keyspace)
		}
	}
	return out
}

// Split is one routing record: from From on, the entity's rows of the time bucket starting at
// BucketStart in Table go to event buckets FirstEventBucket..FirstEventBucket+EventBuckets-1
// (FirstEventBucket + bucketer hash mod EventBuckets). Each generation's event buckets follow the
// previous generation's (the first follows the topic's bucket.event_buckets), so no partition
// takes rows of two generations.
// Generation counts the entity's decisions in that bucket from 1; generation 0 is the topic's
// configured event buckets from the bucket's start and is never stored.
type Split struct {
	Table            string    // the data table, with its slice suffix when sliced
	BucketStart      time.Time // the time bucket's start, UTC
	Entity           []byte    // the id columns as they lead the partition's routing key (mapper.Explanation.Entity)
	Generation       int
	From             time.Time // millisecond precision (a CQL timestamp)
	FirstEventBucket int
	EventBuckets     int
	DecidedAt        time.Time // when the decision was made (for people; nothing routes by it)
	DecidedBy        string    // which instance made it (for people)
}

// Splits reads and writes the routing records of one keyspace. Decisions are written with a
// lightweight transaction (INSERT ... IF NOT EXISTS) and read at serial consistency, so a reader
// sees every decision whose LWT has been accepted, even one whose proposer died before its commit
// finished: a serial read completes it first.
type Splits struct {
	s        *Session
	keyspace string
	serial   gocql.Consistency
}

// NewSplits returns the routing records of keyspace. With a local DC the transactions run at
// LOCAL_SERIAL (the decision is agreed within the DC the sink writes to), otherwise at SERIAL.
func NewSplits(s *Session, keyspace string, c config.Cassandra) *Splits {
	serial := gocql.Serial
	if c.LocalDC != "" {
		serial = gocql.LocalSerial
	}
	return &Splits{s: s, keyspace: keyspace, serial: serial}
}

// ErrRoutingTableMissing is returned when the keyspace has no routing table: `sink schema --apply`
// creates it.
var ErrRoutingTableMissing = errors.New("the routing table " + RoutingTable + " does not exist; run `sink schema --apply`")

// Bucket returns every routing record of a time bucket of table, ordered by entity then
// generation: what a restarted instance or a new owner of a partition loads before it routes a row
// of that bucket, and what a reader caches.
func (sp *Splits) Bucket(ctx context.Context, table string, bucketStart time.Time) ([]Split, error) {
	q := sp.s.gs.Query("SELECT table_name, bucket_start, entity, generation, from_time, first_event_bucket, event_buckets, decided_at, decided_by FROM "+
		sp.keyspace+"."+RoutingTable+" WHERE table_name = ? AND bucket_start = ?", table, bucketStart.UTC()).
		WithContext(ctx).Consistency(sp.serial)
	return sp.scan(q.Iter(), table, bucketStart)
}

// Entity returns the routing records of one entity's time bucket in generation order (none when it
// never split).
func (sp *Splits) Entity(ctx context.Context, table string, bucketStart time.Time, entity []byte) ([]Split, error) {
	q := sp.s.gs.Query("SELECT table_name, bucket_start, entity, generation, from_time, first_event_bucket, event_buckets, decided_at, decided_by FROM "+
		sp.keyspace+"."+RoutingTable+" WHERE table_name = ? AND bucket_start = ? AND entity = ?", table, bucketStart.UTC(), entity).
		WithContext(ctx).Consistency(sp.serial)
	return sp.scan(q.Iter(), table, bucketStart)
}

func (sp *Splits) scan(iter *gocql.Iter, table string, bucketStart time.Time) ([]Split, error) {
	var out []Split
	var r Split
	for iter.Scan(&r.Table, &r.BucketStart, &r.Entity, &r.Generation, &r.From, &r.FirstEventBucket, &r.EventBuckets, &r.DecidedAt, &r.DecidedBy) {
		r.BucketStart, r.From, r.DecidedAt = r.BucketStart.UTC(), r.From.UTC(), r.DecidedAt.UTC()
		out = append(out, r)
		r = Split{}
	}
	if err := iter.Close(); err != nil {
		return nil, sp.wrap(err, "reading the routing records of %s bucket %s", table, bucketStart.UTC().Format(time.RFC3339))
	}
	return out, nil
}

// Propose writes rec unless its (table, bucket, entity, generation) already holds a decision, and
// returns the decision that holds: rec when applied, else the one another instance made first
// (which the caller must adopt: decisions are never recomputed). From is truncated to the
// millisecond first, as a CQL timestamp stores it, so the returned record is what every reader
// sees.
func (sp *Splits) Propose(ctx context.Context, rec Split) (Split, bool, error) {
	if rec.Generation < 1 || rec.EventBuckets < 2 || rec.FirstEventBucket < 1 {
		return Split{}, false, fmt.Errorf("routing record of %s: generation %d with %d event buckets from %d; a split is generation 1 or later with at least 2 event buckets from 1 or later",
			rec.Table, rec.Generation, rec.EventBuckets, rec.FirstEventBucket)
	}
	rec.BucketStart = rec.BucketStart.UTC()
	rec.From = rec.From.UTC().Truncate(time.Millisecond)
	rec.DecidedAt = rec.DecidedAt.UTC().Truncate(time.Millisecond)
	q := sp.s.gs.Query("INSERT INTO "+sp.keyspace+"."+RoutingTable+
		" (table_name, bucket_start, entity, generation, from_time, first_event_bucket, event_buckets, decided_at, decided_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS",
		rec.Table, rec.BucketStart, rec.Entity, rec.Generation, rec.From, rec.FirstEventBucket, rec.EventBuckets, rec.DecidedAt, rec.DecidedBy).
		WithContext(ctx).Consistency(sp.s.cons).SerialConsistency(sp.serial)
	prev := map[string]any{}
	applied, err := q.MapScanCAS(prev)
	if err != nil {
		return Split{}, false, sp.wrap(err, "writing the routing record of %s bucket %s generation %d", rec.Table, rec.BucketStart.Format(time.RFC3339), rec.Generation)
	}
	if applied {
		return rec, true, nil
	}
	held := Split{Table: rec.Table, BucketStart: rec.BucketStart, Entity: rec.Entity, Generation: rec.Generation}
	held.From, _ = prev["from_time"].(time.Time)
	held.EventBuckets, _ = prev["event_buckets"].(int)
	held.FirstEventBucket, _ = prev["first_event_bucket"].(int)
	held.DecidedAt, _ = prev["decided_at"].(time.Time)
	held.DecidedBy, _ = prev["decided_by"].(string)
	held.From, held.DecidedAt = held.From.UTC(), held.DecidedAt.UTC()
	if held.EventBuckets < 2 || held.From.IsZero() {
		return Split{}, false, fmt.Errorf("the routing record of %s bucket %s generation %d exists but reads back as %v", rec.Table, rec.BucketStart.Format(time.RFC3339), rec.Generation, prev)
	}
	return held, false, nil
}

func (sp *Splits) wrap(err error, format string, args ...any) error {
	var re gocql.RequestError
	if errors.As(err, &re) && re.Code() == gocql.ErrCodeInvalid {
		return fmt.Errorf("%s: %w (%v)", fmt.Sprintf(format, args...), ErrRoutingTableMissing, err)
	}
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), err)
}

// entityPartitions is the WHERE clause of one partition of row's entity and time bucket, the event
// bucket bound last, and the values before it.
func entityPartitions(t mapper.Table, row batcher.Row) (string, []any, error) {
	if len(t.Clustering) == 0 || len(t.PartitionKey) < 2 {
		return "", nil, fmt.Errorf("table %s: a split needs clustering columns and an event bucket column", t.Name)
	}
	vals := packed.Values(row.Packed)
	at := make(map[string]int, len(row.Target.Columns))
	for i, c := range row.Target.Columns {
		at[c] = i
	}
	var where []string
	var args []any
	for _, c := range t.PartitionKey[:len(t.PartitionKey)-1] {
		i, ok := at[c]
		if !ok {
			return "", nil, fmt.Errorf("table %s: partition key column %s is not written", t.Name, c)
		}
		where = append(where, c+" = ?")
		args = append(args, vals[i])
	}
	where = append(where, t.PartitionKey[len(t.PartitionKey)-1]+" = ?")
	return " FROM " + row.Target.Keyspace + "." + row.Target.Table + " WHERE " + strings.Join(where, " AND "), args, nil
}

// Newest returns the newest event time Cassandra holds in the partitions of row's entity and
// time bucket with event buckets 0..eventBuckets-1 (the zero time when they are empty): one
// `SELECT <first clustering column> ... ORDER BY it DESC LIMIT 1` per partition. t is the row's
// topic; the first clustering column holds the event time (config requires it of a split topic).
func (sp *Splits) Newest(ctx context.Context, t mapper.Table, row batcher.Row, eventBuckets int) (time.Time, error) {
	from, args, err := entityPartitions(t, row)
	if err != nil {
		return time.Time{}, err
	}
	first := t.Clustering[0]
	var timeuuid bool
	for _, c := range t.Columns {
		if c.Name == first.Name && strings.EqualFold(c.Type, "timeuuid") {
			timeuuid = true
		}
	}
	stmt := "SELECT " + first.Name + from + " ORDER BY " + first.Name + " DESC LIMIT 1"
	var newest time.Time
	for eb := range eventBuckets {
		q := sp.s.gs.Query(stmt, append(args, int32(eb))...).WithContext(ctx).Consistency(sp.s.cons)
		var ts time.Time
		var err error
		if timeuuid {
			var u gocql.UUID
			if err = q.Scan(&u); err == nil {
				ts = u.Time()
			}
		} else {
			err = q.Scan(&ts)
		}
		switch {
		case errors.Is(err, gocql.ErrNotFound):
			continue
		case err != nil:
			return time.Time{}, fmt.Errorf("reading the newest row of %s.%s event bucket %d: %w", row.Target.Keyspace, row.Target.Table, eb, err)
		}
		if ts.After(newest) {
			newest = ts
		}
	}
	return newest.UTC(), nil
}

// Count returns the rows Cassandra holds in each partition of row's entity and time bucket with
// event buckets 0..eventBuckets-1, each counted up to limit: the rows are paged through without
// being decoded, and a partition past limit is read no further.
func (sp *Splits) Count(ctx context.Context, t mapper.Table, row batcher.Row, eventBuckets int, limit int64) ([]int64, error) {
	from, args, err := entityPartitions(t, row)
	if err != nil {
		return nil, err
	}
	stmt := "SELECT " + t.Clustering[0].Name + from
	out := make([]int64, eventBuckets)
	for eb := range eventBuckets {
		sc := sp.s.gs.Query(stmt, append(args, int32(eb))...).WithContext(ctx).Consistency(sp.s.cons).
			PageSize(int(max(min(limit, 5000), 1))).Iter().Scanner()
		var n int64
		for n < limit && sc.Next() {
			n++
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("counting the rows of %s.%s event bucket %d: %w", row.Target.Keyspace, row.Target.Table, eb, err)
		}
		out[eb] = n
	}
	return out, nil
}

// SplitStores is the routing table of every keyspace over one session: what the pipeline reads
// and writes (pipeline.SplitStore).
type SplitStores struct {
	s  *Session
	c  config.Cassandra
	mu sync.Mutex
	by map[string]*Splits
}

// NewSplitStores returns the routing tables reached through s.
func NewSplitStores(s *Session, c config.Cassandra) *SplitStores {
	return &SplitStores{s: s, c: c, by: map[string]*Splits{}}
}

func (ss *SplitStores) of(keyspace string) *Splits {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	sp := ss.by[keyspace]
	if sp == nil {
		sp = NewSplits(ss.s, keyspace, ss.c)
		ss.by[keyspace] = sp
	}
	return sp
}

// Bucket is Splits.Bucket of keyspace.
func (ss *SplitStores) Bucket(ctx context.Context, keyspace, table string, bucketStart time.Time) ([]Split, error) {
	return ss.of(keyspace).Bucket(ctx, table, bucketStart)
}

// Propose is Splits.Propose of keyspace.
func (ss *SplitStores) Propose(ctx context.Context, keyspace string, rec Split) (Split, bool, error) {
	return ss.of(keyspace).Propose(ctx, rec)
}

// Count is Splits.Count of keyspace.
func (ss *SplitStores) Count(ctx context.Context, keyspace string, t mapper.Table, row batcher.Row, eventBuckets int, limit int64) ([]int64, error) {
	return ss.of(keyspace).Count(ctx, t, row, eventBuckets, limit)
}

// Newest is Splits.Newest of keyspace.
func (ss *SplitStores) Newest(ctx context.Context, keyspace string, t mapper.Table, row batcher.Row, eventBuckets int) (time.Time, error) {
	return ss.of(keyspace).Newest(ctx, t, row, eventBuckets)
}
