package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"gopkg.in/inf.v0"

	"github.com/bucketsink/sink/cassandra"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/internal/testenv"
	"github.com/bucketsink/sink/packed"
	"github.com/bucketsink/sink/reader"
	"github.com/bucketsink/sink/reader/output"
)

var querySeed = flag.Uint64("query-seed", 0, "the seed of TestIntegrationQueryReadsBackEveryColumnTypeAsWritten (0: a new one)")

// propColumns are a column of every type the sink writes (packed.ParseType: the scalars, and list, set and
// map<text, T> of them), after the id, time and seq columns.
var propColumns = []struct{ name, typ string }{
	{"c_text", "text"}, {"c_ascii", "ascii"}, {"c_varchar", "text"}, {"c_int", "int"}, {"c_bigint", "bigint"},
	{"c_smallint", "smallint"}, {"c_tinyint", "tinyint"}, {"c_varint", "varint"}, {"c_decimal", "decimal"},
	{"c_float", "float"}, {"c_double", "double"}, {"c_boolean", "boolean"}, {"c_timestamp", "timestamp"},
	{"c_date", "date"}, {"c_uuid", "uuid"}, {"c_timeuuid", "timeuuid"}, {"c_inet", "inet"}, {"c_blob", "blob"},
	{"l_text", "list<text>"}, {"l_double", "list<double>"}, {"l_float", "list<float>"}, {"l_blob", "list<blob>"},
	{"l_varint", "list<varint>"}, {"l_boolean", "list<boolean>"}, {"l_date", "list<date>"}, {"l_inet", "list<inet>"},
	{"s_int", "set<int>"}, {"s_uuid", "set<uuid>"}, {"s_text", "set<text>"},
	{"m_double", "map<text, double>"}, {"m_decimal", "map<text, decimal>"}, {"m_timestamp", "map<text, timestamp>"},
	{"m_bigint", "map<text, bigint>"}, {"m_blob", "map<text, blob>"},
}

