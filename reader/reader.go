// Package reader reads back what `sink run` wrote: the rows of one entity between two instants,
// or its latest N, from the same configuration, so the read half of the bucket contract is
// implemented once, next to the write half, and tested against it.
//
// A query names a topic, the entity's id values and a range. From before To reads [From, To)
// oldest first; From after To reads (To, From] newest first (no direction flag). MakePlan turns
// the range into the time buckets it touches, in the order they are returned, each with its table
// (the slice's, for sliced topics), its bucket key (rolling applied) and its partitions (every event
// bucket). Within a partition the range is a slice of the first clustering column, which must hold
// the event time (a timestamp or a timeuuid), so a rolling key's earlier cycle is never read as
// part of the current one.
//
// Partitions are read with bounded parallelism (Config.Parallelism requests in flight) and
// read-ahead in the order they will be returned; the event buckets of one time bucket are merged
// in the table's clustering order (reversed when the read runs against it). A query with a limit
// or a page size reads ahead only as many time buckets as the rows seen so far say it needs, and
// asks for a partition's next page only when the merge needs it, so the latest 100 rows of a busy
// entity cost one or two requests, not one per partition of the range. Each partition of a bucket is
// asked for its share of what the page still needs (Config.FetchSize at most), so a page over K event
// buckets reads about the page from Cassandra, not K pages.
//
// A page ends with an opaque cursor: the query's range and limit, and the position of the last row
// returned (its time bucket, event bucket and clustering values). A fresh Reader in another process
// resumes from it exactly after that row, even while rows are being written: every row present at
// the first call is returned once. A slice table that does not exist is read as empty and reported
// once in Page.Warnings. Deadlines and cancellation come from the context.
//
// A latest-value table (bucket width none) has no range to read: Latest returns the rows of a list of
// entities, one request per entity, and Read, Scan and Plan refuse it (ErrLatest).
//
// A Reader is safe for concurrent use. Every query starts its own goroutines and waits for them
// before it returns.
package reader

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/routing"
	"github.com/bucketsink/sink/schema"
)

// Defaults of Config.
const (
	DefaultParallelism   = 8
	DefaultReadAhead     = 8
	DefaultFetchSize     = 5000
	DefaultMaxPartitions = 10000
)

// Config is what a Reader needs.
type Config struct {
	// Session runs the reads; the reader does not close it. Without one, a Reader still parses
	// ids and plans queries (`sink query` checks its flags before it connects), but Read fails.
	Session *gocql.Session
	// Sink is the configuration `sink run` writes with, validated (config.Validate). The reader
	// takes the table, its columns and types, the clustering order and the bucket policy from it.
	Sink  *config.Config
	Topic string // a key under topics:, or its Kafka topic
	// Rollup, when set, names a rollup of the entry (topics.<entry>.rollups): the reader reads its
	// table instead, by the window's start (each row is one window, ids and cursor as for raw rows).
	Rollup string
	// Parallelism bounds the requests in flight at once (default 8).
	Parallelism int
	// ReadAhead is how many partitions beyond the time bucket being returned may be read before
	// they are needed (default 8). A query with a limit opens only as many time buckets ahead as
	// the rows seen so far say it needs, so "the latest 100" of a busy entity reads one or two.
	ReadAhead int
	// FetchSize is the most rows asked for per request (default 5000, the driver's own page). A
	// query with a page size or a limit asks each partition for its share of what the page still
	// needs, so the fetch size follows the page size; an unbounded read asks FetchSize rows, and a
	// dense bucket then costs Cassandra one request per FetchSize rows rather than one per 1,000.
	FetchSize int
	// MaxPartitions caps the partitions one query's range may span (default 10000): a wider
	// range is an error, not a slow read.
	MaxPartitions int
	// Consistency of the reads; 0 is the topic's (which config sets to cassandra.consistency unless
	// the topic names one).
	Consistency gocql.Consistency
	// Observer, when set, sees every request the reader sends (tests count them).
	Observer gocql.QueryObserver
	// Columns, when set, are the only columns a read selects besides the clustering columns (which
	// order the rows): a rollup's computation reads the columns its aggregates use, not whole rows.
	// A row then holds only those.
	Columns []string
}

