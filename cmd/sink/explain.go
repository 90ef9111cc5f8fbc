package main

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/bucketsink/sink/cassandra"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/mapper"
	"github.com/bucketsink/sink/pipeline"
	"github.com/bucketsink/sink/pipeline/consumer"
	"github.com/bucketsink/sink/pipeline/deadletter"
	"github.com/bucketsink/sink/routing"
	"github.com/bucketsink/sink/schema"
)

// explainUsage is the help of `sink explain` above its flags.
const explainUsage = "Usage: sink explain --config FILE --topic NAME --record JSON [--key K] [--timestamp RFC3339]\n" +
	"                    [--partition P] [--offset O]\n" +
	"       sink explain --config FILE --topic NAME (--record-hex HEX | --record-file FILE) [...]\n" +
	"       sink explain --config FILE --topic NAME --tombstone (--key K | --key-hex HEX) [...]\n" +
	"       sink explain --config FILE --from-kafka TOPIC/PARTITION/OFFSET\n" +
	"\n" +
	"Maps one record exactly as `sink run` would and prints the table, the full partition key\n" +
	"(id values, time bucket with its UTC start and end, event bucket, slice), the clustering\n" +
	"values, the TTL, the write timestamp, and the INSERT with its bound values. A record that\n" +
	"would go to the dead-letter topic prints the exact error instead. For a topic with split on\n" +
	"it reads the entity's routing records of the record's time bucket from Cassandra and shows the\n" +
	"one that applies, whether the record's Kafka partition adopted it and from which offset, and\n" +
	"the partition it picks (--offline skips that: generation 0 is shown). For an entry with rollups it\n" +
	"shows each rollup's window the row feeds: its table, partition and window start, and when it is due.\n" +
	"\n" +
	"--topic names an entry (a key under topics:), or a Kafka topic: then every entry that reads it\n" +
	"explains the record in turn, each with its outcome (its row, a skip, or its refusal), as sink run\n" +
	"maps it once per entry; the exit code is 4 when any entry refuses it.\n" +
	"\n" +
	"--record takes the JSON value itself, @FILE to read it from a file, or - for stdin.\n" +
	"--record-hex and --record-file take the value's raw bytes, in any format (an Avro record in\n" +
	"the wire format, say). --from-kafka fetches one record from Kafka (its key, value, timestamp,\n" +
	"partition and offset) and explains it; its Kafka topic names the configured topics. A topic\n" +
	"whose codec reads a schema registry fetches the record's writer schema from it. --tombstone\n" +
	"explains a record with a null value: what the topic's on_tombstone makes of it (a DELETE of the\n" +
	"entity --key names, with its write timestamp; a skip; or a dead letter). --key-hex takes the key's\n" +
	"raw bytes, for a key in the wire format (key_codec avro, protobuf or json_schema), whose writer\n" +
	"schema is fetched from the registry. --schema-file (with --reference for what it references) gives\n" +
	"that writer schema from files instead, for every schema id the record names: no registry is asked.\n" +
	"--header NAME=VALUE gives the record a header (repeat it for several), for an entry's filter\n" +
	"(where) or a column of source header; an entry whose filter does not take the record shows a skip\n" +
	"naming the test.\n" +
	"\n" +
	"Exit codes: 0 the record maps; 4 it would be dead-lettered; 1 the routing table cannot be\n" +
	"read; 2 usage error; 3 invalid configuration.\n"

