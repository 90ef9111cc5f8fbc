package schema

import (
	"strings"
	"time"

	"github.com/bucketsink/sink/bucketer"
	"github.com/bucketsink/sink/config"
)

// Table is the shape of the table(s) one topic writes.
type Table struct {
	Topic    string // topics.<name>
	Keyspace string
	// Name is the table name; a sliced topic writes Name_<slice suffix> (see NameOfSlice).
	Name string
	// Columns are in INSERT order: the mapped columns (as configured), the bucket column, then the
	// event bucket column when the partition key has one.
	Columns []Column
	// PartitionKey is the id columns (in topics.<name>.id order, spelled as in columns), the bucket
	// column, and the event bucket column when there is one.
	PartitionKey []string
	Clustering   []Clustering
	// BucketColumn holds the time bucket's key; EventBucketColumn the event bucket, or is "" when
	// the partition key has no event bucket column (see HasEventBucketColumn).
	BucketColumn      string
	EventBucketColumn string
	// Policy is the bucket policy; nil for a latest-value table.
	Policy *bucketer.Policy
	// Latest: a latest-value table (bucket width none). Its partition key is the id columns alone,
	// it has no bucket column, its clustering holds no time, and each row is written at its event
	// time (config's latest.go), so the row of an entity is its newest event.
	Latest bool
	TTL    time.Duration // 0 = none; else bound per row (USING TTL ?)
	// TTLPerRow: each row's TTL comes from a field of its record (ttl_field), bound per row; TTL is then
	// the TTL of a record without the field, and the table's default_time_to_live.
	TTLPerRow bool
	// WriteTimestamp is the topic's write_timestamp. With any but "server" the INSERT binds the
	// write timestamp (USING TIMESTAMP ?), so a replay or a retried batch writes a row again at the
	// same timestamp, which a non-frozen list does not survive (Cassandra keeps both copies of its
	// elements): see DeterministicTimestamp.
	WriteTimestamp string
	// SplitMax is split.max_event_buckets when the topic splits hot entities (their records are in
	// the keyspace's sink_splits table), 0 when it does not.
	SplitMax int
}

// Column is one column and its CQL type, canonically spelled (varchar is text, collections as
// "map<text, int>", "tuple<int, text>", "vector<float, 3>"), not frozen; for a UDT its name, and
// the UDT in UDT.
type Column struct {
	Name string
	Type string
	UDT  *UDT // the column's user-defined type; nil for the other types
	// Arity is a tuple's number of elements, which the INSERT binds one by one, (?, ?); 0 for the
	// other types, bound by one marker.
	Arity int
}

// Markers is how many values the INSERT binds for the column.
func (c Column) Markers() int { return max(c.Arity, 1) }

// UDT is a user-defined type a column has: its name (lower case) and its fields, in order.
type UDT struct {
	Name   string
	Fields []Column
}

// Clustering is one clustering column and its order.
type Clustering struct {
	Name string
	Desc bool
}

// HasEventBucketColumn reports whether the partition key ends with the event bucket column: with
// event buckets, or with splits on.
func (t Table) HasEventBucketColumn() bool {
	return (t.Policy != nil && t.Policy.EventBuckets() > 1) || t.SplitMax > 0
}

// DeterministicTimestamp reports whether a replay writes each row at the timestamp of its first
// write (every write_timestamp but server).
func (t Table) DeterministicTimestamp() bool { return t.WriteTimestamp != config.WriteTimestampServer }

// IDColumns are the id columns: the partition key without the bucket and event bucket columns.
func (t Table) IDColumns() []string {
	if t.Latest {
		return t.PartitionKey
	}
	n := len(t.PartitionKey) - 1
	if t.HasEventBucketColumn() {
		n--
	}
	return t.PartitionKey[:max(n, 0)]
}

// Index is the position in Columns of the column called name (CQL names are case-insensitive), or
// -1 when the table has none.
func (t Table) Index(name string) int {
	for i, c := range t.Columns {
		if strings.EqualFold(c.Name, name) {
			return i
		}
	}
	return -1
}

// NameOfSlice is the table of slice s (a bucketer SliceIndex): Name_<suffix>, or Name when the
// topic is not sliced.
func (t Table) NameOfSlice(s int64) string {
	if _, sliced := t.Policy.Sliced(); !sliced {
		return t.Name
	}
	return t.Name + "_" + string(t.Policy.AppendSliceSuffix(nil, s))
}

// InsertColumns are the columns the INSERT binds, in order: the names of Columns.
func (t Table) InsertColumns() []string {
	out := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		out[i] = c.Name
	}
	return out
}

// BindsTTL reports whether the INSERT binds a TTL after the columns (the topic has a ttl, or a
// ttl_field).
func (t Table) BindsTTL() bool { return t.TTL > 0 || t.TTLPerRow }

// BindsTimestamp reports whether the INSERT binds the write timestamp last (DeterministicTimestamp).
func (t Table) BindsTimestamp() bool { return t.DeterministicTimestamp() }

// NumValues is how many values a row binds: one per column (a tuple's one per element), then the TTL
// and the write timestamp when the INSERT has them.
func (t Table) NumValues() int {
	n := 0
	for _, c := range t.Columns {
		n += c.Markers()
	}
	if t.BindsTTL() {
		n++
	}
	if t.BindsTimestamp() {
		n++
	}
	return n
}

// Insert is the INSERT statement of table name (Name, or a slice's NameOfSlice): it binds every
// column, then the TTL and the write timestamp when the topic has them, so its text is constant per
// table and the driver prepares it once. The names in it were checked as plain CQL identifiers by
// Describe; no value is ever part of it.
func (t Table) Insert(name string) string {
	var b strings.Builder
	b.WriteString("INSERT INTO ")
	b.WriteString(t.Keyspace)
	b.WriteByte('.')
	b.WriteString(name)
	b.WriteString(" (")
	b.WriteString(strings.Join(t.InsertColumns(), ", "))
	b.WriteString(") VALUES (")
	for i, c := range t.Columns {
		if i > 0 {
			b.WriteString(", ")
		}
		if c.Arity == 0 {
			b.WriteByte('?')
			continue
		}
		// A tuple's elements one by one: gocql cannot bind a tuple's marker (it counts it as one
		// value per element, then binds the columns after it to the wrong markers).
		b.WriteString("(" + strings.Repeat("?, ", c.Arity-1) + "?)")
	}
	b.WriteByte(')')
	switch {
	case t.BindsTTL() && t.BindsTimestamp():
		b.WriteString(" USING TTL ? AND TIMESTAMP ?")
	case t.BindsTTL():
		b.WriteString(" USING TTL ?")
	case t.BindsTimestamp():
		b.WriteString(" USING TIMESTAMP ?")
	}
	return b.String()
}

// Delete is the DELETE statement of a latest-value table's row (Name): it binds the write timestamp
// first (CQL puts USING before WHERE), then the partition key columns (IDColumns) in order. It
// deletes the entity's whole partition, so every clustering row of it. Its text is constant, and
// the names in it were checked by Describe.
func (t Table) Delete() string {
	var b strings.Builder
	b.WriteString("DELETE FROM ")
	b.WriteString(t.Keyspace)
	b.WriteByte('.')
	b.WriteString(t.Name)
	b.WriteString(" USING TIMESTAMP ? WHERE ")
	for i, c := range t.PartitionKey {
		if i > 0 {
			b.WriteString(" AND ")
		}
		b.WriteString(c)
		b.WriteString(" = ?")
	}
	return b.String()
}
