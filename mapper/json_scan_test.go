package mapper

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	jsonc "github.com/bucketsink/sink/codec/json"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/packed"
)

// The JSON codec's plan (package codec/json, through the mapper's mapValues) must map every record
// exactly as its parsed tree alone does: the scan only spares work. These tests map each input through
// both and compare the rows, or the reasons and the messages.

// diffTopics are the topic shapes the differential tests map every input with: the sensor topic,
// and variants that reach every type the scan converts, nested and shared paths, the other event
// time formats and sources.
func diffTopics() []struct {
	name   string
	mutate func(*config.Config)
} {
	topic := func(f func(tp *config.Topic)) func(*config.Config) {
		return func(c *config.Config) {
			tp := c.Topics["readings"]
			f(&tp)
			c.Topics["readings"] = tp
		}
	}
	return []struct {
		name   string
		mutate func(*config.Config)
	}{
		{"sensor", nil},
		{"sensor, two ids, event buckets, event time stamps", topic(func(tp *config.Topic) {
			tp.ID = []string{"device_id", "site_id"}
			tp.Bucket.EventBuckets = 4
			tp.WriteTimestamp = config.WriteTimestampEventTime
		})},
		{"every scanned type, unix_ms time in a nested field", topic(func(tp *config.Topic) {
			tp.Time = config.EventTime{Source: "field", Field: "meta.t", Format: "unix_ms"}
			tp.Bucket = config.Bucket{Width: "1h", Column: "hour", Key: "timestamp"}
			tp.Bucket.EventBuckets = 8
			tp.Bucket.EventBucketField = "u"
			tp.Columns = []config.Column{
				{Name: "device_id", Type: "text", Field: "device_id"},
				{Name: "reading_time", Type: "timestamp", Source: "event_time"},
				{Name: "ascii_v", Type: "ascii", Field: "asc"},
				{Name: "abc", Type: "text", Field: "a.b.c"},
				{Name: "ax", Type: "int", Field: "a.x"},
				{Name: "i", Type: "int", Field: "n.i"},
				{Name: "bi", Type: "bigint", Field: "n.i"},
				{Name: "si", Type: "smallint", Field: "n.si"},
				{Name: "ti", Type: "tinyint", Field: "ti"},
				{Name: "f", Type: "float", Field: "x"},
				{Name: "d", Type: "double", Field: "x"},
				{Name: "xt", Type: "text", Field: "x"},
				{Name: "b", Type: "boolean", Field: "b"},
				{Name: "tsv", Type: "timestamp", Field: "tsv"},
				{Name: "dt", Type: "date", Field: "dt"},
				{Name: "u", Type: "uuid", Field: "u"},
				{Name: "tu", Type: "timeuuid", Field: "tu"},
				{Name: "site", Type: "text", Field: "site"},
				{Name: "site_id", Type: "text", Field: "site.id"},
				{Name: "mt", Type: "bigint", Field: "meta.t"},
				{Name: "uk", Type: "text", Field: "ключ"},
				{Name: "qx", Type: "text", Field: `q"x\\`},
				{Name: "k", Type: "ascii", Source: "kafka_key"},
				{Name: "kt", Type: "text", Source: "kafka_topic"},
				{Name: "kp", Type: "int", Source: "kafka_partition"},
				{Name: "id", Type: "timeuuid", Source: "timeuuid"},
			}
			tp.ID = []string{"device_id"}
			tp.Clustering = []config.Clustering{{Column: "reading_time", Order: "desc"}, {Column: "id", Order: "asc"}}
		})},
		{"kafka time, unix_s field, sliced int buckets, protocol 3", func(c *config.Config) {
			c.Cassandra.ProtocolVersion = 3
			tp := c.Topics["readings"]
			tp.Time = config.EventTime{Source: "kafka"}
			tp.Bucket = config.Bucket{Width: "10m", Key: "int", Slice: "1d", Column: "bucket"}
			tp.WriteTimestamp = config.WriteTimestampServer
			tp.Columns = append(tp.Columns[:3:3],
				config.Column{Name: "seq", Type: "timestamp", Field: "ts", Required: true},
				config.Column{Name: "temperature", Type: "double", Field: "temperature"},
			)
			tp.Clustering = []config.Clustering{{Column: "seq"}}
			c.Topics["readings"] = tp
		}},
		{"unix_s time", topic(func(tp *config.Topic) { tp.Time.Format = "unix_s" })},
		{"time formats and a ttl_field", topic(func(tp *config.Topic) {
			tp.Columns = append(tp.Columns,
				config.Column{Name: "at_ns", Type: "timestamp", Field: "tsv", Format: "unix_ns"},
				config.Column{Name: "at_s", Type: "timestamp", Field: "x", Format: "unix_s"},
				config.Column{Name: "at_rfc", Type: "timestamp", Field: "at", Format: "rfc3339"},
				config.Column{Name: "at_local", Type: "timestamp", Field: "at", Format: "02/01/2006 15:04", Zone: "America/New_York"},
				config.Column{Name: "days", Type: "date", Field: "dt", Format: "unix_days"},
				config.Column{Name: "on_day", Type: "date", Field: "at", Format: "02/01/2006"},
			)
			tp.TTLField = &config.TTLField{Field: "exp", As: config.TTLAsInstant, Format: "unix_s", Max: config.Duration(100 * config.Day)}
		})},
		{"a ttl_field of a duration from the event time", topic(func(tp *config.Topic) {
			tp.TTLFrom = config.TTLFromEventTime
			tp.TTLField = &config.TTLField{Field: "exp", As: config.TTLAsDuration, Unit: "ms", Max: config.Duration(100 * config.Day)}
		})},
	}
}