// runExplain shows where one record would land, or why it would be dead-lettered.
func runExplain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("explain", explainUsage, stdout, stderr)
	path := fs.configFlag("the YAML config file (required)")
	topic := fs.String("topic", "", "the topic: a key under topics:, or a Kafka topic (every entry that reads it); required but with --from-kafka, whose Kafka topic it defaults to")
	record := fs.String("record", "", "the record value: JSON, @FILE or -")
	recordHex := fs.String("record-hex", "", "the record value's raw bytes, in hex")
	recordFile := fs.String("record-file", "", "a file holding the record value's raw bytes")
	fromKafka := fs.String("from-kafka", "", "TOPIC/PARTITION/OFFSET: explain that record of Kafka")
	tombstone := fs.Bool("tombstone", false, "the record is a tombstone: its value is null")
	key := fs.String("key", "", "the Kafka record key (default: no key)")
	keyHex := fs.String("key-hex", "", "the Kafka record key's raw bytes, in hex (a key in the wire format)")
	stamp := fs.String("timestamp", "", "the Kafka record timestamp, RFC 3339 from 1970 on, or none for a record without one (default now)")
	partition := fs.Int("partition", 0, "the Kafka partition")
	offset := fs.Int64("offset", 0, "the Kafka offset")
	var headers headerFlags
	fs.Var(&headers, "header", "a record header NAME=VALUE, for a filter (where) or a column of source header; repeat for several")
	offline := fs.Bool("offline", false, "do not read the routing records of a split topic from Cassandra")
	schemaFiles := addSchemaFileFlags(fs.FlagSet)
	if code, ok := fs.parse(args); !ok {
		return code
	}
	given := 0
	for _, v := range []string{*record, *recordHex, *recordFile, *fromKafka} {
		if v != "" {
			given++
		}
	}
	if *tombstone {
		given++
	}
	if given != 1 {
		fmt.Fprintln(stderr, "sink explain: give exactly one of --record, --record-hex, --record-file, --tombstone and --from-kafka")
		return exitUsage
	}
	var from kafkaCoords
	if *fromKafka != "" {
		var err error
		if from, err = parseKafkaCoords(*fromKafka); err != nil {
			fmt.Fprintf(stderr, "sink explain: --from-kafka: %v\n", err)
			return exitUsage
		}
		if *topic == "" {
			*topic = from.topic
		}
	}
	if code, ok := fs.require(requiredFlag{"config", *path}, requiredFlag{"topic", *topic}); !ok {
		return code
	}
	if *key != "" && *keyHex != "" {
		fmt.Fprintln(stderr, "sink explain: give at most one of --key and --key-hex")
		return exitUsage
	}
	if *partition < 0 || *partition > 1<<31-1 || *offset < 0 {
		fmt.Fprintln(stderr, "sink explain: --partition and --offset must not be negative")
		return exitUsage
	}
	ts := time.Now().UTC()
	switch *stamp {
	case "":
	case "none":
		ts = time.UnixMilli(-1) // what the Kafka client hands on for a record produced without one
	default:
		t, err := time.Parse(time.RFC3339, *stamp)
		if err != nil {
			fmt.Fprintf(stderr, "sink explain: --timestamp %q is not RFC 3339 with an offset (e.g. 2024-01-15T10:00:00Z)\n", *stamp)
			return exitUsage
		}
		// Kafka timestamps count milliseconds from 1970 and -1 means none: an earlier one cannot be
		// produced, and the mapper would take it for none, explaining another record than asked.
		if t.UnixMilli() < 0 {
			fmt.Fprintf(stderr, "sink explain: --timestamp %q is before 1970, which no Kafka timestamp is (they count milliseconds from 1970-01-01T00:00:00Z); for a record without one, use --timestamp none\n", *stamp)
			return exitUsage
		}
		ts = t
	}
	var value []byte
	var err error
	flagName := "record"
	switch {
	case *record != "":
		value, err = readRecord(*record)
	case *recordHex != "":
		flagName = "record-hex"
		value, err = hex.DecodeString(strings.Join(strings.Fields(*recordHex), ""))
	case *recordFile != "":
		flagName = "record-file"
		value, err = os.ReadFile(*recordFile)
	}
	if err != nil {
		fmt.Fprintf(stderr, "sink explain: --%s: %v\n", flagName, err)
		return exitUsage
	}
	var keyBytes []byte
	if *key != "" {
		keyBytes = []byte(*key)
	} else if *keyHex != "" {
		if keyBytes, err = hex.DecodeString(strings.Join(strings.Fields(*keyHex), "")); err != nil {
			fmt.Fprintf(stderr, "sink explain: --key-hex: %v\n", err)
			return exitUsage
		}
	}

	cfg, code := loadConfig(ctx, *path, stderr)
	if cfg == nil {
		return code
	}
	// --topic names one entry, or a Kafka topic: then every entry that reads it.
	kafkaTopic, entries := "", []string(nil)
	if t, ok := cfg.Topics[*topic]; ok {
		kafkaTopic, entries = t.Topic, []string{*topic}
	} else if entries = cfg.EntriesOf(*topic); len(entries) > 0 {
		kafkaTopic = *topic
	}
	if kafkaTopic == "" {
		fmt.Fprintf(stderr, "sink explain: --topic %q is neither a configured topic nor the Kafka topic of one; topics: %v\n", *topic, cfg.TopicNames())
		return exitUsage
	}
	// One look at one record: the registry's 404 is the answer to show, not a follower's lag to wait out.
	cfg.SchemaRegistry.UnknownSchemaRetry = 0
	m, code := explainMapper(cfg, schemaFiles, entries, stderr)
	if m == nil {
		return code
	}
	rec := mapper.Record{Topic: kafkaTopic, Partition: int32(*partition), Offset: *offset, Key: keyBytes, Value: value, Timestamp: ts,
		Headers: headers}
	if *fromKafka != "" {
		if from.topic != kafkaTopic {
			fmt.Fprintf(stderr, "sink explain: --from-kafka reads %s, but --topic %s reads %s\n", from.topic, *topic, kafkaTopic)
			return exitUsage
		}
		if err = probeRecord(ctx, cfg, from); err == nil {
			rec, err = fetchRecord(ctx, cfg, from)
		}
		if err != nil {
			fmt.Fprintf(stderr, "sink explain: --from-kafka: %v\n", err)
			return exitFailure
		}
	}
	if len(entries) == 1 {
		return explainEntry(ctx, cfg, m, entries[0], rec, *offline, false, stdout, stderr)
	}
	// Several entries read the topic: each maps the record on its own, as sink run does.
	fmt.Fprintf(stdout, "Kafka topic %s is read by %d entries (%s); each maps the record:\n", kafkaTopic, len(entries), strings.Join(entries, ", "))
	worst := exitOK
	var refusing []string
	for _, name := range entries {
		fmt.Fprintf(stdout, "\n=== topics.%s\n", name)
		switch c := explainEntry(ctx, cfg, m, name, rec, *offline, true, stdout, stderr); c {
		case exitBadData:
			refusing = append(refusing, name)
			if worst == exitOK {
				worst = c
			}
		case exitOK:
		default:
			worst = c
		}
	}
	if len(refusing) > 0 {
		fmt.Fprintf(stdout, "\none dead letter names the refusing %s (%s); the other entries' rows are written\n",
			plural(len(refusing), "entry", "entries"), strings.Join(refusing, ", "))
	}
	return worst
}

