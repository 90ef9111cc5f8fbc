package schema

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/bucketsink/sink/bucketer"
	"github.com/bucketsink/sink/config"
)

// Tables holds the table of every configured topic, by topic name (the key under topics:).
type Tables map[string]Table

// Describe validates cfg (config.Validate) and describes the table of every topic. cfg must have
// its defaults applied (config.Load does; a Config built in Go calls ApplyDefaults). The errors of
// every topic are joined.
func Describe(cfg *config.Config) (Tables, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	out := make(Tables, len(cfg.Topics))
	var errs []error
	for _, name := range cfg.TopicNames() {
		t, err := describe(name, cfg.Topics[name])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out[name] = t
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// Names lists the topic names, sorted.
func (ts Tables) Names() []string {
	out := make([]string, 0, len(ts))
	for n := range ts {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Get returns the table of topics.<topic>, or an error naming the configured topics.
func (ts Tables) Get(topic string) (Table, error) {
	t, ok := ts[topic]
	if !ok {
		return Table{}, fmt.Errorf("topics.%s: no such topic; configured: %s", topic, strings.Join(ts.Names(), ", "))
	}
	return t, nil
}

// identRE re-checks every name that goes into CQL text; config validation already rejects
// anything else, this guards the invariant where the names are taken for statements.
var identRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)

// describe derives one topic's table from its validated configuration.
func describe(name string, tc config.Topic) (Table, error) {
	kp := "topics." + name
	var policy *bucketer.Policy
	names := []string{tc.Keyspace, tc.Table}
	if !tc.Latest() {
		var err error
		if policy, err = bucketer.New(tc.Spec()); err != nil {
			return Table{}, fmt.Errorf("%s.bucket: %w", kp, err)
		}
		names = append(names, tc.Bucket.Column)
	}
	for _, id := range names {
		if !identRE.MatchString(id) {
			return Table{}, fmt.Errorf("%s: %q is not a plain CQL identifier", kp, id)
		}
	}
	t := Table{
		Topic: name, Keyspace: tc.Keyspace, Name: tc.Table, Policy: policy, Latest: tc.Latest(),
		BucketColumn: tc.Bucket.Column, TTL: time.Duration(tc.TTL), TTLPerRow: tc.TTLField != nil, WriteTimestamp: tc.WriteTimestamp,
	}
	if tc.Split.Enabled {
		t.SplitMax = max(tc.Bucket.EventBuckets, 1, tc.Split.MaxEventBuckets)
	}
	for i, c := range tc.Columns {
		cp := fmt.Sprintf("%s.columns[%d]", kp, i)
		col, err := describeColumn(c)
		if err != nil {
			return Table{}, fmt.Errorf("%s.%w", cp, err)
		}
		t.Columns = append(t.Columns, col)
	}
	lookup := func(path, col string) (string, error) {
		i := t.Index(col)
		if i < 0 {
			return "", fmt.Errorf("%s: %q is not a column", path, col)
		}
		return t.Columns[i].Name, nil
	}
	for i, id := range tc.ID {
		c, err := lookup(fmt.Sprintf("%s.id[%d]", kp, i), id)
		if err != nil {
			return Table{}, err
		}
		t.PartitionKey = append(t.PartitionKey, c)
	}
	for i, cl := range tc.Clustering {
		c, err := lookup(fmt.Sprintf("%s.clustering[%d].column", kp, i), cl.Column)
		if err != nil {
			return Table{}, err
		}
		t.Clustering = append(t.Clustering, Clustering{Name: c, Desc: !strings.EqualFold(cl.Order, "asc")})
	}
	if t.Latest {
		return t, nil // one row per entity: the id columns are the whole partition key
	}
	t.Columns = append(t.Columns, Column{Name: t.BucketColumn, Type: policy.CQLType()})
	t.PartitionKey = append(t.PartitionKey, t.BucketColumn)
	if tc.UsesEventBucketColumn() {
		t.EventBucketColumn = tc.Bucket.EventBucketColumn
		if !identRE.MatchString(t.EventBucketColumn) {
			return Table{}, fmt.Errorf("%s.bucket.event_bucket_column: %q is not a plain CQL identifier", kp, t.EventBucketColumn)
		}
		t.Columns = append(t.Columns, Column{Name: t.EventBucketColumn, Type: "int"})
		t.PartitionKey = append(t.PartitionKey, t.EventBucketColumn)
	}
	return t, nil
}

// describeColumn is the column c describes, with its UDT when it has fields. Its errors begin with
// the key under the column that is wrong.
func describeColumn(c config.Column) (Column, error) {
	if !identRE.MatchString(c.Name) {
		return Column{}, fmt.Errorf("name: %q is not a plain CQL identifier", c.Name)
	}
	if len(c.Fields) == 0 {
		typ, err := canonicalType(c.Type)
		if err != nil {
			return Column{}, fmt.Errorf("type: %w", err)
		}
		ct, _ := config.ParseCQLType(c.Type) // canonicalType parsed it
		return Column{Name: c.Name, Type: typ, Arity: ct.Arity}, nil
	}
	typ, err := config.ParseUDT(c)
	if err != nil {
		return Column{}, fmt.Errorf("type: %w", err)
	}
	u := &UDT{Name: typ.String()}
	for j, f := range c.Fields {
		ft, err := canonicalType(f.Type)
		if err != nil {
			return Column{}, fmt.Errorf("fields[%d].type: %w", j, err)
		}
		if !identRE.MatchString(f.Name) {
			return Column{}, fmt.Errorf("fields[%d].name: %q is not a plain CQL identifier", j, f.Name)
		}
		u.Fields = append(u.Fields, Column{Name: f.Name, Type: ft})
	}
	return Column{Name: c.Name, Type: u.Name, UDT: u}, nil
}

// canonicalType is the spelling of a configured column type that DDL, messages and the schema
// check use: config's parse (spaces and case ignored), with varchar written text.
func canonicalType(s string) (string, error) {
	ct, err := config.ParseCQLType(s)
	if err != nil {
		return "", err
	}
	text := func(k string) string {
		if k == "varchar" {
			return "text"
		}
		return k
	}
	if ct.Kind == "tuple" || ct.Kind == "vector" {
		return ct.String(), nil // config spells their parts canonically
	}
	ct.Kind, ct.Elem = text(ct.Kind), text(ct.Elem)
	return ct.String(), nil
}
