package cassandra

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/routing"
	"github.com/bucketsink/sink/schema"
)

// RoutingTable is the name of the table, one per keyspace holding split topics, in which the sink
// records its hot-entity splits (docs/DESIGN.md, "Hot entities split at write time"). Its schema
// is part of the on-disk contract: readers in any language consult it (README.md).
const RoutingTable = "sink_splits"

// AdoptionTable is the name of the table, next to RoutingTable, in which the sink records which
// Kafka partition follows which split generation from which offset on (docs/DESIGN.md, "Adoption
// by source offset"). Only writers read it: a reader needs the routing records alone.
const AdoptionTable = "sink_split_adoptions"

// routingTables are the tables `sink schema` creates in a keyspace holding split topics.
var routingTables = []string{RoutingTable, AdoptionTable}

// routingTableDDL creates the routing and adoption tables of keyspace. One partition per (data
// table, time bucket) lists every split entity of that bucket, so loading the splits (or the
// adoptions) of an open bucket is one query; within it, entity then generation order the
// decisions, and each Kafka partition adopts a generation at most once.
func routingTableDDL(keyspace string) []string {
	return []string{routingRecordsDDL(keyspace), adoptionsDDL(keyspace)}
}

// checkRoutingTable reports an existing routing or adoption table that lacks a column the sink
// writes (one created by an earlier, unreleased version), with the statement that adds them.
func checkRoutingTable(keyspace, table string, cols []SchemaColumn) error {
	want := map[string]string{RoutingTable: routingRecordsDDL(keyspace), AdoptionTable: adoptionsDDL(keyspace)}[table]
	var lacking []string
	for _, line := range strings.Split(want, "\n")[1:] {
		f := strings.Fields(strings.TrimSuffix(strings.TrimSpace(line), ","))
		if len(f) != 2 || f[0] == "PRIMARY" {
			continue
		}
		if !slices.ContainsFunc(cols, func(c SchemaColumn) bool { return c.Name == f[0] }) {
			lacking = append(lacking, f[0]+" "+f[1])
		}
	}
	if len(lacking) > 0 {
		return fmt.Errorf("%s.%s lacks columns the sink writes; add them: ALTER TABLE %s.%s ADD (%s)",
			keyspace, table, keyspace, table, strings.Join(lacking, ", "))
	}
	return nil
}

func adoptionsDDL(keyspace string) string {
	return "CREATE TABLE IF NOT EXISTS " + keyspace + "." + AdoptionTable + " (\n" +
		"    table_name text,\n" +
		"    bucket_start timestamp,\n" +
		"    entity blob,\n" +
		"    generation int,\n" +
		"    kafka_topic text,\n" +
		"    kafka_partition int,\n" +
		"    from_offset bigint,\n" +
		"    adopted_at timestamp,\n" +
		"    adopted_by text,\n" +
		"    PRIMARY KEY ((table_name, bucket_start), entity, generation, kafka_topic, kafka_partition)\n" +
		") WITH CLUSTERING ORDER BY (entity ASC, generation ASC, kafka_topic ASC, kafka_partition ASC)"
}

