package mapper

import (
	"errors"
	"strings"
	"testing"

	"github.com/bucketsink/sink/config"
)

// TestMappingErrorsNameNoValueOfTheRecord guards the logs of topics with personal data: a record that
// cannot be mapped is reported by column, field, position in a collection and reason, never by its
// value or a map key, whichever the path (event time, scalar, list element, map entry, bad JSON);
// Quoted, for the dead letter and for log.quote_values, still shows them.
func TestMappingErrorsNameNoValueOfTheRecord(t *testing.T) {
	m := newMapper(t, func(tp *config.Topic) {
		tp.Columns = append(tp.Columns,
			config.Column{Name: "li", Type: "list<int>", Field: "li"},
			config.Column{Name: "mp", Type: "map<text, int>", Field: "mp"},
			config.Column{Name: "bl", Type: "blob", Field: "bl"})
	})
	const secret = "Jane-Doe-1970"
	const good = `"device_id":"d","ts":"2024-01-15T14:37:22Z","temperature":1`
	for _, tc := range []struct{ name, value, plain string }{
		{"event time", `{"device_id":"d","ts":"` + secret + `","temperature":1}`,
			`event time: field "ts" is not RFC 3339 with an offset (e.g. 2024-01-15T10:00:00Z)`},
		{"scalar", `{` + good + `,"humidity":"` + secret + `"}`,
			`column humidity: field "humidity" is not a number for CQL double`},
		{"list element", `{` + good + `,"li":[1,"` + secret + `"]}`,
			`column li: field "li" element 1 is not a number for CQL int`},
		{"map entry", `{` + good + `,"mp":{"a":1,"` + secret + `":"x"}}`,
			`column mp: field "mp" entry 1 is not a number for CQL int`},
		{"map null", `{` + good + `,"mp":{"` + secret + `":null}}`,
			`column mp: field "mp" entry 0 is null, and CQL collections cannot hold nulls`},
		{"blob", `{` + good + `,"bl":"` + secret + `!"}`,
			`column bl: field "bl" is not base64 for CQL blob`},
		{"not JSON", `{"device_id":"d","note":` + secret + `}`,
			`decoding JSON: cannot parse JSON: cannot parse object: cannot parse object value: cannot parse number: unexpected char`},
		{"not JSON after the value", `{"device_id":"d"} ` + secret,
			`decoding JSON: unexpected tail`},
	} {
		_, err := m.Map(rec(tc.value))
		if err == nil {
			t.Errorf("%s: mapped", tc.name)
			continue
		}
		const prefix = "topic sensor-readings partition 3 offset 1207: "
		if err.Error() != prefix+tc.plain {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, err, prefix+tc.plain)
		}
		if strings.Contains(err.Error(), secret[:4]) {
			t.Errorf("%s: the message shows the value: %s", tc.name, err)
		}
		if !strings.Contains(Quoted(err), secret[:4]) {
			t.Errorf("%s: the quoted message does not show the value: %s", tc.name, Quoted(err))
		}
	}
}

// TestOffsetOutOfRangeIsNamedAsSuch guards the message of an RFC 3339 time whose only fault is its UTC
// offset (+24:00): it has an offset, so "not RFC 3339 with an offset" sent people looking for the wrong
// mistake. The event time and a timestamp column say the same.
func TestOffsetOutOfRangeIsNamedAsSuch(t *testing.T) {
	m := newMapper(t, func(tp *config.Topic) {
		tp.Columns = append(tp.Columns, config.Column{Name: "tsv", Type: "timestamp", Field: "tsv"})
	})
	const prefix = "topic sensor-readings partition 3 offset 1207: "
	for _, tc := range []struct{ value, want string }{
		{`{"device_id":"d","ts":"2024-01-15T14:37:22+24:00","temperature":1}`,
			`event time: field "ts" is RFC 3339 but for its UTC offset, which must be -23:59 to +23:59`},
		{`{"device_id":"d","ts":"2024-01-15T14:37:22Z","temperature":1,"tsv":"2024-01-15T14:37:22-00:60"}`,
			`column tsv: field "tsv" is RFC 3339 but for its UTC offset, which must be -23:59 to +23:59 for CQL timestamp`},
		{`{"device_id":"d","ts":"2024-01-15T14:37:22+2400","temperature":1}`,
			`event time: field "ts" is not RFC 3339 with an offset (e.g. 2024-01-15T10:00:00Z)`},
	} {
		_, err := m.Map(rec(tc.value))
		if err == nil || err.Error() != prefix+tc.want {
			t.Errorf("%s:\n got %v\nwant %s", tc.value, err, prefix+tc.want)
		}
	}
}

// TestNumberOutsideJSONIsRefusedInAnyField guards one strictness for JSON: NaN in a field no column reads
// was accepted (fastjson takes it) while Infinity was refused, and the scan refused both. Every number
// outside JSON's grammar is now a decode error wherever it is, on a topic the scan reads and on one it
// does not (a set column sends every record through fastjson), while a JSON number a column cannot take
// (1.5 for an int) stays a mapping error of that column.
func TestNumberOutsideJSONIsRefusedInAnyField(t *testing.T) {
	scanned := newMapper(t, nil)
	parsed := newMapper(t, func(tp *config.Topic) {
		tp.Columns = append(tp.Columns, config.Column{Name: "tags", Type: "set<text>", Field: "tags"})
	})
	const good = `"device_id":"d","ts":"2024-01-15T14:37:22Z","temperature":1`
	for _, m := range []*Mapper{scanned, parsed} {
		for _, n := range []string{"NaN", "nan", "-NaN", "Infinity", "-Infinity", "inf", "+1", "1-2", "1.2.3"} {
			for _, value := range []string{`{` + good + `,"unused":` + n + `}`, `{` + good + `,"x":{"y":[0,` + n + `]}}`} {
				_, err := m.Map(rec(value))
				var re *RecordError
				if !errors.As(err, &re) || re.Reason != ReasonDecode {
					t.Errorf("%s: error %v, want a decode error", value, err)
				}
			}
		}
		if _, err := m.Map(rec(`{` + good + `,"unused":-1.5e-3,"x":[01,0]}`)); err != nil {
			t.Errorf("JSON numbers refused: %v", err)
		}
	}
	_, err := parsed.Map(rec(`{` + good + `,"x":{"y":[0,NaN]}}`))
	if want := `decoding JSON: field "x.y[1]" is NaN, a number outside JSON's grammar`; !strings.Contains(Quoted(err), want) ||
		strings.Contains(err.Error(), "x.y") {
		t.Errorf("message %q / quoted %q; want the path and value in the quoted one only (%s)", err, Quoted(err), want)
	}
}
