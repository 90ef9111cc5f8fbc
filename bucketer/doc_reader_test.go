package bucketer_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bucketsink/sink/bucketer"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/mapper"
	"github.com/bucketsink/sink/reader"
	"github.com/bucketsink/sink/routing"
	"github.com/bucketsink/sink/schema"
)

// prose is a doc's text with comment markers dropped and every run of white space made one
// space, so a sentence checked below survives a reflow of its paragraph but not a changed word or
// number.
func prose(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(strings.TrimLeft(l, " \t"), "//")
	}
	return strings.Join(strings.Fields(strings.Join(lines, "\n")), " ")
}

// requireProse fails the test for every sentence the doc at path no longer says.
func requireProse(t *testing.T, path string, sentences ...string) {
	t.Helper()
	text := prose(t, path)
	for _, s := range sentences {
		if !strings.Contains(text, s) {
			t.Errorf("%s no longer says\n%s", path, s)
		}
	}
}

// written is the partition a mapped row went to, as a reader names it.
type written struct {
	table       string
	key         any
	eventBucket int
}

func (w written) String() string {
	return fmt.Sprintf("%s(%v, %d)", w.table, w.key, w.eventBucket)
}

// writtenBy is where the mapper put ex; the bucket column follows the id columns in the key.
func writtenBy(ex mapper.Explanation, ids int) written {
	return written{ex.Table, keyOf(ex.PartitionKey[ids].Value), ex.EventBucket}
}

// keyOf makes a bucket key comparable with ==: a timestamp or date key as its UTC text.
func keyOf(key any) any {
	if t, ok := key.(time.Time); ok {
		return t.UTC().Format(time.RFC3339Nano)
	}
	return key
}

// planned lists the partitions of a plan, in plan order.
func planned(p reader.Plan) []written {
	var out []written
	for _, b := range p.Buckets {
		for _, part := range b.Partitions {
			out = append(out, written{part.Table, keyOf(part.Key), part.EventBucket})
		}
	}
	return out
}

// readsWhereWritten fails unless the plan lists exactly the partitions want, in that order, and
// among them every partition in rows.
func readsWhereWritten(t *testing.T, what string, p reader.Plan, want []written, rows ...written) {
	t.Helper()
	got := planned(p)
	if !slices.Equal(got, want) {
		t.Errorf("%s: the reader reads %v; the doc says %v", what, got, want)
	}
	for _, w := range rows {
		if !slices.Contains(got, w) {
			t.Errorf("%s: the mapper wrote a row to %v, which the reader does not read (it reads %v)", what, w, got)
		}
	}
}

// tableOf is topics.<name>'s table as mapper and reader both see it.
func tableOf(t *testing.T, cfg *config.Config, name string) schema.Table {
	t.Helper()
	m, err := mapper.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tab, ok := m.Table(name)
	if !ok {
		t.Fatalf("no table for topics.%s", name)
	}
	return tab
}

