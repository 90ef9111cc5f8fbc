package routing

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bucketsink/sink/schema"
)

// EntityPartitions names the partitions of one entity's time bucket in a data table, in plain
// values: what a writer reads to count an entity's rows or find its newest one. The event bucket is
// bound last, per partition.
type EntityPartitions struct {
	Keyspace, Table string
	Key             []string // the partition key columns before the event bucket column (ids, time bucket)
	Values          []any    // their values, as the mapper binds them
	EventBucket     string   // the event bucket column
	Time            string   // the first clustering column: the event time
	TimeUUID        bool     // Time is a timeuuid (else a timestamp)
}

// Partitions names the partitions of a row's entity and time bucket in table (t's table, with its
// slice suffix when sliced): the row's partition key values but the event bucket, and the event
// time column. columns and values are the row's, in the same order.
func Partitions(t schema.Table, table string, columns []string, values []any) (EntityPartitions, error) {
	if len(t.Clustering) == 0 || !t.HasEventBucketColumn() || len(t.PartitionKey) < 2 {
		return EntityPartitions{}, fmt.Errorf("table %s: a split needs clustering columns and an event bucket column", t.Name)
	}
	e := EntityPartitions{
		Keyspace: t.Keyspace, Table: table,
		Key: t.PartitionKey[:len(t.PartitionKey)-1], EventBucket: t.PartitionKey[len(t.PartitionKey)-1],
		Time: t.Clustering[0].Name,
	}
	for _, c := range t.Columns {
		if c.Name == e.Time && strings.EqualFold(c.Type, "timeuuid") {
			e.TimeUUID = true
		}
	}
	for _, c := range e.Key {
		i := slices.Index(columns, c)
		if i < 0 || i >= len(values) {
			return EntityPartitions{}, fmt.Errorf("table %s: partition key column %s is not written", t.Name, c)
		}
		e.Values = append(e.Values, values[i])
	}
	return e, nil
}

// KeyParts splits a row's partition routing key into the entity (its first ids components: the
// entity key of the routing records) and its event bucket, the key's last component. A composite
// key component is a 2-byte big-endian length, the value's bytes and 0x00; the time bucket component
// follows the ids and the event bucket (4 bytes, big-endian) is last. It reports false for a key of
// another shape.
func KeyParts(key string, ids int) (entity string, eventBucket int, ok bool) {
	at := 0
	for range ids {
		if len(key) < at+2 {
			return "", 0, false
		}
		at += 2 + (int(key[at])<<8 | int(key[at+1])) + 1
	}
	// Then the bucket component and the event bucket: 0x00 0x04, 4 bytes big-endian, 0x00.
	if len(key) < at+7 || at < 0 {
		return "", 0, false
	}
	e := key[len(key)-5 : len(key)-1]
	return key[:at], int(e[0])<<24 | int(e[1])<<16 | int(e[2])<<8 | int(e[3]), true
}
