package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestQueryRefusesBadInputBeforeConnecting: every mistake in the flags, the topic, the id or the
// range is a usage error (exit 2) that names what to fix, found without reaching Cassandra (the
// example configs name hosts that do not exist here).
func TestQueryRefusesBadInputBeforeConnecting(t *testing.T) {
	intID := filepath.Join(t.TempDir(), "int-id.yaml")
	yaml := `kafka: {brokers: ["127.0.0.1:1"]}
cassandra: {hosts: ["127.0.0.1:1"], keyspace: ks}
topics:
  counters:
    id: [meter]
    time: {source: field, field: ts}
    bucket: {width: 1d}
    table: counters
    columns:
      - {name: meter, type: int, field: meter}
      - {name: ts, type: timestamp, source: event_time}
    clustering: [{column: ts, order: desc}]
`
	if err := os.WriteFile(intID, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	const hv = "../../examples/high-volume.yaml"
	const ms = "../../examples/metrics-slices.yaml"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--config", hv, "--topic", "firehose"}, "--id are required"},
		{[]string{"--config", hv, "--topic", "firehose", "--id", "d"}, "give a range"},
		{[]string{"--config", hv, "--topic", "firehose", "--id", "d", "--last", "1h", "--from", "2024-01-01T00:00:00Z"}, "not both"},
		{[]string{"--config", hv, "--topic", "firehose", "--id", "d", "--last", "soon"}, "--last \"soon\""},
		{[]string{"--config", hv, "--topic", "firehose", "--id", "d", "--from", "yesterday", "--to", "2024-01-01T00:00:00Z"}, "--from \"yesterday\""},
		{[]string{"--config", hv, "--topic", "firehose", "--id", "d", "--last", "1h", "--format", "xml"}, "--format \"xml\""},
		{[]string{"--config", hv, "--topic", "nope", "--id", "d", "--last", "1h"}, "topics: [firehose]"},
		{[]string{"--config", ms, "--topic", "metrics", "--id", "plant-1", "--last", "1h"}, "1 id values given, the id has 2 columns [site_id device_id]"},
		{[]string{"--config", intID, "--topic", "counters", "--id", "m-7", "--last", "1h"}, "id column meter (int): \"m-7\" is not an int"},
		// A year of 10-minute buckets with 8 event buckets each is 421,632 partitions.
		{[]string{"--config", hv, "--topic", "firehose", "--id", "d", "--from", "2024-01-01T00:00:00Z", "--to", "2025-01-01T00:00:00Z"}, "raise --max-partitions"},
		{[]string{"--config", hv, "--topic", "firehose", "--id", "d", "--cursor", "not-a-cursor!"}, "invalid cursor"},
		{[]string{"--config", hv, "--topic", "firehose", "--id", "d", "--last", "1h", "--where", "site_id"}, "want COLUMN=VALUE"},
		{[]string{"--config", hv, "--topic", "firehose", "--id", "d", "--last", "1h", "--where", "site_id=p1"}, "only clustering columns after the first"},
	} {
		code, out, errOut := runCmd(t, runQuery, tc.args...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("query %q: exit %d, stdout %q, stderr %q; want exit %d and a message containing %q",
				tc.args, code, out, errOut, exitUsage, tc.want)
		}
	}
}
