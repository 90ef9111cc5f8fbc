package mapper

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/config"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/json_errors.golden from the mapper's messages")

// goldenCase is one record a JSON topic cannot map (or skips), and the mapper that reads it.
type goldenCase struct {
	name string
	m    *Mapper
	rec  Record
}

// goldenBad are the JSON values each column type is tried with: every kind of bad value a record
// may hold (and some good ones, whose line then says so).
var goldenBad = []struct{ name, json string }{
	{"secret string", `"Jane-Doe-1970"`},
	{"empty string", `""`},
	{"escaped string", `"J\u00e9-\n"`},
	{"numeric string", `"12.5"`},
	{"whole numeric string", `"42"`},
	{"fraction", `1.5`},
	{"negative", `-129`},
	{"huge", `99999999999999999999`},
	{"exponent", `1e400`},
	{"small exponent", `1e-400`},
	{"true", `true`},
	{"false string", `"false"`},
	{"object", `{"a":1}`},
	{"array", `[1,"x"]`},
	{"array with null", `[null]`},
	{"object with null", `{"k":null}`},
	{"object of strings", `{"k":"Jane-Doe-1970"}`},
	{"date out of range", `"10000-01-01"`},
	{"time without offset", `"2024-01-15T10:00:00"`},
	{"time out of range", `"10000-01-15T10:00:00Z"`},
	{"uuid v4", `"0b6a1f6e-3f0c-4a53-9b8f-1f2a3b4c5d6e"`},
	{"ipv6 zone", `"fe80::1%eth0"`},
	{"bad base64", `"Jane-Doe-1970!"`},
	{"non-ascii", `"dév"`},
	{"decimal exponent", `"1e99999"`},
}

// goldenTypes are the column types a field may feed.
var goldenTypes = []string{"text", "ascii", "int", "bigint", "smallint", "tinyint", "float", "double", "boolean",
	"timestamp", "date", "uuid", "timeuuid", "blob", "inet", "decimal", "varint",
	"list<int>", "set<text>", "list<uuid>", "list<blob>", "map<text, int>", "map<text, timestamp>", "list<ascii>"}