// Reader reads the rows `sink run` wrote for one topic back, by entity and time range, from the
// same configuration. It is safe for concurrent use; every query owns its goroutines and waits
// for them before it returns.
type Reader struct {
	cfg      Config
	gs       *gocql.Session
	topic    string
	table    schema.Table
	ids      []keyColumn
	clus     []keyColumn // with desc set
	timeCol  string
	timeUUID bool // the time column is a timeuuid: range bounds go through minTimeuuid
	eventCol string
	selects  string      // the selected columns, comma separated
	splits   *splitCache // the routing records of a split topic; nil otherwise
	cons     gocql.Consistency
}

type keyColumn struct {
	name, typ string
	desc      bool
}

// Query is one read of one entity.
type Query struct {
	// ID holds the values of the topic's id columns, in the order of topics.<t>.id. A string is
	// parsed for a column of another type (see ParseValue), so command-line input can be passed
	// as is.
	ID []any
	// From and To bound the range: [From, To) oldest first when From is before To, (To, From]
	// newest first when From is after To; to the millisecond. "The latest N" is From = now,
	// To = now minus how far back to look, Limit = N.
	From, To time.Time
	// Where restricts clustering columns other than the first (the time) to one value each, e.g.
	// {"event_type": "order_placed"}. Cassandra filters inside each partition's slice of the
	// range (ALLOW FILTERING, bounded by that slice). Strings are parsed for other types.
	Where map[string]any
	// Limit caps the rows of the whole query, over all its pages; 0 = no cap.
	Limit int
	// PageSize caps the rows of one Read; 0 = no cap (up to Limit, or the whole range).
	PageSize int
	// Cursor resumes a query after the last row of a previous page (Page.Cursor). The range and
	// the limit then come from the cursor; ID must be the same entity.
	Cursor string
}

// Row is one row: the Go values of the table's columns (as gocql returns them: string, int,
// int64, float64, time.Time, gocql.UUID, []byte, ...; see ParseValue for the key types) and the
// partition it came from. A null column is nil, never its type's zero value, so a null int is told
// apart from 0 and an empty blob ([]byte{}) from a null.
type Row struct {
	Values    map[string]any
	Partition Partition
}

// Page is the result of one Read.
type Page struct {
	Rows []Row // nil from Scan, which hands the rows to its callback instead
	// Cursor resumes after the last row of this page; "" when the range or the limit is exhausted.
	// A full page that ends exactly at the end of the range still has one, and the next is empty.
	Cursor string
	// Warnings are reported once per query, e.g. a slice table that does not exist (read as empty).
	Warnings []string
	// Partitions is how many partitions the query opened (read-ahead included).
	Partitions int
}