// explainEntry explains rec for one entry: its row, or why it writes none. It returns the entry's
// outcome: exitOK (a row, or a skip), exitBadData (a refusal: the record is dead-lettered) or
// exitFailure (said on stderr). several: the record's Kafka topic has other entries too.
func explainEntry(ctx context.Context, cfg *config.Config, m *mapper.Mapper, entry string, rec mapper.Record, offline, several bool, stdout, stderr io.Writer) int {
	ex, err := m.ExplainEntry(entry, rec)
	if err != nil {
		var re *mapper.RecordError
		if errors.As(err, &re) && mapper.Skipped(re.Reason) {
			// Old data is not bad data, nor is a tombstone the entry skips: sink run skips such a record
			// and commits it, no dead letter.
			if several {
				fmt.Fprintf(stdout, "skipped (reason %s): this entry writes no row, counted in sink_records_skipped_total: %s\n", re.Reason, re.Error())
			} else {
				fmt.Fprintf(stdout, "skipped (reason %s): no row is written, the offset is committed and counted in sink_records_skipped_total: %s\n", re.Reason, re.Error())
			}
			return exitOK
		}
		if errors.As(err, &re) {
			// The error the dead letter carries in sink.error: the value shown (the user gave it).
			fmt.Fprintf(stdout, "dead letter (reason %s): %s\n", re.Reason, re.Quoted())
			return exitBadData
		}
		fmt.Fprintf(stderr, "sink explain: %v\n", err)
		return exitFailure
	}
	var gens []routing.Generation
	if ex.SplitOn && !offline {
		if gens, err = routingRecords(ctx, cfg, ex); err != nil {
			fmt.Fprintf(stderr, "sink explain: %v (--offline skips the routing records)\n", err)
			return exitFailure
		}
		if len(gens) > 0 {
			// A generation the record's partition has not adopted is shown as the sink would route
			// the record were it the first of its partition to use it: adopted at its offset.
			route := make([]routing.Generation, len(gens))
			for i, g := range gens {
				route[i] = g
				if _, ok := g.Adopted[rec.Partition]; !ok {
					route[i].Adopted = maps.Clone(g.Adopted)
					if route[i].Adopted == nil {
						route[i].Adopted = map[int32]int64{}
					}
					route[i].Adopted[rec.Partition] = rec.Offset
				}
			}
			m.Routes(ex.Topic).FollowAdoptions()
			m.Routes(ex.Topic).Set(ex.Bucket, string(ex.Entity), route)
			if ex, err = m.ExplainEntry(entry, rec); err != nil {
				fmt.Fprintf(stderr, "sink explain: %v\n", err)
				return exitFailure
			}
		}
	}
	printExplanation(stdout, ex, rec)
	if ex.SplitOn {
		printSplit(stdout, ex, rec, gens, offline)
	}
	if err := printRollups(stdout, cfg, entry, ex.EventTime); err != nil {
		fmt.Fprintf(stderr, "sink explain: %v\n", err)
		return exitConfig
	}
	return exitOK
}