// goldenCases are every dead-letter reason and every conversion error of a JSON topic: each column
// type with each kind of bad value (as a field and as the element of a collection), missing and null
// values, event times of each format, bad framing, documents that are not JSON objects, sources, keys of
// tombstones, the accept window, expired rows, and the entries of a shared topic.
func goldenCases(t *testing.T) []goldenCase {
	var cs []goldenCase
	add := func(name string, m *Mapper, r Record) { cs = append(cs, goldenCase{name, m, r}) }
	const good = `"device_id":"d","ts":"2024-01-15T14:37:22Z","temperature":1`

	// Every column type, optional and required, with every kind of bad value.
	for _, typ := range goldenTypes {
		for _, required := range []bool{false, true} {
			m := newMapper(t, func(tp *config.Topic) {
				tp.Columns = append(tp.Columns, config.Column{Name: "x", Type: typ, Field: "x.y", Required: required})
			})
			tag := typ
			if required {
				tag += " required"
			}
			for _, b := range goldenBad {
				add(tag+": "+b.name, m, rec(`{`+good+`,"x":{"y":`+b.json+`}}`))
			}
			add(tag+": null", m, rec(`{`+good+`,"x":{"y":null}}`))
			add(tag+": missing", m, rec(`{`+good+`,"x":{}}`))
			add(tag+": parent not an object", m, rec(`{`+good+`,"x":3}`))
			add(tag+": invalid UTF-8", m, rec(`{`+good+`,"x":{"y":"ab`+"\xff"+`cd"}}`))
			if !required && strings.Contains(typ, "<") {
				add(tag+": invalid UTF-8 element", m, rec(`{`+good+`,"x":{"y":["ab`+"\xfe"+`"]}}`))
				add(tag+": invalid UTF-8 map key", m, rec(`{`+good+`,"x":{"y":{"a`+"\xfe"+`b":1}}}`))
				add(tag+": second element bad", m, rec(`{`+good+`,"x":{"y":[1,"Jane-Doe-1970"]}}`))
				add(tag+": second entry bad", m, rec(`{`+good+`,"x":{"y":{"a":1,"Jane-Doe-1970":"Jane"}}}`))
			}
		}
	}
	// A hashed column (event buckets) and an id column of each kind of problem.
	mEB := newMapper(t, func(tp *config.Topic) { tp.Bucket.EventBuckets = 4 })
	add("event buckets: good", mEB, rec(`{`+good+`}`))
	add("id missing", newMapper(t, nil), rec(`{"ts":"2024-01-15T14:37:22Z","temperature":1}`))
	add("id null", newMapper(t, nil), rec(`{"device_id":null,"ts":"2024-01-15T14:37:22Z","temperature":1}`))
	add("id too long", newMapper(t, nil), rec(`{"device_id":"`+strings.Repeat("a", 70000)+`","ts":"2024-01-15T14:37:22Z","temperature":1}`))
	add("clustering column missing", newMapper(t, func(tp *config.Topic) {
		tp.Columns = append(tp.Columns, config.Column{Name: "seq", Type: "int", Field: "seq"})
		tp.Clustering = append(tp.Clustering, config.Clustering{Column: "seq"})
	}), rec(`{`+good+`}`))
	add("event bucket field missing", newMapper(t, func(tp *config.Topic) {
		tp.Bucket.EventBuckets = 4
		tp.Bucket.EventBucketField = "humidity"
	}), rec(`{`+good+`}`))

	// Event times of every format.
	for _, format := range []string{"rfc3339", "unix_s", "unix_ms", "unix_us", "unix_ns"} {
		m := newMapper(t, func(tp *config.Topic) { tp.Time.Format = format })
		for _, b := range append(goldenBad, struct{ name, json string }{"huge unix", `1e300`},
			struct{ name, json string }{"far future", `253402300800000000000`},
			struct{ name, json string }{"negative far", `-99999999999999`},
			struct{ name, json string }{"offset 24h", `"2024-01-15T10:00:00+24:00"`},
			struct{ name, json string }{"year 0", `"0000-01-01T00:00:00Z"`}) {
			add("event time "+format+": "+b.name, m, rec(`{"device_id":"d","temperature":1,"ts":`+b.json+`}`))
		}
		add("event time "+format+": missing", m, rec(`{"device_id":"d","temperature":1}`))
		add("event time "+format+": null", m, rec(`{"device_id":"d","temperature":1,"ts":null}`))
	}
	mNested := newMapper(t, func(tp *config.Topic) { tp.Time.Field = "meta.ts" })
	add("nested event time: parent is a string", mNested, rec(`{"device_id":"d","temperature":1,"meta":"x"}`))
	add("nested event time: bad", mNested, rec(`{"device_id":"d","temperature":1,"meta":{"ts":"Jane-Doe-1970"}}`))
	mKafka := newMapper(t, func(tp *config.Topic) { tp.Time = config.EventTime{Source: config.TimeSourceKafka} })
	noTS := rec(`{"device_id":"d","temperature":1}`)
	noTS.Timestamp = time.UnixMilli(-1)
	add("time source kafka: no timestamp", mKafka, noTS)
	farTS := rec(`{"device_id":"d","temperature":1}`)
	farTS.Timestamp = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	add("time source kafka: out of range", mKafka, farTS)

	// Documents that are not JSON objects, or not JSON at all.
	mBase := newMapper(t, nil)
	for _, v := range []string{``, `null`, `[1]`, `"s"`, `42`, `true`, `{`, `{"a":}`, `{"a":1} x`, `{"a":1}}`,
		`{"device_id":"d","note":Jane-Doe-1970}`, `{"device_id":"d"} Jane-Doe-1970`,
		`{"device_id":"d","ts":"2024-01-15T14:37:22Z","temperature":NaN}`,
		`{"device_id":"d","ts":"2024-01-15T14:37:22Z","temperature":1,"x":[1,{"y":+1}]}`,
		`{"device_id":"d","ts":"2024-01-15T14:37:22Z","temperature":1,"x":{"a":Infinity}}`,
		`{"device_id":"d","ts":"2024-01-15T14:37:22Z","temperature":1-2}`,
		`{"device_id":"d","ts":"2024-01-15T14:37:22Z","temperature":1,"z":` + strings.Repeat("[", 301) + strings.Repeat("]", 301) + `}`,
		`{"device_id":"d","ts":"2024-01-15T14:37:22Z","temperature":1,"s":"a` + "\x01" + `b"}`,
		`{"device_id":"d","ts":"2024-01-15T14:37:22Z","temperature":1,"s":"\uZZZZ"}`,
		"\xef\xbb\xbf{}",
		`{"device_id":"d","ts":"2024-01-15T14:37:22Z","temperature":1,"s":"` + strings.Repeat("Jane-Doe-1970 ", 20) + `"} trailing`,
	} {
		add("document "+strconv.Quote(v), mBase, rec(v))
	}
	tomb := rec("")
	tomb.Value = nil
	add("tombstone, dead_letter", mBase, tomb)

	// Sources other than fields.
	mSrc := newMapper(t, func(tp *config.Topic) {
		tp.Columns = append(tp.Columns,
			config.Column{Name: "k", Type: "text", Source: config.SourceKafkaKey, Required: true},
			config.Column{Name: "ka", Type: "ascii", Source: config.SourceKafkaKey},
			config.Column{Name: "raw", Type: "text", Source: config.SourceRaw},
			config.Column{Name: "kts", Type: "timestamp", Source: config.SourceKafkaTimestamp, Required: true},
			config.Column{Name: "tu", Type: "timeuuid", Source: config.SourceTimeUUID})
	})
	r := rec(`{` + good + `}`)
	add("kafka key missing", mSrc, r)
	r.Key = []byte("k\xffey")
	add("kafka key not UTF-8", mSrc, r)
	r.Key = []byte("kéy")
	add("kafka key not ASCII", mSrc, r)
	r = rec(`{` + good + `,"s":"` + "\xff" + `"}`)
	r.Key = []byte("k")
	add("raw value not UTF-8", mSrc, r)
	r = rec(`{` + good + `}`)
	r.Key, r.Timestamp = []byte("k"), time.UnixMilli(-1)
	add("kafka timestamp missing", mSrc, r)
	r = rec(`{"device_id":"d","ts":"1500-01-15T14:37:22Z","temperature":1}`)
	r.Key = []byte("k")
	add("timeuuid out of range", mSrc, r)
	mWTS := newMapper(t, nil)
	r = rec(`{` + good + `}`)
	r.Timestamp = time.UnixMilli(-1)
	add("write timestamp kafka without timestamp", mWTS, r)

	// The accept window, and rows born expired.
	mAccept := newMapper(t, func(tp *config.Topic) {
		tp.Accept = config.Accept{Before: config.Duration(time.Hour), After: config.Duration(time.Minute)}
	})
	add("late", mAccept, rec(`{"device_id":"d","ts":"2024-01-14T14:37:22Z","temperature":1}`))
	add("future", mAccept, rec(`{"device_id":"d","ts":"2024-01-15T15:37:22Z","temperature":1}`))
	add("late, year 1", mAccept, rec(`{"device_id":"d","ts":"0001-01-14T14:37:22Z","temperature":1}`))
	add("late and a bad column", mAccept, rec(`{"device_id":"d","ts":"2024-01-14T14:37:22Z","temperature":"Jane"}`))
	mExpired := newMapper(t, func(tp *config.Topic) { tp.TTLFrom = config.TTLFromEventTime })
	mExpired.byName["readings"].now = func() time.Time { return kafkaTS }
	add("expired", mExpired, rec(`{"device_id":"d","ts":"2000-01-15T14:37:22Z","temperature":1}`))

	// Tombstones: skip, and deletes whose key does not name an entity.
	add("tombstone, skip", latestMapper(t, config.OnTombstoneSkip, nil), tomb)
	mDel := latestMapper(t, config.OnTombstoneDelete, nil)
	add("delete: no key", mDel, tomb)
	tk := tomb
	tk.Key = []byte("k\xff")
	add("delete: key not UTF-8", mDel, tk)
	tk.Timestamp = time.UnixMilli(-1)
	add("delete: no timestamp", mDel, tk)
	mDelInt := latestMapper(t, config.OnTombstoneDelete, func(tp *config.Topic) { tp.Columns[0].Type = "int" })
	tk = tomb
	tk.Key = []byte("Jane-Doe-1970")
	add("delete: int id from a text key", mDelInt, tk)
	mDel2 := latestMapper(t, config.OnTombstoneDelete, func(tp *config.Topic) {
		tp.ID = []string{"device_id", "site_id"}
		tp.Columns[2].Type = "int"
	})
	tk.Key = []byte(`Jane-Doe-1970`)
	add("delete: two ids, key not JSON", mDel2, tk)
	tk.Key = []byte(`["Jane-Doe-1970"]`)
	add("delete: two ids, key an array", mDel2, tk)
	tk.Key = []byte(`{"device_id":"d","site":{"id":"Jane-Doe-1970"}}`)
	add("delete: two ids, bad id", mDel2, tk)
	tk.Key = []byte(`{"device_id":"d"}`)
	add("delete: two ids, one missing", mDel2, tk)
	tk.Key = []byte(`{"device_id":"d","site":{"id":NaN}}`)
	add("delete: two ids, lenient number", mDel2, tk)

	// json_schema: the framing, the registry, the body.
	reg := &staticRegistry{schemas: map[int]*codec.Schema{
		1: {ID: 1, Type: "JSON", Text: `{"type": "object"}`},
		2: {ID: 2, Type: "AVRO", Text: `"string"`},
	}}
	c := baseConfig()
	tp := c.Topics["readings"]
	tp.Codec = config.CodecJSONSchema
	tp.Columns = append(tp.Columns, config.Column{Name: "tags", Type: "set<text>", Field: "tags"},
		config.Column{Name: "raw", Type: "blob", Source: config.SourceRaw})
	c.Topics["readings"] = tp
	mJS := registryMapper(t, c, reg)
	framed := func(id int, body string) Record {
		return rec(string(codec.AppendFrame(nil, id, nil)) + body)
	}
	add("json_schema: empty", mJS, rec(""))
	add("json_schema: short", mJS, rec("\x00\x00\x01"))
	add("json_schema: bad magic", mJS, rec("\x01\x00\x00\x00\x01{}"))
	add("json_schema: unknown id", mJS, framed(9, `{}`))
	add("json_schema: avro schema", mJS, framed(2, `{}`))
	add("json_schema: empty body", mJS, framed(1, ``))
	add("json_schema: body not JSON", mJS, framed(1, `Jane-Doe-1970`))
	add("json_schema: bad value", mJS, framed(1, `{`+good+`,"humidity":"Jane-Doe-1970"}`))
	add("json_schema: bad set element", mJS, framed(1, `{`+good+`,"tags":["a",7,null]}`))
	add("json_schema: missing time", mJS, framed(1, `{"device_id":"d","temperature":1}`))
	hdr := framed(1, `{`+good+`}`)
	hdr.SchemaIDHeader = true
	add("json_schema: schema id header", mJS, hdr)

	// json_schema keys of deletes.
	mKey := keyedMapper(t, config.CodecJSONSchema, keyRegistry(), nil)
	for _, k := range []struct{ name, key string }{
		{"empty", ""}, {"short", "\x00\x00"}, {"unknown id", string(jsonKey(99, `"d"`))},
		{"not JSON", string(jsonKey(26, `Jane-Doe-1970`))}, {"number", string(jsonKey(26, `42`))},
		{"object without the field", string(jsonKey(27, `{"x":"Jane-Doe-1970"}`))},
		{"field an object", string(jsonKey(27, `{"device_id":{"a":"Jane"}}`))},
		{"field null", string(jsonKey(27, `{"device_id":null}`))},
		{"lenient", string(jsonKey(27, `{"device_id":"d","n":NaN}`))},
	} {
		tk := tomb
		tk.Key = []byte(k.key)
		add("json_schema key: "+k.name, mKey, tk)
	}
	mKeyInt := keyedMapper(t, config.CodecJSONSchema, keyRegistry(), func(tp *config.Topic) { tp.Columns[0].Type = "int" })
	tk = tomb
	tk.Key = jsonKey(26, `"Jane-Doe-1970"`)
	add("json_schema key: int id from a string", mKeyInt, tk)

	// A Kafka topic of several entries: each entry's error names it.
	mFan := newFanoutMapper(t, config.CodecJSON, nil)
	for _, v := range []string{`{"device_id":"d","ts":"2024-01-15T14:37:22Z","temperature":1,"battery":"Jane-Doe-1970"}`,
		`{"device_id":"d","ts":"Jane-Doe-1970","temperature":1,"humidity":2,"site":{"id":"s"}}`,
		`{"device_id":"d","ts":"2024-01-15T14:37:22Z","temperature":1,"site":{"id":"s"}}`,
		`Jane-Doe-1970`, `{"device_id":"d\u0000","ts":"2024-01-15T14:37:22Z","temperature":1,"battery":"1e999"}`} {
		add("shared topic "+strconv.Quote(v), mFan, rec(v))
	}
	other := rec(`{}`)
	other.Topic = "nobody-reads-this"
	add("unknown topic", mBase, other)
	return cs
}