// TestIntegrationQueryReadsBackEveryColumnTypeAsWritten is a property test of the read half on the real
// Cassandra: random rows of every column type the sink writes (nulls; empty, long and unusual text; blobs
// of different lengths one after the other; NaN and the infinities; the extremes of every number, of
// timestamps and dates) are written to the table `sink schema` creates, each value encoded by package
// packed as the sink's writer binds it (JSON, which the pipeline tests produce, has no NaN), then read back through the reader
// (in pages, over several driver pages) and through `sink query` in every format, each parsed back, and
// must equal what was written. The seed is printed; -query-seed replays one.
func TestIntegrationQueryReadsBackEveryColumnTypeAsWritten(t *testing.T) {
	hosts := testenv.Cassandra(t)
	ks := testenv.Keyspace(t, hosts)
	seed := *querySeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (-query-seed %d replays it)", seed, seed)
	g := valueGen{rand.New(rand.NewPCG(seed, seed>>1|1))}

	var cols strings.Builder
	for _, c := range propColumns {
		fmt.Fprintf(&cols, "      - {name: %s, type: \"%s\", field: %s}\n", c.name, c.typ, c.name)
	}
	path := filepath.Join(t.TempDir(), "sink.yaml")
	yaml := fmt.Sprintf(`kafka: {brokers: ["kafka.invalid:9092"]}
cassandra: {hosts: [%s], keyspace: %s, consistency: ONE, replication: {class: SimpleStrategy, replication_factor: "1"}}
topics:
  everything:
    topic: everything
    table: everything
    id: [device_id]
    time: {source: field, field: ts}
    bucket: {width: 1d, key: timestamp}
    columns:
      - {name: device_id, type: text, field: device_id}
      - {name: ts, type: timestamp, source: event_time}
      - {name: seq, type: bigint, field: seq, required: true}
%s    clustering: [{column: ts, order: asc}]
`, strings.Join(hosts, ", "), ks, cols.String())
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path, nil)
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	day := time.Date(2024, 3, 10, 0, 0, 0, 0, time.UTC)
	session, err := cassandra.Connect(ctx, cfg.Cassandra)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	if err := cassandra.ApplySchema(ctx, session, cfg, nil, day); err != nil {
		t.Fatal(err)
	}

	const rows = 300
	names := []string{"device_id", "bucket", "ts", "seq"}
	for _, c := range propColumns {
		names = append(names, c.name)
	}
	insert := fmt.Sprintf("INSERT INTO %s.everything (%s) VALUES (?%s)", ks, strings.Join(names, ", "), strings.Repeat(", ?", len(names)-1))
	written := make([]map[string]any, rows)
	for i := range rows {
		ts := day.Add(time.Duration(i)*97*time.Millisecond + time.Duration(g.r.IntN(90))*time.Millisecond)
		row := map[string]any{"device_id": "dev-1", "ts": ts, "seq": int64(i)}
		args := []any{"dev-1", day, ts, int64(i)}
		for _, c := range propColumns {
			v := g.value(c.typ)
			row[c.name] = v
			args = append(args, wire(t, c.typ, v))
		}
		if err := session.Driver().Query(insert, args...).ExecContext(ctx); err != nil {
			t.Fatalf("seed %d: row %d: %v", seed, i, err)
		}
		written[i] = row
	}
	fail := func(where string, row int, col, typ string, want, got any) {
		t.Helper()
		t.Errorf("seed %d: %s: row %d column %s (%s): read %s, wrote %s", seed, where, row, col, typ, show(got), show(want))
	}
	// check compares rows read back with those written; in the table and CSV an empty text prints as a
	// null does (emptyIsNull).
	check := func(where string, got []map[string]any, emptyIsNull bool) {
		t.Helper()
		if len(got) != rows {
			t.Fatalf("seed %d: %s: %d rows, want %d", seed, where, len(got), rows)
		}
		errs := 0
		for i, row := range got {
			for _, c := range allColumns() {
				want := written[i][c.name]
				if emptyIsNull && want == "" {
					want = nil
				}
				if !equalValue(c.typ, want, row[c.name]) {
					fail(where, i, c.name, c.typ, written[i][c.name], row[c.name])
					if errs++; errs > 20 {
						t.Fatalf("seed %d: %s: too many differences", seed, where)
					}
				}
			}
		}
	}

	// The reader, a page of 64 rows at a time over driver pages of 50.
	r, err := reader.New(reader.Config{Session: session.Driver(), Sink: cfg, Topic: "everything", FetchSize: 50})
	if err != nil {
		t.Fatal(err)
	}
	q := reader.Query{ID: []any{"dev-1"}, From: day, To: day.AddDate(0, 0, 1), PageSize: 64}
	var got []map[string]any
	for pages := 0; ; pages++ {
		page, err := r.Read(ctx, q)
		if err != nil || pages > rows {
			t.Fatalf("seed %d: reading page %d: %v", seed, pages, err)
		}
		for _, row := range page.Rows {
			got = append(got, row.Values)
		}
		if page.Cursor == "" {
			break
		}
		q.Cursor = page.Cursor
	}
	check("reader", got, false)

	// sink query, one page of every row in each format, over driver pages of 64.
	for _, format := range output.Formats {
		code, out, errOut := runCmd(t, runQuery, "--config", path, "--topic", "everything", "--id", "dev-1", "--from", day.Format(time.RFC3339),
			"--to", day.AddDate(0, 0, 1).Format(time.RFC3339), "--page-size", strconv.Itoa(rows+1), "--fetch-size", "64", "--format", format)
		if code != exitOK {
			t.Fatalf("seed %d: sink query --format %s: exit %d: %s", seed, format, code, errOut)
		}
		var parsed []map[string]any
		switch format {
		case "json":
			parsed, err = parseJSONPage(out)
		case "csv":
			parsed, err = parseCells(csvRecords(out), false)
		case "table":
			parsed, err = parseCells(tableRecords(out), true)
		}
		if err != nil {
			t.Fatalf("seed %d: sink query --format %s: %v", seed, format, err)
		}
		check("sink query --format "+format, parsed, format != "json")
	}
}