// New prepares a reader of cfg.Topic. It checks that the topic can be read by time: its first
// clustering column must hold the event time, as a timestamp or a timeuuid; or that it is a
// latest-value table, which Latest reads.
func New(cfg Config) (*Reader, error) {
	if cfg.Sink == nil {
		return nil, errors.New("reader: Sink is required")
	}
	name, err := cfg.Sink.Entry(cfg.Topic)
	if err != nil {
		return nil, fmt.Errorf("reader: %w", err)
	}
	tc := cfg.Sink.Topics[name]
	tables, err := schema.Describe(cfg.Sink)
	if err != nil {
		return nil, fmt.Errorf("reader: %w", err)
	}
	t := tables[name]
	if cfg.Rollup != "" {
		rollups, err := schema.DescribeRollups(cfg.Sink, tables)
		if err != nil {
			return nil, fmt.Errorf("reader: %w", err)
		}
		ro, err := rollups.Get(name, cfg.Rollup)
		if err != nil {
			return nil, fmt.Errorf("reader: %w", err)
		}
		t = ro.Table
	}
	r := &Reader{cfg: cfg, gs: cfg.Session, topic: name, table: t}
	r.cfg.Parallelism = orDefault(cfg.Parallelism, DefaultParallelism)
	r.cfg.ReadAhead = orDefault(cfg.ReadAhead, DefaultReadAhead)
	r.cfg.FetchSize = orDefault(cfg.FetchSize, DefaultFetchSize)
	r.cfg.MaxPartitions = orDefault(cfg.MaxPartitions, DefaultMaxPartitions)

	types := make(map[string]string, len(t.Columns))
	names := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		types[c.Name], names[i] = c.Type, c.Name
	}
	if len(cfg.Columns) > 0 {
		keep := func(n string) bool {
			return slices.Contains(cfg.Columns, n) || slices.ContainsFunc(t.Clustering, func(c schema.Clustering) bool { return c.Name == n })
		}
		names = slices.DeleteFunc(names, func(n string) bool { return !keep(n) })
	}
	r.selects = strings.Join(names, ", ")
	for _, c := range idColumns(t) {
		r.ids = append(r.ids, keyColumn{name: c, typ: types[c]})
	}
	if t.HasEventBucketColumn() {
		r.eventCol = t.PartitionKey[len(t.PartitionKey)-1]
	}
	for _, c := range t.Clustering {
		if !comparableType(types[c.Name]) {
			return nil, fmt.Errorf("topics.%s.clustering: column %s is a %s, which the reader cannot order", name, c.Name, types[c.Name])
		}
		r.clus = append(r.clus, keyColumn{name: c.Name, typ: types[c.Name], desc: c.Desc})
	}
	switch {
	case cfg.Rollup != "":
		r.timeCol = r.clus[0].name // the window's start, a timestamp: what a rollup table is cut by
	case !t.Latest: // a latest-value table is read by id alone (Latest)
		if err := r.checkTimeColumn(tc); err != nil {
			return nil, err
		}
	}
	cons := cfg.Consistency
	if cons == 0 && tc.Consistency != "" {
		// config gives every topic a consistency (cassandra.consistency unless the topic sets one).
		if cons, err = gocql.ParseConsistencyWrapper(tc.Consistency); err != nil {
			return nil, fmt.Errorf("topics.%s.consistency: %w", name, err)
		}
	}
	r.cons = cons
	// Whether or not the configuration given has split on: a table whose partitions are keyed by event
	// bucket may hold split generations written while it was on, and those rows are read wherever its
	// routing records send them.
	if t.HasEventBucketColumn() && r.gs != nil {
		r.splits = newSplitCache(r.gs, t.Keyspace, cons)
	}
	return r, nil
}

// routes is the routing-record lookup MakePlan consults: nil for a table without an event bucket
// column (no split can have written it), or a reader without a session (plans then show the topic's
// own event buckets only).
func (r *Reader) routes() RouteLookup {
	if r.splits == nil {
		return nil
	}
	p := r.table.Policy
	return func(ctx context.Context, table string, start time.Time, entity []byte) ([]routing.Generation, error) {
		return r.splits.lookup(ctx, table, start, p.End(p.Index(start)), entity)
	}
}

// checkTimeColumn requires the first clustering column to be the event time, which is what the
// buckets are cut by: then a time range is a slice of each partition.
func (r *Reader) checkTimeColumn(tc config.Topic) error {
	first := r.clus[0]
	var col config.Column
	for _, c := range tc.Columns {
		if c.Name == first.name {
			col = c
		}
	}
	switch {
	case normType(first.typ) == "timestamp" && col.Source == "event_time":
	case normType(first.typ) == "timestamp" && col.Source == "" && tc.Time.Source != "kafka" && col.Field == tc.Time.Field &&
		(tc.Time.Format == "" || tc.Time.Format == "rfc3339" || tc.Time.Format == "unix_ms"):
		// A timestamp column reads RFC 3339 text and epoch milliseconds like the event time does
		// in those formats; with unix_s, unix_us or unix_ns the two would differ.
	case normType(first.typ) == "timeuuid" && col.Source == "timeuuid":
		r.timeUUID = true
	default:
		return fmt.Errorf("topics.%s.clustering[0]: reading by time needs the first clustering column to hold the event time "+
			"(a timestamp with source event_time or the time field, or a timeuuid with source timeuuid); %s is not", r.topic, first.name)
	}
	r.timeCol = first.name
	return nil
}

