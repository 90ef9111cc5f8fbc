package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/reader/readertest"
)

// newerTypeColumns are a UDT, a vector, a time, a duration, a tuple and a map with int keys.
var newerTypeColumns = []config.Column{
	{Name: "home", Type: "address", Field: "home", Fields: []config.UDTField{
		{Name: "street", Type: "text"}, {Name: "zip", Type: "int"}, {Name: "tags", Type: "list<text>"}}},
	{Name: "emb", Type: "vector<float, 3>", Field: "emb"},
	{Name: "at", Type: "time", Field: "at"},
	{Name: "span", Type: "duration", Field: "span"},
	{Name: "pair", Type: "tuple<int, text>", Field: "pair"},
	{Name: "counts", Type: "map<int, text>", Field: "counts"},
}

const newerTypeColumnsYAML = `      - name: home
        type: address
        field: home
        fields:
          - {name: street, type: text}
          - {name: zip, type: int}
          - {name: tags, type: "list<text>"}
      - {name: emb, type: "vector<float, 3>", field: emb}
      - {name: at, type: time, field: at}
      - {name: span, type: duration, field: span}
      - {name: pair, type: "tuple<int, text>", field: pair}
      - {name: counts, type: "map<int, text>", field: counts}
`

// TestIntegrationNewerCQLTypesRoundTrip: `sink schema --apply` creates a UDT and a table with a UDT, a
// vector<float, 3>, a time, a duration, a tuple and a map<int, text> column; records written through the
// pipeline read back through `sink query`, in the JSON and the table formats, exactly as the records
// gave them (a null UDT field and a null tuple element included).
func TestIntegrationNewerCQLTypesRoundTrip(t *testing.T) {
	tp := readertest.Topic(config.Bucket{Width: "1d", Key: "text"}, "asc", "device_id")
	tp.Columns = append(tp.Columns, newerTypeColumns...)
	cfg := readertest.Config(t, map[string]config.Topic{"shapes": tp})

	path := filepath.Join(t.TempDir(), "sink.yaml")
	yaml := fmt.Sprintf(`kafka: {brokers: [%s]}
cassandra: {hosts: [%s], keyspace: %s, consistency: ONE}
topics:
  shapes:
    topic: %s
    id: [device_id]
    time: {source: field, field: ts}
    bucket: {width: 1d}
    table: shapes
    columns:
      - {name: device_id, type: text, field: device_id}
      - {name: ts, type: timestamp, source: event_time}
      - {name: seq, type: bigint, field: seq, required: true}
%s    clustering: [{column: ts, order: asc}]
`, strings.Join(cfg.Kafka.Brokers, ", "), strings.Join(cfg.Cassandra.Hosts, ", "), cfg.Cassandra.Keyspace, cfg.Topics["shapes"].Topic, newerTypeColumnsYAML)
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd(t, runSchema, "--config", path)
	wantType := "CREATE TYPE IF NOT EXISTS " + cfg.Cassandra.Keyspace + ".address (street text, zip int, tags list<text>);"
	if code != exitOK || !strings.Contains(out, wantType) || strings.Index(out, wantType) > strings.Index(out, "CREATE TABLE") ||
		!strings.Contains(out, "home frozen<address>,") || !strings.Contains(out, "emb vector<float, 3>,") ||
		!strings.Contains(out, "pair frozen<tuple<int, text>>,") || !strings.Contains(out, "counts frozen<map<int, text>>,") {
		t.Fatalf("sink schema: exit %d, stderr %s, stdout:\n%s\nwant %s before the table, and the columns frozen but the vector", code, errOut, out, wantType)
	}
	if code, _, errOut := runCmd(t, runSchema, "--config", path, "--apply"); code != exitOK {
		t.Fatalf("sink schema --apply: exit %d, stderr %s", code, errOut)
	}

	day := time.Date(2024, 3, 5, 0, 0, 0, 0, time.UTC)
	events := []readertest.Event{
		{Topic: "shapes", ID: []string{"dev-1"}, TS: day.Add(time.Hour), Seq: 1,
			Extra: `"home":{"street":"Main St","zip":12345,"tags":["a","b"]},"emb":[0.5,-1,3.25],"at":"15:04:05.123456789",` +
				`"span":"P1Y2M3DT4H5M6S","pair":[7,"x"],"counts":{"10":"ten","-2":"minus two"}`},
		{Topic: "shapes", ID: []string{"dev-1"}, TS: day.Add(2 * time.Hour), Seq: 2,
			Extra: `"home":{"zip":1},"emb":[1e-3,"2",0],"at":3600000000001,"span":"-90m","pair":[null,"y"],"counts":{}`},
	}
	// The fixture applies the schema again (a no-op that the check passes) and runs the pipeline.
	readertest.NewFixture(t, cfg, events, []time.Time{day})

	args := []string{"--config", path, "--topic", "shapes", "--id", "dev-1", "--from", "2024-03-05T00:00:00Z", "--to", "2024-03-06T00:00:00Z"}
	code, out, errOut = runCmd(t, runQuery, append(args, "--format", "json")...)
	if code != exitOK {
		t.Fatalf("sink query: exit %d, stderr %s", code, errOut)
	}
	var doc struct {
		Rows []struct {
			Values map[string]any `json:"values"`
		} `json:"rows"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	want := []map[string]any{
		{"home": map[string]any{"street": "Main St", "zip": 12345.0, "tags": []any{"a", "b"}}, "emb": []any{0.5, -1.0, 3.25},
			"at": "15:04:05.123456789", "span": "1y2mo3d4h5m6s", "pair": []any{7.0, "x"}, "counts": map[string]any{"10": "ten", "-2": "minus two"}},
		// An empty frozen map reads back as an empty map.
		{"home": map[string]any{"street": nil, "zip": 1.0, "tags": nil}, "emb": []any{0.001, 2.0, 0.0},
			"at": "01:00:00.000000001", "span": "-1h30m", "pair": []any{nil, "y"}, "counts": map[string]any{}},
	}
	if len(doc.Rows) != len(want) {
		t.Fatalf("%d rows, want %d:\n%s", len(doc.Rows), len(want), out)
	}
	for i, w := range want {
		for col, v := range w {
			if got := doc.Rows[i].Values[col]; !reflect.DeepEqual(got, v) {
				t.Errorf("row %d column %s: got %#v, want %#v", i, col, got, v)
			}
		}
	}

	code, out, errOut = runCmd(t, runQuery, args...)
	if code != exitOK {
		t.Fatalf("sink query (table): exit %d, stderr %s", code, errOut)
	}
	for _, cell := range []string{`{"street":"Main St","tags":["a","b"],"zip":12345}`, `[0.5,-1,3.25]`, `15:04:05.123456789`,
		`1y2mo3d4h5m6s`, `[7,"x"]`, `{"-2":"minus two","10":"ten"}`,
		`{"street":null,"tags":null,"zip":1}`, `[0.001,2,0]`, `01:00:00.000000001`, `-1h30m`, `[null,"y"]`} {
		if !strings.Contains(out, cell) {
			t.Errorf("the table has no cell %s:\n%s", cell, out)
		}
	}
}
