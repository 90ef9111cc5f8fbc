package cassandra

import (
	"strings"
	"testing"
)

// TestRoutingTableWithoutTheAdoptionColumnsIsRefusedWithItsFix: a sink_splits created before the
// decider's adoption was written with the record lacks three columns; the schema check names the
// ALTER TABLE that adds them, and passes a table that has them all.
func TestRoutingTableWithoutTheAdoptionColumnsIsRefusedWithItsFix(t *testing.T) {
	var cols []SchemaColumn
	for _, name := range strings.Split("table_name, bucket_start, entity, generation, from_time, first_event_bucket, event_buckets, decided_at, decided_by", ", ") {
		cols = append(cols, SchemaColumn{Name: name})
	}
	err := checkRoutingTable("telemetry", RoutingTable, cols)
	if err == nil || !strings.Contains(err.Error(), "ALTER TABLE telemetry.sink_splits ADD (source_topic text, source_partition int, source_from_offset bigint)") {
		t.Errorf("an old routing table: %v; want the ALTER TABLE that adds the three columns", err)
	}
	for _, name := range []string{"source_topic", "source_partition", "source_from_offset"} {
		cols = append(cols, SchemaColumn{Name: name})
	}
	if err := checkRoutingTable("telemetry", RoutingTable, cols); err != nil {
		t.Errorf("a current routing table: %v", err)
	}
}
