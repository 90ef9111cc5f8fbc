package pipeline

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kgo"
	"gopkg.in/inf.v0"

	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/mapper"
)

// TestIntegrationDebeziumLatestAndHistory runs a topic of Debezium change events (JsonConverter's JSON,
// with and without the schema part) on the real stack into a latest-value table and a history table:
// creates and updates land in both, the delete removes the row from the latest table (and the connector
// sending the create and the delete again, as it does after a restart, does not bring it back), the
// history keeps every change once, and the delete and the tombstone after it are skipped and counted
// (reasons deleted and tombstone), never dead-lettered. Then a transaction updates and deletes one row,
// both changes at one source.ts_ms, at offsets 999 and 1000: the latest-value tie (offset mod 1000) would
// let the update win and bring the row back; write_timestamp offset, the envelope entry's default, keeps
// it deleted.
func TestIntegrationDebeziumLatestAndHistory(t *testing.T) {
	s := newStackWith(t, 1, nil, func(c *config.Config) {
		latest := c.Topics["readings"]
		latest.Envelope = config.EnvelopeDebezium
		latest.ID, latest.Time, latest.Bucket, latest.Clustering = []string{"id"}, config.EventTime{Source: config.TimeSourceChange}, config.Bucket{Width: config.BucketNone}, nil
		latest.Table = "accounts"
		latest.Columns = []config.Column{
			{Name: "id", Type: "bigint", Field: "id"},
			{Name: "balance", Type: "decimal", Field: "balance"},
			{Name: "op", Type: "text", Source: config.SourceChange, Field: "op"},
		}
		c.Topics["readings"] = latest
		history := latest
		history.Table, history.Bucket = "history", config.Bucket{Width: "1h"}
		history.Columns = []config.Column{
			{Name: "id", Type: "bigint", Field: "id"},
			{Name: "changed", Type: "timestamp", Source: config.SourceEventTime},
			{Name: "lsn", Type: "bigint", Source: config.SourceChange, Field: "source.lsn"},
			{Name: "balance", Type: "decimal", Field: "balance"},
		}
		history.Clustering = []config.Clustering{{Column: "changed"}, {Column: "lsn"}}
		c.Topics["history"] = history
	})
	base := time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond)
	event := func(op string, id int, balance string, sec, lsn int) *kgo.Record {
		row := fmt.Sprintf(`{"id":%d,"balance":%q}`, id, balance)
		before, after := "null", row
		if op == "d" {
			before, after = fmt.Sprintf(`{"id":%d,"balance":null}`, id), "null"
		}
		v := fmt.Sprintf(`{"before":%s,"after":%s,"source":{"connector":"postgresql","ts_ms":%d,"lsn":%d},"op":%q,"ts_ms":%d}`,
			before, after, base.Add(time.Duration(sec)*time.Second).UnixMilli(), lsn, op, base.UnixMilli())
		return &kgo.Record{Topic: s.topic, Key: fmt.Appendf(nil, `{"id":%d}`, id), Value: []byte(v)}
	}
	withSchema, err := os.ReadFile("../mapper/testdata/debezium/create.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	m := s.start(nil)
	s.produceCommitted(
		event("c", 1, "10.00", 1, 100),
		event("c", 2, "20.00", 2, 101),
		event("u", 1, "11.50", 3, 102),
		event("d", 2, "", 4, 103),
		&kgo.Record{Topic: s.topic, Key: []byte(`{"id":2}`)}, // the tombstone after the delete
		event("c", 2, "20.00", 2, 101),                       // sent again by the connector, in commit order:
		event("d", 2, "", 4, 103),                            // stays deleted
		&kgo.Record{Topic: s.topic, Key: []byte(`{"schema":null,"payload":{"id":42}}`), Value: withSchema},
	)
	var fill []*kgo.Record
	for range 999 - s.produced[0] {
		fill = append(fill, event("u", 3, "30.00", 5, 200)) // one row in each table, written again and again
	}
	update, del := event("u", 1, "12.00", 6, 300), event("d", 1, "", 6, 301) // one transaction: one source.ts_ms
	s.produceCommitted(append(fill, update, del)...)
	if update.Offset != 999 || del.Offset != 1000 {
		t.Fatalf("the transaction's update and delete are at offsets %d and %d, want 999 and 1000", update.Offset, del.Offset)
	}
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	balances := map[int64]string{}
	iter := s.session.Driver().Query("SELECT id, balance FROM " + s.ks + ".accounts").Iter()
	var id int64
	var dec inf.Dec
	for iter.Scan(&id, &dec) {
		balances[id] = dec.String()
	}
	if err := iter.Close(); err != nil {
		t.Fatal(err)
	}
	if len(balances) != 2 || balances[3] != "30.00" || balances[42] != "1234.56" {
		t.Errorf("accounts holds %v, want 3 at 30.00 and 42 at 1234.56 (2 deleted, its create sent again too; 1 deleted by the delete at offset 1000 after its update at 999)", balances)
	}
	var n int
	if err := s.session.Driver().Query("SELECT COUNT(*) FROM " + s.ks + ".history").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 6 {
		t.Errorf("history holds %d rows, want 6: the creates of 1, 2 and 42, the two updates of 1 and the update of 3, once each", n)
	}
	if got := testutil.ToFloat64(m.metrics.RecordsSkipped.WithLabelValues(s.topic, mapper.ReasonDeleted)); got != 3 {
		t.Errorf("sink_records_skipped_total{reason=deleted} = %v, want 3 (the history's deletes)", got)
	}
	if got := testutil.ToFloat64(m.metrics.RecordsSkipped.WithLabelValues(s.topic, mapper.ReasonTombstone)); got != 2 {
		t.Errorf("sink_records_skipped_total{reason=tombstone} = %v, want 2 (one per entry)", got)
	}
	if dls := s.dlqRecords(); len(dls) != 0 {
		t.Errorf("%d records dead-lettered, want none", len(dls))
	}
}
