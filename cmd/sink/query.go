package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/bucketsink/sink/cassandra"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/reader"
	"github.com/bucketsink/sink/reader/output"
	"github.com/bucketsink/sink/schema"
)

// idFlags collects repeated --id values (one per id column, in order).
type idFlags []string

func (f *idFlags) String() string     { return strings.Join(*f, ",") }
func (f *idFlags) Set(v string) error { *f = append(*f, v); return nil }

// queryUsage is the help of `sink query` above its flags.
var queryUsage = fmt.Sprintf("Usage: sink query --config FILE (--topic NAME | --table TABLE) --id V [--id V2 ...] (--from X --to Y | --last D | --cursor C)\n"+
	"                  [--where COLUMN=VALUE ...] [--limit N] [--page-size P] [--fetch-size F] [--format table|json|csv]\n"+
	"                  [--max-partitions M] [--rollup NAME]\n"+
	"\n"+
	"Reads one entity's rows back from the tables `sink run` writes, across every bucket, event bucket and\n"+
	"slice the range touches. --from before --to reads oldest first; --from after --to reads newest first;\n"+
	"--last 24h reads the newest rows of the last 24 hours. Times are RFC 3339 (2024-01-15T10:00:00Z).\n"+
	"It prints one page, then the cursor of the next page: on stderr (table, csv) or in the JSON envelope.\n"+
	"Pass it to --cursor, with the same --config, --topic and --id, to read the next page.\n"+
	"Rows are printed as they are read, never held as a whole page: json and csv print what a whole page\n"+
	"would; table aligns its columns over blocks of %[1]d rows, so a page of up to %[1]d prints as one aligned\n"+
	"table and a longer one a block at a time. A read that fails midway leaves the rows printed before it.\n"+
	"--topic names an entry (a key under topics:) or the Kafka topic of exactly one; when several entries\n"+
	"read one Kafka topic, name the entry, or give the table it writes with --table. --rollup NAME reads the\n"+
	"entry's rollup NAME instead: one row per window, the range and cursor on the window's start.\n"+
	"\n"+
	"A latest-value topic (bucket width none) takes no range: it prints the newest row of each entity\n"+
	"given, one request per entity. --id then lists the entities, each as many --id as the id has\n"+
	"columns (--id dev-1 --id dev-2: two devices; with a two-column id, --id s1 --id d1 --id s2 --id d2).\n"+
	"\n"+
	"Exit codes: 0 ok; 1 Cassandra unreachable or a read failed; 2 usage error (bad flags, an id that does\n"+
	"not fit its column, a range over --max-partitions, an invalid cursor); 3 invalid configuration.\n", output.TableBlock)

// runQuery reads one entity's rows back across buckets with package reader and prints one page.
func runQuery(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("query", queryUsage, stdout, stderr)
	var ids, wheres idFlags
	path := fs.configFlag("the YAML config file (required)")
	topic := fs.String("topic", "", "the topic: a key under topics:, or the Kafka topic of one (this or --table)")
	table := fs.String("table", "", "the table to read, TABLE or KEYSPACE.TABLE: the entry that writes it (this or --topic)")
	rollupName := fs.String("rollup", "", "read this rollup of the entry (topics.<entry>.rollups) instead of its raw rows: one row per window, by the window's start")
	fs.Var(&ids, "id", "an id value; repeat for a composite id, in the order of topics.<t>.id (required)")
	fs.Var(&wheres, "where", "COLUMN=VALUE: only rows with this value in a clustering column after the time; repeatable")
	fromS := fs.String("from", "", "start of the range, RFC 3339 (included)")
	toS := fs.String("to", "", "end of the range, RFC 3339 (excluded)")
	last := fs.String("last", "", "the newest rows of this long before now, e.g. 24h, 7d (instead of --from/--to)")
	limit := fs.Int("limit", 0, "at most this many rows over all pages (0: no limit)")
	pageSize := fs.Int("page-size", 100, "rows per page")
	fetchSize := fs.Int("fetch-size", reader.DefaultFetchSize, "the most rows asked of Cassandra per request; a page asks each partition for its share of the page, up to this")
	cur := fs.String("cursor", "", "resume after the page that printed this cursor (the range and limit come from it)")
	format := fs.String("format", output.Formats[0], "output: "+strings.Join(output.Formats, ", ")+"; rows are printed as they are read (see above)")
	maxParts := fs.Int("max-partitions", reader.DefaultMaxPartitions, "refuse a range that spans more partitions than this")
	if code, ok := fs.parse(args); !ok {
		return code
	}
	usageErr := fs.usageError
	switch {
	case *path == "" || (*topic == "") == (*table == "") || len(ids) == 0:
		return usageErr("--config, --topic (or --table, not both) and --id are required")
	case !slices.Contains(output.Formats, *format):
		return usageErr("--format %q: use %s", *format, strings.Join(output.Formats, ", "))
	case *limit < 0 || *pageSize <= 0 || *maxParts <= 0 || *fetchSize <= 0:
		return usageErr("--limit must not be negative, --page-size, --fetch-size and --max-partitions must be positive")
	case *last != "" && (*fromS != "" || *toS != ""):
		return usageErr("give --last or --from and --to, not both")
	}
	ranged := *cur != "" || *last != "" || *fromS != "" || *toS != "" || len(wheres) > 0
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
		if q.From, err = time.Parse(time.RFC3339Nano, *fromS); err != nil && *fromS != "" {
			return usageErr("--from %q is not RFC 3339 with an offset (e.g. 2024-01-15T10:00:00Z)", *fromS)
		}
		if q.To, err = time.Parse(time.RFC3339Nano, *toS); err != nil && *toS != "" {
			return usageErr("--to %q is not RFC 3339 with an offset (e.g. 2024-01-15T10:00:00Z)", *toS)
		}
	}

	cfg, code := loadConfig(ctx, *path, stderr)
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
	rcfg := reader.Config{Sink: cfg, Topic: entry, Rollup: *rollupName, MaxPartitions: *maxParts, FetchSize: *fetchSize}
	r, err := reader.New(rcfg)
	if err != nil {
		fmt.Fprintf(stderr, "sink query: %v\n", err)
		return exitConfig
	}
	if r.Table().Latest {
		if ranged {
			return usageErr("topics.%s is a latest-value table (bucket width none): it holds the newest row of each entity, and takes no --from, --to, --last, --cursor or --where", r.Topic())
		}
		return queryLatest(ctx, rcfg, r, ids, *format, stdout, stderr)
	}
	if *cur == "" && *last == "" && (*fromS == "" || *toS == "") {
		return usageErr("give a range: --from and --to, or --last (or --cursor to resume)")
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

	r, closeSession, code := connectReader(ctx, rcfg, stderr)
	if r == nil {
		return code
	}
	defer closeSession()
	err = printRows(stdout, stderr, *format, r.Table().Columns, func(fn func(reader.Row) error) (reader.Page, error) {
		return r.Scan(ctx, q, fn)
	})
	if err != nil {
		var rangeErr *reader.RangeError
		if errors.Is(err, reader.ErrCursor) || errors.As(err, &rangeErr) {
			return usageErr("%v", err)
		}
		fmt.Fprintf(stderr, "sink query: %v\n", err)
		return exitFailure
	}
	return exitOK
}

