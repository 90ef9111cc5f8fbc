package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"gopkg.in/inf.v0"

	"github.com/bucketsink/sink/cassandra"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/reader"
	"github.com/bucketsink/sink/schema"
)

// idFlags collects repeated --id values (one per id column, in order).
type idFlags []string

func (f *idFlags) String() string     { return strings.Join(*f, ",") }
func (f *idFlags) Set(v string) error { *f = append(*f, v); return nil }

// runQuery reads one entity's rows back across buckets with package reader and prints one page.
func runQuery(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("query", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: sink query --config FILE (--topic NAME | --table TABLE) --id V [--id V2 ...] (--from X --to Y | --last D | --cursor C)")
		fmt.Fprintln(stderr, "                  [--where COLUMN=VALUE ...] [--limit N] [--page-size P] [--fetch-size F] [--format table|json|csv]")
		fmt.Fprintln(stderr, "                  [--max-partitions M]")
		fmt.Fprintln(stderr, "\nReads one entity's rows back from the tables `sink run` writes, across every bucket, event bucket and")
		fmt.Fprintln(stderr, "slice the range touches. --from before --to reads oldest first; --from after --to reads newest first;")
		fmt.Fprintln(stderr, "--last 24h reads the newest rows of the last 24 hours. Times are RFC 3339 (2024-01-15T10:00:00Z).")
		fmt.Fprintln(stderr, "It prints one page, then the cursor of the next page: on stderr (table, csv) or in the JSON envelope.")
		fmt.Fprintln(stderr, "Pass it to --cursor, with the same --config, --topic and --id, to read the next page.")
		fmt.Fprintln(stderr, "--topic names an entry (a key under topics:) or the Kafka topic of exactly one; when several entries")
		fmt.Fprintln(stderr, "read one Kafka topic, name the entry, or give the table it writes with --table.")
		fmt.Fprintln(stderr, "\nExit codes: 0 ok; 1 Cassandra unreachable or a read failed; 2 usage error (bad flags, an id that does")
		fmt.Fprintln(stderr, "not fit its column, a range over --max-partitions, an invalid cursor); 3 invalid configuration.")
		fmt.Fprintln(stderr, "\nFlags:")
		fs.PrintDefaults()
	}
	var ids, wheres idFlags
	path := fs.String("config", "", "the YAML config file (required)")
	topic := fs.String("topic", "", "the topic: a key under topics:, or the Kafka topic of one (this or --table)")
	table := fs.String("table", "", "the table to read, TABLE or KEYSPACE.TABLE: the entry that writes it (this or --topic)")
	fs.Var(&ids, "id", "an id value; repeat for a composite id, in the order of topics.<t>.id (required)")
	fs.Var(&wheres, "where", "COLUMN=VALUE: only rows with this value in a clustering column after the time; repeatable")
	fromS := fs.String("from", "", "start of the range, RFC 3339 (included)")
	toS := fs.String("to", "", "end of the range, RFC 3339 (excluded)")
	last := fs.String("last", "", "the newest rows of this long before now, e.g. 24h, 7d (instead of --from/--to)")
	limit := fs.Int("limit", 0, "at most this many rows over all pages (0: no limit)")
	pageSize := fs.Int("page-size", 100, "rows per page")
	fetchSize := fs.Int("fetch-size", reader.DefaultFetchSize, "the most rows asked of Cassandra per request; a page asks each partition for its share of the page, up to this")
	cur := fs.String("cursor", "", "resume after the page that printed this cursor (the range and limit come from it)")
	format := fs.String("format", "table", "output: table, json or csv")
	maxParts := fs.Int("max-partitions", reader.DefaultMaxPartitions, "refuse a range that spans more partitions than this")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "sink query: "+format+"\n", a...)
		return exitUsage
	}
	switch {
	case fs.NArg() > 0:
		return usageErr("unexpected argument %q", fs.Arg(0))
	case *path == "" || (*topic == "") == (*table == "") || len(ids) == 0:
		return usageErr("--config, --topic (or --table, not both) and --id are required")
	case *format != "table" && *format != "json" && *format != "csv":
		return usageErr("--format %q: use table, json or csv", *format)
	case *limit < 0 || *pageSize <= 0 || *maxParts <= 0 || *fetchSize <= 0:
		return usageErr("--limit must not be negative, --page-size, --fetch-size and --max-partitions must be positive")
	case *last != "" && (*fromS != "" || *toS != ""):
		return usageErr("give --last or --from and --to, not both")
	case *cur == "" && *last == "" && (*fromS == "" || *toS == ""):
		return usageErr("give a range: --from and --to, or --last (or --cursor to resume)")
	}
	q := reader.Query{Limit: *limit, PageSize: *pageSize, Cursor: *cur}
	for _, w := range wheres {
		col, val, ok := strings.Cut(w, "=")
		if !ok || col == "" {
			return usageErr("--where %q: want COLUMN=VALUE", w)
		}
		if q.Where == nil {
			q.Where = make(map[string]any)
		}
		q.Where[col] = val
	}
	if *last != "" {
		d, err := config.ParseDuration(*last)
		if err != nil || d <= 0 {
			return usageErr("--last %q: want a positive duration such as 30m, 24h or 7d", *last)
		}
		// Newest first: from now back to now - d.
		q.From = time.Now().UTC()
		q.To = q.From.Add(-d.Std())
	} else if *cur == "" {
		var err error
		if q.From, err = time.Parse(time.RFC3339Nano, *fromS); err != nil {
			return usageErr("--from %q is not RFC 3339 with an offset (e.g. 2024-01-15T10:00:00Z)", *fromS)
		}
		if q.To, err = time.Parse(time.RFC3339Nano, *toS); err != nil {
			return usageErr("--to %q is not RFC 3339 with an offset (e.g. 2024-01-15T10:00:00Z)", *toS)
		}
	}

	cfg, code := loadConfig(*path, stderr)
	if cfg == nil {
		return code
	}
	var entry string
	var err error
	if *table != "" {
		if entry, err = entryOfTable(cfg, *table); err != nil {
			return usageErr("--table: %v", err)
		}
	} else if entry, err = cfg.Entry(*topic); err != nil {
		return usageErr("--topic: %v", err)
	}
	rcfg := reader.Config{Sink: cfg, Topic: entry, MaxPartitions: *maxParts, FetchSize: *fetchSize}
	r, err := reader.New(rcfg)
	if err != nil {
		fmt.Fprintf(stderr, "sink query: %v\n", err)
		return exitConfig
	}
	id, err := r.ParseID(ids)
	if err != nil {
		return usageErr("--id: %v", err)
	}
	q.ID = id
	if _, err := r.Plan(q); err != nil {
		var rangeErr *reader.RangeError
		switch {
		case errors.Is(err, reader.ErrCursor):
			return usageErr("--cursor: %v", err)
		case errors.As(err, &rangeErr):
			return usageErr("%v (or raise --max-partitions)", err)
		}
		return usageErr("%v", err)
	}

	session, err := cassandra.Connect(ctx, cfg.Cassandra)
	if err != nil {
		fmt.Fprintf(stderr, "sink query: %v\n", err)
		return exitFailure
	}
	defer session.Close()
	rcfg.Session = session.Driver()
	if r, err = reader.New(rcfg); err != nil {
		fmt.Fprintf(stderr, "sink query: %v\n", err)
		return exitConfig
	}
	page, err := r.Read(ctx, q)
	if err != nil {
		var rangeErr *reader.RangeError
		if errors.Is(err, reader.ErrCursor) || errors.As(err, &rangeErr) {
			return usageErr("%v", err)
		}
		fmt.Fprintf(stderr, "sink query: %v\n", err)
		return exitFailure
	}
	if err := printPage(stdout, stderr, *format, r.Table().Columns, page); err != nil {
		fmt.Fprintf(stderr, "sink query: writing the rows: %v\n", err)
		return exitFailure
	}
	return exitOK
}

