package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/bucketsink/sink/codec/registry"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/gen"
)

// generateUsage is the help of `sink generate` above its flags.
const generateUsage = "Usage: sink generate (--count N | --rate R/s [--count N | --duration D]) [--brokers HOST:PORT] [--topic NAME] [flags]\n" +
	"       sink gen ...   (the same)\n" +
	"\n" +
	"Produces sample sensor readings keyed by device_id to --topic (default sensor-readings) on --brokers\n" +
	"(default 127.0.0.1:9092), acks=all and idempotent, creating the topic if it is missing. With --rate it\n" +
	"paces the records and, without --count or --duration, runs until interrupted; without --rate it sends\n" +
	"--count records as fast as they are acknowledged, their event times ending now. Exits 0 once every\n" +
	"record is acknowledged. --bad-fraction mixes in records the sink must dead-letter.\n" +
	"With --codec avro, protobuf or json_schema the events are written in the Confluent wire format,\n" +
	"their sample schema registered first under --subject (default <topic>-value) at --registry.\n" +
	"With --config the registry is the config's schema_registry (urls, auth, tls, timeout), as\n" +
	"`sink run` reaches it; --registry, when given, replaces its urls.\n"

// runGenerate produces sample sensor events to Kafka for demos and benchmarks.
func runGenerate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("generate", generateUsage, stdout, stderr)
	var (
		brokers    = fs.String("brokers", "127.0.0.1:9092", "Kafka bootstrap brokers, comma separated")
		topic      = fs.String("topic", "sensor-readings", "topic to produce to")
		count      = fs.Int64("count", 0, "stop after this many records (0: no limit)")
		rate       rateFlag
		eventRate  rateFlag
		duration   = fs.Duration("duration", 0, "stop after this long (0: no limit)")
		entities   = fs.Int("entities", gen.DefaultEntities, "number of distinct devices")
		skew       = fs.Float64("skew", gen.DefaultSkew, "Zipf exponent of device popularity (> 1)")
		badFrac    = fs.Float64("bad-fraction", 0, "share of deliberately bad records, e.g. 0.001")
		partitions = fs.Int("partitions", 0, "create the topic with this many partitions if it is missing (0: broker default)")
		seed       = fs.Uint64("seed", 1, "random seed; the same seed gives the same records")
		start      = fs.String("start", "", "event time of the first record, RFC 3339 (default: now)")
		quiet      = fs.Bool("quiet", false, "no progress lines")
		codecName  = fs.String("codec", gen.CodecJSON, "record format: json, avro, protobuf or json_schema")
		registry   = fs.String("registry", "http://127.0.0.1:8081/apis/ccompat/v7", "schema registry base URL(s), comma separated (for --codec other than json)")
		cfgPath    = fs.String("config", "", "take the schema registry (urls, auth, tls, timeout) from this sink config's schema_registry")
		subject    = fs.String("subject", "", "registry subject of the sample schema (default <topic>-value)")
	)
	fs.Var(&rate, "rate", "records per second of wall time, e.g. 200/s or 5000 (0: as fast as acknowledged)")
	fs.Var(&eventRate, "event-rate", "events per second of event time (default: --rate, or 100/s without one)")
	if code, ok := fs.parse(args); !ok {
		return code
	}
	usageErr := fs.usageError
	if *count < 0 || *duration < 0 || *partitions < 0 {
		return usageErr("--count, --duration and --partitions must not be negative")
	}
	cfg := gen.Config{
		Entities:    *entities,
		Skew:        *skew,
		Seed:        *seed,
		Rate:        float64(eventRate),
		BadFraction: *badFrac,
	}
	if cfg.Rate == 0 {
		cfg.Rate = float64(rate)
	}
	if cfg.Rate == 0 {
		cfg.Rate = gen.DefaultRate
	}
	switch {
	case *start != "":
		t, err := time.Parse(time.RFC3339Nano, *start)
		if err != nil {
			return usageErr("--start: %v", err)
		}
		cfg.Start = t
	case rate == 0 && *count > 0:
		// An unpaced run outruns its event times; it is placed in the past so that it ends now.
		// Records are stamped with their event time, and brokers reject timestamps more than
		// log.message.timestamp.after.max.ms (default 1h) in the future.
		cfg.Start = time.Now().Add(-time.Duration(float64(*count) / cfg.Rate * float64(time.Second)))
	case rate == 0:
		return usageErr("without --rate, give --count: an unpaced run needs its size to place its event times in the past")
	}
	if *entities < 1 {
		return usageErr("--entities must be at least 1")
	}
	g, err := gen.New(cfg)
	if err != nil {
		return usageErr("%v", err)
	}

	pc := gen.ProduceConfig{
		Brokers:    splitGenerateList(*brokers),
		Topic:      *topic,
		Count:      *count,
		Rate:       float64(rate),
		Duration:   *duration,
		Partitions: int32(*partitions),
	}
	if len(pc.Brokers) == 0 || pc.Topic == "" {
		return usageErr("--brokers and --topic are required")
	}
	if *codecName != gen.CodecJSON {
		if _, err := gen.Schema(*codecName); err != nil {
			return usageErr("--codec: %v", err)
		}
		if *subject == "" {
			*subject = pc.Topic + "-value"
		}
		reg := config.SchemaRegistry{URLs: splitGenerateList(*registry)}
		if *cfgPath != "" {
			c, code := loadConfig(ctx, *cfgPath, stderr)
			if c == nil {
				return code
			}
			given := false
			fs.Visit(func(f *flag.Flag) { given = given || f.Name == "registry" })
			if given {
				c.SchemaRegistry.URLs = reg.URLs
			}
			reg = c.SchemaRegistry
		}
		if pc.Encoder, err = registerSample(ctx, *codecName, reg, *subject); err != nil {
			fmt.Fprintf(stderr, "sink generate: %v\n", err)
			return exitFailure
		}
		if !*quiet {
			fmt.Fprintf(stderr, "generate: %s schema registered under subject %s, id %d\n", *codecName, *subject, pc.Encoder.ID())
		}
	}
	if !*quiet {
		var last gen.Stats
		pc.Progress = func(s gen.Stats) {
			perSec := float64(s.Acked-last.Acked) / max(s.Elapsed-last.Elapsed, time.Millisecond).Seconds()
			fmt.Fprintf(stderr, "generate: %s produced %d acknowledged %d failed %d bad %d (%.0f/s)\n",
				s.Elapsed.Round(time.Second), s.Produced, s.Acked, s.Failed, s.Bad, perSec)
			last = s
		}
	}
	st, err := gen.Produce(ctx, g, pc)
	if err != nil {
		fmt.Fprintf(stderr, "sink generate: %v\n", err)
		return exitFailure
	}
	fmt.Fprintf(stdout, "produced %d records to %s (%d deliberately bad), all acknowledged, in %s\n",
		st.Acked, pc.Topic, st.Bad, st.Elapsed.Round(time.Millisecond))
	return exitOK
}

