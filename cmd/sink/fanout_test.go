package main

import (
	"strings"
	"testing"
)

// The tools on a config whose Kafka topic is read by several entries (examples/sensor-fanout.yaml:
// readings by device and day, and by site and hour).
const fanoutExample = "../../examples/sensor-fanout.yaml"

// TestExplainOfAKafkaTopicShowsEveryEntry: --topic naming the Kafka topic explains the record for
// each entry that reads it, each with its table; naming an entry explains that entry alone, as for a
// topic of one entry.
func TestExplainOfAKafkaTopicShowsEveryEntry(t *testing.T) {
	common := []string{"--config", fanoutExample, "--timestamp", "2024-01-15T14:37:23.5Z", "--partition", "3", "--offset", "1207", "--record", sensorRecord}
	code, out, errOut := runCmd(t, runExplain, append(common, "--topic", "sensor-readings")...)
	if code != exitOK || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{
		"Kafka topic sensor-readings is read by 2 entries (by-device, by-site); each maps the record:\n",
		"\n=== topics.by-device\ntopic            by-device (Kafka topic sensor-readings, partition 3, offset 1207)\n",
		"table            telemetry.readings_by_device\n",
		"\n=== topics.by-site\ntopic            by-site (Kafka topic sensor-readings, partition 3, offset 1207)\n",
		"table            telemetry.readings_by_site\n",
		"  hour           = '2024-01-15T14'",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runCmd(t, runExplain, append(common, "--topic", "by-site")...)
	if code != exitOK || strings.Contains(out, "by-device") || !strings.HasPrefix(out, "topic            by-site ") {
		t.Errorf("--topic by-site: exit %d, output:\n%s", code, out)
	}
}

// TestExplainNamesTheEntryThatRefusesARecordTheOthersMap: a record without the site is refused by
// by-site alone (exit 4, one dead letter naming it) while by-device shows its row.
func TestExplainNamesTheEntryThatRefusesARecordTheOthersMap(t *testing.T) {
	code, out, errOut := runCmd(t, runExplain, "--config", fanoutExample, "--topic", "sensor-readings", "--timestamp", "2024-01-15T14:37:23.5Z",
		"--record", `{"device_id":"dev-0042","ts":"2024-01-15T14:37:22.123Z","temperature":21.5}`)
	if code != exitBadData || errOut != "" {
		t.Fatalf("exit %d, stderr %q; want %d", code, errOut, exitBadData)
	}
	for _, want := range []string{
		"table            telemetry.readings_by_device\n",
		"\n=== topics.by-site\ndead letter (reason map): topic sensor-readings partition 0 offset 0: topics.by-site: column site_id: field \"site.id\" is missing, and an id column needs a value\n",
		"\none dead letter names the refusing entry (by-site); the other entries' rows are written\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}
}

// TestToolsRefuseAKafkaTopicOfSeveralEntriesWhereOneTableIsMeant: query and plan read or judge one
// table, so a Kafka topic read by several entries is refused with the entries listed; query's
// --table names the table instead, and schema's --topic takes the Kafka topic as all its tables.
func TestToolsRefuseAKafkaTopicOfSeveralEntriesWhereOneTableIsMeant(t *testing.T) {
	const several = `Kafka topic "sensor-readings" is read by 2 entries (by-device, by-site); name one of them`
	for _, tc := range []struct {
		name string
		run  func(t *testing.T) (int, string, string)
		code int
		want string
	}{
		{"query --topic", func(t *testing.T) (int, string, string) {
			return runCmd(t, runQuery, "--config", fanoutExample, "--topic", "sensor-readings", "--id", "x", "--last", "1h")
		}, exitUsage, several},
		{"plan --topic", func(t *testing.T) (int, string, string) {
			return runCmd(t, runPlan, "--config", fanoutExample, "--topic", "sensor-readings", "--rate", "1", "--row-bytes", "100")
		}, exitUsage, several},
		// The id the message names is by-site's: --table found the entry that writes the table.
		{"query --table", func(t *testing.T) (int, string, string) {
			return runCmd(t, runQuery, "--config", fanoutExample, "--table", "telemetry.readings_by_site", "--id", "a", "--id", "b", "--last", "1h")
		}, exitUsage, "topics.by-site: 2 id values given, the id has 1 columns [site_id]"},
		{"query --table unknown", func(t *testing.T) (int, string, string) {
			return runCmd(t, runQuery, "--config", fanoutExample, "--table", "readings", "--id", "a", "--last", "1h")
		}, exitUsage, `no entry writes "readings"; tables: telemetry.readings_by_device, telemetry.readings_by_site`},
		{"query --topic and --table", func(t *testing.T) (int, string, string) {
			return runCmd(t, runQuery, "--config", fanoutExample, "--topic", "by-site", "--table", "readings_by_site", "--id", "a", "--last", "1h")
		}, exitUsage, "--topic (or --table, not both)"},
		{"plan --topic entry", func(t *testing.T) (int, string, string) {
			return runCmd(t, runPlan, "--config", fanoutExample, "--topic", "by-site", "--rate", "1", "--row-bytes", "100")
		}, exitOK, "Topic by-site (Kafka sensor-readings): bucket width 1h"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := tc.run(t)
			if code != tc.code || !strings.Contains(out+errOut, tc.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d and %q", code, out, errOut, tc.code, tc.want)
			}
		})
	}
	code, out, errOut := runCmd(t, runSchema, "--config", fanoutExample, "--topic", "sensor-readings", "--at", "2024-01-15T12:00:00Z")
	if code != exitOK || errOut != "" || !strings.Contains(out, "CREATE TABLE IF NOT EXISTS telemetry.readings_by_device (") ||
		!strings.Contains(out, "CREATE TABLE IF NOT EXISTS telemetry.readings_by_site (") {
		t.Errorf("schema --topic sensor-readings: exit %d, stderr %q, output:\n%s", code, errOut, out)
	}
}
