package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/codec/avro"
	cjson "github.com/bucketsink/sink/codec/json"
	"github.com/bucketsink/sink/codec/protobuf"
	"github.com/bucketsink/sink/codec/registry"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/draft"
	"github.com/bucketsink/sink/pipeline/consumer"
	"github.com/bucketsink/sink/sizing"
)

const initUsage = "Usage: sink init --topic T --id FIELD [--id FIELD...] --time FIELD (--rate R | --sample N)\n" +
	"       [--subject S | --schema-file F --schema-type avro|protobuf|json] [--config FILE] [--out FILE]\n" +
	"\n" +
	"Drafts the config of topic T: reads the latest schema of subject S (default T-value) from the\n" +
	"registry (or F), or samples N records of a plain JSON topic from Kafka, and writes one column per\n" +
	"leaf field with the CQL type it feeds, the id and event time, the bucket policy `sink plan`\n" +
	"recommends for R rows/s per entity (or the rate measured from the sample's Kafka timestamps),\n" +
	"and the dead-letter topic, TTL and tombstone choices as comments. The output is a whole config,\n" +
	"checked as `sink validate` checks it; with --config, that file with the topic added.\n" +
	"Exit codes: 0 drafted; 1 the registry or Kafka failed; 2 usage error, or a field, subject or\n" +
	"schema that cannot be drafted from; 3 --config is invalid.\n"

// runInit drafts a topic's config from its writer schema (or a sample of a plain JSON topic): the columns,
// the id and event time, the bucket policy `sink plan` recommends, and the choices left open.
func runInit(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("init", initUsage, stdout, stderr)
	var ids []string
	fs.Func("id", "dot path of an id field; repeat it (or separate by commas) for several", func(s string) error {
		ids = append(ids, splitGenerateList(s)...)
		return nil
	})
	var (
		topic      = fs.String("topic", "", "the Kafka topic (required)")
		subject    = fs.String("subject", "", "registry subject of the topic's values (default <topic>-value)")
		timeField  = fs.String("time", "", "dot path of the event-time field (required)")
		rateText   = fs.String("rate", "", "rows per second per entity, as sink plan --rate takes it: 10, 600/m, 2/h")
		rowText    = fs.String("row-bytes", "", "average bytes per row for the plan (default: estimated from the columns, or the sample's record size)")
		sample     = fs.Int("sample", 0, "sample this many records of a plain JSON topic instead of reading a schema")
		schemaFile = fs.String("schema-file", "", "read the writer schema from this file instead of the registry")
		schemaType = fs.String("schema-type", "avro", "the --schema-file's type: avro, protobuf or json")
		cfgPath    = fs.configFlag("merge the topic into this config (its kafka, cassandra and schema_registry are used)")
		out        = fs.String("out", "", "write the config here instead of standard output")
		brokers    = fs.String("brokers", "127.0.0.1:9092", "Kafka brokers, comma separated (without --config)")
		registryTo = fs.String("registry", "http://127.0.0.1:8081/apis/ccompat/v7", "schema registry URL(s), comma separated (without --config)")
		hosts      = fs.String("hosts", "127.0.0.1:9042", "Cassandra hosts for the drafted config, comma separated (without --config)")
		keyspace   = fs.String("keyspace", "sink", "Cassandra keyspace for the drafted config (without --config)")
		table      = fs.String("table", "", "table name (default: the topic in lower snake case)")
	)
	if code, ok := fs.parse(args); !ok {
		return code
	}
	usageErr := fs.usageError
	switch {
	case *topic == "" || len(ids) == 0 || *timeField == "":
		return usageErr("--topic, --id and --time are required (see sink help init)")
	case *rateText == "" && *sample == 0:
		return usageErr("give --rate (rows/s per entity) or --sample N (a plain JSON topic, its rate measured)")
	case *sample < 0:
		return usageErr("--sample %d is negative", *sample)
	case *sample > 0 && (*schemaFile != "" || *subject != ""):
		return usageErr("--sample reads a plain JSON topic; it takes no --subject or --schema-file")
	}
	var base *config.Config
	var baseText string
	kafkaCfg := config.Kafka{Brokers: splitGenerateList(*brokers)}
	regCfg := config.SchemaRegistry{URLs: splitGenerateList(*registryTo), Timeout: config.Duration(10 * time.Second)}
	if *cfgPath != "" {
		b, code := loadConfig(ctx, *cfgPath, stderr)
		if b == nil {
			return code
		}
		text, err := os.ReadFile(*cfgPath)
		if err != nil {
			return usageErr("--config: %v", err)
		}
		base, baseText, kafkaCfg = b, string(text), b.Kafka
		if len(b.SchemaRegistry.URLs) > 0 {
			regCfg = b.SchemaRegistry
		}
	}

	in := draft.Input{Topic: *topic, ID: ids, Time: *timeField, Table: *table}
	var sampled *sampleStats
	if *sample > 0 {
		recs, err := sampleTopic(ctx, kafkaCfg, *topic, *sample)
		if err != nil {
			fmt.Fprintf(stderr, "sink init: sampling %s: %v\n", *topic, err)
			return failureCode(err)
		}
		if sampled, err = sampleInput(&in, recs); err != nil {
			return usageErr("%v", err)
		}
	} else {
		s, source, code := readSchema(ctx, *schemaFile, *schemaType, *subject, *topic, regCfg, stderr)
		if s == nil {
			return code
		}
		if err := schemaInput(&in, s, source); err != nil {
			return usageErr("%v", err)
		}
	}
	return writeDraft(ctx, in, sampled, initOutput{base: base, baseText: baseText, cfgPath: *cfgPath,
		server: draft.Base{Brokers: kafkaCfg.Brokers, Hosts: splitGenerateList(*hosts), Keyspace: *keyspace, Registry: regCfg.URLs},
		rate:   *rateText, rowBytes: *rowText, out: *out}, stdout, stderr)
}