// rateFlag parses "200/s", "200" or "12000/m" into records per second.
type rateFlag float64

func (r *rateFlag) String() string { return strconv.FormatFloat(float64(*r), 'g', -1, 64) + "/s" }

func (r *rateFlag) Set(s string) error {
	num, per := s, time.Second
	if i := strings.IndexByte(s, '/'); i >= 0 {
		num = s[:i]
		switch unit := s[i+1:]; unit {
		case "s":
		case "m":
			per = time.Minute
		case "h":
			per = time.Hour
		default:
			return fmt.Errorf("unit %q: want /s, /m or /h", unit)
		}
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 {
		return fmt.Errorf("%q is not a non-negative rate like 200/s", s)
	}
	*r = rateFlag(v / per.Seconds())
	return nil
}

func splitGenerateList(s string) []string {
	var out []string
	for p := range strings.SplitSeq(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// registerSample registers the sample schema of codec under subject at the registry reg, through the
// client `sink run` builds of it (its TLS, basic auth and timeout).
func registerSample(ctx context.Context, codecName string, reg config.SchemaRegistry, subject string) (*gen.Encoder, error) {
	if len(reg.URLs) == 0 {
		return nil, fmt.Errorf("--registry (or schema_registry.urls of --config) is required for --codec %s", codecName)
	}
	cl, err := registry.New(reg)
	if err != nil {
		return nil, fmt.Errorf("creating the schema registry client for %v: %w", reg.URLs, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return gen.Register(ctx, cl.SR(), codecName, subject)
}