// printRollups shows the window of each rollup of the entry that a row of event time at feeds: its
// row's table and partition, and when its computation is due (the window's end plus grace).
// A rollup from a finer one is fed through the finer one's row.
func printRollups(w io.Writer, cfg *config.Config, entry string, at time.Time) error {
	if len(cfg.Topics[entry].Rollups) == 0 {
		return nil
	}
	tables, err := schema.Describe(cfg)
	if err != nil {
		return err
	}
	rollups, err := schema.DescribeRollups(cfg, tables)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "\nrollups (the windows this row feeds; each row is recomputed whole from the stored rows):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range rollups[entry] {
		i := r.Window.Index(at)
		start, end := r.Window.Start(i), r.Window.End(i)
		p := r.Table.Policy
		from := "the raw rows"
		if r.From != "" {
			from = "rollup " + r.From + "'s rows"
		}
		fmt.Fprintf(tw, "  %s\t[%s, %s)\t%s.%s %s=%v %s=%s\tfrom %s, due at its end + grace (%s): %s\n",
			r.Name, start.Format(time.RFC3339), end.Format(time.RFC3339), r.Table.Keyspace, r.Table.Name,
			r.Table.BucketColumn, p.Value(p.Index(start)), r.WindowColumn, start.Format(time.RFC3339),
			from, config.Duration(r.Grace), end.Add(r.Grace).Format(time.RFC3339))
	}
	return tw.Flush()
}

// routingRecords reads the split generations of the record's entity and time bucket, each with the
// adoptions of the record's Kafka topic.
func routingRecords(ctx context.Context, cfg *config.Config, ex mapper.Explanation) ([]routing.Generation, error) {
	s, err := cassandra.Connect(ctx, cfg.Cassandra)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	sp := cassandra.NewSplits(s, ex.Keyspace, cfg.Cassandra)
	adoptions, err := sp.EntityAdoptions(ctx, ex.Table, ex.BucketStart, ex.Entity)
	if err != nil {
		return nil, err
	}
	recs, err := sp.Entity(ctx, ex.Table, ex.BucketStart, ex.Entity)
	if err != nil {
		return nil, err
	}
	adopted := routing.AdoptionIndex(recs, adoptions, ex.KafkaTopic)[string(ex.Entity)]
	gens := make([]routing.Generation, len(recs))
	for i, r := range recs {
		gens[i] = routing.Generation{N: r.Generation, From: r.From, First: r.FirstEventBucket, Buckets: r.EventBuckets, Adopted: adopted[r.Generation]}
	}
	return gens, nil
}

