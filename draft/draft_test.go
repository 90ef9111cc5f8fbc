package draft

import (
	"strings"
	"testing"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/packed"
)

func TestColumnNamesAreLowerSnakeCaseValidAndUnique(t *testing.T) {
	for _, c := range []struct {
		path  []string
		taken []string
		want  string
	}{
		{[]string{"deviceId"}, nil, "device_id"},
		{[]string{"site", "geoLat"}, nil, "site_geo_lat"},
		{[]string{"HTTPStatus"}, nil, "http_status"},
		{[]string{"reading-id"}, nil, "reading_id"},
		{[]string{"__meta__", "v2Count"}, nil, "meta_v2_count"},
		{[]string{"2fa"}, nil, "f_2fa"},
		{[]string{"key"}, nil, "key_value"}, // a reserved CQL word
		{[]string{"Table"}, nil, "table_value"},
		{[]string{"bucket"}, []string{"bucket", "event_bucket"}, "bucket_2"},
		{[]string{"site", "id"}, []string{"site_id", "site_id_2"}, "site_id_3"},
		{[]string{"ünïcode"}, nil, "n_code"},
		{[]string{"€"}, nil, "field"},
	} {
		if got := ColumnName(c.path, c.taken); got != c.want {
			t.Errorf("ColumnName(%q, %q) = %q, want %q", c.path, c.taken, got, c.want)
		}
	}
}

func TestTableAndTopicNames(t *testing.T) {
	if got := TableName("Sensor.Readings-v2"); got != "sensor_readings_v2" {
		t.Errorf("TableName = %q", got)
	}
	if got := TableName(strings.Repeat("a", 60)); len(got) != 48 {
		t.Errorf("TableName of 60 characters has %d, want Cassandra's 48", len(got))
	}
	if got := TopicName("sensor.readings-v2"); got != "sensor_readings-v2" {
		t.Errorf("TopicName = %q", got)
	}
}

func leaf(path string, k packed.Kind, writer string) codec.Leaf {
	return codec.Leaf{Path: strings.Split(path, "."), Type: packed.Scalar(k), Writer: writer}
}

// An event time is a timestamp, a count since the epoch (read as milliseconds unless told) or an RFC 3339
// string; anything else refuses the draft, naming the field.
func TestTimeFormatOfEachType(t *testing.T) {
	for _, c := range []struct {
		l      codec.Leaf
		format string
		bad    bool
	}{
		{codec.Leaf{Path: []string{"ts"}, Type: packed.Scalar(packed.KTimestamp), Time: true}, "", false},
		{leaf("ts", packed.KBigint, "long"), "unix_ms", false},
		{leaf("ts", packed.KText, "string"), "", false},
		{leaf("ts", packed.KDouble, "double"), "", true},
		{leaf("ts", packed.KDate, "date"), "", true},
		{leaf("ts", packed.KBoolean, "boolean"), "", true},
	} {
		in := Input{Topic: "t", Codec: "avro", ID: []string{"id"}, Time: "ts", Leaves: []codec.Leaf{leaf("id", packed.KText, "string"), c.l}}
		d, err := New(in)
		switch {
		case c.bad && (err == nil || !strings.Contains(err.Error(), "cannot be an event time")):
			t.Errorf("%s: %v, want a refusal", c.l.Writer, err)
		case !c.bad && err != nil:
			t.Errorf("%s: %v", c.l.Writer, err)
		case !c.bad && d.TimeFormat != c.format:
			t.Errorf("%s: format %q, want %q", c.l.Writer, d.TimeFormat, c.format)
		}
	}
}

// A column the codec's check refuses is listed with the check's error; a refused time field refuses the draft.
func TestCheckMovesRefusedColumnsToTheComment(t *testing.T) {
	in := Input{Topic: "t", Codec: "avro", ID: []string{"id"}, Time: "ts",
		Leaves: []codec.Leaf{leaf("id", packed.KText, "string"), leaf("ts", packed.KBigint, "long"), leaf("odd", packed.KInet, "string")},
		Check: func(fs []codec.Field) error {
			for _, f := range fs {
				if f.Name() == "odd" {
					return &codec.SchemaError{Field: "odd", Column: f.Column, Err: errStr("not an address")}
				}
			}
			return nil
		}}
	d, err := New(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Unfit) != 1 || !strings.Contains(d.Unfit[0].Reason, "not an address") || len(d.Columns) != 2 {
		t.Errorf("columns %+v, unfit %+v", d.Columns, d.Unfit)
	}
	in.Check = func([]codec.Field) error { return errStr("no") }
	if _, err := New(in); err == nil || !strings.Contains(err.Error(), `--time "ts" (long) cannot be an event time: no`) {
		t.Errorf("a refused time field: %v", err)
	}
}

type errStr string

func (e errStr) Error() string { return string(e) }

func TestMergeAppendsToTheTopicsOfAConfig(t *testing.T) {
	d, err := New(Input{Topic: "new", Codec: "json", ID: []string{"id"}, Time: "ts",
		Leaves: []codec.Leaf{leaf("id", packed.KText, "string"), leaf("ts", packed.KText, "string")}})
	if err != nil {
		t.Fatal(err)
	}
	d.Policy = Policy{Width: "1d"}
	block := d.Block()
	for _, c := range []struct{ name, in, want string }{
		{"topics in the middle", "kafka:\n  brokers: [a]\ntopics: # the entries\n  old:\n    topic: x\n\n# logging\nlog:\n  level: info\n",
			"kafka:\n  brokers: [a]\ntopics: # the entries\n  old:\n    topic: x\n\n" + block + "# logging\nlog:\n  level: info\n"},
		{"topics last", "kafka: {}\ntopics:\n  old:\n    topic: x", "kafka: {}\ntopics:\n  old:\n    topic: x\n" + block},
		{"no topics", "kafka: {}", "kafka: {}\ntopics:\n" + block},
	} {
		got, err := d.Merge(c.in, nil)
		if err != nil || got != c.want {
			t.Errorf("%s: %v\n%s\nwant\n%s", c.name, err, got, c.want)
		}
	}
	if _, err := d.Merge("topics: {old: {topic: x}}\n", nil); err == nil {
		t.Error("an inline topics: was merged into")
	}
}
