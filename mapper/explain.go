package mapper

import (
	"context"
	"fmt"
	"math/big"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"gopkg.in/inf.v0"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/packed"
	"github.com/bucketsink/sink/routing"
)

// Value is one column and its bound value, for explain.
type Value struct {
	Column string
	Type   string // CQL type
	Value  any    // the bound value as a Go value (packed.GoValue)
	Order  string // clustering order (asc, desc); "" elsewhere
	// From says where a column's value came from when it is not the record's value: header "NAME";
	// "" for the other sources.
	From string
	// Format says how a timestamp or date was read when its column names a format: "read as
	// unix_ms", "read in layout "02/01/2006 15:04" in zone Europe/Paris"; "" otherwise.
	Format string
}

// Literal renders the value as a CQL literal ('text', 42, 2024-01-15 dates quoted, ...);
// "unset" for a column left unset.
func (v Value) Literal() string { return literal(v.Value, v.Type) }

// Explanation is everything a record's mapping decides, as `sink explain` shows it.
type Explanation struct {
	Topic      string // topics.<name>
	KafkaTopic string
	// EventTime is the record's event time; for a delete, the tombstone's Kafka timestamp.
	EventTime time.Time
	Keyspace  string
	Table     string // with the slice suffix when sliced
	Slice     string // slice suffix; "" when the topic is not sliced
	// Latest: the entry writes a latest-value table (no bucket: the Bucket fields are zero), one row
	// per entity, written at its event time with the tie rule's microseconds, or at its offset under
	// write_timestamp offset (latest.go).
	Latest bool
	// Delete: the record is a tombstone and the row deletes the entity (on_tombstone delete); CQL is
	// the DELETE, Bound its timestamp and id values, and there is no clustering, TTL or column.
	Delete bool
	// KeyCodec is how a delete read its entity from the Kafka key (key_codec: text, or a registry
	// codec), and KeySchemaID the key's writer schema id when a registry codec decoded it (0 when no id
	// column is read from a field: the key's bytes are taken as they are); both unset for a row.
	KeyCodec    string
	KeySchemaID int
	// Op is a change event's op (envelope entries: "c", "u", "r" or "d"), and OpName what it is
	// ("create", ...); "" for a record without an envelope. A delete event's row deletes (Delete) on a
	// latest-value entry; each Value's From says which part of the event it came from (after, before,
	// change, or the Kafka key).
	Op, OpName string
	// PartitionKey lists the id columns, the bucket column and, with event buckets, the event
	// bucket column, in key order.
	PartitionKey []Value
	Bucket       int64 // bucket number since the epoch's bucket
	BucketStart  time.Time
	BucketEnd    time.Time
	EventBucket  int // 0 when the topic has no event buckets
	EventBuckets int // 1 when the topic has none; with a split, the applying generation's count
	// Split is the routing record's generation that routed the row (nil: generation 0, the topic's
	// own event buckets), and Entity the entity's key in the routing table (EntityKey).
	Split  *routing.Generation
	Entity []byte
	// SplitOn is the topic's split.enabled: the partition key then ends with the event bucket
	// column even when EventBuckets is 1, and the routing records decide the count.
	SplitOn    bool
	Clustering []Value
	TTL        time.Duration
	// TTLFrom says where a row's TTL came from when the entry has a ttl_field: the field, or the entry's
	// ttl for a record without it; "" without a ttl_field.
	TTLFrom string
	// EventTimeFormat says how the event time was read when its time.format is a unix_* unit or a
	// layout (as Value.Format); "" for rfc3339 and the Kafka timestamp.
	EventTimeFormat string
	// WriteTimestamp is the USING TIMESTAMP value in microseconds; 0 with source "server".
	WriteTimestamp       int64
	WriteTimestampSource string
	CQL                  string
	Bound                []Value     // every bound value in statement order, TTL and timestamp included
	Row                  batcher.Row // the row Map returns (its values: packed.Values of Row.Packed)
}

// Explain maps rec like Map and also reports how: table, partition key, bucket, clustering
// values, TTL, statement and bound values. The error is the one Map would return; for a Kafka topic
// read by several entries, explain each with ExplainEntry.
func (m *Mapper) Explain(rec Record) (Explanation, error) {
	f := m.byKafka[rec.Topic]
	if f == nil || len(f.names) > 1 {
		_, err := m.Map(rec)
		return Explanation{}, err
	}
	return m.ExplainEntry(f.names[0], rec)
}