// Topic is the name of the topic read (the key under topics:).
func (r *Reader) Topic() string { return r.topic }

// Table is the shape of the topic's table.
func (r *Reader) Table() schema.Table { return r.table }

// ParseID converts the text form of an entity id, one value per id column, to typed values. Its
// errors name the column and say what its type wants.
func (r *Reader) ParseID(vals []string) ([]any, error) {
	id := make([]any, len(vals))
	for i, v := range vals {
		id[i] = v
	}
	out, _, err := r.typedID(id)
	return out, err
}

func (r *Reader) idNames() []string {
	out := make([]string, len(r.ids))
	for i, c := range r.ids {
		out[i] = c.name
	}
	return out
}

// Plan is the partition plan of q; with a cursor, of the range the cursor was made for. It
// checks the id and the cursor like Read, without reading anything.
func (r *Reader) Plan(q Query) (Plan, error) {
	e, err := r.entity(q)
	if err != nil {
		return Plan{}, err
	}
	if q.Cursor != "" {
		c, err := r.decodeCursor(q.Cursor, e.fingerprint)
		if err != nil {
			return Plan{}, err
		}
		q.From, q.To = c.from(), c.to()
	}
	return MakePlan(context.Background(), r.table, e.id, q.From, q.To, r.cfg.MaxPartitions, r.routes())
}

// entity is a query's id and restrictions, typed, and the fingerprint a cursor must carry.
type entity struct {
	id          []any
	where       []restriction // in clustering order
	fingerprint uint64
}

type restriction struct {
	column string
	value  any
}

func (r *Reader) entity(q Query) (entity, error) {
	if r.table.Latest {
		return entity{}, ErrLatest
	}
	id, text, err := r.typedID(q.ID)
	if err != nil {
		return entity{}, err
	}
	e := entity{id: id}
	left := len(q.Where)
	for i, c := range r.clus {
		v, ok := q.Where[c.name]
		if !ok {
			continue
		}
		if i == 0 {
			return entity{}, fmt.Errorf("where %s: the first clustering column is the time; restrict it with the range", c.name)
		}
		left--
		if str, isStr := v.(string); isStr {
			if v, err = ParseValue(c.typ, str); err != nil {
				return entity{}, fmt.Errorf("where %s (%s): %w", c.name, c.typ, err)
			}
		}
		t, err := FormatValue(c.typ, v)
		if err != nil {
			return entity{}, fmt.Errorf("where %s (%s): %w", c.name, c.typ, err)
		}
		e.where = append(e.where, restriction{column: c.name, value: v})
		text = append(text, c.name+"="+t)
	}
	if left > 0 {
		return entity{}, fmt.Errorf("where: only clustering columns after the first can be restricted: %v", r.clusNames()[1:])
	}
	e.fingerprint = fingerprint(r.topic, r.table.Name, text)
	return e, nil
}

func (r *Reader) clusNames() []string {
	out := make([]string, len(r.clus))
	for i, c := range r.clus {
		out[i] = c.name
	}
	return out
}

// decodeCursor decodes a cursor and checks it was made for this topic, entity and restriction.
func (r *Reader) decodeCursor(s string, fp uint64) (cursor, error) {
	c, err := decodeCursor(s)
	if err != nil {
		return cursor{}, err
	}
	if c.Query != fp {
		return cursor{}, fmt.Errorf("%w: it belongs to another topic, entity or restriction", ErrCursor)
	}
	if len(c.Last) != len(r.clus) {
		return cursor{}, fmt.Errorf("%w: %d clustering values, the table has %d", ErrCursor, len(c.Last), len(r.clus))
	}
	return c, nil
}