// initOutput is where a draft goes and what it is sized with.
type initOutput struct {
	base              *config.Config // --config, loaded; nil for a standalone config
	baseText, cfgPath string
	server            draft.Base
	rate, rowBytes    string // --rate, --row-bytes
	out               string
}

// writeDraft drafts in, sizes its bucket policy, and writes the config it makes, once it validates.
func writeDraft(ctx context.Context, in draft.Input, sampled *sampleStats, o initOutput, stdout, stderr io.Writer) int {
	if o.base != nil {
		in.Name = uniqueName(o.base, draft.TopicName(in.Topic))
		if in.Table == "" {
			in.Table = uniqueTable(o.base, draft.TableName(in.Topic))
		}
		if o.base.Cassandra.Keyspace == "" {
			in.Keyspace = o.server.Keyspace
		}
	}
	d, err := draft.New(in)
	if err != nil {
		fmt.Fprintf(stderr, "sink init: %v\n", err)
		return exitUsage
	}
	pol, code := initPolicy(d, o.rate, o.rowBytes, sampled, stderr)
	if code != exitOK {
		return code
	}
	d.Policy = pol
	var text string
	if o.base != nil {
		if text, err = d.Merge(o.baseText, o.server.Registry); err != nil {
			fmt.Fprintf(stderr, "sink init: --config %s: %v\n", o.cfgPath, err)
			return exitUsage
		}
	} else {
		text = d.Config(o.server)
	}
	if code := checkDrafted(ctx, text, stderr); code != exitOK {
		return code
	}
	if o.out == "" {
		fmt.Fprint(stdout, text)
		return exitOK
	}
	if err := os.WriteFile(o.out, []byte(text), 0o644); err != nil {
		fmt.Fprintf(stderr, "sink init: %v\n", err)
		return exitFailure
	}
	fmt.Fprintf(stderr, "sink init: wrote %s; next: sink schema --config %s --apply, then sink run --config %s\n", o.out, o.out, o.out)
	return exitOK
}

// sampleInput sets in's leaves from a sample of a plain JSON topic, and measures its rate.
func sampleInput(in *draft.Input, recs []*kgo.Record) (*sampleStats, error) {
	var err error
	if in.Leaves, err = cjson.SampleLeaves(values(recs)); err != nil {
		return nil, fmt.Errorf("topic %s is not a plain JSON topic: %w", in.Topic, err)
	}
	in.Codec, in.Source = "json", fmt.Sprintf("a sample of %d records of topic %s", len(recs), in.Topic)
	in.Check = func(f []codec.Field) error { _, err := (cjson.Codec{}).Compile(nil, f); return err }
	return measure(recs, in.ID), nil
}

