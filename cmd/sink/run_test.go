package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/bucketsink/sink/config"
)

// TestRunExitsWithConfigCodeWhenDeadLetterTopicIsMissing: `sink run` whose dead_letter_topic Kafka does
// not know exits 3 (invalid config) at start-up, naming the topic, before it connects to Cassandra,
// instead of starting and stopping partitions at their first bad record.
func TestRunExitsWithConfigCodeWhenDeadLetterTopicIsMissing(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "readings"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	yaml := `kafka:
  brokers: ["` + c.ListenAddrs()[0] + `"]
cassandra:
  hosts: ["127.0.0.1:1"]
  keyspace: never_contacted
metrics:
  address: ""
topics:
  readings:
    id: [device_id]
    time: {source: field, field: ts, format: rfc3339}
    bucket: {width: 1d}
    table: readings
    columns:
      - {name: device_id, type: text, field: device_id}
      - {name: ts, type: timestamp, source: event_time}
    clustering:
      - {column: ts, order: desc}
    dead_letter_topic: readings.dlq.typo
`
	path := filepath.Join(t.TempDir(), "sink.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCmd(t, runRun, "--config", path)
	if code != exitConfig || !strings.Contains(errOut, `\"readings.dlq.typo\" (dead_letter_topic of topics.readings)`) {
		t.Errorf("exit %d, stderr:\n%s\nwant exit %d naming readings.dlq.typo", code, errOut, exitConfig)
	}
}

// TestStopFitsTheChartGracePeriod: the sum of the shutdown steps' bounds, with the watchdog's slack, stays
// under the chart's default terminationGracePeriodSeconds (writer.shutdown_timeout + 15 s, deploy/helm/sink
// templates/_helpers.tpl) with at least two seconds to spare for the exit itself, for short and long drains.
func TestStopFitsTheChartGracePeriod(t *testing.T) {
	for _, s := range []time.Duration{time.Second, 5 * time.Second, 30 * time.Second, 5 * time.Minute} {
		grace := s + 15*time.Second
		if got := stopBound(s) + stopSlack; got > grace-2*time.Second {
			t.Errorf("shutdown_timeout %s: the stop may take %s, too close to the grace period %s", s, got, grace)
		}
		if got, want := stopBound(s), s+11*time.Second; got != want {
			t.Errorf("shutdown_timeout %s: stop bound %s, but the docs say %s", s, got, want)
		}
	}
}

// TestLogDurationsAreReadable guards the log's durations: retry_in (and every duration attribute) was
// written as bare nanoseconds by the JSON handler, 1500000000 for a second and a half.
func TestLogDurationsAreReadable(t *testing.T) {
	for _, format := range []string{"json", "text"} {
		var b strings.Builder
		newLogger(config.Log{Format: format}, &b).Info("retrying", slog.Duration("retry_in", 1500*time.Millisecond))
		if !strings.Contains(b.String(), "1.5s") || strings.Contains(b.String(), "1500000000") {
			t.Errorf("%s: %s", format, b.String())
		}
	}
}
