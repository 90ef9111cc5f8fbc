package reader

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/mapper"
)

// Defaults of Config.
const (
	DefaultParallelism   = 8
	DefaultReadAhead     = 8
	DefaultFetchSize     = 1000
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
	// Parallelism bounds the requests in flight at once (default 8).
	Parallelism int
	// ReadAhead is how many partitions beyond the time bucket being returned may be read before
	// they are needed (default 8). A query with a limit opens only as many time buckets ahead as
	// the rows seen so far say it needs, so "the latest 100" of a busy entity reads one or two.
	ReadAhead int
	// FetchSize is the rows asked for per request (default 1000), less when a limit needs fewer.
	FetchSize int
	// MaxPartitions caps the partitions one query's range may span (default 10000): a wider
	// range is an error, not a slow read.
	MaxPartitions int
	// Consistency of the reads; 0 is the topic's consistency, else cassandra.consistency.
	Consistency gocql.Consistency
	// Observer, when set, sees every request the reader sends (tests count them).
	Observer gocql.QueryObserver
}

// Reader reads the rows `sink run` wrote for one topic back, by entity and time range, from the
// same configuration. It is safe for concurrent use; every query owns its goroutines and waits
// for them before it returns.
type Reader struct {
	cfg      Config
	gs       *gocql.Session
	topic    string
	table    mapper.Table
	ids      []keyColumn
	clus     []keyColumn // with desc set
	timeCol  string
	timeUUID bool // the time column is a timeuuid: range bounds go through minTimeuuid
	eventCol string
	selects  string // the selected columns, comma separated
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
// int64, float64, time.Time, gocql.UUID, ...) and the partition it came from.
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
// clustering column must hold the event time, as a timestamp or a timeuuid.
func New(cfg Config) (*Reader, error) {
	if cfg.Sink == nil {
		return nil, errors.New("reader: Sink is required")
	}
	name := cfg.Topic
	tc, ok := cfg.Sink.Topics[name]
	if !ok {
		for n, t := range cfg.Sink.Topics {
			if t.Topic == cfg.Topic {
				name, tc, ok = n, t, true
				break
			}
		}
	}
	if !ok {
		return nil, fmt.Errorf("topics.%s: no such topic; configured: %v", cfg.Topic, cfg.Sink.TopicNames())
	}
	m, err := mapper.New(cfg.Sink)
	if err != nil {
		return nil, fmt.Errorf("reader: %w", err)
	}
	t, _ := m.Table(name)
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
	r.selects = strings.Join(names, ", ")
	for _, c := range idColumns(t) {
		r.ids = append(r.ids, keyColumn{name: c, typ: types[c]})
	}
	if t.Policy.EventBuckets() > 1 {
		r.eventCol = t.PartitionKey[len(t.PartitionKey)-1]
	}
	for _, c := range t.Clustering {
		if !comparableType(types[c.Name]) {
			return nil, fmt.Errorf("topics.%s.clustering: column %s is a %s, which the reader cannot order", name, c.Name, types[c.Name])
		}
		r.clus = append(r.clus, keyColumn{name: c.Name, typ: types[c.Name], desc: c.Desc})
	}
	if err := r.checkTimeColumn(tc); err != nil {
		return nil, err
	}
	cons := cfg.Consistency
	if cons == 0 {
		s := tc.Consistency
		if s == "" {
			s = cfg.Sink.Cassandra.Consistency
		}
		if s != "" {
			if cons, err = gocql.ParseConsistencyWrapper(s); err != nil {
				return nil, fmt.Errorf("topics.%s.consistency: %w", name, err)
			}
		}
	}
	r.cons = cons
	return r, nil
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
func (r *Reader) Table() mapper.Table { return r.table }

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
	return MakePlan(r.table, e.id, q.From, q.To, r.cfg.MaxPartitions)
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
	e, err := r.entity(q)
	if err != nil {
		return Page{}, err
	}
	fp := e.fingerprint
	var resume *cursor
	if q.Cursor != "" {
		c, err := r.decodeCursor(q.Cursor, fp)
		if err != nil {
			return Page{}, err
		}
		q.From, q.To, q.Limit = c.from(), c.to(), c.Limit
		resume = &c
	}
	plan, err := MakePlan(r.table, e.id, q.From, q.To, r.cfg.MaxPartitions)
	if err != nil {
		return Page{}, err
	}
	s := &scan{r: r, plan: plan, e: e, fn: fn,
		next: cursor{V: cursorVersion, Query: fp, From: q.From.UnixNano(), To: q.To.UnixNano(), Limit: q.Limit},
		sem:  make(chan struct{}, r.cfg.Parallelism), missing: make(map[string]bool)}
	start := 0
	if resume != nil {
		s.next.Returned = resume.Returned
		if start, err = s.resumeAt(resume); err != nil {
			return Page{}, err
		}
	}
	s.want = remaining(q.PageSize, q.Limit, s.next.Returned)
	if q.Limit > 0 && s.next.Returned >= q.Limit {
		return Page{}, nil
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

// cursor encodes the position after the last row emitted.
func (s *scan) cursor() (string, error) {
	s.next.Last = s.next.Last[:0]
	for k, c := range s.r.clus {
		v, err := FormatValue(c.typ, s.lastKey[k])
		if err != nil {
			return "", fmt.Errorf("making the cursor: clustering column %s: %w", c.name, err)
		}
		s.next.Last = append(s.next.Last, v)
	}
	return s.next.encode(), nil
}

// remaining is how many rows a page may still return: the page size, bounded by what the limit
// leaves; 0 means no bound.
func remaining(pageSize, limit, returned int) int {
	want := pageSize
	if limit > 0 && (want == 0 || limit-returned < want) {
		want = limit - returned
	}
	return want
}

// scan is the state of one Read or Scan.
type scan struct {
	r    *Reader
	ctx  context.Context
	plan Plan
	e    entity
	fn   func(Row) error
	want int // rows this page may return; 0 = no bound

	sem      chan struct{} // bounds requests in flight
	wg       sync.WaitGroup
	streams  map[int][]*stream // by index in plan.Buckets, for the buckets started
	started  int               // buckets [.., started) have their streams
	after    *cursor           // the resumed position, applied to its bucket
	afterAt  int
	afterRow []any // its clustering values, typed

	next     cursor // the cursor after the last row emitted
	lastKey  []any  // the clustering values of the last row emitted
	emitted  int
	opened   int
	warnings []string
	missing  map[string]bool

	// density: rows and buckets seen, to size the read-ahead of a query with a bound.
	rowsSeen, bucketsSeen int
}

func (s *scan) resumeAt(c *cursor) (int, error) {
	for i, b := range s.plan.Buckets {
		if b.Bucket != c.Bucket {
			continue
		}
		s.after, s.afterAt = c, i
		s.afterRow = make([]any, len(c.Last))
		for j, v := range c.Last {
			x, err := ParseValue(s.r.clus[j].typ, v)
			if err != nil {
				return 0, fmt.Errorf("%w: clustering value %d: %v", ErrCursor, j, err)
			}
			s.afterRow[j] = x
		}
		return i, nil
	}
	return 0, fmt.Errorf("%w: its time bucket %d is not in the range it was made for", ErrCursor, c.Bucket)
}

// run merges the buckets from plan index i on; more reports that rows may remain after the page.
func (s *scan) run(i int) (more bool, err error) {
	s.streams = make(map[int][]*stream)
	s.started = i
	for ; i < len(s.plan.Buckets); i++ {
		s.startAhead(i)
		full, err := s.mergeBucket(i)
		delete(s.streams, i)
		if err != nil {
			return false, err
		}
		if full {
			if s.next.Limit > 0 && s.next.Returned >= s.next.Limit {
				return false, nil
			}
			return true, nil
		}
		s.bucketsSeen++
	}
	return false, nil
}

// startAhead opens the streams of bucket i and of as many buckets after it as the read-ahead
// allows: with no bound on the rows, up to ReadAhead partitions; with one, as many buckets as the
// density seen so far says the bound needs (one at first, doubling over empty buckets).
func (s *scan) startAhead(i int) {
	if s.started <= i {
		s.startBucket(i)
	}
	ahead := math.MaxInt
	if s.want > 0 {
		need := s.want - s.emitted
		switch {
		case s.bucketsSeen == 0:
			ahead = 0
		case s.rowsSeen == 0:
			ahead = s.bucketsSeen
		default:
			perBucket := float64(s.rowsSeen) / float64(s.bucketsSeen)
			ahead = int(math.Ceil(float64(need)/perBucket)) - 1
		}
	}
	budget := s.r.cfg.ReadAhead
	for j := i + 1; j < s.started; j++ {
		budget -= len(s.plan.Buckets[j].Partitions)
	}
	for s.started < len(s.plan.Buckets) && s.started-i <= ahead && budget >= len(s.plan.Buckets[s.started].Partitions) {
		budget -= len(s.plan.Buckets[s.started].Partitions)
		s.startBucket(s.started)
	}
}

func (s *scan) startBucket(i int) {
	b := s.plan.Buckets[i]
	fetch := s.r.cfg.FetchSize
	if s.want > 0 {
		fetch = min(fetch, s.want-s.emitted+1)
	}
	var after []any
	if s.after != nil && i == s.afterAt {
		after = s.afterRow
	}
	ss := make([]*stream, len(b.Partitions))
	for k, p := range b.Partitions {
		stmt, args := s.r.statement(b, p, s.plan.Desc, s.e, after)
		// The first page is asked for now: that is the read-ahead of partitions.
		st := &stream{part: p, ch: make(chan chunk, 1), demand: make(chan struct{}, 1), asked: true}
		ss[k] = st
		s.opened++
		s.wg.Add(1)
		go s.fetch(st, stmt, args, fetch)
	}
	s.streams[i] = ss
	s.started = i + 1
}

// statement is the SELECT of one partition, restricted to the bucket's part of the range (and to
// rows from the cursor's on, in the reading order), in the reading order.
func (r *Reader) statement(b TimeBucket, p Partition, desc bool, e entity, after []any) (string, []any) {
	var sb strings.Builder
	args := make([]any, 0, len(e.id)+len(e.where)+4)
	sb.WriteString("SELECT ")
	sb.WriteString(r.selects)
	sb.WriteString(" FROM ")
	sb.WriteString(r.table.Keyspace + "." + p.Table)
	sb.WriteString(" WHERE ")
	for i, c := range r.ids {
		sb.WriteString(c.name + " = ? AND ")
		args = append(args, e.id[i])
	}
	sb.WriteString(r.table.PartitionKey[len(r.ids)] + " = ?")
	args = append(args, p.Key)
	if r.eventCol != "" {
		sb.WriteString(" AND " + r.eventCol + " = ?")
		args = append(args, p.EventBucket)
	}
	bound := func(op string, v any, raw bool) {
		sb.WriteString(" AND " + r.timeCol + " " + op + " ")
		if r.timeUUID && !raw {
			sb.WriteString("minTimeuuid(?)")
		} else {
			sb.WriteString("?")
		}
		args = append(args, v)
	}
	// The cursor's row replaces the bound the reading starts from; rows equal to it are skipped
	// when merged (they are at most the rows sharing its time).
	switch {
	case after != nil && !desc:
		bound(">=", after[0], true)
		bound("<", b.Hi, false)
	case after != nil && desc:
		bound(">=", b.Lo, false)
		bound("<=", after[0], true)
	default:
		bound(">=", b.Lo, false)
		bound("<", b.Hi, false)
	}
	for _, w := range e.where {
		sb.WriteString(" AND " + w.column + " = ?")
		args = append(args, w.value)
	}
	if desc {
		sb.WriteString(" ORDER BY " + r.timeCol + " DESC")
	} else {
		sb.WriteString(" ORDER BY " + r.timeCol + " ASC")
	}
	if len(e.where) > 0 {
		// Safe here: the full partition key and a range of the first clustering column are
		// given, so the filtering reads at most this partition's slice of the range.
		sb.WriteString(" ALLOW FILTERING")
	}
	return sb.String(), args
}

type chunk struct {
	rows []map[string]any
	err  error
}

// stream is one partition's rows, fetched a page at a time by its own goroutine, one page ahead.
type stream struct {
	part Partition
	ch   chan chunk // closed after the last page
	buf  []map[string]any
	done bool
	// demand asks for the next page when the query has a bound on its rows, so a page that the
	// bound makes unnecessary is never requested; without a bound the next page is fetched while
	// the current one is merged.
	demand chan struct{}
	asked  bool // a page has been asked for and not yet received
}

func (s *scan) fetch(st *stream, stmt string, args []any, fetch int) {
	defer s.wg.Done()
	defer close(st.ch)
	var state []byte
	for {
		select {
		case s.sem <- struct{}{}:
		case <-s.ctx.Done():
			return
		}
		q := s.r.gs.Query(stmt, args...).PageSize(fetch).PageState(state).Idempotent(true)
		if s.r.cons != 0 {
			q = q.Consistency(s.r.cons)
		}
		if s.r.cfg.Observer != nil {
			q = q.Observer(s.r.cfg.Observer)
		}
		iter := q.IterContext(s.ctx)
		rows := make([]map[string]any, 0, iter.NumRows())
		for {
			m := make(map[string]any, len(s.r.table.Columns))
			if !iter.MapScan(m) {
				break
			}
			rows = append(rows, m)
		}
		state = iter.PageState()
		err := iter.Close()
		<-s.sem
		if err != nil {
			err = fmt.Errorf("reading %s.%s partition (bucket %d, event bucket %d): %w", s.r.table.Keyspace, st.part.Table, st.part.Bucket, st.part.EventBucket, err)
		}
		select {
		case st.ch <- chunk{rows: rows, err: err}:
		case <-s.ctx.Done():
			return
		}
		if err != nil || len(state) == 0 {
			return
		}
		if s.want > 0 {
			select {
			case <-st.demand:
			case <-s.ctx.Done():
				return
			}
		}
	}
}

// head is the stream's next row, waiting for its page if needed; nil when the stream is done.
func (s *scan) head(st *stream) (map[string]any, error) {
	for len(st.buf) == 0 && !st.done {
		if !st.asked {
			st.asked = true
			st.demand <- struct{}{} // never blocks: one demand at a time, and the goroutine took the last
		}
		select {
		case c, ok := <-st.ch:
			st.asked = false
			if !ok {
				st.done = true
				break
			}
			if c.err != nil {
				st.done = true
				// Slices are created ahead of time and dropped when old, so a range may reach
				// past either end; an unsliced topic's one table missing is a setup error.
				if st.part.Slice == "" || !isMissingTable(c.err) {
					return nil, c.err
				}
				if !s.missing[st.part.Table] {
					s.missing[st.part.Table] = true
					s.warnings = append(s.warnings, fmt.Sprintf("table %s.%s does not exist: its slice is read as empty", s.r.table.Keyspace, st.part.Table))
				}
			}
			st.buf = c.rows
		case <-s.ctx.Done():
			return nil, s.ctx.Err()
		}
	}
	if len(st.buf) == 0 {
		return nil, nil
	}
	return st.buf[0], nil
}

func isMissingTable(err error) bool {
	// Cassandra 4 says "unconfigured table t", Cassandra 5 "table t does not exist".
	var inv *gocql.RequestErrInvalid
	if !errors.As(err, &inv) {
		return false
	}
	msg := strings.ToLower(inv.Error())
	return strings.Contains(msg, "unconfigured table") || strings.Contains(msg, "does not exist")
}

// mergeBucket returns the rows of bucket i in order until the page is full (full = true).
func (s *scan) mergeBucket(i int) (full bool, err error) {
	streams := s.streams[i]
	var after []any
	if s.after != nil && i == s.afterAt {
		after = s.afterRow
	}
	for {
		best, bestRow := -1, map[string]any(nil)
		for k, st := range streams {
			row, err := s.head(st)
			if err != nil {
				return false, err
			}
			if row == nil {
				continue
			}
			if best < 0 || s.r.before(row, st.part.EventBucket, bestRow, streams[best].part.EventBucket, s.plan.Desc) {
				best, bestRow = k, row
			}
		}
		if best < 0 {
			return false, nil
		}
		st := streams[best]
		st.buf = st.buf[1:]
		if after != nil && !s.r.afterCursor(bestRow, st.part.EventBucket, after, s.after.Event, s.plan.Desc) {
			continue
		}
		if err := s.fn(Row{Values: bestRow, Partition: st.part}); err != nil {
			return false, err
		}
		s.emitted++
		s.rowsSeen++
		s.next.Returned++
		s.next.Bucket, s.next.Event = st.part.Bucket, st.part.EventBucket
		// Kept as values and put in text form once, for the page's cursor: copied, because fn may
		// change the row it was given.
		if s.lastKey == nil {
			s.lastKey = make([]any, len(s.r.clus))
		}
		for k, c := range s.r.clus {
			s.lastKey[k] = bestRow[c.name]
		}
		if s.want > 0 && s.emitted >= s.want {
			return true, nil
		}
	}
}

// compare orders two rows' clustering values in the reading order: the table's clustering order,
// or all of it reversed when the read runs against the first column's order (which is what
// Cassandra returns for ORDER BY on the first column). b may be a row (map) or a cursor's values.
func (r *Reader) compare(a map[string]any, b func(i int, name string) any, desc bool) int {
	rev := desc != r.clus[0].desc
	for i, c := range r.clus {
		x := compareValues(c.typ, a[c.name], b(i, c.name))
		if c.desc != rev {
			x = -x
		}
		if x != 0 {
			return x
		}
	}
	return 0
}

// before reports whether row a (of event bucket ea) comes before row b (of eb) in the reading
// order; rows with equal clustering values in two event buckets come in event bucket order, so
// the order is total and a cursor can name a position in it.
func (r *Reader) before(a map[string]any, ea int, b map[string]any, eb int, desc bool) bool {
	c := r.compare(a, func(_ int, name string) any { return b[name] }, desc)
	if c != 0 {
		return c < 0
	}
	return ea < eb
}

// afterCursor reports whether row (of event bucket e) comes after the cursor's row.
func (r *Reader) afterCursor(row map[string]any, e int, last []any, lastE int, desc bool) bool {
	c := r.compare(row, func(i int, _ string) any { return last[i] }, desc)
	if c != 0 {
		return c > 0
	}
	return e > lastE
}

func orDefault(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}