// ExplainEntry is Explain for one entry (topics.<entry>) of rec's Kafka topic: the row MapAll
// gives that entry, and how it was made. The error is the entry's *RecordError.
func (m *Mapper) ExplainEntry(entry string, rec Record) (Explanation, error) {
	p := m.byName[entry]
	if p == nil {
		return Explanation{}, fmt.Errorf("mapper: no entry topics.%s", entry)
	}
	s := m.pool.Get().(*scratch)
	out, reason, err := p.mapRecord(context.Background(), &rec, s)
	m.release(s)
	if err != nil {
		return Explanation{}, p.recordError(&rec, reason, err)
	}
	vals := packed.Values(out.row.Packed)
	ex := Explanation{
		Topic:                p.name,
		KafkaTopic:           p.kafkaTopic,
		EventTime:            out.eventTime,
		Keyspace:             p.keyspace,
		Table:                out.row.Target.Table,
		Latest:               p.latest,
		Delete:               out.deleted,
		EventBucket:          out.eventBucket,
		EventBuckets:         splitCount(p.eventBuckets, out.split),
		Split:                out.split,
		SplitOn:              p.split,
		Entity:               []byte(out.row.Key[:out.entityLen]),
		TTL:                  out.ttl,
		WriteTimestamp:       out.writeTS,
		WriteTimestampSource: p.wts.String(),
		CQL:                  out.row.Target.Insert,
		Row:                  out.row,
	}
	from := func(ci int) string {
		if p.env != nil {
			return p.env.from(&p.cols[ci], ci, out.op, out.fromKey)
		}
		return p.cols[ci].from()
	}
	if out.op != 0 {
		ex.Op, ex.OpName = string(out.op), opNames[out.op]
	}
	if out.deleted {
		// DELETE ... USING TIMESTAMP ? WHERE <ids>: the timestamp, then the id columns.
		ex.WriteTimestampSource = "kafka_timestamp"
		ex.KeyCodec, ex.KeySchemaID = p.keyCodec, out.keySchema
		if out.op != 0 {
			ex.WriteTimestampSource, ex.KeyCodec = "event_time", ""
		}
		if p.wts == wtsOffset {
			ex.WriteTimestampSource = p.wts.String()
		}
		ex.Bound = append(ex.Bound, Value{Column: "[timestamp]", Type: "bigint", Value: packed.GoValue(vals[0])})
		for i, ci := range p.ids {
			v := Value{Column: p.cols[ci].name, Type: p.cols[ci].typ.name, Value: packed.GoValue(vals[1+i])}
			if out.op != 0 {
				v.From = from(ci)
			}
			ex.PartitionKey = append(ex.PartitionKey, v)
			ex.Bound = append(ex.Bound, v)
		}
		return ex, nil
	}
	vals = p.byColumn(vals)
	for _, ci := range p.ids {
		ex.PartitionKey = append(ex.PartitionKey, Value{Column: p.cols[ci].name, Type: p.cols[ci].typ.name, Value: packed.GoValue(vals[ci]), From: from(ci)})
	}
	if !p.timeFromKafka {
		ex.EventTimeFormat = formatNote(&p.timeFormat)
	}
	if f := p.ttlField; f != nil {
		switch {
		case !out.fieldTTL:
			ex.TTLFrom = "the entry's ttl: the record has no ttl_field " + strconv.Quote(f.name)
			if p.ttl == 0 {
				ex.TTLFrom = "the record has no ttl_field " + strconv.Quote(f.name) + ", and the entry no ttl"
			}
		case out.ttlClamped:
			ex.TTLFrom = "ttl_field " + strconv.Quote(f.name) + ", cut to its max " + config.Duration(f.max).String()
		default:
			ex.TTLFrom = "ttl_field " + strconv.Quote(f.name)
		}
	}
	if b := out.bucket; b != nil {
		ex.Slice, ex.Bucket = b.suffix, b.idx
		ex.BucketStart, ex.BucketEnd = p.policy.Start(b.idx), p.policy.End(b.idx)
	}
	n := len(p.cols)
	if !p.latest {
		ex.PartitionKey = append(ex.PartitionKey, Value{Column: p.bucketColumn, Type: p.policy.CQLType(), Value: packed.GoValue(vals[n])})
	}
	if p.ebColumn {
		ex.PartitionKey = append(ex.PartitionKey, Value{Column: p.eventBucketColumn, Type: "int", Value: packed.GoValue(vals[n+1])})
	}
	for i, ci := range p.clustering {
		order := "asc"
		if p.clusteringDesc[i] {
			order = "desc"
		}
		ex.Clustering = append(ex.Clustering, Value{Column: p.cols[ci].name, Type: p.cols[ci].typ.name, Value: packed.GoValue(vals[ci]), Order: order, From: from(ci)})
	}
	fromOf := from
	for i, name := range p.insertCols {
		typ, from := "int", ""
		switch {
		case i < len(p.cols):
			typ, from = p.cols[i].typ.name, fromOf(i)
		case i == len(p.cols):
			typ = p.policy.CQLType()
		}
		v := Value{Column: name, Type: typ, Value: packed.GoValue(vals[i]), From: from}
		if i < len(p.cols) {
			v.Format = formatNote(&p.cols[i].time)
		}
		ex.Bound = append(ex.Bound, v)
	}
	i := len(p.insertCols)
	if p.ttlWire != nil {
		ex.Bound = append(ex.Bound, Value{Column: "[ttl]", Type: "int", Value: packed.GoValue(vals[i])})
		i++
	}
	if p.wts != wtsServer {
		ex.Bound = append(ex.Bound, Value{Column: "[timestamp]", Type: "bigint", Value: packed.GoValue(vals[i])})
	}
	return ex, nil
}