// queryLatest prints the newest row of each entity of a latest-value table: ids holds the entities one
// after the other, each as many values as the id has columns.
func queryLatest(ctx context.Context, rcfg reader.Config, r *reader.Reader, ids []string, format string, stdout, stderr io.Writer) int {
	n := len(r.Table().IDColumns())
	if len(ids)%n != 0 {
		fmt.Fprintf(stderr, "sink query: --id: %d values do not make whole entities of the %d id columns %v; give each entity's values in that order\n",
			len(ids), n, r.Table().IDColumns())
		return exitUsage
	}
	entities := make([][]any, 0, len(ids)/n)
	for i := 0; i < len(ids); i += n {
		id, err := r.ParseID(ids[i : i+n])
		if err != nil {
			fmt.Fprintf(stderr, "sink query: --id: %v\n", err)
			return exitUsage
		}
		entities = append(entities, id)
	}
	r, closeSession, code := connectReader(ctx, rcfg, stderr)
	if r == nil {
		return code
	}
	defer closeSession()
	rows, err := r.Latest(ctx, entities)
	if err != nil {
		fmt.Fprintf(stderr, "sink query: %v\n", err)
		return exitFailure
	}
	err = printRows(stdout, stderr, format, r.Table().Columns, func(fn func(reader.Row) error) (reader.Page, error) {
		for _, row := range rows {
			if err := fn(row); err != nil {
				return reader.Page{}, err
			}
		}
		return reader.Page{}, nil
	})
	if err != nil {
		fmt.Fprintf(stderr, "sink query: %v\n", err)
		return exitFailure
	}
	return exitOK
}

// connectReader connects to Cassandra and returns the reader of rcfg on that session, and the function
// that closes it; or nil and the exit code, the error printed.
func connectReader(ctx context.Context, rcfg reader.Config, stderr io.Writer) (*reader.Reader, func(), int) {
	session, err := cassandra.Connect(ctx, rcfg.Sink.Cassandra)
	if err != nil {
		fmt.Fprintf(stderr, "sink query: %v\n", err)
		return nil, nil, exitFailure
	}
	rcfg.Session = session.Driver()
	r, err := reader.New(rcfg)
	if err != nil {
		session.Close()
		fmt.Fprintf(stderr, "sink query: %v\n", err)
		return nil, nil, exitConfig
	}
	return r, session.Close, exitOK
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

// printRows prints the rows scan reads as they come (package output), then, but for JSON, whose document
// holds them, on stderr the warnings, the count and the next page's cursor. An error is the read's or the
// output's.
func printRows(stdout, stderr io.Writer, format string, cols []schema.Column, scan output.Scan) error {
	page, n, err := output.Print(stdout, format, cols, scan)
	if err != nil || format == "json" {
		return err
	}
	for _, w := range page.Warnings {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
	fmt.Fprintf(stderr, "%d rows\n", n)
	if page.Cursor != "" {
		fmt.Fprintf(stderr, "next page: --cursor %s\n", page.Cursor)
	}
	return nil
}