// wire is v bound as the sink's writer binds it: its bytes encoded by package packed; nil for a null.
func wire(t *testing.T, typ string, v any) any {
	if v == nil {
		return nil
	}
	pt := packed.MustTypes(typ)[0]
	switch pt.Kind {
	case packed.KList, packed.KSet:
		v = listValues(v)
	case packed.KMap:
		v = mapValues(v)
	}
	b, err := packed.AppendValue(make([]byte, 0, 16), pt, v) // not nil: an empty value is not a null
	if err != nil {
		t.Fatal(err)
	}
	return &packed.Value{Type: pt, Wire: b}
}

type colType struct{ name, typ string }

func allColumns() []colType {
	out := []colType{{"device_id", "text"}, {"ts", "timestamp"}, {"seq", "bigint"}}
	for _, c := range propColumns {
		out = append(out, colType{c.name, c.typ})
	}
	return out
}

// valueGen makes random values of CQL types, as the driver binds them; nil is a null.
type valueGen struct{ r *rand.Rand }

func (g valueGen) value(typ string) any {
	if g.r.IntN(8) == 0 {
		return nil
	}
	if elem, ok := strings.CutPrefix(typ, "list<"); ok {
		return g.list(strings.TrimSuffix(elem, ">"), false)
	}
	if elem, ok := strings.CutPrefix(typ, "set<"); ok {
		return g.list(strings.TrimSuffix(elem, ">"), true)
	}
	if elem, ok := strings.CutPrefix(typ, "map<text, "); ok {
		return g.mapOf(strings.TrimSuffix(elem, ">"))
	}
	return g.scalar(typ)
}

// list is a list of elem values; for a set, without repeats.
func (g valueGen) list(elem string, set bool) any {
	n := g.r.IntN(5)
	var vals []any
	for len(vals) < n {
		v := g.scalar(elem)
		if set && containsValue(elem, vals, v) {
			continue
		}
		vals = append(vals, v)
	}
	switch elem {
	case "text":
		return typed[string](vals)
	case "double":
		return typed[float64](vals)
	case "float":
		return typed[float32](vals)
	case "blob":
		return typed[[]byte](vals)
	case "varint":
		return typed[*big.Int](vals)
	case "boolean":
		return typed[bool](vals)
	case "date":
		return typed[time.Time](vals)
	case "inet":
		return typed[net.IP](vals)
	case "int":
		return typed[int](vals)
	case "uuid":
		return typed[gocql.UUID](vals)
	}
	panic(elem)
}

func typed[T any](vals []any) []T {
	out := make([]T, len(vals))
	for i, v := range vals {
		out[i] = v.(T)
	}
	return out
}

func containsValue(typ string, vals []any, v any) bool {
	for _, x := range vals {
		if equalValue(typ, x, v) {
			return true
		}
	}
	return false
}

func (g valueGen) mapOf(elem string) any {
	n := g.r.IntN(4)
	keys := map[string]bool{}
	for len(keys) < n {
		keys[g.text(false)] = true
	}
	switch elem {
	case "double":
		return fill[float64](g, keys, elem)
	case "decimal":
		return fill[*inf.Dec](g, keys, elem)
	case "timestamp":
		return fill[time.Time](g, keys, elem)
	case "bigint":
		return fill[int64](g, keys, elem)
	case "blob":
		return fill[[]byte](g, keys, elem)
	}
	panic(elem)
}

func fill[T any](g valueGen, keys map[string]bool, elem string) map[string]T {
	m := make(map[string]T, len(keys))
	for k := range keys {
		m[k] = g.scalar(elem).(T)
	}
	return m
}

