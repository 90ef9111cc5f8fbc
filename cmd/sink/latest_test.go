package main

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPlanShowsALatestValuePartitionAsOneRow: `sink plan` judges a latest-value entry's partition as one
// row per entity whatever the rate (a rate that would overflow any bucketed partition fits), instead of
// failing on its bucket width.
func TestPlanShowsALatestValuePartitionAsOneRow(t *testing.T) {
	args := []string{"--rate", "10000", "--row-bytes", "200", "--config", "../../examples/device-latest.yaml"}
	code, out, errOut := runCmd(t, runPlan, args...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "latest-value table (bucket width none)") || !strings.Contains(out, "1 row per entity, 200 B, whatever the rate") {
		t.Errorf("the latest-value entry is not shown as one row per entity:\n%s", out)
	}
	code, out, errOut = runCmd(t, runPlan, append(args, "--json")...)
	if code != exitOK {
		t.Fatalf("--json: exit %d: %s", code, errOut)
	}
	var rep struct {
		Topic struct {
			Latest     bool `json:"latest"`
			OverBudget bool `json:"over_budget"`
			Estimate   struct {
				WorstRows  float64 `json:"worst_rows"`
				WorstBytes float64 `json:"worst_bytes"`
			} `json:"estimate"`
		} `json:"topic"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if tp := rep.Topic; !tp.Latest || tp.OverBudget || tp.Estimate.WorstRows != 1 || tp.Estimate.WorstBytes != 200 {
		t.Errorf("JSON topic %+v, want latest, one row of 200 bytes, within budget", tp)
	}
}

// TestExplainShowsATombstonesEffect: `sink explain --tombstone` shows what on_tombstone makes of a record
// with a null value: the DELETE of the entity the key names with its timestamp (exit 0), a skip (exit
// 0), or the dead letter (exit 4); and a latest-value upsert shows its write timestamp's tie, the
// offset's last three digits, as the delete does.
func TestExplainShowsATombstonesEffect(t *testing.T) {
	const example = "../../examples/device-latest.yaml"
	base := []string{"--config", example, "--topic", "latest", "--key", "dev-0042", "--timestamp", "2024-01-15T14:40:00Z", "--offset", "1300"}
	code, out, errOut := runCmd(t, runExplain, append(base, "--tombstone")...)
	if code != exitOK || !strings.Contains(out, "DELETE FROM telemetry.device_latest USING TIMESTAMP ? WHERE device_id = ?") ||
		!strings.Contains(out, "1705329600000300 µs") || !strings.Contains(out, "+ offset 1300 mod 1000") || !strings.Contains(out, "'dev-0042'") ||
		!strings.Contains(out, "(device_id), from the Kafka key (key_codec text)") {
		t.Errorf("delete: exit %d\n%s%s", code, out, errOut)
	}
	// The key's raw bytes (for a key in the wire format) explain the same delete.
	asHex := append([]string{"--config", example, "--topic", "latest", "--timestamp", "2024-01-15T14:40:00Z", "--offset", "1300", "--tombstone"}, "--key-hex", hex.EncodeToString([]byte("dev-0042")))
	if code, hexOut, errOut := runCmd(t, runExplain, asHex...); code != exitOK || hexOut != out {
		t.Errorf("--key-hex: exit %d\n%s%s\nwant the output of --key:\n%s", code, hexOut, errOut, out)
	}
	if code, _, errOut := runCmd(t, runExplain, append(asHex, "--key", "dev-0042")...); code != exitUsage || !strings.Contains(errOut, "at most one of --key and --key-hex") {
		t.Errorf("--key and --key-hex: exit %d, stderr %q; want a usage error", code, errOut)
	}
	code, out, errOut = runCmd(t, runExplain, append(base, "--record", `{"device_id":"dev-0042","ts":"2024-01-15T14:37:22.123Z","temperature":21.5}`)...)
	if code != exitOK || !strings.Contains(out, "write timestamp  1705329442123300 µs") || !strings.Contains(out, "tie-break") {
		t.Errorf("upsert: exit %d\n%s%s", code, out, errOut)
	}

	for _, tc := range []struct {
		onTombstone string
		code        int
		says        string
	}{
		{"skip", exitOK, "skipped (reason tombstone)"},
		{"dead_letter", exitBadData, "dead letter (reason decode)"},
	} {
		text, err := os.ReadFile(example)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "c.yaml")
		text = []byte(strings.Replace(string(text), "on_tombstone: delete", "on_tombstone: "+tc.onTombstone, 1))
		if err := os.WriteFile(path, text, 0o644); err != nil {
			t.Fatal(err)
		}
		args := append([]string{"--config", path}, base[2:]...)
		code, out, errOut := runCmd(t, runExplain, append(args, "--tombstone")...)
		if code != tc.code || !strings.Contains(out, tc.says) {
			t.Errorf("%s: exit %d, want %d saying %q:\n%s%s", tc.onTombstone, code, tc.code, tc.says, out, errOut)
		}
	}
}

// TestExplainShowsAKafkaKeyIDIsNotDecoded: under a registry key_codec, an entry whose id is the kafka_key
// (no id column read from a field) deletes by the key's bytes as they are, its upserts' id: `sink explain`
// shows the delete without asking the registry (here one that cannot answer), and says the key was not
// decoded.
func TestExplainShowsAKafkaKeyIDIsNotDecoded(t *testing.T) {
	text, err := os.ReadFile("../../examples/device-latest.yaml")
	if err != nil {
		t.Fatal(err)
	}
	yaml := strings.NewReplacer(
		"{name: device_id, type: text, field: device_id}", "{name: device_id, type: blob, source: kafka_key}",
		"on_tombstone: delete", "on_tombstone: delete\n    key_codec: avro",
	).Replace(string(text)) + "\nschema_registry:\n  urls: [\"http://127.0.0.1:9\"]\n"
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	key := "000000001510" + hex.EncodeToString([]byte("dev-1")) // schema id 21, an Avro "string"
	code, out, errOut := runCmd(t, runExplain, "--config", path, "--topic", "latest", "--tombstone", "--key-hex", key, "--timestamp", "2024-01-15T14:40:00Z")
	if code != exitOK || !strings.Contains(out, "(device_id), from the Kafka key's bytes (key_codec avro, not decoded") ||
		!strings.Contains(out, "0x"+key) {
		t.Errorf("exit %d\n%s%s\nwant the delete by the key's bytes, not decoded", code, out, errOut)
	}
}

// TestQueryOfALatestValueTableTakesNoRange: a latest-value table answers "the newest row of these ids",
// so a range, a cursor or a restriction is a usage error, refused before connecting.
func TestQueryOfALatestValueTableTakesNoRange(t *testing.T) {
	base := []string{"--config", "../../examples/device-latest.yaml", "--topic", "latest", "--id", "dev-1"}
	for _, extra := range [][]string{
		{"--last", "24h"},
		{"--from", "2024-01-15T00:00:00Z", "--to", "2024-01-16T00:00:00Z"},
		{"--where", "site_id=p"},
	} {
		code, _, errOut := runCmd(t, runQuery, append(base, extra...)...)
		if code != exitUsage || !strings.Contains(errOut, "latest-value table") {
			t.Errorf("%v: exit %d, stderr %q; want a usage error naming the latest-value table", extra, code, errOut)
		}
	}
}

// TestExplainMarksAFieldOfAnAvroKey: a column of source key under key_codec avro takes its value from
// a field of the key in the wire format, which `sink explain --key-hex` decodes by its writer schema
// (here from a file) and marks as the key field's, as it does a field of a JSON key.
func TestExplainMarksAFieldOfAnAvroKey(t *testing.T) {
	text, err := os.ReadFile("../../examples/device-latest.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	yaml := strings.NewReplacer(
		"{name: site_id, type: text, field: site.id}", "{name: site_id, type: text, source: key, field: site}",
		"on_tombstone: delete", "on_tombstone: delete\n    key_codec: avro",
	).Replace(string(text)) + "\nschema_registry:\n  urls: [\"http://127.0.0.1:9\"]\n"
	path := filepath.Join(dir, "c.yaml")
	schema := filepath.Join(dir, "key.avsc")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	keySchema := `{"type": "record", "name": "Key", "fields": [{"name": "device_id", "type": "string"}, {"name": "site", "type": "string"}]}`
	if err := os.WriteFile(schema, []byte(keySchema), 0o644); err != nil {
		t.Fatal(err)
	}
	// Schema id 7, then the record: two strings, each its zigzag length and bytes.
	key := "0000000007" + "10" + hex.EncodeToString([]byte("dev-0042")) + "0e" + hex.EncodeToString([]byte("plant-9"))
	code, out, errOut := runCmd(t, runExplain, "--config", path, "--topic", "latest", "--key-hex", key, "--timestamp", "2024-01-15T14:40:00Z",
		"--schema-file", schema, "--schema-type", "avro",
		"--record", `{"device_id":"dev-0042","ts":"2024-01-15T14:37:22.123Z","temperature":21.5}`)
	if code != exitOK || !strings.Contains(out, `'plant-9'  (from key field "site")`) {
		t.Errorf("exit %d\n%s%s\nwant site_id from the Avro key's field site", code, out, errOut)
	}
}