// printSplit says which routing record placed the row, after the explanation.
// A generation applies to the record only once the record's Kafka partition adopted it at or
// before the record's offset.
func printSplit(w io.Writer, ex mapper.Explanation, rec mapper.Record, gens []routing.Generation, offline bool) {
	fmt.Fprintln(w, "\nsplit (routing records of "+ex.Keyspace+"."+cassandra.RoutingTable+", entity 0x"+hex.EncodeToString(ex.Entity)+"):")
	if offline {
		fmt.Fprintln(w, "  not read (--offline); shown as generation 0")
		return
	}
	if len(gens) == 0 {
		fmt.Fprintf(w, "  none recorded for this entity and time bucket: generation 0, %d event %s\n", ex.EventBuckets, plural(ex.EventBuckets, "bucket", "buckets"))
		return
	}
	for _, g := range gens {
		mark := " "
		if ex.Split != nil && ex.Split.N == g.N {
			mark = "*"
		}
		adopted := fmt.Sprintf("partition %d has not adopted it yet", rec.Partition)
		if from, ok := g.Adopted[rec.Partition]; ok {
			adopted = fmt.Sprintf("adopted by partition %d from offset %d", rec.Partition, from)
		}
		fmt.Fprintf(w, "%s generation %d from %s: event buckets %d..%d (%d); %s\n", mark, g.N, g.From.UTC().Format(rfc3339Milli), g.First, g.End()-1, g.Buckets, adopted)
	}
	if ex.Split == nil {
		if g := routing.Applying(gens, ex.EventTime); g != nil {
			fmt.Fprintf(w, "  generation %d holds the event time, but partition %d adopted it after offset %d: generation 0 applies, event bucket %d\n",
				g.N, rec.Partition, rec.Offset, ex.EventBucket)
			return
		}
		fmt.Fprintf(w, "  the event time is before generation 1: generation 0 applies, event bucket %d\n", ex.EventBucket)
		return
	}
	if i := slices.IndexFunc(gens, func(g routing.Generation) bool { return g.N == ex.Split.N }); i >= 0 {
		if _, ok := gens[i].Adopted[rec.Partition]; !ok {
			fmt.Fprintf(w, "  partition %d has not adopted generation %d: the sink adopts it at the first row of the partition that uses it\n", rec.Partition, ex.Split.N)
			fmt.Fprintln(w, "  (this record, if the sink has not passed its offset yet; an owner assigned later adopts it from the partition's end offset)")
		}
	}
	fmt.Fprintf(w, "  generation %d applies (*): event bucket %d = %d + hash mod %d\n", ex.Split.N, ex.EventBucket, ex.Split.First, ex.Split.Buckets)
}

// kafkaCoords name one record of Kafka.
type kafkaCoords struct {
	topic     string
	partition int32
	offset    int64
}

// parseKafkaCoords reads TOPIC/PARTITION/OFFSET; a Kafka topic name has no slash.
func parseKafkaCoords(s string) (kafkaCoords, error) {
	parts := strings.Split(s, "/")
	if len(parts) != 3 || parts[0] == "" {
		return kafkaCoords{}, fmt.Errorf("%q is not TOPIC/PARTITION/OFFSET", s)
	}
	p, err1 := strconv.ParseInt(parts[1], 10, 32)
	o, err2 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil || p < 0 || o < 0 {
		return kafkaCoords{}, fmt.Errorf("%q: the partition and the offset are numbers, not negative", s)
	}
	return kafkaCoords{topic: parts[0], partition: int32(p), offset: o}, nil
}

// fetchRecord reads the record at c from Kafka with the config's connection settings.
func fetchRecord(ctx context.Context, cfg *config.Config, c kafkaCoords) (mapper.Record, error) {
	opts, err := consumer.ClientOptions(cfg.Kafka, slog.New(slog.DiscardHandler))
	if err != nil {
		return mapper.Record{}, err
	}
	recs, gone, err := deadletter.Reread(ctx, opts, c.topic, c.partition, []int64{c.offset}, 30*time.Second)
	switch {
	case err != nil:
		return mapper.Record{}, err
	case gone[0]:
		return mapper.Record{}, fmt.Errorf("%s/%d/%d is not in the log (deleted, compacted away, or past its end)", c.topic, c.partition, c.offset)
	}
	r := recs[0]
	rec := mapper.Record{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp}
	rec.SchemaIDHeader, rec.KeySchemaIDHeader = pipeline.SchemaIDHeaders(r)
	rec.Headers = pipeline.Headers(r, nil)
	return rec, nil
}

func readRecord(arg string) ([]byte, error) {
	switch {
	case arg == "-":
		return io.ReadAll(os.Stdin)
	case strings.HasPrefix(arg, "@"):
		return os.ReadFile(arg[1:])
	}
	return []byte(arg), nil
}

