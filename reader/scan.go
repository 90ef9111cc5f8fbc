package reader

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

// The execution of one query: a goroutine per open partition fetches its pages under a shared
// bound on requests in flight; the caller's goroutine merges the partitions of one time bucket
// at a time and decides how far ahead to open the next ones.

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

// share is the rows to ask one of k partitions of a bucket for. A query with a bound needs want-emitted
// more rows in all, merged from the bucket's partitions, and rows spread evenly over event buckets: each
// partition is asked for its share (and one more), never the whole page, which would read the page once
// per partition. One that runs short asks for the next share on demand. Without a bound, FetchSize.
func (s *scan) share(k int) int {
	if s.want == 0 {
		return s.r.cfg.FetchSize
	}
	return min(s.r.cfg.FetchSize, (max(s.want-s.emitted, 1)+k-1)/k+1)
}

func (s *scan) startBucket(i int) {
	b := s.plan.Buckets[i]
	fetch := s.share(len(b.Partitions))
	var after []any
	if s.after != nil && i == s.afterAt {
		after = s.afterRow
	}
	ss := make([]*stream, len(b.Partitions))
	for k, p := range b.Partitions {
		stmt, args := s.r.statement(b, p, s.plan.Desc, s.e, after)
		// The first page is asked for now: that is the read-ahead of partitions.
		st := &stream{part: p, ch: make(chan chunk, 1), demand: make(chan int, 1), asked: true, siblings: len(b.Partitions)}
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
	// demand asks for the next page, of the rows it carries, when the query has a bound on its rows,
	// so a page that the bound makes unnecessary is never requested; without a bound the next page is
	// fetched while the current one is merged.
	demand   chan int
	asked    bool // a page has been asked for and not yet received
	siblings int  // partitions of the stream's bucket, this one included
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
		rows := scanRows(iter, s.r.table.PartitionKey)
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
			case fetch = <-st.demand:
			case <-s.ctx.Done():
				return
			}
		}
	}
}

// scanRows reads the rows of iter's page as maps of their columns' Go values, the values Iter.MapScan
// gives but for a null, which is nil here (MapScan gives its type's zero value: a null int would read as
// 0, a null timestamp as year 1). It scans through one set of typed destinations for the page
// (Iter.RowData) where MapScan makes new ones, a slice of them and an interface cell per column, for every
// row: on a dense partition those allocations and the garbage they left were most of the reader's CPU.
// Each destination is wrapped in a nullable cell, made once per page, which sees the value's bytes before
// the driver unmarshals them, so a null is told apart without a pointer per value.
// Reusing the destinations shares nothing between rows: the driver unmarshals every string, list, set,
// map, inet, varint and decimal into new memory, but a blob into the slice its destination already holds
// (it appends to it from length 0), so a blob destination is given an empty slice of no capacity before
// each row: its value then lands in memory of its own, and an empty blob stays apart from a null.
//
// The columns named in constant (the partition key: one request reads one partition) hold the same value
// in every row, so they are decoded from the first row only and that value is put in the others; but
// only an immutable one (a string, a number, a time, a UUID, a bool), so that a row changed by its caller
// never changes another. A failed page has no rows; iter.Close returns its error.
func scanRows(iter *gocql.Iter, constant []string) []map[string]any {
	dst, err := iter.RowData()
	if err != nil {
		return nil
	}
	cells := make([]nullable, len(dst.Values))
	args := make([]any, len(dst.Values))
	var blobs []*[]byte
	for i, v := range dst.Values {
		cells[i].dst = v
		args[i] = &cells[i]
		if b, ok := v.(*[]byte); ok {
			blobs = append(blobs, b)
		}
	}
	var tuples []tupleColumn
	for _, c := range iter.Columns() {
		if tt, ok := c.TypeInfo.(gocql.TupleTypeInfo); ok {
			tuples = append(tuples, tupleColumn{c.Name, len(tt.Elems)})
		}
	}
	rows := make([]map[string]any, 0, iter.NumRows())
	var kept []int // the destinations of constant columns, nil after the first row
	for {
		for _, b := range blobs {
			*b = []byte{} // no capacity: the driver's append allocates the row's own
		}
		if !iter.Scan(args...) {
			break
		}
		m := make(map[string]any, len(dst.Columns))
		if len(rows) > 0 {
			for _, i := range kept {
				m[dst.Columns[i]] = rows[0][dst.Columns[i]]
			}
		}
		for i, name := range dst.Columns {
			switch {
			case args[i] == nil:
			case cells[i].null:
				m[name] = nil
			default:
				m[name] = deref(dst.Values[i])
			}
		}
		foldTuples(m, tuples)
		if len(rows) == 0 {
			for i, name := range dst.Columns {
				if slices.Contains(constant, name) && immutable(m[name]) {
					kept = append(kept, i)
					args[i] = nil // the driver skips a nil destination
				}
			}
		}
		rows = append(rows, m)
	}
	return rows
}