// diffMappers builds a mapper per diffTopics entry.
func diffMappers(t testing.TB) []*Mapper {
	t.Helper()
	var ms []*Mapper
	for _, d := range diffTopics() {
		c := baseConfig()
		if d.mutate != nil {
			d.mutate(c)
		}
		c.ApplyDefaults()
		m, err := New(c)
		if err != nil {
			t.Fatalf("%s: New: %v", d.name, err)
		}
		setNow(m, kafkaTS) // a TTL is the same on both paths, whatever second they run in
		ms = append(ms, m)
	}
	return ms
}

// checkScan maps r through the JSON plan (the scan, with the parsed tree for what the scan does not map)
// and through the tree alone, fails t when they differ (row, or reason and error), and reports whether
// the scan read r (every field's path found by one Scan).
func checkScan(t testing.TB, m *Mapper, r Record) bool {
	t.Helper()
	p := m.byKafka[r.Topic].entries[0]
	tree, _ := jsonc.Codec{Tree: true}.Compile(nil, p.fields)
	s := m.pool.Get().(*scratch)
	defer m.release(s)
	got, greason, gerr := p.mapValues(context.Background(), p.scan, &r, r.Value, s)
	want, reason, err := p.mapValues(context.Background(), tree, &r, r.Value, s)
	switch {
	case err != nil:
		if gerr == nil || greason != reason || gerr.Error() != err.Error() || Quoted(gerr) != Quoted(err) {
			t.Fatalf("%q: the plan gives [%s] %v, the tree [%s] %v", r.Value, greason, gerr, reason, err)
		}
	case gerr != nil:
		t.Fatalf("%q: the plan refuses a record the tree maps: [%s] %v", r.Value, greason, gerr)
	default:
		if d := diffOutcome(got, want); d != "" {
			t.Fatalf("%q: the plan's row differs from the tree's: %s", r.Value, d)
		}
	}
	row, mapErr := m.Map(r)
	switch {
	case err != nil:
		var re *RecordError
		if !errors.As(mapErr, &re) || re.Reason != reason || re.Err.Error() != err.Error() {
			t.Fatalf("%q: Map returned %v, want [%s] %v", r.Value, mapErr, reason, err)
		}
	case mapErr != nil:
		t.Fatalf("%q: Map failed with %v, the tree maps it", r.Value, mapErr)
	default:
		if d := diffOutcome(outcome{row: row, eventTime: want.eventTime}, outcome{row: want.row, eventTime: want.eventTime}); d != "" {
			t.Fatalf("%q: Map's row differs from the tree's: %s", r.Value, d)
		}
	}
	sc := jsonc.NewScanner()
	for i := range p.fields {
		if !jsonc.Scannable(p.fields[i].Type) {
			return false
		}
		sc.Add(p.fields[i].Path)
	}
	return sc.Scan(r.Value, make([]jsonc.Raw, sc.Slots())) && gerr == nil
}