// schemaInput sets in's codec and leaves from the writer schema s.
func schemaInput(in *draft.Input, s *codec.Schema, source string) error {
	var err error
	in.Source = source
	switch s.Type {
	case "AVRO":
		in.Codec = "avro"
		in.Leaves, err = avro.Leaves(s)
		in.Check = func(f []codec.Field) error { _, err := (avro.Codec{}).Compile(s, f); return err }
	case "PROTOBUF":
		in.Codec = "protobuf"
		var message string
		message, in.Leaves, err = protobuf.Leaves(s, append([]string{in.Time}, in.ID...)...)
		in.Source += ", message " + message
		in.Check = func(f []codec.Field) error { return protobuf.CheckMessage(s, message, f) }
	case "JSON":
		in.Codec = "json_schema"
		in.Leaves, err = cjson.SchemaLeaves(s)
		in.Check = func(f []codec.Field) error { _, err := (cjson.Codec{}).Compile(s, f); return err }
	default:
		return fmt.Errorf("%s: a %s schema; sink init reads AVRO, PROTOBUF and JSON", source, s.Type)
	}
	if err != nil {
		return fmt.Errorf("%s cannot be drafted from: %w", source, err)
	}
	return nil
}

// readSchema reads the writer schema from a file, or the latest version of the subject from the registry.
func readSchema(ctx context.Context, file, typ, subject, topic string, reg config.SchemaRegistry, stderr io.Writer) (*codec.Schema, string, int) {
	if file != "" {
		text, err := os.ReadFile(file)
		if err != nil {
			fmt.Fprintf(stderr, "sink init: --schema-file: %v\n", err)
			return nil, "", exitUsage
		}
		t := strings.ToUpper(typ)
		if t != "AVRO" && t != "PROTOBUF" && t != "JSON" {
			fmt.Fprintf(stderr, "sink init: --schema-type %q: use avro, protobuf or json\n", typ)
			return nil, "", exitUsage
		}
		s := &codec.Schema{Type: t, Text: string(text)}
		if t == "PROTOBUF" {
			dir, err := filepath.Abs(filepath.Dir(file))
			if err == nil {
				s.References, err = protoImports(dir, s.Text, 0)
			}
			if err != nil {
				fmt.Fprintf(stderr, "sink init: --schema-file: %v\n", err)
				return nil, "", exitUsage
			}
		}
		return s, "schema file " + filepath.Base(file), exitOK
	}
	if subject == "" {
		subject = topic + "-value"
	}
	cl, err := registry.New(reg)
	if err != nil {
		fmt.Fprintf(stderr, "sink init: schema registry: %v\n", err)
		return nil, "", exitUsage
	}
	s, version, err := cl.Latest(ctx, subject)
	switch {
	case errors.Is(err, registry.ErrUnknownSubject):
		fmt.Fprintf(stderr, "sink init: %v at %s; name the topic's value subject with --subject\n", err, strings.Join(reg.URLs, ", "))
		return nil, "", exitUsage
	case err != nil:
		fmt.Fprintf(stderr, "sink init: %v\n", err)
		return nil, "", exitFailure
	}
	return s, fmt.Sprintf("subject %s version %d (schema id %d)", subject, version, s.ID), exitOK
}

var protoImport = regexp.MustCompile(`(?m)^\s*import\s+(?:public\s+|weak\s+)?"([^"]+)"\s*;`)

// findImport reads the file a .proto in dir imports as path: beside it, or under one of dir's parents (an
// import path such as "it/pyclients/kind.proto" is relative to the root of the tree the file is in). It
// returns the directory the path was found under.
func findImport(dir, path string) ([]byte, string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		b, err := os.ReadFile(filepath.Join(d, filepath.FromSlash(path)))
		if !errors.Is(err, os.ErrNotExist) {
			return b, d, err
		}
		if filepath.Dir(d) == d {
			return nil, "", err
		}
	}
}