// typedID parses string id values for non-text columns and returns the id's text forms.
func (r *Reader) typedID(id []any) ([]any, []string, error) {
	if len(id) != len(r.ids) {
		return nil, nil, fmt.Errorf("topics.%s: %d id values given, the id has %d columns %v", r.topic, len(id), len(r.ids), r.idNames())
	}
	out := make([]any, len(id))
	text := make([]string, len(id))
	for i, v := range id {
		if s, ok := v.(string); ok {
			x, err := ParseValue(r.ids[i].typ, s)
			if err != nil {
				return nil, nil, fmt.Errorf("id column %s (%s): %w", r.ids[i].name, r.ids[i].typ, err)
			}
			v = x
		}
		s, err := FormatValue(r.ids[i].typ, v)
		if err != nil {
			return nil, nil, fmt.Errorf("id column %s (%s): %w", r.ids[i].name, r.ids[i].typ, err)
		}
		out[i], text[i] = v, s
	}
	return out, text, nil
}

// Read returns the next page of q: up to q.PageSize rows (all of them when 0, up to q.Limit),
// and the cursor of the page after it.
func (r *Reader) Read(ctx context.Context, q Query) (Page, error) {
	rows := make([]Row, 0, min(remaining(q.PageSize, q.Limit, 0), 4096)) // no bound: grows from 0
	page, err := r.Scan(ctx, q, func(row Row) error {
		rows = append(rows, row)
		return nil
	})
	page.Rows = rows
	return page, err
}

// Scan is Read that hands each row to fn as it is merged instead of collecting the page. An error
// from fn ends the scan and is returned; the page's cursor then resumes after the last row fn
// accepted.
func (r *Reader) Scan(ctx context.Context, q Query, fn func(Row) error) (Page, error) {
	if r.gs == nil {
		return Page{}, errors.New("reader: no Session to read with")
	}
	s, start, err := r.prepare(ctx, q, fn)
	if s == nil || err != nil {
		return Page{}, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		s.wg.Wait()
	}()
	s.ctx = ctx
	more, err := s.run(start)
	page := Page{Warnings: s.warnings, Partitions: s.opened}
	// After an error the caller may still resume after the rows it got.
	if (err == nil && more) || (err != nil && s.emitted > 0) {
		c, cerr := s.cursor()
		if cerr != nil {
			return page, cerr
		}
		page.Cursor = c
	}
	return page, err
}

// prepare checks q (and its cursor) and plans the scan, reading nothing: the scan starts at
// plan index start. A nil scan without an error means the page is empty: the cursor's limit is
// already reached.
func (r *Reader) prepare(ctx context.Context, q Query, fn func(Row) error) (s *scan, start int, err error) {
	e, err := r.entity(q)
	if err != nil {
		return nil, 0, err
	}
	fp := e.fingerprint
	var resume *cursor
	if q.Cursor != "" {
		c, err := r.decodeCursor(q.Cursor, fp)
		if err != nil {
			return nil, 0, err
		}
		q.From, q.To, q.Limit = c.from(), c.to(), c.Limit
		resume = &c
	}
	plan, err := MakePlan(ctx, r.table, e.id, q.From, q.To, r.cfg.MaxPartitions, r.routes())
	if err != nil {
		return nil, 0, err
	}
	s = &scan{r: r, plan: plan, e: e, fn: fn,
		next: cursor{V: cursorVersion, Query: fp, From: q.From.UnixNano(), To: q.To.UnixNano(), Limit: q.Limit},
		sem:  make(chan struct{}, r.cfg.Parallelism), missing: make(map[string]bool)}
	if resume != nil {
		s.next.Returned = resume.Returned
		if start, err = s.resumeAt(resume); err != nil {
			return nil, 0, err
		}
	}
	s.want = remaining(q.PageSize, q.Limit, s.next.Returned)
	if q.Limit > 0 && s.next.Returned >= q.Limit {
		return nil, 0, nil
	}
	return s, start, nil
}

func orDefault(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}
