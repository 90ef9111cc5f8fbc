package mapper

import (
	"sort"
	"time"

	"github.com/bucketsink/sink/bucketer"
	"github.com/bucketsink/sink/config"
)

// Table is the shape of the table(s) a topic writes, as the mapper binds them: what `sink schema`
// turns into DDL and checks an existing table against, so the two cannot drift apart.
type Table struct {
	Topic    string // topics.<name>
	Keyspace string
	// Name is the table name; a sliced topic writes Name_<slice suffix> (see NameOfSlice).
	Name string
	// Columns are in INSERT order: the mapped columns, the bucket column, the event bucket column.
	Columns      []TableColumn
	PartitionKey []string // id columns, bucket column, event bucket column (with event buckets)
	Clustering   []TableClustering
	Policy       *bucketer.Policy
	TTL          time.Duration // 0 = none
	// WriteTimestamp is the topic's write_timestamp. With any but "server" a replay or a retried
	// batch writes a row again at the same timestamp, which a non-frozen list does not survive
	// (Cassandra keeps both copies of its elements): see DeterministicTimestamp.
	WriteTimestamp string
	// SplitMax is split.max_event_buckets when the topic splits hot entities (their records are in
	// the keyspace's sink_splits table), 0 when it does not.
	SplitMax int
}

// HasEventBucketColumn reports whether the partition key ends with the event bucket column: with
// event buckets, or with splits on.
func (t Table) HasEventBucketColumn() bool {
	return (t.Policy != nil && t.Policy.EventBuckets() > 1) || t.SplitMax > 0
}

// DeterministicTimestamp reports whether a replay writes each row at the timestamp of its first
// write (every write_timestamp but server).
func (t Table) DeterministicTimestamp() bool { return t.WriteTimestamp != config.WriteTimestampServer }

// TableColumn is one column and its CQL type (canonical spelling, e.g. "map<text, int>").
type TableColumn struct {
	Name string
	Type string
}

// TableClustering is one clustering column and its order.
type TableClustering struct {
	Name string
	Desc bool
}

// Topics lists the configured topic names, sorted.
func (m *Mapper) Topics() []string {
	out := make([]string, 0, len(m.byName))
	for n := range m.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Table describes the table of topics.<topic>; false when there is no such topic.
func (m *Mapper) Table(topic string) (Table, bool) {
	p, ok := m.byName[topic]
	if !ok {
		return Table{}, false
	}
	t := Table{Topic: p.name, Keyspace: p.keyspace, Name: p.table, Policy: p.policy, TTL: p.ttl, WriteTimestamp: p.wts.String()}
	if p.split {
		t.SplitMax = p.maxEventBuckets
	}
	for _, c := range p.cols {
		t.Columns = append(t.Columns, TableColumn{Name: c.name, Type: c.typ.name})
	}
	t.Columns = append(t.Columns, TableColumn{Name: p.bucketColumn, Type: p.policy.CQLType()})
	for _, ci := range p.ids {
		t.PartitionKey = append(t.PartitionKey, p.cols[ci].name)
	}
	t.PartitionKey = append(t.PartitionKey, p.bucketColumn)
	if p.ebColumn {
		t.Columns = append(t.Columns, TableColumn{Name: p.eventBucketColumn, Type: "int"})
		t.PartitionKey = append(t.PartitionKey, p.eventBucketColumn)
	}
	for i, ci := range p.clustering {
		t.Clustering = append(t.Clustering, TableClustering{Name: p.cols[ci].name, Desc: p.clusteringDesc[i]})
	}
	return t, true
}

// NameOfSlice is the table of slice s (a bucketer SliceIndex): Name_<suffix>, or Name when the
// topic is not sliced.
func (t Table) NameOfSlice(s int64) string {
	if _, sliced := t.Policy.Sliced(); !sliced {
		return t.Name
	}
	return t.Name + "_" + string(t.Policy.AppendSliceSuffix(nil, s))
}