const rfc3339Milli = "2006-01-02T15:04:05.000Z07:00"

func printExplanation(w io.Writer, ex mapper.Explanation, rec mapper.Record) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	line := func(format string, args ...any) { fmt.Fprintf(tw, format+"\n", args...) }
	line("topic\t%s (Kafka topic %s, partition %d, offset %d)", ex.Topic, ex.KafkaTopic, rec.Partition, rec.Offset)
	if ex.Op != "" {
		line("change\top %s (%s): a Debezium change event; each value below says where in it it came from", ex.Op, ex.OpName)
	}
	if ex.Delete {
		printDelete(w, tw, ex)
		return
	}
	line("event time\t%s%s", ex.EventTime.UTC().Format(time.RFC3339Nano), note(ex.EventTimeFormat))
	line("table\t%s.%s", ex.Keyspace, ex.Table)
	if ex.Latest {
		line("kind\tlatest value (bucket width none): one row per entity, the newest event by event time")
	}
	if ex.Slice != "" {
		line("slice\t%s", ex.Slice)
	} else {
		line("slice\tnone (not sliced)")
	}
	names := make([]string, len(ex.PartitionKey))
	for i, v := range ex.PartitionKey {
		names[i] = v.Column
	}
	line("partition key\t(%s)", strings.Join(names, ", "))
	nk := len(ex.PartitionKey)
	if ex.EventBuckets > 1 || ex.SplitOn {
		nk--
	}
	if ex.Latest {
		nk = -1 // no time bucket to note
	}
	for i, v := range ex.PartitionKey {
		note := ""
		switch {
		case i == nk-1:
			note = fmt.Sprintf("  time bucket %d, %s to %s", ex.Bucket,
				ex.BucketStart.Format(time.RFC3339), ex.BucketEnd.Format(time.RFC3339))
		case i == nk:
			note = fmt.Sprintf("  event bucket %d of %d", ex.EventBucket, ex.EventBuckets)
		}
		line("  %s\t= %s%s%s", v.Column, v.Literal(), fromNote(v), note)
	}
	switch {
	case ex.Latest:
		line("time bucket\tnone (one partition per id)")
	case ex.EventBuckets <= 1 && !ex.SplitOn:
		line("event bucket\tnone (one partition per id and time bucket)")
	}
	order := make([]string, len(ex.Clustering))
	for i, v := range ex.Clustering {
		order[i] = v.Column + " " + strings.ToUpper(v.Order)
	}
	line("clustering\t(%s)", strings.Join(order, ", "))
	for _, v := range ex.Clustering {
		line("  %s\t= %s%s", v.Column, v.Literal(), fromNote(v))
	}
	if ex.TTL > 0 {
		line("ttl\t%d s (%s)%s", int64(ex.TTL/time.Second), config.Duration(ex.TTL), note(ex.TTLFrom))
	} else {
		line("ttl\tnone%s", note(ex.TTLFrom))
	}
	switch ex.WriteTimestampSource {
	case "kafka":
		line("write timestamp\t%d µs (kafka: record timestamp %s in µs + offset %d mod 1000)",
			ex.WriteTimestamp, rec.Timestamp.UTC().Format(rfc3339Milli), rec.Offset)
	case "event_time":
		if ex.Latest {
			line("write timestamp\t%d µs (the event time's millisecond in µs + offset %d mod 1000, the tie-break: of two events of one millisecond in one Kafka partition the later offset wins, unless a multiple of 1000 lies between them)",
				ex.WriteTimestamp, rec.Offset)
			break
		}
		line("write timestamp\t%d µs (event_time)", ex.WriteTimestamp)
	case "offset":
		line("write timestamp\t%d (offset: the record's offset)", ex.WriteTimestamp)
	default:
		line("write timestamp\tnone (server: Cassandra stamps the write)")
	}
	tw.Flush()
	printBound(w, ex)
}

// printBound prints the statement of an explained row and the values it binds, one per line.
func printBound(w io.Writer, ex mapper.Explanation) {
	fmt.Fprintf(w, "\n%s\n\nbound values:\n", ex.CQL)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for i, v := range ex.Bound {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s%s%s\n", strconv.Itoa(i+1), v.Column, v.Type, v.Literal(), fromNote(v), note(v.Format))
	}
	tw.Flush()
}

