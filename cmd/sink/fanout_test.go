package main

import (
	"strings"
	"testing"
)

// The tools on a config whose Kafka topic is read by several entries (examples/sensor-fanout.yaml:
// readings by device and day, by site and hour, and the latest reading of every device).
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
		"Kafka topic sensor-readings is read by 3 entries (by-device, by-site, latest); each maps the record:\n",
		"\n=== topics.by-device\ntopic            by-device (Kafka topic sensor-readings, partition 3, offset 1207)\n",
		"table            telemetry.readings_by_device\n",
		"\n=== topics.by-site\ntopic            by-site (Kafka topic sensor-readings, partition 3, offset 1207)\n",
		"table            telemetry.readings_by_site\n",
		"  hour           = '2024-01-15T14'",
		"\n=== topics.latest\ntopic            latest (Kafka topic sensor-readings, partition 3, offset 1207)\n",
		"table            telemetry.latest_by_device\nkind             latest value",
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
	const several = `Kafka topic "sensor-readings" is read by 3 entries (by-device, by-site, latest); name one of them`
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
		}, exitUsage, `no entry writes "readings"; tables: telemetry.readings_by_device, telemetry.readings_by_site, telemetry.latest_by_device`},
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
		!strings.Contains(out, "CREATE TABLE IF NOT EXISTS telemetry.readings_by_site (") ||
		!strings.Contains(out, "CREATE TABLE IF NOT EXISTS telemetry.latest_by_device (") {
		t.Errorf("schema --topic sensor-readings: exit %d, stderr %q, output:\n%s", code, errOut, out)
	}
}

// TestExplainShowsWhichEntriesFilterARecordOut: on a topic of several event types (where), an entry
// whose filter does not take the record shows a skip naming its test, never a dead letter; the entry
// that takes it by a header given with --header shows its row.
func TestExplainShowsWhichEntriesFilterARecordOut(t *testing.T) {
	code, out, errOut := runCmd(t, runExplain, "--config", "../../examples/event-types.yaml", "--topic", "app-events",
		"--timestamp", "2024-01-15T14:37:23.5Z", "--header", "event-type=view", "--header", "session-id=s-9",
		"--record", `{"type":"view","user":"u-17","ts":"2024-01-15T14:37:23Z","page":"/home"}`)
	if code != exitOK || errOut != "" {
		t.Fatalf("exit %d, stderr %q:\n%s", code, errOut, out)
	}
	for _, want := range []string{
		"\n=== topics.clicks\nskipped (reason filtered): this entry writes no row, counted in sink_records_skipped_total: topic app-events partition 0 offset 0: topics.clicks: filtered out: the record does not pass where field \"type\" equals \"click\": present\n",
		"\n=== topics.purchases\nskipped (reason filtered): this entry writes no row, counted in sink_records_skipped_total: topic app-events partition 0 offset 0: topics.purchases: filtered out: the record does not pass where (key field \"kind\" equals \"purchase\": absent and not header \"test\" exists: absent)\n",
		"\n=== topics.views\ntopic            views (Kafka topic app-events, partition 0, offset 0)\n",
		"table            app.views_by_user\n",
		"  4  session_id   text       's-9'  (from header \"session-id\")\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}
	if code, _, errOut := runCmd(t, runExplain, "--config", "../../examples/event-types.yaml", "--topic", "views", "--header", "novalue",
		"--record", `{}`); code != exitUsage || !strings.Contains(errOut, `"novalue" is not NAME=VALUE`) {
		t.Errorf("--header without =: exit %d, stderr %q", code, errOut)
	}
}