// TestDocWorkedExampleIsWhereTheMapperWritesAndTheReaderReads: the bucketer doc's worked example
// (width 1h, key text, 4 event buckets, sensor-42 at 2024-01-15T09:07:12Z) is read back by the real
// reader: a plan over any range holding the instant, in either direction, lists exactly the 4
// event buckets of time bucket "2024-01-15-09", the doc's "Readers of a time bucket query all N",
// and among them the partition the real mapper wrote the record to, with clustering ts and with
// (ts, seq).
func TestDocWorkedExampleIsWhereTheMapperWritesAndTheReaderReads(t *testing.T) {
	requireProse(t, "doc.go",
		`text = "2024-01-15-09", int = 2024011509, number = 473697`,
		`mod 4 = 1 → event bucket 1`,
		`Readers of a time bucket query all N.`,
		`Example for width 1h, key text, 4 event buckets, id "sensor-42", clustering column ts`,
	)
	const record = `{"sensor_id":"sensor-42","at":"2024-01-15T14:37:12+05:30","seq":7}`
	at := time.Date(2024, 1, 15, 9, 7, 12, 0, time.UTC)
	var hour []written
	for eb := range 4 {
		hour = append(hour, written{"readings", "2024-01-15-09", eb})
	}
	for _, withSeq := range []bool{false, true} {
		cfg := docExampleConfig(withSeq)
		w := writtenBy(explain(t, cfg, "doc-example", record), 1)
		tab := tableOf(t, cfg, "example")
		for _, r := range []struct {
			name     string
			from, to time.Time
		}{
			{"oldest first, [instant, instant+1ms)", at, at.Add(time.Millisecond)},
			{"newest first, (instant-1ms, instant]", at, at.Add(-time.Millisecond)},
			{"oldest first, the whole hour", at.Truncate(time.Hour), at.Truncate(time.Hour).Add(time.Hour)},
		} {
			p, err := reader.MakePlan(context.Background(), tab, []any{"sensor-42"}, r.from, r.to, 100, nil)
			if err != nil {
				t.Fatal(err)
			}
			readsWhereWritten(t, fmt.Sprintf("seq clustered %v, %s", withSeq, r.name), p, hour, w)
			if len(p.Buckets) == 1 && (p.Buckets[0].Bucket != 473697 || at.Before(p.Buckets[0].Lo) || !at.Before(p.Buckets[0].Hi)) {
				t.Errorf("%s: the plan's bucket %d [%s, %s) does not hold bucket 473697's instant %s",
					r.name, p.Buckets[0].Bucket, p.Buckets[0].Lo, p.Buckets[0].Hi, at)
			}
		}
	}
}

// readmeSplit is the README's split worked example: the daily topic of examples/iot-sensors.yaml
// with split.enabled, its partition for dev-0042 on 2024-01-15, and the routing record.
var readmeSplit = struct {
	entityHex string
	day       time.Time
	gen       routing.Generation
	before    string // a reading before the record's from_time
	after     string // a reading after it
	afterHash int    // FNV-1a-64 of the after reading's canonical text mod 8
}{
	entityHex: "0008 6465762d30303432 00",
	day:       time.Date(2024, 1, 15, 0, 0, 0, 0, time.UTC),
	gen:       routing.Generation{N: 1, From: time.Date(2024, 1, 15, 9, 30, 0, 0, time.UTC), First: 1, Buckets: 8},
	before:    "2024-01-15T08:12:00.000Z",
	after:     "2024-01-15T09:45:12.500Z",
	afterHash: 6,
}

