package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/codec/registry"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/mapper"
	"github.com/bucketsink/sink/pipeline/consumer"
)

// What `sink explain` needs without the servers `sink run` reads: a writer schema from files in place
// of the registry, and a quick word when Kafka cannot be reached.

// schemaFileFlags are the flags that give a registry codec's writer schema from files.
type schemaFileFlags struct {
	file, typ string
	refs      idFlags // name=FILE, repeated
}

func addSchemaFileFlags(fs *flag.FlagSet) *schemaFileFlags {
	f := &schemaFileFlags{}
	fs.StringVar(&f.file, "schema-file", "", "the writer schema of a registry codec, from this file instead of the registry (explains offline)")
	fs.StringVar(&f.typ, "schema-type", "", "avro, protobuf or json: the type of --schema-file (default: the topic's codec)")
	fs.Var(&f.refs, "reference", "NAME=FILE: a schema --schema-file references, under the name it uses (an Avro full name, a Protobuf import path); repeatable, a reference before the ones that use it")
	return f
}

// explainMapper is the mapper of cfg, reading the writer schemas from the files given, if any; or nil and
// the exit code, the error said on stderr.
func explainMapper(cfg *config.Config, files *schemaFileFlags, entries []string, stderr io.Writer) (*mapper.Mapper, int) {
	reg, err := files.registry(cfg, entries)
	if err != nil {
		fmt.Fprintf(stderr, "sink explain: %v\n", err)
		return nil, exitUsage
	}
	if reg == nil { // no schema file: the writer schemas come from cfg's registry, if it names one
		if reg, err = registry.ForConfig(cfg); err != nil {
			fmt.Fprintf(stderr, "sink explain: %v\n", err)
			return nil, exitConfig
		}
	}
	m, err := mapper.New(cfg, mapper.WithRegistry(reg))
	if err != nil {
		fmt.Fprintf(stderr, "sink explain: %v\n", err)
		return nil, exitConfig
	}
	return m, exitOK
}

// schemaTypes are the registry's names of the schema types, by --schema-type and by codec.
var schemaTypes = map[string]string{
	"avro": "AVRO", "protobuf": "PROTOBUF", "json": "JSON", config.CodecJSONSchema: "JSON",
}

// registry is the registry of the files given, or nil without --schema-file. entries are the entries that
// explain the record; without --schema-type the schema's type is their codec's.
func (f *schemaFileFlags) registry(cfg *config.Config, entries []string) (codec.Registry, error) {
	if f.file == "" {
		if f.typ != "" || len(f.refs) > 0 {
			return nil, errors.New("--schema-type and --reference go with --schema-file")
		}
		return nil, nil
	}
	typ := schemaTypes[strings.ToLower(f.typ)]
	if f.typ == "" {
		for _, e := range entries {
			if t := schemaTypes[cfg.Topics[e].Codec]; t != "" && (typ == "" || typ == t) {
				typ = t
			} else {
				return nil, fmt.Errorf("--schema-file: topics.%s reads codec %s; give --schema-type avro, protobuf or json", e, cfg.Topics[e].Codec)
			}
		}
	} else if typ == "" {
		return nil, fmt.Errorf("--schema-type %q: use avro, protobuf or json", f.typ)
	}
	text, err := os.ReadFile(f.file)
	if err != nil {
		return nil, fmt.Errorf("--schema-file: %w", err)
	}
	s := &codec.Schema{Type: typ, Text: string(text)}
	for _, r := range f.refs {
		name, file, ok := strings.Cut(r, "=")
		if !ok || name == "" || file == "" {
			return nil, fmt.Errorf("--reference %q: want NAME=FILE", r)
		}
		text, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--reference %s: %w", name, err)
		}
		s.References = append(s.References, codec.Reference{Name: name, Subject: "file " + file, Version: 1,
			Schema: &codec.Schema{Type: typ, Text: string(text)}})
	}
	return fileRegistry{s: s}, nil
}

// fileRegistry answers every schema id with the schema of the files: the one writer schema the record
// names (its value's, or a tombstone's key's).
type fileRegistry struct{ s *codec.Schema }

func (r fileRegistry) Schema(_ context.Context, id int) (*codec.Schema, error) {
	s := *r.s
	s.ID = id
	return &s, nil
}

// kafkaProbeTimeout bounds how long `sink explain --from-kafka` tries to reach Kafka and find the
// record's partition before it says it cannot, rather than waiting out the read's own timeout.
const kafkaProbeTimeout = 5 * time.Second

// probeRecord checks, within kafkaProbeTimeout, that the brokers answer and that the log of c's
// partition holds its offset: an unreachable Kafka, a missing topic or partition, or an offset past the
// log's end is said as such, never blamed on the record.
func probeRecord(ctx context.Context, cfg *config.Config, c kafkaCoords) error {
	opts, err := consumer.ClientOptions(cfg.Kafka, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, kafkaProbeTimeout)
	defer cancel()
	brokers := strings.Join(cfg.Kafka.Brokers, ", ")
	if err := cl.Ping(ctx); err != nil {
		return fmt.Errorf("cannot reach Kafka at %s (kafka.brokers) within %s: %w", brokers, kafkaProbeTimeout, err)
	}
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, c.topic)
	if err != nil {
		return fmt.Errorf("asking Kafka at %s for the end of %s: %w", brokers, c.topic, err)
	}
	o, ok := ends.Lookup(c.topic, c.partition)
	switch {
	case !ok:
		n := 0
		ends.Each(func(kadm.ListedOffset) { n++ })
		if n == 0 {
			return fmt.Errorf("topic %s is not in Kafka at %s", c.topic, brokers)
		}
		return fmt.Errorf("topic %s has %d partitions, no partition %d", c.topic, n, c.partition)
	case o.Err != nil:
		return fmt.Errorf("topic %s partition %d: %w", c.topic, c.partition, o.Err)
	case c.offset >= o.Offset:
		return fmt.Errorf("%s/%d/%d is past the end of the log (its next offset is %d)", c.topic, c.partition, c.offset, o.Offset)
	}
	return nil
}