// printDelete explains a tombstone that deletes its entity (on_tombstone delete): the partition the key
// names, and the write timestamp that orders the delete against the entity's upserts.
func printDelete(w io.Writer, tw *tabwriter.Writer, ex mapper.Explanation) {
	line := func(format string, args ...any) { fmt.Fprintf(tw, format+"\n", args...) }
	if ex.Op != "" {
		printChangeDelete(w, tw, ex)
		return
	}
	line("tombstone\tdeletes the entity's row (on_tombstone delete)")
	line("table\t%s.%s", ex.Keyspace, ex.Table)
	names := make([]string, len(ex.PartitionKey))
	for i, v := range ex.PartitionKey {
		names[i] = v.Column
	}
	from := fmt.Sprintf("the Kafka key (key_codec %s)", ex.KeyCodec)
	switch {
	case ex.KeySchemaID != 0:
		from = fmt.Sprintf("the Kafka key (key_codec %s, writer schema id %d)", ex.KeyCodec, ex.KeySchemaID)
	case ex.KeyCodec != config.KeyCodecText:
		from = fmt.Sprintf("the Kafka key's bytes (key_codec %s, not decoded: no id column is a field of the key)", ex.KeyCodec)
	}
	line("partition key\t(%s), from %s", strings.Join(names, ", "), from)
	for _, v := range ex.PartitionKey {
		line("  %s\t= %s", v.Column, v.Literal())
	}
	if ex.WriteTimestampSource == config.WriteTimestampOffset {
		line("write timestamp\t%d (offset: the tombstone's offset: the upserts at earlier offsets of its partition stay deleted, even replayed later; later ones are kept)", ex.WriteTimestamp)
	} else {
		line("write timestamp\t%d µs (the tombstone's Kafka timestamp %s in µs + offset %d mod 1000: upserts with an earlier event time stay deleted, even replayed later, and so do those of its millisecond at earlier offsets of its partition; later ones are kept)",
			ex.WriteTimestamp, ex.EventTime.UTC().Format(rfc3339Milli), ex.Row.Offset)
	}
	tw.Flush()
	printBound(w, ex)
}

// printChangeDelete explains a change event's delete (op d) on a latest-value entry: the row its before
// image names, deleted at the change's time.
func printChangeDelete(w io.Writer, tw *tabwriter.Writer, ex mapper.Explanation) {
	line := func(format string, args ...any) { fmt.Fprintf(tw, format+"\n", args...) }
	line("delete\tdeletes the entity's row (a delete event on a latest-value entry)")
	line("table\t%s.%s", ex.Keyspace, ex.Table)
	names := make([]string, len(ex.PartitionKey))
	for i, v := range ex.PartitionKey {
		names[i] = v.Column
	}
	line("partition key\t(%s)", strings.Join(names, ", "))
	for _, v := range ex.PartitionKey {
		line("  %s\t= %s%s", v.Column, v.Literal(), fromNote(v))
	}
	if ex.WriteTimestampSource == config.WriteTimestampOffset {
		line("write timestamp\t%d (offset: the event's offset, the upserts' rule: the changes before it in its partition stay deleted, even replayed later)", ex.WriteTimestamp)
	} else {
		line("write timestamp\t%d µs (the event time %s in µs + offset %d mod 1000, the upserts' rule: the changes before it stay deleted, even replayed later)",
			ex.WriteTimestamp, ex.EventTime.UTC().Format(rfc3339Milli), ex.Row.Offset)
	}
	tw.Flush()
	printBound(w, ex)
}

// headerFlags collects --header NAME=VALUE, in order (the first header of a name is the one a filter reads).
type headerFlags []mapper.Header

func (h *headerFlags) String() string { return "" }

func (h *headerFlags) Set(v string) error {
	name, value, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return fmt.Errorf("%q is not NAME=VALUE", v)
	}
	*h = append(*h, mapper.Header{Key: name, Value: []byte(value)})
	return nil
}

// fromNote says where an explained value came from when it is not the record's value (a header).
// note is "  (s)", or "" for an empty s.
func note(s string) string {
	if s == "" {
		return ""
	}
	return "  (" + s + ")"
}

func fromNote(v mapper.Value) string {
	if v.From == "" {
		return ""
	}
	return "  (from " + v.From + ")"
}