func (g valueGen) scalar(typ string) any {
	r := g.r
	pick := func(n int) int { return r.IntN(n) }
	switch typ {
	case "text":
		return g.text(false)
	case "ascii":
		return g.text(true)
	case "int":
		return []int{0, 1, -1, math.MaxInt32, math.MinInt32, int(r.Int32()) - r.IntN(1<<30)}[pick(6)]
	case "bigint":
		return []int64{0, -1, math.MaxInt64, math.MinInt64, r.Int64() - r.Int64N(1<<62), int64(r.IntN(1000))}[pick(6)]
	case "smallint":
		return []int16{0, math.MaxInt16, math.MinInt16, int16(r.IntN(1 << 16))}[pick(4)]
	case "tinyint":
		return []int8{0, math.MaxInt8, math.MinInt8, int8(r.IntN(1 << 8))}[pick(4)]
	case "varint":
		v := new(big.Int).Lsh(big.NewInt(r.Int64()), uint(r.IntN(200)))
		if pick(2) == 0 {
			v.Neg(v)
		}
		return v
	case "decimal":
		return inf.NewDecBig(new(big.Int).Lsh(big.NewInt(r.Int64()-r.Int64()), uint(r.IntN(80))), inf.Scale(r.IntN(20)))
	case "float":
		switch pick(6) {
		case 0:
			return float32(math.NaN())
		case 1:
			return float32(math.Inf(1 - 2*pick(2)))
		case 2:
			return float32(math.Copysign(0, -1))
		case 3:
			return []float32{math.MaxFloat32, math.SmallestNonzeroFloat32, 1e-7, -2.5}[pick(4)]
		}
		return math.Float32frombits(r.Uint32()&^(0xff<<23) | uint32(1+r.IntN(254))<<23) // finite
	case "double":
		switch pick(6) {
		case 0:
			return math.NaN()
		case 1:
			return math.Inf(1 - 2*pick(2))
		case 2:
			return math.Copysign(0, -1)
		case 3:
			return []float64{math.MaxFloat64, math.SmallestNonzeroFloat64, 0.1, -1e300}[pick(4)]
		}
		return math.Float64frombits(r.Uint64()&^(0x7ff<<52) | uint64(1+r.IntN(2046))<<52) // finite
	case "boolean":
		return pick(2) == 0
	case "timestamp":
		lo, hi := time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli(), time.Date(9999, 12, 31, 23, 59, 59, 999e6, time.UTC).UnixMilli()
		ms := []int64{0, -1, 1, lo, hi, lo + r.Int64N(hi-lo)}[pick(6)]
		return time.UnixMilli(ms).UTC()
	case "date":
		lo, hi := time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).Unix()/86400, time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC).Unix()/86400
		d := []int64{0, -1, 1, lo, hi, lo + r.Int64N(hi-lo)}[pick(6)]
		return time.Unix(d*86400, 0).UTC()
	case "uuid":
		if pick(3) == 0 {
			return gocql.UUIDFromTime(time.UnixMilli(r.Int64N(4e12)))
		}
		var u gocql.UUID
		for i := range u {
			u[i] = byte(r.Uint32())
		}
		u[6] = u[6]&0x0f | 0x40
		u[8] = u[8]&0x3f | 0x80
		return u
	case "timeuuid":
		return gocql.UUIDFromTime(time.UnixMilli(r.Int64N(4e12)))
	case "inet":
		ip := make(net.IP, []int{4, 16}[pick(2)])
		for i := range ip {
			ip[i] = byte(r.Uint32())
		}
		if len(ip) == 16 && ip.To4() != nil {
			ip[0] = 0x20 // not a v4-mapped address, which reads back as its 4 bytes
		}
		return ip
	case "blob":
		n := []int{0, 1, 2, 3, 7, 16, 100, 3000}[pick(8)]
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}
	panic(typ)
}