func routingRecordsDDL(keyspace string) string {
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
		"    source_topic text,\n" +
		"    source_partition int,\n" +
		"    source_from_offset bigint,\n" +
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

const splitColumns = "table_name, bucket_start, entity, generation, from_time, first_event_bucket, event_buckets, decided_at, decided_by, source_topic, source_partition, source_from_offset"

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
func (sp *Splits) Bucket(ctx context.Context, table string, bucketStart time.Time) ([]routing.Record, error) {
	q := sp.s.gs.Query("SELECT "+splitColumns+" FROM "+sp.keyspace+"."+RoutingTable+" WHERE table_name = ? AND bucket_start = ?", table, bucketStart.UTC()).
		Consistency(sp.serial)
	return sp.scan(q.IterContext(ctx), table, bucketStart)
}

// Entity returns the routing records of one entity's time bucket in generation order (none when it
// never split).
func (sp *Splits) Entity(ctx context.Context, table string, bucketStart time.Time, entity []byte) ([]routing.Record, error) {
	q := sp.s.gs.Query("SELECT "+splitColumns+" FROM "+sp.keyspace+"."+RoutingTable+" WHERE table_name = ? AND bucket_start = ? AND entity = ?", table, bucketStart.UTC(), entity).
		Consistency(sp.serial)
	return sp.scan(q.IterContext(ctx), table, bucketStart)
}

func (sp *Splits) scan(iter *gocql.Iter, table string, bucketStart time.Time) ([]routing.Record, error) {
	var out []routing.Record
	var r routing.Record
	for iter.Scan(&r.Table, &r.BucketStart, &r.Entity, &r.Generation, &r.From, &r.FirstEventBucket, &r.EventBuckets, &r.DecidedAt, &r.DecidedBy,
		&r.Topic, &r.Partition, &r.FromOffset) {
		r.BucketStart, r.From, r.DecidedAt = r.BucketStart.UTC(), r.From.UTC(), r.DecidedAt.UTC()
		out = append(out, r)
		r = routing.Record{}
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
func (sp *Splits) Propose(ctx context.Context, rec routing.Record) (routing.Record, bool, error) {
	if rec.Generation < 1 || rec.EventBuckets < 2 || rec.FirstEventBucket < 1 {
		return routing.Record{}, false, fmt.Errorf("routing record of %s: generation %d with %d event buckets from %d; a split is generation 1 or later with at least 2 event buckets from 1 or later",
			rec.Table, rec.Generation, rec.EventBuckets, rec.FirstEventBucket)
	}
	rec.BucketStart = rec.BucketStart.UTC()
	rec.From = rec.From.UTC().Truncate(time.Millisecond)
	rec.DecidedAt = rec.DecidedAt.UTC().Truncate(time.Millisecond)
	var topic, part, offset any // null unless the record carries its decider's adoption
	if rec.Topic != "" {
		topic, part, offset = rec.Topic, rec.Partition, rec.FromOffset
	}
	q := sp.s.gs.Query("INSERT INTO "+sp.keyspace+"."+RoutingTable+" ("+splitColumns+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS",
		rec.Table, rec.BucketStart, rec.Entity, rec.Generation, rec.From, rec.FirstEventBucket, rec.EventBuckets, rec.DecidedAt, rec.DecidedBy,
		topic, part, offset).
		Consistency(sp.s.cons).SerialConsistency(sp.serial)
	prev := map[string]any{}
	applied, err := q.MapScanCASContext(ctx, prev)
	if err != nil {
		return routing.Record{}, false, sp.wrap(err, "writing the routing record of %s bucket %s generation %d", rec.Table, rec.BucketStart.Format(time.RFC3339), rec.Generation)
	}
	if applied {
		return rec, true, nil
	}
	held := routing.Record{Table: rec.Table, BucketStart: rec.BucketStart, Entity: rec.Entity, Generation: rec.Generation}
	held.From, _ = prev["from_time"].(time.Time)
	held.EventBuckets, _ = prev["event_buckets"].(int)
	held.FirstEventBucket, _ = prev["first_event_bucket"].(int)
	held.DecidedAt, _ = prev["decided_at"].(time.Time)
	held.DecidedBy, _ = prev["decided_by"].(string)
	held.Topic, _ = prev["source_topic"].(string)
	if part, ok := prev["source_partition"].(int); ok {
		held.Partition = int32(part)
	}
	held.FromOffset, _ = prev["source_from_offset"].(int64)
	held.From, held.DecidedAt = held.From.UTC(), held.DecidedAt.UTC()
	if held.EventBuckets < 2 || held.From.IsZero() {
		return routing.Record{}, false, fmt.Errorf("the routing record of %s bucket %s generation %d exists but reads back as %v", rec.Table, rec.BucketStart.Format(time.RFC3339), rec.Generation, prev)
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

// entityFrom is the FROM and WHERE clause of one of an entity's partitions, the event bucket bound
// last.
func entityFrom(e routing.EntityPartitions) (string, error) {
	if e.Time == "" || e.EventBucket == "" || len(e.Key) == 0 || len(e.Key) != len(e.Values) {
		return "", fmt.Errorf("table %s: a split needs clustering columns, an event bucket column and a value for each of %v", e.Table, e.Key)
	}
	where := make([]string, 0, len(e.Key)+1)
	for _, c := range e.Key {
		where = append(where, c+" = ?")
	}
	where = append(where, e.EventBucket+" = ?")
	return " FROM " + e.Keyspace + "." + e.Table + " WHERE " + strings.Join(where, " AND "), nil
}

// Newest returns the newest event time Cassandra holds in the entity's partitions with event
// buckets 0..eventBuckets-1 (the zero time when they are empty): one `SELECT <time column> ...
// ORDER BY it DESC LIMIT 1` per partition.
func (sp *Splits) Newest(ctx context.Context, e routing.EntityPartitions, eventBuckets int) (time.Time, error) {
	from, err := entityFrom(e)
	if err != nil {
		return time.Time{}, err
	}
	stmt := "SELECT " + e.Time + from + " ORDER BY " + e.Time + " DESC LIMIT 1"
	var newest time.Time
	for eb := range eventBuckets {
		q := sp.s.gs.Query(stmt, append(slices.Clone(e.Values), int32(eb))...).Consistency(sp.s.cons)
		var ts time.Time
		var err error
		if e.TimeUUID {
			var u gocql.UUID
			if err = q.ScanContext(ctx, &u); err == nil {
				ts = u.Time()
			}
		} else {
			err = q.ScanContext(ctx, &ts)
		}
		switch {
		case errors.Is(err, gocql.ErrNotFound):
			continue
		case err != nil:
			return time.Time{}, fmt.Errorf("reading the newest row of %s.%s event bucket %d: %w", e.Keyspace, e.Table, eb, err)
		}
		if ts.After(newest) {
			newest = ts
		}
	}
	return newest.UTC(), nil
}

// Count returns the rows Cassandra holds in the entity's partition with event bucket eb, counted up
// to limit: the rows are paged through without being decoded, and read no further than limit, so one
// call reads a bounded number of rows whatever the partition holds.
func (sp *Splits) Count(ctx context.Context, e routing.EntityPartitions, eb int, limit int64) (int64, error) {
	from, err := entityFrom(e)
	if err != nil {
		return 0, err
	}
	sc := sp.s.gs.Query("SELECT "+e.Time+from+" LIMIT ?", append(slices.Clone(e.Values), int32(eb), int32(min(limit, math.MaxInt32)))...).
		Consistency(sp.s.cons).PageSize(int(max(min(limit, 5000), 1))).IterContext(ctx).Scanner()
	var n int64
	for n < limit && sc.Next() {
		n++
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("counting the rows of %s.%s event bucket %d: %w", e.Keyspace, e.Table, eb, err)
	}
	return n, nil
}

const adoptionColumns = "table_name, bucket_start, entity, generation, kafka_topic, kafka_partition, from_offset, adopted_at, adopted_by"

// Adoptions returns every adoption recorded for a time bucket of table, ordered by entity,
// generation, topic and partition: what a new owner of a Kafka partition loads, with the routing
// records, before it routes a row of the bucket. Read at serial consistency, as the records are.
func (sp *Splits) Adoptions(ctx context.Context, table string, bucketStart time.Time) ([]routing.Adoption, error) {
	return sp.adoptions(ctx, " WHERE table_name = ? AND bucket_start = ?", table, bucketStart.UTC())
}

// EntityAdoptions returns the adoptions of one entity's time bucket.
func (sp *Splits) EntityAdoptions(ctx context.Context, table string, bucketStart time.Time, entity []byte) ([]routing.Adoption, error) {
	return sp.adoptions(ctx, " WHERE table_name = ? AND bucket_start = ? AND entity = ?", table, bucketStart.UTC(), entity)
}

func (sp *Splits) adoptions(ctx context.Context, where string, args ...any) ([]routing.Adoption, error) {
	iter := sp.s.gs.Query("SELECT "+adoptionColumns+" FROM "+sp.keyspace+"."+AdoptionTable+where, args...).Consistency(sp.serial).IterContext(ctx)
	var out []routing.Adoption
	var a routing.Adoption
	for iter.Scan(&a.Table, &a.BucketStart, &a.Entity, &a.Generation, &a.Topic, &a.Partition, &a.From, &a.AdoptedAt, &a.AdoptedBy) {
		a.BucketStart, a.AdoptedAt = a.BucketStart.UTC(), a.AdoptedAt.UTC()
		out = append(out, a)
		a = routing.Adoption{}
	}
	if err := iter.Close(); err != nil {
		return nil, sp.wrap(err, "reading the split adoptions of %s bucket %s", args[0], args[1].(time.Time).Format(time.RFC3339))
	}
	return out, nil
}

// Adopt writes adoption a unless its (generation, Kafka partition) already adopted, and returns
// the adoption that holds: a when applied, else the one written first (whose offset the caller
// must use: adoptions, like decisions, are never recomputed).
func (sp *Splits) Adopt(ctx context.Context, a routing.Adoption) (routing.Adoption, bool, error) {
	if a.Generation < 1 || a.From < 0 || a.Topic == "" || a.Partition < 0 {
		return routing.Adoption{}, false, fmt.Errorf("split adoption of %s: generation %d by %s partition %d from offset %d; want generation 1 or later, a topic and offsets from 0",
			a.Table, a.Generation, a.Topic, a.Partition, a.From)
	}
	a.BucketStart = a.BucketStart.UTC()
	a.AdoptedAt = a.AdoptedAt.UTC().Truncate(time.Millisecond)
	q := sp.s.gs.Query("INSERT INTO "+sp.keyspace+"."+AdoptionTable+" ("+adoptionColumns+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS",
		a.Table, a.BucketStart, a.Entity, a.Generation, a.Topic, a.Partition, a.From, a.AdoptedAt, a.AdoptedBy).
		Consistency(sp.s.cons).SerialConsistency(sp.serial)
	prev := map[string]any{}
	applied, err := q.MapScanCASContext(ctx, prev)
	if err != nil {
		return routing.Adoption{}, false, sp.wrap(err, "writing the adoption of %s bucket %s generation %d by %s partition %d",
			a.Table, a.BucketStart.Format(time.RFC3339), a.Generation, a.Topic, a.Partition)
	}
	if applied {
		return a, true, nil
	}
	from, ok := prev["from_offset"].(int64)
	if !ok {
		return routing.Adoption{}, false, fmt.Errorf("the adoption of %s bucket %s generation %d by %s partition %d exists but reads back as %v",
			a.Table, a.BucketStart.Format(time.RFC3339), a.Generation, a.Topic, a.Partition, prev)
	}
	held := a
	held.From = from
	held.AdoptedAt, _ = prev["adopted_at"].(time.Time)
	held.AdoptedBy, _ = prev["adopted_by"].(string)
	held.AdoptedAt = held.AdoptedAt.UTC()
	return held, false, nil
}

// SplitStores is the routing table of every keyspace over one session: what the pipeline reads
// and writes (through split.StoreOf of package pipeline/split).
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
func (ss *SplitStores) Bucket(ctx context.Context, keyspace, table string, bucketStart time.Time) ([]routing.Record, error) {
	return ss.of(keyspace).Bucket(ctx, table, bucketStart)
}

// Propose is Splits.Propose of keyspace.
func (ss *SplitStores) Propose(ctx context.Context, keyspace string, rec routing.Record) (routing.Record, bool, error) {
	return ss.of(keyspace).Propose(ctx, rec)
}

// Count is Splits.Count of keyspace.
func (ss *SplitStores) Count(ctx context.Context, keyspace string, e routing.EntityPartitions, eb int, limit int64) (int64, error) {
	return ss.of(keyspace).Count(ctx, e, eb, limit)
}

// Newest is Splits.Newest of keyspace.
func (ss *SplitStores) Newest(ctx context.Context, keyspace string, e routing.EntityPartitions, eventBuckets int) (time.Time, error) {
	return ss.of(keyspace).Newest(ctx, e, eventBuckets)
}

// Adoptions is Splits.Adoptions of keyspace.
func (ss *SplitStores) Adoptions(ctx context.Context, keyspace, table string, bucketStart time.Time) ([]routing.Adoption, error) {
	return ss.of(keyspace).Adoptions(ctx, table, bucketStart)
}

// Adopt is Splits.Adopt of keyspace.
func (ss *SplitStores) Adopt(ctx context.Context, keyspace string, a routing.Adoption) (routing.Adoption, bool, error) {
	return ss.of(keyspace).Adopt(ctx, a)
}

// SplitOffError is a topic with split off whose table has routing records: rows that a split sent to
// later generations are there, so a writer that ignores the records would write a replay of their
// offsets a second time, to generation 0. `sink run` refuses to start (exit 3).
type SplitOffError struct {
	Topic, Keyspace, Table string
	BucketStart            time.Time // one time bucket with records (the first found)
}

func (e *SplitOffError) Error() string {
	return fmt.Sprintf("topics.%s.split.enabled is off, but %s.%s has split routing records for %s.%s (bucket %s and maybe others): "+
		"rows there were written to split event buckets, and a replay without split would write them a second time; "+
		"turn split back on (it keeps following its records), or write to a new table",
		e.Topic, e.Keyspace, RoutingTable, e.Keyspace, e.Table, e.BucketStart.UTC().Format(time.RFC3339))
}

// CheckSplitsOff returns a *SplitOffError for the first of topics (every topic when empty) that has
// split off while its table, or a slice of it, has routing records. It reads the partition keys of
// each routing table involved (one per (table, time bucket) that split) until it finds one.
func CheckSplitsOff(ctx context.Context, s *Session, cfg *config.Config, topics []string) error {
	all, err := schema.Describe(cfg)
	if err != nil {
		return err
	}
	if len(topics) == 0 {
		topics = all.Names()
	}
	byKeyspace := map[string][]schema.Table{}
	var keyspaces []string
	for _, name := range topics {
		if cfg.Topics[name].Split.Enabled {
			continue
		}
		t, err := all.Get(name)
		if err != nil {
			return err
		}
		if byKeyspace[t.Keyspace] == nil {
			keyspaces = append(keyspaces, t.Keyspace)
		}
		byKeyspace[t.Keyspace] = append(byKeyspace[t.Keyspace], t)
	}
	for _, ks := range keyspaces {
		cols, err := ReadSchemaColumns(ctx, s, ks, RoutingTable)
		if err != nil {
			return err
		}
		if len(cols) == 0 {
			continue // no split ever ran in this keyspace
		}
		iter := s.gs.Query("SELECT DISTINCT table_name, bucket_start FROM " + ks + "." + RoutingTable).IterContext(ctx)
		var table string
		var start time.Time
		var found error
		for found == nil && iter.Scan(&table, &start) {
			for _, t := range byKeyspace[ks] {
				if table == t.Name || table == tableOfBucket(t, start) {
					found = &SplitOffError{Topic: t.Topic, Keyspace: ks, Table: table, BucketStart: start}
					break
				}
			}
		}
		if err := iter.Close(); err != nil {
			return fmt.Errorf("reading the tables %s.%s has records for: %w", ks, RoutingTable, err)
		}
		if found != nil {
			return found
		}
	}
	return nil
}

// tableOfBucket is the table, with its slice suffix when sliced, that holds t's time bucket starting
// at start.
func tableOfBucket(t schema.Table, start time.Time) string {
	if _, sliced := t.Policy.Sliced(); !sliced {
		return t.Name
	}
	return t.NameOfSlice(t.Policy.SliceOfBucket(t.Policy.Index(start.UTC())))
}
