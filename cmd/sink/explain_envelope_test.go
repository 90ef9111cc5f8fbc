package main

import (
	"strings"
	"testing"
)

const cdcExample = "../../examples/accounts-cdc.yaml"

// TestExplainShowsAChangeEventsOpAndWhereEachValueCameFrom: sink explain of a Debezium event names its
// op, and after each value the part of the event it came from (after, before, change); a delete deletes
// the latest-value row at its offset (write_timestamp offset, the default of an envelope latest-value
// entry) and is skipped by the history entry.
func TestExplainShowsAChangeEventsOpAndWhereEachValueCameFrom(t *testing.T) {
	common := []string{"--config", cdcExample, "--topic", "pg.public.accounts", "--timestamp", "2023-11-14T22:13:23Z", "--partition", "1", "--offset", "5007"}
	code, out, errOut := runCmd(t, runExplain, append(common, "--record", "@../../mapper/testdata/debezium/update.schema.json")...)
	if code != exitOK || errOut != "" {
		t.Fatalf("update: exit %d, stderr %q\n%s", code, errOut, out)
	}
	for _, want := range []string{
		"change           op u (update): a Debezium change event",
		"  id             = 42  (from after field \"id\")",
		"-1.50  (from after field \"balance\")",
		"'2023-11-14T22:13:20.123Z'  (from after field \"updated\")",
		"24023200  (from change field \"source.lsn\")",
		"write timestamp  5007 (offset: the record's offset)", // an envelope latest-value entry's default
	} {
		if !strings.Contains(out, want) {
			t.Errorf("update: the output lacks %q:\n%s", want, out)
		}
	}
	code, out, errOut = runCmd(t, runExplain, append(common, "--record", "@../../mapper/testdata/debezium/delete.json")...)
	if code != exitOK || errOut != "" {
		t.Fatalf("delete: exit %d, stderr %q\n%s", code, errOut, out)
	}
	for _, want := range []string{
		"skipped (reason deleted): this entry writes no row",
		"change           op d (delete): a Debezium change event",
		"delete           deletes the entity's row (a delete event on a latest-value entry)",
		"  id             = 42  (from before field \"id\")",
		"DELETE FROM shop.accounts USING TIMESTAMP ? WHERE id = ?",
		"write timestamp  5007 (offset: the event's offset",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("delete: the output lacks %q:\n%s", want, out)
		}
	}
}