// text is an empty, short or long string of runes an output format must escape or align: quotes, commas,
// tabs, line breaks, edge spaces, backslashes, wide and combining runes; ASCII only when ascii.
func (g valueGen) text(ascii bool) string {
	pool := []string{"a", "Z", "0", " ", ",", `"`, "'", "\\", "\t", "\n", "\r", "\r\n", ";", "{", "[", "0x", "NaN", "null", "é", "日本", "☃", "😀", "e\u0301", "\u200b", "\x00", "\x7f", "\u2028"}
	switch g.r.IntN(8) {
	case 0:
		return ""
	case 1:
		return strings.Repeat("long-"+strconv.Itoa(g.r.IntN(100)), 200)
	}
	var b strings.Builder
	for range 1 + g.r.IntN(12) {
		s := pool[g.r.IntN(len(pool))]
		if ascii && !isASCII(s) {
			s = string(rune(g.r.IntN(128)))
		}
		b.WriteString(s)
	}
	return b.String()
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// equalValue reports whether got, read back, is the value written (a value of CQL type typ as bound, nil
// for a null): numbers exactly (a float's bits, any NaN for a NaN), a decimal with its scale, a timestamp
// to the millisecond, a set in any order.
func equalValue(typ string, want, got any) bool {
	if want == nil || got == nil {
		return want == nil && got == nil
	}
	if elem, ok := strings.CutPrefix(typ, "map<text, "); ok {
		elem = strings.TrimSuffix(elem, ">")
		wm, gm := mapValues(want), mapValues(got)
		if wm == nil || gm == nil || len(wm) != len(gm) {
			return false
		}
		for k, w := range wm {
			if g, ok := gm[k]; !ok || !equalValue(elem, w, g) {
				return false
			}
		}
		return true
	}
	for _, pre := range []string{"list<", "set<"} {
		if elem, ok := strings.CutPrefix(typ, pre); ok {
			elem = strings.TrimSuffix(elem, ">")
			ws, gs := listValues(want), listValues(got)
			if ws == nil || gs == nil || len(ws) != len(gs) {
				return false
			}
			for i, w := range ws {
				if pre == "list<" && !equalValue(elem, w, gs[i]) || pre == "set<" && !containsValue(elem, gs, w) {
					return false
				}
			}
			return true
		}
	}
	switch typ {
	case "float":
		w, ok1 := want.(float32)
		g, ok2 := got.(float32)
		return ok1 && ok2 && (math.Float32bits(w) == math.Float32bits(g) || w != w && g != g)
	case "double":
		w, ok1 := want.(float64)
		g, ok2 := got.(float64)
		return ok1 && ok2 && (math.Float64bits(w) == math.Float64bits(g) || w != w && g != g)
	case "decimal":
		w, ok1 := want.(*inf.Dec)
		g, ok2 := got.(*inf.Dec)
		return ok1 && ok2 && w.Scale() == g.Scale() && w.UnscaledBig().Cmp(g.UnscaledBig()) == 0
	case "varint":
		w, ok1 := want.(*big.Int)
		g, ok2 := got.(*big.Int)
		return ok1 && ok2 && w.Cmp(g) == 0
	case "timestamp", "date":
		w, ok1 := want.(time.Time)
		g, ok2 := got.(time.Time)
		return ok1 && ok2 && w.UnixMilli() == g.UnixMilli()
	case "inet":
		w, ok1 := want.(net.IP)
		g, ok2 := got.(net.IP)
		return ok1 && ok2 && w.Equal(g)
	case "blob":
		w, ok1 := want.([]byte)
		g, ok2 := got.([]byte)
		return ok1 && ok2 && bytes.Equal(w, g) && (w == nil) == (g == nil) // an empty blob is not a null
	case "int", "bigint", "smallint", "tinyint":
		w, ok1 := asInt64(want)
		g, ok2 := asInt64(got)
		return ok1 && ok2 && w == g
	}
	return want == got // text, ascii, boolean, uuid, timeuuid
}

func asInt64(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	}
	return 0, false
}

