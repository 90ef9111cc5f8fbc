package mapper

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/packed"
)

// TestTTLFromAField binds each row's TTL from its record's ttl_field, through the scan and the tree
// alike: an instant's remaining time or a duration, in whole seconds rounded down, cut to the max; an
// expiry already passed (or less than a second away) is reason expired, which the pipeline skips and
// counts; a record without the field gets the entry's ttl, or none (0: the INSERT binds no expiry);
// a negative duration or a value that is no time is bad input naming the field.
func TestTTLFromAField(t *testing.T) {
	now := time.Date(2024, 1, 15, 14, 37, 22, 0, time.UTC)
	event := `"ts":"2024-01-15T14:27:22Z"` // ten minutes before now
	type want struct {
		ttl    int32  // the bound TTL in seconds
		reason string // "" when mapped
		err    string
	}
	cases := []struct {
		name   string
		fixed  time.Duration // the entry's ttl
		from   string        // ttl_from
		field  config.TTLField
		value  string // the ttl field's JSON, "" for none
		expect want
	}{
		{"instant in an hour", 0, "", instant(), `"2024-01-15T15:37:22Z"`, want{ttl: 3600}},
		{"instant rounded down", 0, "", instant(), `"2024-01-15T15:37:22.999Z"`, want{ttl: 3600}},
		{"instant as epoch ms", 0, "", instant(), `1705333042000`, want{ttl: 3600}},
		{"instant in a layout", 0, "", config.TTLField{Field: "exp", As: "instant", Format: "2006-01-02 15:04", Zone: "Europe/Paris", Max: config.Duration(30 * config.Day)},
			`"2024-01-15 16:37"`, want{ttl: 3578}}, // 15:37:00Z,
		{"instant past the max", 0, "", instant(), `"2024-03-15T14:37:22Z"`, want{ttl: 30 * 86400}},
		{"instant in year 9999", 0, "", instant(), `"9999-12-31T23:59:59Z"`, want{ttl: 30 * 86400}},
		{"instant one second away", 0, "", instant(), `"2024-01-15T14:37:23Z"`, want{ttl: 1}},
		{"instant under a second away", 0, "", instant(), `"2024-01-15T14:37:22.5Z"`, want{reason: ReasonExpired, err: "ends in under a second"}},
		{"instant passed", 0, "", instant(), `"2024-01-15T14:00:00Z"`, want{reason: ReasonExpired, err: `ttl_field "exp": the expiry 2024-01-15T14:00:00Z has passed; the row would be born expired`}},
		{"instant that is no time", 0, "", instant(), `"soon"`, want{reason: ReasonMap, err: `ttl_field: field "exp" is not RFC 3339 with an offset, nor epoch milliseconds, for CQL timestamp`}},
		{"instant missing, no ttl", 0, "", instant(), "", want{ttl: 0}},
		{"instant null, entry ttl", 7 * 24 * time.Hour, "", instant(), `null`, want{ttl: 7 * 86400}},
		{"instant missing, entry ttl from the event", time.Hour, "event_time", instant(), "", want{ttl: 3000}},
		{"duration in seconds", 0, "", duration("s"), `3600`, want{ttl: 3600}},
		{"duration as a string", 0, "", duration("s"), `"3600"`, want{ttl: 3600}},
		{"duration in ms rounded down", 0, "", duration("ms"), `1999`, want{ttl: 1}},
		{"duration in days past the max", 0, "", duration("d"), `31`, want{ttl: 30 * 86400}},
		{"duration beyond any", 0, "", duration("h"), `9223372036854775807`, want{ttl: 30 * 86400}},
		{"duration from the event time", 0, "event_time", duration("s"), `3600`, want{ttl: 3000}},
		{"duration from the event time, ended", 0, "event_time", duration("s"), `600`, want{reason: ReasonExpired, err: "has passed"}},
		{"duration zero", 0, "", duration("s"), `0`, want{reason: ReasonExpired, err: `the duration 0s has passed`}},
		{"duration negative", 0, "", duration("s"), `-5`, want{reason: ReasonMap, err: `ttl_field: field "exp" is a negative duration`}},
		{"duration with a fraction", 0, "", duration("s"), `1.5`, want{reason: ReasonMap, err: `ttl_field: field "exp" is not a whole number for CQL bigint`}},
		{"duration that is no number", 0, "", duration("s"), `"1h"`, want{reason: ReasonMap, err: `ttl_field: field "exp" is not a number for CQL bigint`}},
		{"duration missing, entry ttl", 7 * 24 * time.Hour, "", duration("s"), "", want{ttl: 7 * 86400}},
	}
	for _, tc := range cases {
		m := newMapper(t, func(tp *config.Topic) {
			tp.TTL, tp.TTLFrom = config.Duration(tc.fixed), tc.from
			f := tc.field
			tp.TTLField = &f
		})
		setNow(m, now)
		value := `{"device_id":"d",` + event + `,"temperature":1`
		if tc.value != "" {
			value += `,"exp":` + tc.value
		}
		r := rec(value + "}")
		checkScan(t, m, r)
		ex, err := m.Explain(r)
		if tc.expect.reason != "" {
			var re *RecordError
			if !errors.As(err, &re) || re.Reason != tc.expect.reason || !strings.Contains(err.Error(), tc.expect.err) {
				t.Errorf("%s: %v, want reason %s saying %q", tc.name, err, tc.expect.reason, tc.expect.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got := ex.Bound[len(ex.Bound)-2].Value; got != tc.expect.ttl || ex.TTL != time.Duration(tc.expect.ttl)*time.Second {
			t.Errorf("%s: TTL bound %v (explained %s), want %d", tc.name, got, ex.TTL, tc.expect.ttl)
		}
	}
}

func instant() config.TTLField {
	return config.TTLField{Field: "exp", As: "instant", Max: config.Duration(30 * config.Day)}
}

func duration(unit string) config.TTLField {
	return config.TTLField{Field: "exp", As: "duration", Unit: unit, Max: config.Duration(30 * config.Day)}
}

// TestTTLFieldInsertBindsTheTTL: an entry with a ttl_field and no ttl binds a TTL per row, and its
// table has no default_time_to_live (a row without the field lives for ever, as without ttl).
func TestTTLFieldInsertBindsTheTTL(t *testing.T) {
	m := newMapper(t, func(tp *config.Topic) {
		tp.TTL = 0
		f := instant()
		tp.TTLField = &f
	})
	p := m.byName["readings"]
	if !strings.Contains(p.desc.Insert(p.table), "USING TTL ? AND TIMESTAMP ?") || p.desc.TTL != 0 {
		t.Errorf("insert %q, table ttl %s", p.desc.Insert(p.table), p.desc.TTL)
	}
}

// TestTTLFieldThroughTheSharedDecoding: two entries of one Kafka topic decode a record once (the
// fan-out), and the entry with a ttl_field reads its TTL from the shared values while the other keeps
// its fixed ttl.
func TestTTLFieldThroughTheSharedDecoding(t *testing.T) {
	now := time.Date(2024, 1, 15, 14, 37, 22, 0, time.UTC)
	c := baseConfig()
	tp := c.Topics["readings"]
	f := instant()
	tp.TTL, tp.TTLField = config.Duration(time.Hour), &f
	c.Topics["readings"] = tp
	other := baseConfig().Topics["readings"]
	other.Table = "copy"
	c.Topics["copy"] = other
	c.ApplyDefaults()
	m, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	setNow(m, now)
	if !m.byName["readings"].shared {
		t.Fatal("the entries do not share their decoding")
	}
	out, err := m.MapAll(t.Context(), rec(`{"device_id":"d","ts":"2024-01-15T14:27:22Z","temperature":1,"exp":"2024-01-15T16:37:22Z"}`), nil)
	if err != nil || len(out) != 2 {
		t.Fatal(out, err)
	}
	for _, o := range out {
		if o.Err != nil {
			t.Fatalf("%s: %v", o.Entry, o.Err)
		}
		vals := packed.Values(o.Row.Packed)
		want := map[string]int32{"copy": 90 * 86400, "readings": 2 * 3600}[o.Entry]
		if got := packed.GoValue(vals[len(vals)-2]); got != want {
			t.Errorf("%s: TTL %v, want %d", o.Entry, got, want)
		}
	}
}

// TestExplainSaysWhereTheTTLCameFrom: explain names the field, says when its value was cut to the max,
// and says when a record without the field took the entry's ttl or none.
func TestExplainSaysWhereTheTTLCameFrom(t *testing.T) {
	now := time.Date(2024, 1, 15, 14, 37, 22, 0, time.UTC)
	for _, tc := range []struct {
		fixed time.Duration
		exp   string
		want  string
	}{
		{0, `,"exp":3600`, `ttl_field "exp"`},
		{0, `,"exp":99999999`, `ttl_field "exp", cut to its max 30d`},
		{time.Hour, ``, `the entry's ttl: the record has no ttl_field "exp"`},
		{0, `,"exp":null`, `the record has no ttl_field "exp", and the entry no ttl`},
	} {
		m := newMapper(t, func(tp *config.Topic) {
			f := duration("s")
			tp.TTL, tp.TTLField = config.Duration(tc.fixed), &f
		})
		setNow(m, now)
		ex, err := m.Explain(rec(`{"device_id":"d","ts":"2024-01-15T14:27:22Z","temperature":1` + tc.exp + `}`))
		if err != nil || ex.TTLFrom != tc.want {
			t.Errorf("%s: %q (%v), want %q", tc.exp, ex.TTLFrom, err, tc.want)
		}
	}
}

// TestTTLFieldOfAChangeEvent reads a ttl_field from a Debezium event's after image, with and without
// JsonConverter's schema part: the schema's MicroTimestamp and the bare form's epoch milliseconds name
// the same expiry, so both rows get the same TTL.
func TestTTLFieldOfAChangeEvent(t *testing.T) {
	entry := accountsEntry(true)
	entry.TTLField = &config.TTLField{Field: "updated", As: config.TTLAsInstant, Max: config.Duration(30 * config.Day)}
	m := accountsMapper(t, map[string]config.Topic{"accounts": entry})
	setNow(m, time.UnixMilli(1700000000123).Add(-time.Hour))
	for _, form := range []string{".schema.json", ".json"} {
		ex, err := m.Explain(change(fixture(t, "create"+form)))
		if err != nil {
			t.Fatalf("create%s: %v", form, err)
		}
		if ex.TTL != time.Hour || ex.TTLFrom != `ttl_field "updated"` {
			t.Errorf("create%s: TTL %s from %q, want 1h from the field", form, ex.TTL, ex.TTLFrom)
		}
	}
}