// goldenLine is what a case gives: for each entry, its reason, its message (the log line with
// log.quote_values false) and its quoted message (dead letters; logs with log.quote_values true).
func goldenLine(t *testing.T, c goldenCase) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "== %s\n", c.name)
	res, err := c.m.MapAll(t.Context(), c.rec, nil)
	if err != nil {
		t.Fatalf("%s: MapAll: %v", c.name, err)
	}
	for _, r := range res {
		if r.Err == nil {
			fmt.Fprintf(&b, "%s: mapped\n", r.Entry)
			continue
		}
		var re *RecordError
		if !errors.As(r.Err, &re) {
			t.Fatalf("%s: %T is no *RecordError: %v", c.name, r.Err, r.Err)
		}
		fmt.Fprintf(&b, "%s: reason %s\n plain  %s\n quoted %s\n", r.Entry, re.Reason, strconv.Quote(re.Error()), strconv.Quote(Quoted(r.Err)))
	}
	return b.String()
}

// TestJSONErrorTextsAreTheGoldenOnes pins every JSON error text byte for byte: the reason, the message
// logs carry without the value (log.quote_values false) and the quoted message (dead letters, and logs
// with log.quote_values true), of each record of goldenCases, against testdata/json_errors.golden.
// Run with -update-golden to rewrite the file.
func TestJSONErrorTextsAreTheGoldenOnes(t *testing.T) {
	var b strings.Builder
	for _, c := range goldenCases(t) {
		b.WriteString(goldenLine(t, c))
	}
	const path = "testdata/json_errors.golden"
	if *updateGolden {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got := b.String()
	if got == string(want) {
		return
	}
	gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
	for i := 0; i < max(len(gl), len(wl)); i++ {
		g, w := "", ""
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if g != w {
			t.Fatalf("line %d differs:\n got %s\nwant %s", i+1, g, w)
		}
	}
}