// listValues are the elements of a slice of any type; nil if v is no slice.
func listValues(v any) []any {
	switch x := v.(type) {
	case []any:
		return x
	case []string:
		return anySlice(x)
	case []float64:
		return anySlice(x)
	case []float32:
		return anySlice(x)
	case [][]byte:
		return anySlice(x)
	case []*big.Int:
		return anySlice(x)
	case []bool:
		return anySlice(x)
	case []time.Time:
		return anySlice(x)
	case []net.IP:
		return anySlice(x)
	case []int:
		return anySlice(x)
	case []gocql.UUID:
		return anySlice(x)
	}
	return nil
}

func anySlice[T any](s []T) []any {
	out := make([]any, len(s))
	for i, e := range s {
		out[i] = e
	}
	return out
}

// mapValues are the entries of a map with text keys of any value type; nil if v is no such map.
func mapValues(v any) map[string]any {
	switch x := v.(type) {
	case map[string]any:
		return x
	case map[string]float64:
		return anyMap(x)
	case map[string]*inf.Dec:
		return anyMap(x)
	case map[string]time.Time:
		return anyMap(x)
	case map[string]int64:
		return anyMap(x)
	case map[string][]byte:
		return anyMap(x)
	}
	return nil
}

func anyMap[T any](m map[string]T) map[string]any {
	out := make(map[string]any, len(m))
	for k, e := range m {
		out[k] = e
	}
	return out
}