// diffOutcome describes how two mappings differ; "" when they do not.
func diffOutcome(a, b outcome) string {
	ra, rb := a.row, b.row
	switch {
	case ra.Target != rb.Target:
		return fmt.Sprintf("target %+v, want %+v", ra.Target, rb.Target)
	case ra.Key != rb.Key:
		return fmt.Sprintf("key %q, want %q", ra.Key, rb.Key)
	case ra.Size != rb.Size:
		return fmt.Sprintf("size %d, want %d", ra.Size, rb.Size)
	case ra.Source() != rb.Source():
		return fmt.Sprintf("source %+v, want %+v", ra.Source(), rb.Source())
	case ra.EventMicros != rb.EventMicros || a.eventTime != b.eventTime:
		return fmt.Sprintf("event time %v (%v), want %v (%v)", ra.EventTime(), a.eventTime, rb.EventTime(), b.eventTime)
	case !bytes.Equal(ra.Packed, rb.Packed):
		return fmt.Sprintf("packed values %x, want %x", ra.Packed, rb.Packed)
	case len(Values(ra)) != len(Values(rb)):
		return fmt.Sprintf("%d values, want %d", len(Values(ra)), len(Values(rb)))
	}
	if a.bucket != nil && b.bucket != nil && (a.bucket.idx != b.bucket.idx || a.bucket.suffix != b.bucket.suffix) ||
		a.eventBucket != b.eventBucket || a.writeTS != b.writeTS {
		return fmt.Sprintf("bucket, event bucket or write timestamp differ: %+v / %+v", a, b)
	}
	for i := range Values(ra) {
		va, vb := Values(ra)[i], Values(rb)[i]
		if reflect.TypeOf(va) != reflect.TypeOf(vb) {
			return fmt.Sprintf("value %d is %T, want %T", i, va, vb)
		}
		if ea, ok := va.(*packed.Value); ok {
			if eb := vb.(*packed.Value); ea.Type != eb.Type || !bytes.Equal(ea.Wire, eb.Wire) {
				return fmt.Sprintf("value %d is %v %x, want %v %x", i, ea.Type, ea.Wire, eb.Type, eb.Wire)
			}
			continue
		}
		if !reflect.DeepEqual(va, vb) {
			return fmt.Sprintf("value %d is %#v, want %#v", i, va, vb)
		}
	}
	return ""
}