// protoImports are the files a .proto text imports that findImport finds, as the references a registry would
// give it (the well-known and Confluent files need none).
func protoImports(dir, text string, depth int) ([]codec.Reference, error) {
	if depth > 32 {
		return nil, errors.New("imports nest deeper than 32 files (a cycle?)")
	}
	var refs []codec.Reference
	for _, m := range protoImport.FindAllStringSubmatch(text, -1) {
		b, root, err := findImport(dir, m[1])
		if errors.Is(err, os.ErrNotExist) {
			continue // google/protobuf/..., confluent/...: the codec knows them
		}
		if err != nil {
			return nil, err
		}
		sub, err := protoImports(root, string(b), depth+1)
		if err != nil {
			return nil, err
		}
		refs = append(refs, codec.Reference{Name: m[1], Subject: m[1], Version: 1, Schema: &codec.Schema{Type: "PROTOBUF", Text: string(b), References: sub}})
	}
	return refs, nil
}

// initPolicy is the bucket policy `sink plan` recommends for the draft, with the plan's table.
func initPolicy(d *draft.Draft, rateText, rowText string, sampled *sampleStats, stderr io.Writer) (draft.Policy, int) {
	fail := func(format string, a ...any) (draft.Policy, int) {
		fmt.Fprintf(stderr, "sink init: "+format+"\n", a...)
		return draft.Policy{}, exitUsage
	}
	in := sizing.Input{RowBytes: d.RowBytes()}
	var how string
	switch {
	case rateText != "":
		r, err := parseRate(rateText)
		if err != nil {
			return fail("--rate: %v", err)
		}
		in.Rate, how = r, formatRate(r)+" rows/s per entity (--rate)"
	case sampled != nil && sampled.rate > 0:
		in.Rate = sampled.rate
		how = fmt.Sprintf("%s rows/s per entity, the busiest of %d entities in the sample's Kafka timestamps", formatRate(sampled.rate), sampled.entities)
	default:
		return fail("the sample holds no entity with two records at different Kafka timestamps, so no rate can be measured; give --rate")
	}
	if sampled != nil && sampled.bytes > 0 {
		in.RowBytes = sampled.bytes
	}
	if rowText != "" {
		b, err := config.ParseBytes(rowText)
		if err != nil || b <= 0 {
			return fail("--row-bytes %q is not a positive size", rowText)
		}
		in.RowBytes = float64(b)
	}
	gd := sizing.Default
	rec := recommend(in, gd)
	if !rec.Fits && len(rec.Options) == 0 {
		return fail("no bucket policy fits %s: %s", how, rec.Reason)
	}
	var plan strings.Builder
	planReport{Input: in, Guidance: gd, Table: in.Table(sizing.Candidates, gd), Recommendation: rec}.writeText(&plan)
	return draft.Policy{Width: rec.Choice.Granularity.Name, EventBuckets: rec.Choice.EventBuckets, Rate: how, Plan: plan.String()}, exitOK
}

// checkDrafted loads the drafted config as `sink validate` does; a draft that does not pass is a bug,
// reported as such rather than written.
func checkDrafted(ctx context.Context, text string, stderr io.Writer) int {
	dir, err := os.MkdirTemp("", "sink-init-")
	if err != nil {
		fmt.Fprintf(stderr, "sink init: %v\n", err)
		return exitFailure
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		fmt.Fprintf(stderr, "sink init: %v\n", err)
		return exitFailure
	}
	if cfg, code := loadConfig(ctx, path, stderr); cfg == nil {
		fmt.Fprintln(stderr, "sink init: the drafted config does not pass validation (above)")
		return code
	}
	return exitOK
}

// uniqueName is name, or name_2, name_3... when the config has a topic of that name already.
func uniqueName(c *config.Config, name string) string {
	n := name
	for i := 2; ; i++ {
		if _, ok := c.Topics[n]; !ok {
			return n
		}
		n = fmt.Sprintf("%s_%d", name, i)
	}
}

// uniqueTable is table, or table_2, table_3... when a topic of the config writes a table of that name.
func uniqueTable(c *config.Config, table string) string {
	used := map[string]bool{}
	for _, t := range c.Topics {
		used[t.Table] = true
	}
	n := table
	for i := 2; used[n]; i++ {
		n = fmt.Sprintf("%s_%d", table, i)
	}
	return n
}

