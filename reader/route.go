package reader

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/bucketsink/sink/routing"
	"github.com/bucketsink/sink/schema"
)

// RouteLookup returns the split generations recorded for an entity's time bucket (nil when it
// never split): the routing records of the keyspace's sink_splits table. entity is the id
// columns as they lead the partition's routing key (EntityKey).
type RouteLookup func(ctx context.Context, table string, bucketStart time.Time, entity []byte) ([]routing.Generation, error)

// routingTable is the table the sink keeps its split records in (cassandra.RoutingTable).
const routingTable = "sink_splits"

// How long the routing records of a bucket are cached. A bucket that may still take rows (it ended
// less than an hour ago) is read again after openTTL, so a split decided meanwhile is seen by the
// next query after it. A closed one can still be split by a late row or by a consumer catching up on
// a backlog, so a long-lived Reader reads its records again after closedTTL: it never keeps missing
// the partitions of a split for longer than that.
const (
	openTTL   = time.Second
	closedTTL = time.Minute
)

// fresh reports whether a cached bucket's records may still be used at now.
func (b cachedBucket) fresh(now time.Time) bool {
	ttl := closedTTL
	if b.open {
		ttl = openTTL
	}
	return now.Sub(b.at) < ttl
}

// splitCache reads the routing records of a keyspace, one query per (table, time bucket), and
// keeps them: an entity that never split costs no query beyond its bucket's.
type splitCache struct {
	gs       *gocql.Session
	keyspace string
	cons     gocql.Consistency
	now      func() time.Time
	mu       sync.Mutex
	buckets  map[splitBucket]cachedBucket
}

type splitBucket struct {
	table string
	start int64
}

type cachedBucket struct {
	at       time.Time
	open     bool
	entities map[string][]routing.Generation
}

func newSplitCache(gs *gocql.Session, keyspace string, cons gocql.Consistency) *splitCache {
	return &splitCache{gs: gs, keyspace: keyspace, cons: cons, now: time.Now, buckets: map[splitBucket]cachedBucket{}}
}

// lookup is a RouteLookup; end is the bucket's end, which says whether it may still change.
func (c *splitCache) lookup(ctx context.Context, table string, start, end time.Time, entity []byte) ([]routing.Generation, error) {
	k := splitBucket{table, start.UnixMilli()}
	now := c.now()
	c.mu.Lock()
	b, ok := c.buckets[k]
	c.mu.Unlock()
	if ok && b.fresh(now) {
		return b.entities[string(entity)], nil
	}
	iter := c.gs.Query("SELECT entity, generation, from_time, first_event_bucket, event_buckets FROM "+c.keyspace+"."+routingTable+
		" WHERE table_name = ? AND bucket_start = ?", table, start.UTC()).Consistency(c.cons).IterContext(ctx)
	b = cachedBucket{at: now, open: end.After(now.Add(-time.Hour)), entities: map[string][]routing.Generation{}}
	var e []byte
	var g routing.Generation
	for iter.Scan(&e, &g.N, &g.From, &g.First, &g.Buckets) {
		g.From = g.From.UTC()
		b.entities[string(e)] = append(b.entities[string(e)], g)
	}
	if err := iter.Close(); err != nil && !missingTable(err) {
		return nil, fmt.Errorf("reading the routing records of %s.%s bucket %s: %w", c.keyspace, table, start.UTC().Format(time.RFC3339), err)
	}
	c.mu.Lock()
	c.buckets[k] = b
	c.mu.Unlock()
	return b.entities[string(entity)], nil
}

// missingTable reports the error of a query on a table that does not exist: a keyspace without a
// routing table has no split, so its buckets read as having no records (and are read again at the
// cache's interval, in case a split topic creates the table meanwhile).
func missingTable(err error) bool {
	var re gocql.RequestError
	return errors.As(err, &re) && re.Code() == gocql.ErrCodeInvalid
}

// cqlTypes are the id column types an entity key can serialize.
var cqlTypes = map[string]gocql.Type{
	"text": gocql.TypeVarchar, "varchar": gocql.TypeVarchar, "ascii": gocql.TypeAscii, "int": gocql.TypeInt,
	"bigint": gocql.TypeBigInt, "smallint": gocql.TypeSmallInt, "tinyint": gocql.TypeTinyInt, "float": gocql.TypeFloat,
	"double": gocql.TypeDouble, "boolean": gocql.TypeBoolean, "timestamp": gocql.TypeTimestamp, "date": gocql.TypeDate,
	"uuid": gocql.TypeUUID, "timeuuid": gocql.TypeTimeUUID, "blob": gocql.TypeBlob, "inet": gocql.TypeInet,
	"decimal": gocql.TypeDecimal, "varint": gocql.TypeVarint,
}

// EntityKey is the entity's key in the routing table: per id column, a 2-byte big-endian length,
// the value's native-protocol bytes and a 0x00 byte (the id columns' part of the partition's
// routing key). id holds typed values (ParseValue's).
func EntityKey(t schema.Table, id []any) ([]byte, error) {
	cols := idColumns(t)
	if len(id) != len(cols) {
		return nil, fmt.Errorf("%d id values for the %d id columns %v", len(id), len(cols), cols)
	}
	types := map[string]string{}
	for _, c := range t.Columns {
		types[c.Name] = strings.ToLower(c.Type)
	}
	var out []byte
	for i, c := range cols {
		typ, ok := cqlTypes[types[c]]
		if !ok {
			return nil, fmt.Errorf("id column %s: type %s cannot key a routing record", c, types[c])
		}
		b, err := gocql.Marshal(gocql.NewNativeType(4, typ, ""), id[i])
		if err != nil {
			return nil, fmt.Errorf("id column %s: %w", c, err)
		}
		out = binary.BigEndian.AppendUint16(out, uint16(len(b)))
		out = append(append(out, b...), 0)
	}
	return out, nil
}
