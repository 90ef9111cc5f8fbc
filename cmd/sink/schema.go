package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/bucketsink/sink/cassandra"
)

// schemaUsage is the help of `sink schema` above its flags.
const schemaUsage = "Usage: sink schema --config FILE [--topic NAME] [--at RFC3339] [--apply]\n" +
	"\n" +
	"Prints the CREATE KEYSPACE and CREATE TABLE statements that match each topic's policy:\n" +
	"partition key (id columns, bucket column, event bucket column), clustering order, TTL,\n" +
	"TimeWindowCompactionStrategy with the bucket width as window, gc_grace_seconds. A sliced\n" +
	"topic gets the tables of the slice holding --at and of the next slice; run it on a schedule\n" +
	"(e.g. daily with --apply) so each slice's table exists before its first record.\n" +
	"\n" +
	"With --apply the statements run against cassandra.hosts (IF NOT EXISTS: nothing is altered\n" +
	"or dropped), then every table is checked against the policy in system_schema; a table created\n" +
	"earlier with another key fails the command.\n" +
	"\n" +
	"Exit codes: 0 ok; 1 cannot reach Cassandra, a statement failed or a table does not match;\n" +
	"2 usage error; 3 invalid configuration; 6 Cassandra refused the connection (login, certificate,\n" +
	"TLS at one end only).\n"

// runSchema prints the CQL DDL every topic's policy needs and, with --apply, creates it.
func runSchema(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("schema", schemaUsage, stdout, stderr)
	path := fs.configFlag("the YAML config file (required)")
	topic := fs.String("topic", "", "only this topic (a key under topics:), or every entry that reads this Kafka topic; default all")
	at := fs.String("at", "", "the time whose slice tables to create, RFC 3339 (default now)")
	apply := fs.Bool("apply", false, "run the statements against the cluster and check the tables")
	if code, ok := fs.parse(args); !ok {
		return code
	}
	if *path == "" {
		fmt.Fprintln(stderr, "sink schema: --config is required")
		return exitUsage
	}
	now := time.Now().UTC()
	if *at != "" {
		t, err := time.Parse(time.RFC3339, *at)
		if err != nil {
			fmt.Fprintf(stderr, "sink schema: --at %q is not RFC 3339 with an offset (e.g. 2024-01-15T00:00:00Z)\n", *at)
			return exitUsage
		}
		now = t
	}
	cfg, code := loadConfig(ctx, *path, stderr)
	if cfg == nil {
		return code
	}
	var topics []string
	if *topic != "" {
		topics = []string{*topic}
		if _, ok := cfg.Topics[*topic]; !ok {
			// A Kafka topic: the tables of every entry that reads it.
			if topics = cfg.EntriesOf(*topic); len(topics) == 0 {
				fmt.Fprintf(stderr, "sink schema: --topic %q is not configured; topics: %v\n", *topic, cfg.TopicNames())
				return exitUsage
			}
		}
	}
	stmts, err := cassandra.Schema(cfg, topics, now)
	if err != nil {
		fmt.Fprintf(stderr, "sink schema: %v\n", err)
		return exitConfig
	}
	fmt.Fprint(stdout, cassandra.FormatDDL(stmts))
	if !*apply {
		return exitOK
	}

	s, err := cassandra.Connect(ctx, cfg.Cassandra)
	if err != nil {
		fmt.Fprintf(stderr, "sink schema: %v\n", err)
		return failureCode(err)
	}
	defer s.Close()
	if err := cassandra.ApplySchema(ctx, s, cfg, topics, now); err != nil {
		fmt.Fprintf(stderr, "sink schema: %v\n", err)
		return exitFailure
	}
	fmt.Fprintf(stdout, "\n-- applied %d %s; every table matches its topic's policy\n", len(stmts), plural(len(stmts), "statement", "statements"))
	return exitOK
}
