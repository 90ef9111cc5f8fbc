package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEnvelopeEntryDefaultsAndDeleteWarning: an envelope entry skips tombstones by default (the one after
// a delete event says nothing more), skips delete events on a bucketed entry by default, and a
// latest-value envelope entry, whose delete events delete rows, gets the short-gc_grace warning a
// deleting entry gets.
func TestEnvelopeEntryDefaultsAndDeleteWarning(t *testing.T) {
	for _, tc := range []struct {
		bucket, gcGrace string
		warn            bool
	}{
		{"none", "1d", true},
		{"none", "10d", false},
		{"{width: 1d}", "1d", false},
	} {
		text := strings.ReplaceAll(latestYAML, "BUCKET", tc.bucket+"\n    envelope: Debezium\n    gc_grace: "+tc.gcGrace)
		text = strings.ReplaceAll(text, "time: {field: ts}", "time: {source: change}")
		text = strings.ReplaceAll(text, "      - {column: channel, order: asc}", "      - {column: channel, order: asc}\n      - {column: lsn, order: asc}")
		text = strings.ReplaceAll(text, "    clustering:", "      - {name: lsn, type: bigint, source: change, field: source.lsn}\n    clustering:")
		path := filepath.Join(t.TempDir(), "c.yaml")
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		c := loadValid(t, path, nil)
		tp := c.Topics["latest"]
		if tp.Envelope != EnvelopeDebezium || tp.OnTombstone != OnTombstoneSkip || tp.OnDelete != OnDeleteSkip || tp.Time.Source != TimeSourceChange {
			t.Errorf("%s: envelope %q, on_tombstone %q, on_delete %q, time.source %q", tc.bucket, tp.Envelope, tp.OnTombstone, tp.OnDelete, tp.Time.Source)
		}
		ws := c.Warnings()
		if got := len(ws) == 1 && ws[0].Path == "topics.latest.gc_grace" && strings.Contains(ws[0].Problem, "envelope debezium"); got != tc.warn {
			t.Errorf("%s, gc_grace %s: warnings %v, want one on gc_grace: %v", tc.bucket, tc.gcGrace, ws, tc.warn)
		}
	}
}