// show is a value for a failure message.
func show(v any) string {
	if v == nil {
		return "null"
	}
	s := fmt.Sprintf("%T %#v", v, v)
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

// parseJSONPage reads the rows of a JSON page back to values of their columns' types.
func parseJSONPage(out string) ([]map[string]any, error) {
	var doc struct {
		Rows []struct {
			Values map[string]any `json:"values"`
		} `json:"rows"`
		Cursor string `json:"cursor"`
	}
	dec := json.NewDecoder(strings.NewReader(out))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	var rows []map[string]any
	for i, r := range doc.Rows {
		row := map[string]any{}
		for _, c := range allColumns() {
			v, err := fromJSON(c.typ, r.Values[c.name])
			if err != nil {
				return nil, fmt.Errorf("row %d column %s: %w", i, c.name, err)
			}
			row[c.name] = v
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// fromJSON is the value of type typ a JSON value (decoded with UseNumber) stands for: a float's NaN and
// infinities are strings, a blob base64, a date a timestamp at midnight.
func fromJSON(typ string, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	if elem, ok := collectionElem(typ); ok {
		switch x := v.(type) {
		case []any:
			out := make([]any, len(x))
			for i, e := range x {
				var err error
				if out[i], err = fromJSON(elem, e); err != nil {
					return nil, err
				}
			}
			return out, nil
		case map[string]any:
			out := make(map[string]any, len(x))
			for k, e := range x {
				var err error
				if out[k], err = fromJSON(elem, e); err != nil {
					return nil, err
				}
			}
			return out, nil
		}
		return nil, fmt.Errorf("%T for a %s", v, typ)
	}
	switch typ {
	case "blob":
		s, _ := v.(string)
		return base64.StdEncoding.DecodeString(s)
	case "date":
		s, _ := v.(string)
		return time.Parse(time.RFC3339, s)
	case "boolean":
		return v, nil
	}
	switch x := v.(type) {
	case json.Number:
		return reader.ParseValue(typ, string(x))
	case string:
		return reader.ParseValue(typ, x)
	}
	return nil, fmt.Errorf("%T for a %s", v, typ)
}

// collectionElem is the element type of a collection type.
func collectionElem(typ string) (string, bool) {
	for _, pre := range []string{"list<", "set<", "map<text, "} {
		if elem, ok := strings.CutPrefix(typ, pre); ok {
			return strings.TrimSuffix(elem, ">"), true
		}
	}
	return "", false
}

// parseCells reads table or CSV records (the header first) back to values: an empty cell is a null (or
// an empty text: the two print alike), a table cell in double quotes is Go-quoted, a collection is JSON
// whose elements are their cells' text forms.
func parseCells(recs [][]string, table bool) ([]map[string]any, error) {
	cols := allColumns()
	if len(recs) == 0 || len(recs[0]) != len(cols)+1 { // and the bucket column, last
		return nil, fmt.Errorf("header %q", recs[0])
	}
	byName := map[string]string{}
	for _, c := range cols {
		byName[c.name] = c.typ
	}
	var rows []map[string]any
	for i, rec := range recs[1:] {
		row := map[string]any{}
		for j, name := range recs[0] {
			typ, ok := byName[name]
			if !ok {
				continue
			}
			cell := rec[j]
			if table && strings.HasPrefix(cell, `"`) {
				s, err := strconv.Unquote(cell)
				if err != nil {
					return nil, fmt.Errorf("row %d column %s: %q: %w", i, name, cell, err)
				}
				cell = s
			}
			v, err := fromCell(typ, cell)
			if err != nil {
				return nil, fmt.Errorf("row %d column %s: %w", i, name, err)
			}
			row[name] = v
		}
		rows = append(rows, row)
	}
	return rows, nil
}

func fromCell(typ, cell string) (any, error) {
	if cell == "" {
		return nil, nil
	}
	elem, ok := collectionElem(typ)
	if !ok {
		return reader.ParseValue(typ, cell)
	}
	dec := json.NewDecoder(strings.NewReader(cell))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%q: %w", cell, err)
	}
	conv := func(e any) (any, error) {
		switch x := e.(type) {
		case json.Number:
			return reader.ParseValue(elem, string(x))
		case string:
			return reader.ParseValue(elem, x)
		case bool:
			return x, nil
		}
		return nil, fmt.Errorf("%T in %q", e, cell)
	}
	switch x := v.(type) {
	case []any:
		for i, e := range x {
			var err error
			if x[i], err = conv(e); err != nil {
				return nil, err
			}
		}
		return x, nil
	case map[string]any:
		for k, e := range x {
			var err error
			if x[k], err = conv(e); err != nil {
				return nil, err
			}
		}
		return x, nil
	}
	return nil, fmt.Errorf("%q is no JSON array or object", cell)
}

// csvRecords splits CSV text by RFC 4180 (encoding/csv's reader drops a carriage return before a line
// feed even inside quotes, which would change a value).
func csvRecords(s string) [][]string {
	var recs [][]string
	var rec []string
	var field strings.Builder
	quoted := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quoted && c == '"' && i+1 < len(s) && s[i+1] == '"':
			field.WriteByte('"')
			i++
		case c == '"':
			quoted = !quoted
		case !quoted && c == ',':
			rec = append(rec, field.String())
			field.Reset()
		case !quoted && c == '\n':
			recs = append(recs, append(rec, field.String()))
			rec, field = nil, strings.Builder{}
		default:
			field.WriteByte(c)
		}
	}
	return recs
}

// tableRecords splits an aligned table at the columns its header starts (counted in runes, as the
// tabwriter aligns them), each cell without the padding after it.
func tableRecords(s string) [][]string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	header := []rune(lines[0])
	var starts []int
	for i := range header {
		if header[i] != ' ' && (i == 0 || header[i-1] == ' ') {
			starts = append(starts, i)
		}
	}
	var recs [][]string
	for _, line := range lines {
		rs := []rune(line)
		rec := make([]string, len(starts))
		for j, st := range starts {
			end := len(rs)
			if j+1 < len(starts) {
				end = min(starts[j+1], len(rs))
			}
			if st < len(rs) {
				rec[j] = strings.TrimRight(string(rs[st:end]), " ")
			}
		}
		recs = append(recs, rec)
	}
	return recs
}