// entryOfTable is the entry that writes table, given as TABLE or KEYSPACE.TABLE (CQL names fold
// to lower case). Entries that write one table have its one shape (config.Validate), so any of them
// reads it: the first by name. A bare table name that several keyspaces hold is an error.
func entryOfTable(cfg *config.Config, table string) (string, error) {
	var entries, tables []string
	for _, name := range cfg.TopicNames() {
		t := cfg.Topics[name]
		full := t.Keyspace + "." + t.Table
		if strings.EqualFold(full, table) || strings.EqualFold(t.Table, table) {
			entries = append(entries, name)
			if !slices.Contains(tables, strings.ToLower(full)) {
				tables = append(tables, strings.ToLower(full))
			}
		}
	}
	switch {
	case len(entries) == 0:
		var all []string
		for _, name := range cfg.TopicNames() {
			all = append(all, cfg.Topics[name].Keyspace+"."+cfg.Topics[name].Table)
		}
		return "", fmt.Errorf("no entry writes %q; tables: %s", table, strings.Join(all, ", "))
	case len(tables) > 1:
		return "", fmt.Errorf("%q is a table of several keyspaces (%s); give KEYSPACE.TABLE", table, strings.Join(tables, ", "))
	}
	return entries[0], nil
}

// printPage prints the rows in the table's column order, then the warnings and the cursor.
func printPage(stdout, stderr io.Writer, format string, cols []schema.Column, page reader.Page) error {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.Name
	}
	switch format {
	case "json":
		type jsonPartition struct {
			Table       string `json:"table"`
			Bucket      int64  `json:"bucket"`
			EventBucket int    `json:"event_bucket"`
		}
		type jsonRow struct {
			Values    map[string]any `json:"values"`
			Partition jsonPartition  `json:"partition"`
		}
		out := struct {
			Rows     []jsonRow `json:"rows"`
			Cursor   string    `json:"cursor,omitempty"`
			Warnings []string  `json:"warnings,omitempty"`
		}{Rows: []jsonRow{}, Cursor: page.Cursor, Warnings: page.Warnings}
		for _, row := range page.Rows {
			vals := make(map[string]any, len(row.Values))
			for k, v := range row.Values {
				if d, ok := v.(*inf.Dec); ok {
					v = json.Number(d.String())
				}
				vals[k] = v
			}
			out.Rows = append(out.Rows, jsonRow{Values: vals,
				Partition: jsonPartition{Table: row.Partition.Table, Bucket: row.Partition.Bucket, EventBucket: row.Partition.EventBucket}})
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	case "csv":
		w := csv.NewWriter(stdout)
		if err := w.Write(names); err != nil {
			return err
		}
		for _, row := range page.Rows {
			if err := w.Write(cells(cols, row)); err != nil {
				return err
			}
		}
		w.Flush()
		if err := w.Error(); err != nil {
			return err
		}
	default:
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(names, "\t"))
		for _, row := range page.Rows {
			fmt.Fprintln(tw, strings.Join(cells(cols, row), "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, w := range page.Warnings {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
	fmt.Fprintf(stderr, "%d rows\n", len(page.Rows))
	if page.Cursor != "" {
		fmt.Fprintf(stderr, "next page: --cursor %s\n", page.Cursor)
	}
	return nil
}

// cells are the text forms of a row's values, in column order; null is empty.
func cells(cols []schema.Column, row reader.Row) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		v := row.Values[c.Name]
		if v == nil {
			continue
		}
		s, err := reader.FormatValue(c.Type, v)
		if err != nil {
			s = fmt.Sprint(v) // collections
		}
		out[i] = s
	}
	return out
}
