package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/bucketsink/sink/config"
)

// topicName is the key of the bench's entry in its configs (topics.<topicName>), and siteEntryName the
// key of the second entry that a run of two entries adds on the same Kafka topic.
const (
	topicName     = "readings"
	siteEntryName = "readings_by_site"
)

// setup is what one daemon run needs: its topic, table and group, all fresh.
type setup struct {
	Brokers, Hosts []string
	Keyspace       string
	Topic, Table   string
	Group          string
	Metrics        string
	CommitInterval time.Duration
	// Codec and Registry: the topic's codec and the schema registry's URL; "" for JSON.
	Codec, Registry string
	// SiteTable, when set, adds a second entry on the same Kafka topic (siteEntryName): the readings
	// of a site by hour into this table, the device a clustering column.
	SiteTable string
	// HourlyTable and DailyTable, when set, give the entry two rollups (rollupsYAML): hourly windows of
	// the raw rows and daily windows made from the hourly rows, into these tables.
	HourlyTable, DailyTable string
}

// rollupsYAML is the entry's rollups of a run with rollups: examples/sensor-rollups.yaml's, an hourly
// rollup of the raw rows and a daily one made of the hourly rows, on fresh tables.
func (s setup) rollupsYAML() string {
	if s.HourlyTable == "" {
		return ""
	}
	q := strconv.Quote
	return fmt.Sprintf(`    rollups:
      - name: hourly
        width: 1h
        table: %s
        bucket: {width: month}
        aggregates:
          - {column: readings, fn: count}
          - {column: temp_count, fn: count, of: temperature}
          - {column: temp_sum, fn: sum, of: temperature}
          - {column: temp_min, fn: min, of: temperature}
          - {column: temp_max, fn: max, of: temperature}
          - {column: temp_avg, fn: avg, of: temperature}
          - {column: battery_last, fn: last, of: battery}
      - name: daily
        width: 1d
        from: hourly
        table: %s
        bucket: {width: year}
        aggregates:
          - {column: readings, fn: count}
          - {column: temp_min, fn: min, of: temperature}
          - {column: temp_max, fn: max, of: temperature}
          - {column: temp_avg, fn: avg, of: temperature}
          - {column: battery_last, fn: last, of: battery}
`, q(s.HourlyTable), q(s.DailyTable))
}

// yaml renders the daemon config: the demo's sensor policy (examples/local.yaml: daily buckets of
// one device, clustering by reading time) on fresh names, every writer setting at its default
// except the commit interval, which the harness sets so latency is measured at a stated value.
func (s setup) yaml() string {
	q := strconv.Quote
	list := func(xs []string) string {
		qs := make([]string, len(xs))
		for i, x := range xs {
			qs[i] = q(x)
		}
		return "[" + strings.Join(qs, ", ") + "]"
	}
	codec, registry := "", ""
	if s.Codec != "" {
		codec = "\n    codec: " + s.Codec
		registry = "schema_registry:\n  urls: " + list([]string{s.Registry}) + "\n"
	}
	site := ""
	if s.SiteTable != "" {
		site = fmt.Sprintf(`  %s:
    topic: %s%s
    id: [site_id]
    time: {source: field, field: ts, format: rfc3339}
    bucket: {width: 1h}
    table: %s
    columns:
      - {name: site_id, type: text, field: site.id}
      - {name: reading_time, type: timestamp, source: event_time}
      - {name: device_id, type: text, field: device_id}
      - {name: temperature, type: double, field: temperature}
      - {name: humidity, type: double, field: humidity}
    clustering:
      - {column: reading_time, order: desc}
      - {column: device_id, order: asc}
    ttl: 7d
`, siteEntryName, q(s.Topic), codec, q(s.SiteTable))
	}
	return fmt.Sprintf(`# Written by the benchmark harness (package bench) for one run.
%skafka:
  brokers: %s
  group: %s
cassandra:
  hosts: %s
  keyspace: %s
  consistency: LOCAL_ONE
  replication: {class: SimpleStrategy, replication_factor: "1"}
writer:
  commit_interval: %s
metrics:
  address: %s
log:
  level: info
  format: text
topics:
  %s:
    topic: %s%s
    id: [device_id]
    time: {source: field, field: ts, format: rfc3339}
    bucket: {width: 1d, key: text, layout: "2006-01-02"}
    table: %s
    columns:
      - {name: device_id, type: text, field: device_id}
      - {name: reading_time, type: timestamp, source: event_time}
      - {name: site_id, type: text, field: site.id}
      - {name: temperature, type: double, field: temperature}
      - {name: humidity, type: double, field: humidity}
      - {name: battery, type: double, field: battery}
    clustering:
      - {column: reading_time, order: desc}
    ttl: 7d
%s%s`, registry, list(s.Brokers), q(s.Group), list(s.Hosts), q(s.Keyspace), q(s.CommitInterval.String()), q(s.Metrics),
		topicName, q(s.Topic), codec, q(s.Table), s.rollupsYAML(), site)
}

// write saves the config into dir as <name>.yaml, loads it back with the daemon's own loader (with
// the daemon's environment overrides) and validates it, so a harness config the daemon would
// reject fails here with the loader's message, and the harness sees the settings the daemon uses.
func (s setup) write(dir, name string, env []string) (string, *config.Config, error) {
	path := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(path, []byte(s.yaml()), 0o644); err != nil {
		return "", nil, fmt.Errorf("writing bench config %s: %w", path, err)
	}
	cfg, err := config.Load(path, env)
	if err != nil {
		return "", nil, fmt.Errorf("loading bench config %s: %w", path, err)
	}
	if err := cfg.Validate(); err != nil {
		return "", nil, fmt.Errorf("validating bench config %s: %w", path, err)
	}
	return path, cfg, nil
}