// byColumn regroups the bound values of an INSERT one per column (then the TTL and the write
// timestamp): a tuple column's elements, bound one by one, become one []any of their Go values, and
// a UDT's or a vector's value gets the column's whole type, so that GoValue reads its parts.
func (p *plan) byColumn(vals []any) []any {
	out := make([]any, 0, len(vals))
	for i := 0; i < len(vals); {
		ci := len(out)
		if ci >= len(p.cols) || p.cols[ci].typ.kind != packed.KTuple {
			if v, ok := vals[i].(*packed.Value); ok && ci < len(p.cols) && p.cols[ci].typ.comp != nil {
				// A UDT or a vector: its packed value has its kind only; the column has its parts.
				vals[i] = &packed.Value{Type: p.cols[ci].typ.packed(), Wire: v.Wire}
			}
			out = append(out, vals[i])
			i++
			continue
		}
		types := p.cols[ci].typ.comp.Types
		parts := make([]any, len(types))
		for j, t := range types {
			if v, ok := vals[i+j].(*packed.Value); ok {
				parts[j] = packed.GoValue(&packed.Value{Type: t, Wire: v.Wire})
			}
		}
		out = append(out, parts)
		i += len(types)
	}
	return out
}

// literal renders a bound value the way it would be written in CQL.
func literal(v any, typ string) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return "'" + strings.ReplaceAll(x, "'", "''") + "'"
	case time.Time:
		if typ == "date" {
			return "'" + x.UTC().Format(time.DateOnly) + "'"
		}
		return "'" + x.UTC().Format("2006-01-02T15:04:05.000Z") + "'"
	case []byte:
		return "0x" + fmt.Sprintf("%x", x)
	case net.IP:
		return "'" + x.String() + "'"
	case gocql.UUID:
		return x.String()
	case *inf.Dec:
		return x.String()
	case *big.Int:
		return x.String()
	case float32:
		return strconv.FormatFloat(float64(x), 'g', -1, 32)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case time.Duration: // CQL time
		return "'" + time.Unix(0, int64(x)).UTC().Format("15:04:05.999999999") + "'"
	case []any:
		if strings.HasPrefix(typ, "tuple<") {
			parts := make([]string, len(x))
			for i, e := range x {
				parts[i] = literal(e, "")
			}
			return "(" + strings.Join(parts, ", ") + ")"
		}
		elem := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(typ, "list<"), "set<"), ">")
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = literal(e, elem)
		}
		if strings.HasPrefix(typ, "set<") {
			return "{" + strings.Join(parts, ", ") + "}"
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		elem := strings.TrimSuffix(strings.TrimPrefix(typ, "map<text, "), ">")
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = literal(k, "text") + ": " + literal(x[k], elem)
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	if v == gocql.UnsetValue {
		return "unset"
	}
	return fmt.Sprint(v)
}

// splitCount is the event bucket count that placed a row: its split generation's, else the topic's.
func splitCount(base int, g *routing.Generation) int {
	if g != nil {
		return g.Buckets
	}
	return base
}