// scanSeeds are records of every shape the differential tests start from: what the scan handles
// and every kind of input it leaves to fastjson.
func scanSeeds() []string {
	const tail = `"ts":"2024-01-15T14:37:22.123Z","temperature":21.5`
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	seeds := []string{
		sensorJSON,
		`{"site":{"id":"plant-1"},"battery":3.71,"humidity":40.2,"temperature":21.5,"ts":"2024-01-15T14:37:22.123Z","device_id":"dev-0042"}`,
		" \t\r\n{ \"device_id\" : \"dev-0042\" ,\n\t\"ts\":\"2024-01-15T14:37:22.123Z\" , \"temperature\" : 21.5 , \"site\" : { \"id\" : \"p\" } } \n",
		// Duplicates: fastjson's Get takes the first, for objects on the path too.
		`{"device_id":"a","device_id":"b",` + tail + `,"temperature":99}`,
		`{"device_id":"a","site":"x","site":{"id":"y"},` + tail + `}`,
		`{"device_id":"a","site":{"id":"y"},"site":{"id":"z"},` + tail + `}`,
		`{"device_id":"a","site":{"id":"y","id":"z","other":[1,{"id":2}]},` + tail + `}`,
		`{"device_id":"a","site":null,` + tail + `}`,
		`{"device_id":"a","site":[{"id":"y"}],` + tail + `}`,
		`{"device_id":"a","site":{"id":null},` + tail + `,"humidity":null,"battery":null}`,
		`{"device_id":"a","site":{},` + tail + `}`,
		`{"device_id":"a","site":{"id":{"x":1}},` + tail + `}`,
		`{"device_id":"a","site":{"id":["x"]},` + tail + `}`,
		// Escapes: in needed strings, in keys at a level read, in skipped values.
		`{"device_id":"d\"ev",` + tail + `}`,
		`{"device_id":"dev\\",` + tail + `}`,
		`{"device_id":"d\u00e9v",` + tail + `}`,
		`{"device\u005fid":"x","device_id":"d",` + tail + `}`,
		`{"x\"y":1,"device_id":"d",` + tail + `}`,
		`{"device_id":"d","extra":{"a\"b":"c\\","q":"\"","n":[1,-2.5e3,true,false,null,{}]},` + tail + `}`,
		`{"device_id":"d","site":{"i\u0064":"x","id":"y"},` + tail + `}`,
		`{"device_id":"d","ts":"2024-01-15T14:37:22\u002e123Z","temperature":21.5}`,
		// Numbers of every form, as numbers and as strings.
		`{"device_id":"d",` + tail + `,"humidity":1e2,"battery":-0}`,
		`{"device_id":"d",` + tail + `,"humidity":1E+2,"battery":0.000001}`,
		`{"device_id":"d",` + tail + `,"humidity":01,"battery":"3.5"}`,
		`{"device_id":"d",` + tail + `,"humidity":1.,"battery":.5}`,
		`{"device_id":"d",` + tail + `,"humidity":+1}`,
		`{"device_id":"d",` + tail + `,"humidity":1-2}`,
		`{"device_id":"d",` + tail + `,"humidity":NaN}`,
		`{"device_id":"d",` + tail + `,"humidity":-Infinity}`,
		`{"device_id":"d",` + tail + `,"humidity":nan}`,
		`{"device_id":"d",` + tail + `,"humidity":"1e400"}`,
		`{"device_id":"d",` + tail + `,"humidity":1e400}`,
		`{"device_id":"d",` + tail + `,"battery":3.5e38}`,
		`{"device_id":"d",` + tail + `,"battery":"abc"}`,
		`{"device_id":"d",` + tail + `,"humidity":123456789012345678901234567890}`,
		`{"device_id":"d",` + tail + `,"skip":1-2}`,
		`{"device_id":"d",` + tail + `,"skip":-inf}`,
		`{"device_id":"d",` + tail + `,"skip":NaN}`,
		`{"device_id":"d",` + tail + `,"skip":Infinity}`,
		`{"device_id":"d",` + tail + `,"skip":[1,{"a":+1}]}`,
		`{"device_id":12.50,` + tail + `}`,
		`{"device_id":true,` + tail + `}`,
		`{"device_id":false,` + tail + `}`,
		`{"device_id":{"a":[1, 2]},` + tail + `}`,
		`{"device_id":[],` + tail + `}`,
		`{"device_id":nul,` + tail + `}`,
		`{"device_id":truex,` + tail + `}`,
		`{"device_id":tru,` + tail + `}`,
		// Missing and null required values, bad times.
		`{"ts":"2024-01-15T14:37:22Z","temperature":1}`,
		`{"device_id":null,"ts":"2024-01-15T14:37:22Z","temperature":1}`,
		`{"device_id":"d","ts":"2024-01-15T14:37:22Z"}`,
		`{"device_id":"d","temperature":1}`,
		`{"device_id":"d","ts":null,"temperature":1}`,
		`{"device_id":"d","ts":"2024-01-15 14:37:22","temperature":1}`,
		`{"device_id":"d","ts":"0000-01-01T00:00:00Z","temperature":1}`,
		`{"device_id":"d","ts":"2024-01-15T14:37:22+01:00","temperature":1}`,
		`{"device_id":"d","ts":1705329442,"temperature":1}`,
		`{"device_id":"d","ts":"1705329442","temperature":1}`,
		`{"device_id":"d","ts":1705329442.5e0,"temperature":1}`,
		`{"device_id":"d","ts":253402300800,"temperature":1}`,
		// Time formats (a layout with its zone, unix units, days) and a ttl_field.
		`{"device_id":"d","ts":"2024-01-15T14:37:22.123Z","temperature":1,"tsv":1705329442123456789,"x":1705329442.5,` +
			`"at":"15/01/2024 09:37","dt":19737,"exp":1705333042}`,
		`{"device_id":"d","ts":"2024-01-15T14:37:22.123Z","temperature":1,"tsv":"-1","x":"17","at":"2024-01-15T14:37:22Z","dt":"19737","exp":"2024-01-15T15:37:22Z"}`,
		`{"device_id":"d","ts":"2024-01-15 15:37:22","temperature":1,"tsv":1.5,"x":-62167219201,"at":"15/01/2024","dt":19737.5,"exp":-5}`,
		`{"device_id":"d","ts":"0000-01-01 00:00:00.000","temperature":1,"tsv":true,"x":253402300800,"at":15,"dt":2932897,"exp":1}`,
		`{"device_id":"d","ts":"2024-01-15T14:37:22.123Z","temperature":1,"exp":3600000}`,
		`{"device_id":"d","ts":"2024-01-15T14:37:22.123Z","temperature":1,"exp":"1"}`,
		`{"device_id":"d","ts":"2024-01-15T14:37:22.123Z","temperature":1,"exp":9223372036854775807}`,
		`{"device_id":"d","ts":"2024-01-15T14:37:22.123Z","temperature":1,"exp":null}`,
		`{"device_id":"` + strings.Repeat("d", 70000) + `",` + tail + `}`,
		// Not objects, empty, trailing bytes, broken structure.
		``, ` `, `[]`, `[1,2]`, `"x"`, `1`, `null`, `true`, `{}`, `{} `, `{}x`, `{}{}`, `{`, `}`, `{"a"}`, `{"a":}`,
		`{"a":1,}`, `{,"a":1}`, `{"a":1 "b":2}`, `{"a" 1}`, `{'a':1}`, `{"a":[1,]}`, `{"a":[,1]}`, `{"a":[1 2]}`,
		sensorJSON + " ", sensorJSON + "\n", sensorJSON + "x", sensorJSON + ",", sensorJSON + "}", sensorJSON + "\x00",
		"\xef\xbb\xbf" + sensorJSON, "\x00" + sensorJSON, "\f" + sensorJSON, "\v" + sensorJSON,
		`{"device_id":"d",` + tail + `,"x":"unterminated}`,
		`{"device_id":"d",` + tail + `,"x":"a\`,
		// Depth: fastjson refuses more than 300 levels; the scan follows 64.
		`{"device_id":"d",` + tail + `,"deep":` + deep(62) + `}`,
		`{"device_id":"d",` + tail + `,"deep":` + deep(63) + `}`,
		`{"device_id":"d",` + tail + `,"deep":` + deep(64) + `}`,
		`{"device_id":"d",` + tail + `,"deep":` + deep(298) + `}`,
		`{"device_id":"d",` + tail + `,"deep":` + deep(299) + `}`,
		`{"device_id":"d",` + tail + `,"deep":` + deep(300) + `}`,
		// UTF-8 as is: fastjson checks none of it.
		`{"device_id":"dév","ключ":"значение",` + tail + `}`,
		"{\"device_id\":\"d\xff\xfe\",\"k\xc3\":\"\x01\x1f\t\"," + tail + "}",
		"{\"device_id\":\"d\",\"site\":{\"id\":\"a\x00b\"}," + tail + "}",
		// The wide topic's fields: records it maps, then records it refuses.
		`{"device_id":"w","meta":{"t":1705329442123},"asc":"plain","n":{"i":42,"si":-7},"ti":127,"x":2.5,"b":true,` +
			`"tsv":"2024-01-15T15:37:22+01:00","dt":"2024-01-15","u":"0B6A1F6E-3F0C-4A53-9B8F-1F2A3B4C5D6E",` +
			`"tu":"e7a1b2c0-b3a4-11ee-8c90-0242ac120002","site":"s","ключ":"v"}`,
		`{"device_id":"w","meta":{"t":"1705329442123"},"n":{"i":1e3,"si":12.0},"ti":"-128","x":"1e38","b":"false",` +
			`"tsv":1705329442000,"dt":"2024-02-29","u":"0b6a1f6e-3f0c-4a53-9b8f-1f2a3b4c5d6e","tu":null}`,
		`{"device_id":"w","meta":{"t":1.705329442123e12},"n":{"i":-2147483648,"si":"32767"},"x":-0.0,"b":false,` +
			`"tsv":"1705329442000","a":{"b":{"c":"deep"},"x":-3},"site":"s","u":"0b6a1f6e-3f0c-4a53-9b8f-1f2a3b4c5d6e"}`,
		`{"u":"0b6a1f6e-3f0c-4a53-9b8f-1f2a3b4c5d6e","meta":{"t":1705329442123,"t":0},"meta":{"t":5},"device_id":17,` +
			`"n":{"i":"-7","i":8},"x":"2.5e-3","a":"x","a":{"b":{"c":1}},"tsv":"2024-01-15T14:37:22.123456789Z"}`,
		`{"device_id":"w","meta":{"t":1705329442123},"u":"0b6a1f6e-3f0c-4a53-9b8f-1f2a3b4c5d6e","a":{"b":{"c":"x","c":"y"},"b":1}}`,
		`{"device_id":"w","meta":{"t":1705329442123},"u":"0b6a1f6e-3f0c-4a53-9b8f-1f2a3b4c5d6e","q\"x\\":"odd key"}`,
		`{"device_id":"w","meta":{"t":"1705329442123"},"n":{"i":1e3,"si":12.0},"ti":"-128","x":"1e39","b":"false",` +
			`"tsv":1705329442000,"dt":"2024-02-30","u":"not-a-uuid","tu":"0b6a1f6e-3f0c-4a53-9b8f-1f2a3b4c5d6e"}`,
		`{"device_id":"w","meta":{"t":1.705329442123e12},"n":{"i":2147483648,"si":1.5},"ti":128,"x":-0.0,"b":1,` +
			`"tsv":"1705329442000","dt":"2024-01-15","a":{"b":{"c":"deep"}},"site":{"id":"inner"}}`,
		`{"device_id":"w","meta":{"t":-1},"n":[1],"asc":"é","x":true,"b":null,"tsv":1e300,"u":null,"tu":""}`,
		`{"device_id":"w","meta":null,"n":{"i":"9223372036854775807"}}`,
		`{"device_id":"w","meta":[1705329442123]}`,
		`{"device_id":"w","meta":{"t":1705329442123},"a":["x"],"b":"true","x":"2.5e-3"}`,
	}
	return seeds
}

// mutations returns inputs one edit away from seed: each byte deleted, and each of a set of bytes
// that matter to JSON inserted before it and written over it.
func mutations(seed string) []string {
	const alphabet = "\"\\{}[],: \t0-1.eE+ntf\x00\xff"
	out := make([]string, 0, len(seed)*(1+2*len(alphabet)))
	for i := range len(seed) {
		out = append(out, seed[:i]+seed[i+1:])
		for j := range len(alphabet) {
			c := string(alphabet[j])
			out = append(out, seed[:i]+c+seed[i:], seed[:i]+c+seed[i+1:])
		}
	}
	return out
}

// TestScanMatchesParse maps the seeds through both paths with every test topic, and every
// single-edit mutation of the short ones with one topic each, in turn.
func TestScanMatchesParse(t *testing.T) {
	ms := diffMappers(t)
	handled := make([]int, len(ms))
	n := 0
	try := func(k int, value string) {
		r := rec(value)
		r.Key = []byte("key")
		if n%3 == 0 {
			r.Key = nil
		}
		n++
		if checkScan(t, ms[k], r) {
			handled[k]++
		}
	}
	for _, seed := range scanSeeds() {
		for k := range ms {
			try(k, seed)
		}
		if len(seed) < 400 && !testing.Short() {
			for i, in := range mutations(seed) {
				try(i%len(ms), in)
			}
		}
	}
	t.Logf("%d mappings; the scan handled %v per topic", n, handled)
	least := 50 // of about 80,000 mappings per topic
	if testing.Short() {
		least = 1 // the seeds alone
	}
	for k, h := range handled {
		if h < least {
			t.Errorf("topic %q: the scan handled %d inputs, so the test compares next to nothing", diffTopics()[k].name, h)
		}
	}
}

func FuzzScanMatchesParse(f *testing.F) {
	for _, s := range scanSeeds() {
		if len(s) < 4096 {
			f.Add([]byte(s), []byte("k"), false)
		}
	}
	ms := diffMappers(f)
	f.Fuzz(func(t *testing.T, value, key []byte, noTimestamp bool) {
		for _, m := range ms {
			r := rec(string(value))
			r.Key = key
			if noTimestamp {
				r.Timestamp = time.Time{}
			}
			checkScan(t, m, r)
		}
	})
}