// tupleColumn is a tuple column of a page and how many elements it has: the driver scans a tuple as
// one column per element (gocql.TupleColumnName).
type tupleColumn struct {
	name string
	n    int
}

// foldTuples puts the elements of each tuple column of row m back together under the column's name, as
// a []any; a tuple whose elements are all null is a null (the driver cannot tell the two apart).
func foldTuples(m map[string]any, tuples []tupleColumn) {
	for _, tc := range tuples {
		parts := make([]any, tc.n)
		null := true
		for i := range parts {
			key := gocql.TupleColumnName(tc.name, i)
			parts[i] = m[key]
			null = null && parts[i] == nil
			delete(m, key)
		}
		if null {
			m[tc.name] = nil
		} else {
			m[tc.name] = parts
		}
	}
}

// nullable is a scan destination that records whether the value is null and unmarshals it into dst.
type nullable struct {
	dst  any
	null bool
}

func (c *nullable) UnmarshalCQL(info gocql.TypeInfo, data []byte) error {
	c.null = data == nil
	if u, ok := info.(gocql.UDTTypeInfo); ok && data != nil {
		if m, ok := c.dst.(*map[string]any); ok {
			return unmarshalUDT(u, data, m)
		}
	}
	return gocql.Unmarshal(info, data, c.dst)
}

// unmarshalUDT reads a UDT value into *m, a null field as nil: the driver reads a null field as its
// type's zero value (a null text as ""), which would print a value the row does not hold.
func unmarshalUDT(u gocql.UDTTypeInfo, data []byte, m *map[string]any) error {
	out := make(map[string]any, len(u.Elements))
	for _, f := range u.Elements {
		if len(data) < 4 {
			out[f.Name] = nil // fields added to the type after the value was written
			continue
		}
		n := int32(binary.BigEndian.Uint32(data))
		data = data[4:]
		if n < 0 {
			out[f.Name] = nil
			continue
		}
		if int(n) > len(data) {
			return fmt.Errorf("unmarshaling UDT %s: field %s has %d bytes of %d left", u.Name, f.Name, n, len(data))
		}
		var v any
		if err := gocql.Unmarshal(f.Type, data[:n], &v); err != nil {
			return err
		}
		out[f.Name] = v
		data = data[n:]
	}
	*m = out
	return nil
}

// immutable reports whether v can be shared by several rows: no caller can change it in place.
func immutable(v any) bool {
	switch v.(type) {
	case string, int64, int, int32, int16, int8, float64, float32, bool, time.Time, gocql.UUID:
		return true
	}
	return false
}

// deref is the value p points to: the common column types without reflection, the others with it.
func deref(p any) any {
	switch v := p.(type) {
	case *string:
		return *v
	case *int64:
		return *v
	case *int:
		return *v
	case *int32:
		return *v
	case *int16:
		return *v
	case *int8:
		return *v
	case *float64:
		return *v
	case *float32:
		return *v
	case *bool:
		return *v
	case *time.Time:
		return *v
	case *gocql.UUID:
		return *v
	case *[]byte:
		return *v
	case *[][]byte:
		emptyBlobs(*v)
		return *v
	case *map[string][]byte:
		for k, b := range *v {
			if b == nil {
				(*v)[k] = []byte{}
			}
		}
		return *v
	}
	return reflect.ValueOf(p).Elem().Interface()
}

// emptyBlobs makes the nil blobs of a collection empty ones: a collection holds no null, and the driver
// unmarshals an empty element into a nil slice, which would print as a null.
func emptyBlobs(bs [][]byte) {
	for i, b := range bs {
		if b == nil {
			bs[i] = []byte{}
		}
	}
}

// head is the stream's next row, waiting for its page if needed; nil when the stream is done.
func (s *scan) head(st *stream) (map[string]any, error) {
	for len(st.buf) == 0 && !st.done {
		if !st.asked {
			st.asked = true
			// Only a bounded scan's fetcher waits for demand; an unbounded one fetches ahead on its own
			// and never reads it, so a second demand would block forever on the full buffer.
			if s.want > 0 {
				st.demand <- s.share(st.siblings) // never blocks: one demand at a time, and the fetcher took the last
			}
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