// sampleStats is what a sample says of the topic's rate.
type sampleStats struct {
	rate     float64 // rows per second of the busiest entity
	entities int
	bytes    float64 // average value size
}

// measure finds the busiest entity of the sample by its id fields' values, and its rate between its first and
// last Kafka timestamps.
func measure(recs []*kgo.Record, ids []string) *sampleStats {
	type span struct {
		n           int
		first, last time.Time
	}
	spans := map[string]*span{}
	total := 0
	for _, r := range recs {
		total += len(r.Value)
		key := entityKey(r.Value, ids)
		s := spans[key]
		if s == nil {
			s = &span{first: r.Timestamp, last: r.Timestamp}
			spans[key] = s
		}
		s.n++
		if r.Timestamp.Before(s.first) {
			s.first = r.Timestamp
		}
		if r.Timestamp.After(s.last) {
			s.last = r.Timestamp
		}
	}
	st := &sampleStats{entities: len(spans)}
	if len(recs) > 0 {
		st.bytes = float64(total) / float64(len(recs))
	}
	for _, s := range spans {
		if secs := s.last.Sub(s.first).Seconds(); s.n > 1 && secs > 0 {
			st.rate = max(st.rate, float64(s.n-1)/secs)
		}
	}
	return st
}

func values(recs []*kgo.Record) [][]byte {
	out := make([][]byte, len(recs))
	for i, r := range recs {
		out[i] = r.Value
	}
	return out
}

// sampleWait bounds how long a sample waits for the records Kafka says the topic holds.
const sampleWait = 30 * time.Second

// sampleTopic reads the first n records of topic from every partition's start, or all of them when it holds
// fewer: Kafka's start and end offsets say how many there are, so a slow first fetch is never taken for an
// empty topic. Tombstones are not kept.
func sampleTopic(ctx context.Context, k config.Kafka, topic string, n int) ([]*kgo.Record, error) {
	opts, err := consumer.ClientOptions(k, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(append(opts, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, sampleWait)
	defer cancel()
	adm := kadm.NewClient(cl)
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("listing the offsets of %s: %w", topic, err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("listing the offsets of %s: %w", topic, err)
	}
	left := map[int32]int64{} // partition → the end offset still to reach
	ends.Each(func(o kadm.ListedOffset) {
		if st, ok := starts.Lookup(o.Topic, o.Partition); ok && o.Offset > st.Offset {
			left[o.Partition] = o.Offset
		}
	})
	if len(left) == 0 {
		return nil, fmt.Errorf("topic %s holds no record", topic)
	}
	var recs []*kgo.Record
	for len(recs) < n && len(left) > 0 {
		fetches := cl.PollRecords(ctx, n-len(recs))
		if ctx.Err() != nil {
			// A partition whose last offsets are transaction markers never delivers its end: what was read
			// in sampleWait is the sample.
			if parent.Err() == nil && len(recs) > 0 {
				break
			}
			return nil, fmt.Errorf("read %d records of %s in %s: %w", len(recs), topic, sampleWait, ctx.Err())
		}
		if err := fetches.Err(); err != nil {
			return nil, err
		}
		fetches.EachRecord(func(r *kgo.Record) {
			if r.Value != nil && len(recs) < n {
				recs = append(recs, r)
			}
			if end, ok := left[r.Partition]; ok && r.Offset+1 >= end {
				delete(left, r.Partition)
			}
		})
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("topic %s holds only tombstones", topic)
	}
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].Timestamp.Before(recs[j].Timestamp) })
	return recs, nil
}

// entityKey is the values of a JSON record's id fields, as one string.
func entityKey(value []byte, ids []string) string {
	var v any
	if json.Unmarshal(value, &v) != nil {
		return ""
	}
	var b strings.Builder
	for _, id := range ids {
		cur := v
		for _, part := range strings.Split(id, ".") {
			m, _ := cur.(map[string]any)
			cur = m[part]
		}
		fmt.Fprintf(&b, "%v\x00", cur)
	}
	return b.String()
}
