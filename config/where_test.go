package config

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestWhereLoads reads a filter of every form from YAML: a scalar of any kind compared as its text, an
// optional test set only when given, not as a mapping, and nested lists.
func TestWhereLoads(t *testing.T) {
	const text = `kafka: {brokers: ["127.0.0.1:9092"]}
cassandra: {hosts: ["127.0.0.1"], keyspace: telemetry}
topics:
  clicks:
    topic: events
    id: [user]
    time: {source: kafka}
    bucket: {width: 1d}
    table: clicks
    columns:
      - {name: user, type: text, field: user}
      - {name: at, type: timestamp, source: event_time}
    clustering: [{column: at}]
    where:
      all:
        - {field: meta.type, equals: click}
        - {header: version, one_of: [2, 3]}
        - {field: n, equals: 7}
        - not: {key: test, exists: true}
        - any: [{header: a, equals: ""}, {header: b, exists: false}]
`
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	got := loadValid(t, path, nil).Topics["clicks"].Where
	s := func(v string) *string { return &v }
	b := func(v bool) *bool { return &v }
	want := &Where{All: []Where{
		{Field: "meta.type", Equals: s("click")},
		{Header: "version", OneOf: []string{"2", "3"}},
		{Field: "n", Equals: s("7")},
		{Not: &Where{Key: "test", Exists: b(true)}},
		{Any: []Where{{Header: "a", Equals: s("")}, {Header: "b", Exists: b(false)}}},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("where = %+v\nwant %+v", got, want)
	}
	// sink config shows the filter as a file would spell it, given in the file.
	const spelt = `{all: [{field: "meta.type", equals: "click"}, {header: "version", one_of: ["2", "3"]}, {field: "n", equals: "7"}, {not: {key: "test", exists: true}}, {any: [{header: "a", equals: ""}, {header: "b", exists: false}]}]}`
	found := false
	for _, s := range loadValid(t, path, nil).Settings() {
		if s.Key == "topics.clicks.where" {
			found = true
			if s.Value != spelt || s.Source != FromFile {
				t.Errorf("setting %s = %s (%s), want %s from the file", s.Key, s.Value, s.Source, spelt)
			}
		}
	}
	if !found {
		t.Error("sink config lists no topics.clicks.where")
	}
}