// TestREADMESplitExampleIsWhereTheMapperWritesAndTheReaderReads: the README's hot-entity worked
// example holds for the real mapper and the real reader. The entity bytes it states are what both
// halves key the routing record by; with the record (generation 1 from 09:30Z, event buckets 1..8)
// the mapper puts the 08:12 reading in event bucket 0 and the 09:45:12.500 reading in 1 + 6 = 7
// when its Kafka partition adopted the split at or before its offset, in 0 when it adopted it later
// or not at all; and a reader of the day, finding the record through the RouteLookup it is given
// for the table and bucket start of the README's query, reads the 9 partitions 0..8, which hold
// every one of those rows.
func TestREADMESplitExampleIsWhereTheMapperWritesAndTheReaderReads(t *testing.T) {
	x := readmeSplit
	requireProse(t, "../README.md",
		"Worked example: the daily topic of `examples/iot-sensors.yaml` (`id: [device_id]`, no `event_buckets`) with `split.enabled`.",
		fmt.Sprintf("Device `dev-0042` (entity bytes `0x%s`) has on %s the record (generation %d, from %sZ, first event bucket %d, %d event buckets).",
			x.entityHex, x.day.Format(time.DateOnly), x.gen.N, x.gen.From.Format(time.TimeOnly), x.gen.First, x.gen.Buckets),
		fmt.Sprintf("Its reading at %s is in event bucket 0;", x.before[len("2024-01-15T"):]),
		fmt.Sprintf(`its reading at %s is in event bucket %d + FNV-1a-64(%q) mod %d = %d + %d = %d (clustering column `+"`reading_time`), partition `(dev-0042, '%s', %d)`, "+
			"provided its Kafka partition adopted the split at or before its offset (else event bucket 0);",
			x.after[len("2024-01-15T"):], x.gen.First, x.after, x.gen.Buckets, x.gen.First, x.afterHash, x.gen.First+x.afterHash, x.day.Format(time.DateOnly), x.gen.First+x.afterHash),
		fmt.Sprintf("a reader of that day reads the %d partitions `(dev-0042, '%s', 0..%d)` either way.", x.gen.End(), x.day.Format(time.DateOnly), x.gen.End()-1),
		"WHERE table_name = 'sensor_readings' AND bucket_start = '2024-01-15T00:00:00Z';",
	)
	if got := bucketer.EventBucket([]byte(x.after), x.gen.Buckets); got != x.afterHash {
		t.Errorf("FNV-1a-64(%q) mod %d = %d; the README says %d", x.after, x.gen.Buckets, got, x.afterHash)
	}

	cfg, err := config.Load("../examples/iot-sensors.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	tp := cfg.Topics["readings"]
	if tp.Bucket.Width != "1d" || tp.Bucket.EventBuckets > 1 || strings.Join(tp.ID, ",") != "device_id" {
		t.Fatalf("examples/iot-sensors.yaml's topic is no longer daily by device_id without event buckets: %+v %v", tp.Bucket, tp.ID)
	}
	tp.Split.Enabled = true
	cfg.Topics["readings"] = tp
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	tab := tableOf(t, cfg, "readings")

	entity, err := hex.DecodeString(strings.ReplaceAll(x.entityHex, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := reader.EntityKey(tab, []any{"dev-0042"}); err != nil || string(got) != string(entity) {
		t.Fatalf("reader.EntityKey = %x, %v; the README says %x", got, err, entity)
	}

	m, err := mapper.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	routes := m.Routes("readings")
	routes.FollowAdoptions() // as the pipeline does
	const part, adoptedAt = int32(3), int64(1000)
	mapAt := func(ts string, p int32, offset int64) mapper.Explanation {
		t.Helper()
		ex, err := m.Explain(mapper.Record{Topic: "sensor-readings", Partition: p, Offset: offset, Timestamp: x.day.Add(23 * time.Hour),
			Value: []byte(`{"device_id":"dev-0042","ts":"` + ts + `","temperature":21.5}`)})
		if err != nil {
			t.Fatal(err)
		}
		return ex
	}
	first := mapAt(x.before, part, adoptedAt)
	if string(first.Entity) != string(entity) {
		t.Errorf("the mapper's entity %x; the README says %x", first.Entity, entity)
	}
	gen := x.gen
	gen.Adopted = map[int32]int64{part: adoptedAt}
	routes.Set(first.Bucket, string(entity), []routing.Generation{gen})

	var rows []written
	for _, c := range []struct {
		name   string
		ts     string
		part   int32
		offset int64
		want   int
	}{
		{"the 08:12 reading, before the record's from_time", x.before, part, adoptedAt + 5, 0},
		{"the 09:45 reading at the adopting offset", x.after, part, adoptedAt, gen.First + x.afterHash},
		{"the 09:45 reading after the adopting offset", x.after, part, adoptedAt + 5, gen.First + x.afterHash},
		{"the 09:45 reading before its partition adopted the split", x.after, part, adoptedAt - 1, 0},
		{"the 09:45 reading from a partition that never adopted it", x.after, part + 1, adoptedAt + 5, 0},
	} {
		ex := mapAt(c.ts, c.part, c.offset)
		w := writtenBy(ex, 1)
		if w != (written{"sensor_readings", "2024-01-15", c.want}) {
			t.Errorf("%s (Kafka partition %d offset %d): the mapper writes %v; the README says event bucket %d of sensor_readings('2024-01-15')",
				c.name, c.part, c.offset, w, c.want)
		}
		rows = append(rows, w)
	}

	lookups := 0
	lookup := func(_ context.Context, table string, start time.Time, e []byte) ([]routing.Generation, error) {
		lookups++
		if table != "sensor_readings" || !start.Equal(x.day) || string(e) != string(entity) {
			t.Errorf("routing lookup of table %q bucket_start %s entity %x; the README's query reads sensor_readings, %s, %x",
				table, start.UTC().Format(time.RFC3339), e, x.day.Format(time.RFC3339), entity)
			return nil, nil
		}
		return []routing.Generation{gen}, nil
	}
	var day []written
	for eb := range x.gen.End() {
		day = append(day, written{"sensor_readings", x.day.Format(time.DateOnly), eb})
	}
	for _, r := range []struct {
		name     string
		from, to time.Time
	}{
		{"oldest first", x.day, x.day.Add(24 * time.Hour)},
		{"newest first", x.day.Add(24*time.Hour - time.Millisecond), x.day.Add(-time.Millisecond)},
	} {
		p, err := reader.MakePlan(context.Background(), tab, []any{"dev-0042"}, r.from, r.to, 100, lookup)
		if err != nil {
			t.Fatal(err)
		}
		readsWhereWritten(t, "the day read "+r.name, p, day, rows...)
	}
	if lookups != 2 {
		t.Errorf("%d routing lookups for two plans of one day; want one each", lookups)
	}
}

// TestREADMEHighVolumeExampleIsWhereTheMapperWritesAndTheReaderReads: the README's explain of the
// sensor record on examples/high-volume.yaml (10-minute timestamp buckets, 8 event buckets) writes
// to shard 1 of the 14:30 bucket (TestREADMEEventBucketFollowsTheDoc checks the shard), and a
// reader of that 10-minute window, in either direction, reads exactly its 8 partitions, as the
// example's own comment says, that one among them.
func TestREADMEHighVolumeExampleIsWhereTheMapperWritesAndTheReaderReads(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const line = "  bucket         = '2024-01-15T14:30:00.000Z'  time bucket 2842215, 2024-01-15T14:30:00Z to 2024-01-15T14:40:00Z\n"
	if !strings.Contains(string(readme), line) {
		t.Errorf("the README no longer shows\n%s", line)
	}
	requireProse(t, "../examples/high-volume.yaml", "Reads of a 10-minute window query its 8 partitions in parallel.")

	cfg, err := config.Load("../examples/high-volume.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	ex := explain(t, cfg, "sensor-firehose", `{"device_id":"dev-0042","ts":"2024-01-15T14:37:22.123Z","temperature":21.5,`+
		`"humidity":40.2,"battery":3.71,"site":{"id":"plant-1"}}`)
	w := writtenBy(ex, 1)
	if ex.Bucket != 2842215 || w.key != "2024-01-15T14:30:00Z" {
		t.Errorf("the mapper writes time bucket %d key %v; the README says 2842215, 2024-01-15T14:30:00Z", ex.Bucket, w.key)
	}
	var window []written
	for eb := range 8 {
		window = append(window, written{"readings_10m", "2024-01-15T14:30:00Z", eb})
	}
	tab := tableOf(t, cfg, "firehose")
	start := time.Date(2024, 1, 15, 14, 30, 0, 0, time.UTC)
	for _, r := range []struct {
		name     string
		from, to time.Time
	}{
		{"oldest first", start, start.Add(10 * time.Minute)},
		{"newest first", start.Add(10*time.Minute - time.Millisecond), start.Add(-time.Millisecond)},
	} {
		p, err := reader.MakePlan(context.Background(), tab, []any{"dev-0042"}, r.from, r.to, 100, nil)
		if err != nil {
			t.Fatal(err)
		}
		readsWhereWritten(t, "the 14:30 window read "+r.name, p, window, w)
	}
}
