package config

import (
	"fmt"
	"strings"
)

// validateSharedTables refuses two topics that write one table with different schemas. `sink schema`
// creates the table from the first topic's definition, so the other topic's rows would either be refused
// by Cassandra (a column it lacks) or land in partitions its readers do not compute (another bucket
// policy). Topics may share a table when everything the table's definition and its partitions depend on
// is the same; consistency, write timestamps and dead-letter topics may differ.
func (c *Config) validateSharedTables(v *validator, names []string) {
	first := map[string]string{} // keyspace.table → the first topic (in name order) writing it
	for _, name := range names {
		t := c.Topics[name]
		if t.Keyspace == "" || t.Table == "" {
			continue // reported by validateTopic
		}
		table := strings.ToLower(t.Keyspace + "." + t.Table)
		prev, shared := first[table]
		if !shared {
			first[table] = name
			continue
		}
		mine, theirs := t.tableShape(), c.Topics[prev].tableShape()
		for i, a := range mine {
			if a.value != theirs[i].value {
				v.add("topics."+name+".table", "writes %s like topics.%s, but with a different %s: %s here and %s in topics.%s; one table has one schema: make them the same or write another table",
					table, prev, a.aspect, a.value, theirs[i].value, prev)
			}
		}
	}
}

// aspect is one part of what a table's definition and the placement of its rows depend on.
type aspect struct{ aspect, value string }

// tableShape lists the aspects of the table t writes, in a fixed order, each in a canonical form.
func (t Topic) tableShape() []aspect {
	var cols, clustering []string
	for _, col := range t.Columns {
		typ := col.Type
		if parsed, err := ParseCQLType(col.Type); err == nil {
			typ = parsed.String()
		}
		cols = append(cols, strings.ToLower(col.Name)+" "+typ)
	}
	for _, cl := range t.Clustering {
		clustering = append(clustering, strings.ToLower(cl.Column)+" "+cl.Order)
	}
	b := t.Bucket
	bucket := fmt.Sprintf("width %s, column %s, key %s", b.Width, strings.ToLower(b.Column), b.Key)
	if b.Layout != "" {
		bucket += fmt.Sprintf(", layout %q", b.Layout)
	}
	if b.Slice != "" {
		bucket += ", slice " + b.Slice
	}
	if b.Rolling > 0 {
		bucket += fmt.Sprintf(", rolling %d", b.Rolling)
	}
	eventBuckets := "none"
	if b.EventBuckets > 1 {
		eventBuckets = fmt.Sprintf("%d in column %s", b.EventBuckets, strings.ToLower(b.EventBucketColumn))
	}
	return []aspect{
		{"column list", "[" + strings.Join(cols, ", ") + "]"},
		{"id column list", "[" + strings.ToLower(strings.Join(t.ID, ", ")) + "]"},
		{"clustering", "[" + strings.Join(clustering, ", ") + "]"},
		{"bucket policy", "[" + bucket + "]"},
		{"event bucket split", eventBuckets},
		{"ttl", t.TTL.String()},
		{"gc_grace", t.GCGrace.String()},
	}
}
