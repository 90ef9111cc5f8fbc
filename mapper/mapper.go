package mapper

import (
	"encoding/binary"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"github.com/valyala/fastjson"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/bucketer"
	"github.com/bucketsink/sink/config"
)

// Record is one Kafka record, as much of it as mapping needs.
type Record struct {
	Topic     string // the Kafka topic
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte
	Timestamp time.Time // the record timestamp (create or log-append time)
}

// Reasons of a RecordError, also the reason label of sink_records_dead_lettered_total.
const (
	ReasonDecode = "decode" // the value is not a JSON object
	ReasonMap    = "map"    // a field is missing or does not fit its column, or the time is unusable
)

// RecordError is why one record cannot become a row. The pipeline sends the record to its
// topic's dead-letter topic with these coordinates and the message.
type RecordError struct {
	Topic     string
	Partition int32
	Offset    int64
	Reason    string // ReasonDecode or ReasonMap
	Err       error
}

func (e *RecordError) Error() string {
	return "topic " + e.Topic + " partition " + strconv.FormatInt(int64(e.Partition), 10) +
		" offset " + strconv.FormatInt(e.Offset, 10) + ": " + e.Err.Error()
}

func (e *RecordError) Unwrap() error { return e.Err }

// ErrUnknownTopic is wrapped by the RecordError of a record whose Kafka topic no configured topic
// reads; the pipeline subscribes only to configured topics, so it means a wiring bug.
var ErrUnknownTopic = errors.New("no configured topic reads this Kafka topic")

// Mapper maps records of every configured topic. It is immutable after New apart from its
// caches, and safe for concurrent use.
type Mapper struct {
	byKafka map[string]*plan // Kafka topic → plan
	byName  map[string]*plan // topics.<name> → plan
	pool    sync.Pool        // *scratch
}

// scratch is the per-call working memory: a fastjson parser (not safe for concurrent use, so
// pooled) and byte buffers reused across records.
type scratch struct {
	parser fastjson.Parser
	buf    []byte
	key    []byte
	// text collects the bytes of the row's string values while they are converted, and texts
	// says which string slot holds which bytes. Once the row is complete, text and the key are
	// copied into one allocation the row owns and the slots are pointed there (finishRow), so a
	// row's strings cost one allocation however many there are.
	text  []byte
	texts []textRef
}

// textRef is a string slot of row memory and where its bytes are in scratch.text.
type textRef struct{ slot, off, n int }

type source uint8

const (
	srcField source = iota
	srcEventTime
	srcKafkaKey
	srcKafkaTimestamp
	srcKafkaTopic
	srcKafkaPartition
	srcKafkaOffset
	srcTimeUUID
	srcRaw
)

var sources = map[string]source{
	"": srcField, config.SourceEventTime: srcEventTime, config.SourceKafkaKey: srcKafkaKey,
	config.SourceKafkaTimestamp: srcKafkaTimestamp, config.SourceKafkaTopic: srcKafkaTopic,
	config.SourceKafkaPartition: srcKafkaPartition, config.SourceKafkaOffset: srcKafkaOffset,
	config.SourceTimeUUID: srcTimeUUID, config.SourceRaw: srcRaw,
}

// column is one compiled column mapping.
type column struct {
	name   string
	typ    cqlType
	source source
	field  string    // dot path as configured, for messages
	path   []string  // field split at dots, once
	need   string    // why a value is mandatory ("an id column", ...); "" when it may be absent
	slot   slotClass // where the converted value lives in row memory
	at     int       // its index within that class's slots
}

type writeTS uint8

const (
	wtsKafka writeTS = iota
	wtsEventTime
	wtsServer
)

// plan is one compiled topic.
type plan struct {
	name, kafkaTopic  string
	keyspace, table   string
	policy            *bucketer.Policy
	sliced            bool
	cols              []column
	ids               []int // indexes into cols
	clustering        []int
	clusteringDesc    []bool
	hashCols          []int // the columns whose canonical text feeds the event bucket hash
	eventBuckets      int   // 1 = none
	bucketColumn      string
	eventBucketColumn string
	bucketKind        kind
	timeFromKafka     bool
	timeField         string
	timePath          []string
	timeFormat        string
	timeUnit          unit
	ttl               time.Duration
	ttlValue          any // int32 seconds, boxed once; nil without TTL
	wts               writeTS
	consistency       string
	insertCols        []string  // cols, bucket column, event bucket column
	nvals             int       // len(insertCols) + TTL + timestamp
	topicValue        any       // the Kafka topic, boxed once
	ebValues          []any     // int32(0..eventBuckets-1), boxed once
	absent            any       // bound for a missing optional value: gocql.UnsetValue, or nil on protocol 3
	mem               rowLayout // the row memory block (rowmem.go)
	wtsWord           int       // the word slot of the write timestamp
	target            *batcher.Target
	targets           sync.Map                    // slice index (int64) → *batcher.Target
	last              atomic.Pointer[bucketEntry] // the bucket most recently mapped
}

// bucketEntry is everything derived from a bucket index alone. Records arrive roughly in time
// order, so caching the last one spares the key formatting and the slice lookup on most records.
type bucketEntry struct {
	idx    int64
	value  any
	ser    []byte // the bucket value as a routing-key component
	target *batcher.Target
	suffix string
}

// identRE re-checks every name that goes into CQL text; config validation already rejects
// anything else, this guards the invariant where the text is built.
var identRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)

// New validates cfg (see config.Validate) and compiles every topic: column plans, field paths,
// the bucket policy and the INSERT statement. cfg must have its defaults applied (config.Load
// does; a Config built in Go calls ApplyDefaults).
func New(cfg *config.Config) (*Mapper, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m := &Mapper{byKafka: map[string]*plan{}, byName: map[string]*plan{}}
	m.pool.New = func() any {
		return &scratch{buf: make([]byte, 0, 256), key: make([]byte, 0, 128), text: make([]byte, 0, 256)}
	}
	var errs []error
	for _, name := range cfg.TopicNames() {
		p, err := compile(name, cfg.Topics[name])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		// Unset values need native protocol 4; a session pinned to protocol 3 writes nulls instead.
		p.absent = gocql.UnsetValue
		if cfg.Cassandra.ProtocolVersion == 3 {
			p.absent = nil
		}
		m.byKafka[p.kafkaTopic] = p
		m.byName[name] = p
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return m, nil
}

func compile(name string, t config.Topic) (*plan, error) {
	kp := "topics." + name
	policy, err := bucketer.New(t.Spec())
	if err != nil {
		return nil, fmt.Errorf("%s.bucket: %w", kp, err)
	}
	_, sliced := policy.Sliced()
	p := &plan{
		name: name, kafkaTopic: t.Topic, keyspace: t.Keyspace, table: t.Table,
		policy: policy, sliced: sliced,
		eventBuckets:      max(t.Bucket.EventBuckets, 1),
		bucketColumn:      t.Bucket.Column,
		eventBucketColumn: t.Bucket.EventBucketColumn,
		ttl:               time.Duration(t.TTL),
		consistency:       t.Consistency,
		topicValue:        t.Topic,
	}
	for _, id := range []string{p.keyspace, p.table, p.bucketColumn} {
		if !identRE.MatchString(id) {
			return nil, fmt.Errorf("%s: %q is not a plain CQL identifier", kp, id)
		}
	}
	switch policy.CQLType() {
	case "text":
		p.bucketKind = kText
	case "date":
		p.bucketKind = kDate
	case "timestamp":
		p.bucketKind = kTimestamp
	case "int":
		p.bucketKind = kInt
	default:
		p.bucketKind = kBigint
	}

	index := map[string]int{}
	for i, c := range t.Columns {
		cp := fmt.Sprintf("%s.columns[%d]", kp, i)
		typ, err := parseType(c.Type)
		if err != nil {
			return nil, fmt.Errorf("%s.type: %w", cp, err)
		}
		src, ok := sources[c.Source]
		if !ok {
			return nil, fmt.Errorf("%s.source: %q is not a source", cp, c.Source)
		}
		if !identRE.MatchString(c.Name) {
			return nil, fmt.Errorf("%s.name: %q is not a plain CQL identifier", cp, c.Name)
		}
		col := column{name: c.Name, typ: typ, source: src, field: c.Field}
		if src == srcField {
			col.path = strings.Split(c.Field, ".")
		}
		if c.Required {
			col.need = "the column is required"
		}
		index[strings.ToLower(c.Name)] = i
		p.cols = append(p.cols, col)
	}
	lookup := func(path, name string) (int, error) {
		i, ok := index[strings.ToLower(name)]
		if !ok {
			return 0, fmt.Errorf("%s: %q is not a column", path, name)
		}
		return i, nil
	}
	for i, id := range t.ID {
		ci, err := lookup(fmt.Sprintf("%s.id[%d]", kp, i), id)
		if err != nil {
			return nil, err
		}
		p.ids = append(p.ids, ci)
		p.cols[ci].need = "an id column needs a value"
	}
	for i, cl := range t.Clustering {
		ci, err := lookup(fmt.Sprintf("%s.clustering[%d].column", kp, i), cl.Column)
		if err != nil {
			return nil, err
		}
		p.clustering = append(p.clustering, ci)
		p.clusteringDesc = append(p.clusteringDesc, !strings.EqualFold(cl.Order, "asc"))
		p.cols[ci].need = "a clustering column needs a value"
	}
	// The event bucket must vary between the rows of one entity, or it splits nothing: the id columns
	// are already in the partition key, so by default the clustering values (which tell one row of an
	// entity from the next, and are the same on replay) feed the hash.
	p.hashCols = p.clustering
	if p.eventBuckets > 1 {
		if !identRE.MatchString(p.eventBucketColumn) {
			return nil, fmt.Errorf("%s.bucket.event_bucket_column: %q is not a plain CQL identifier", kp, p.eventBucketColumn)
		}
		if f := t.Bucket.EventBucketField; f != "" {
			ci, err := lookup(kp+".bucket.event_bucket_field", f)
			if err != nil {
				return nil, err
			}
			p.hashCols = []int{ci}
			if p.cols[ci].need == "" {
				p.cols[ci].need = "the event bucket is hashed from it"
			}
		}
		for i := range p.eventBuckets {
			p.ebValues = append(p.ebValues, int32(i))
		}
	}

	if t.Time.Source == config.TimeSourceKafka {
		p.timeFromKafka = true
	} else {
		p.timeField, p.timePath, p.timeFormat = t.Time.Field, strings.Split(t.Time.Field, "."), t.Time.Format
		switch t.Time.Format {
		case config.TimeFormatUnixS:
			p.timeUnit = unixS
		case config.TimeFormatUnixMS:
			p.timeUnit = unixMS
		case config.TimeFormatUnixUS:
			p.timeUnit = unixUS
		case config.TimeFormatUnixNS:
			p.timeUnit = unixNS
		}
	}
	switch t.WriteTimestamp {
	case config.WriteTimestampEventTime:
		p.wts = wtsEventTime
	case config.WriteTimestampServer:
		p.wts = wtsServer
	}

	for _, c := range p.cols {
		p.insertCols = append(p.insertCols, c.name)
	}
	p.insertCols = append(p.insertCols, p.bucketColumn)
	if p.eventBuckets > 1 {
		p.insertCols = append(p.insertCols, p.eventBucketColumn)
	}
	p.nvals = len(p.insertCols)
	if p.ttl > 0 {
		p.ttlValue = int32(p.ttl / time.Second)
		p.nvals++
	}
	if p.wts != wtsServer {
		p.nvals++
	}
	if !sliced {
		p.target = p.newTarget(p.table)
	}
	p.layoutRowMemory()
	return p, nil
}

// layoutRowMemory gives every column whose value row memory can hold its slot, and the write
// timestamp its word.
func (p *plan) layoutRowMemory() {
	var nstr, ntime, nword int
	for i := range p.cols {
		c := &p.cols[i]
		c.slot = slotNone
		switch c.source {
		case srcField:
			switch c.typ.kind {
			case kText, kASCII:
				c.slot = slotString
			case kInt, kBigint, kSmallint, kTinyint, kFloat, kDouble:
				c.slot = slotWord
			case kTimestamp, kDate:
				c.slot = slotTime
			case kUUID, kTimeUUID:
				c.slot = slotUUID
			}
		case srcKafkaKey, srcRaw:
			if c.typ.kind != kBlob {
				c.slot = slotString
			}
		case srcEventTime, srcKafkaTimestamp:
			c.slot = slotTime
		case srcKafkaPartition, srcKafkaOffset:
			c.slot = slotWord
		case srcTimeUUID:
			c.slot = slotUUID
		}
		switch c.slot {
		case slotString:
			c.at, nstr = nstr, nstr+1
		case slotTime:
			c.at, ntime = ntime, ntime+1
		case slotWord:
			c.at, nword = nword, nword+1
		case slotUUID:
			c.at, nword = nword, nword+2
		}
	}
	if p.wts != wtsServer {
		p.wtsWord, nword = nword, nword+1
	}
	p.mem = newRowLayout(p.nvals, nstr, ntime, nword)
}

// newTarget builds the target of one table: its INSERT binds every column, then the TTL and the
// write timestamp when the topic has them, so the statement text is constant per table and the
// driver prepares it once.
func (p *plan) newTarget(table string) *batcher.Target {
	var b strings.Builder
	b.WriteString("INSERT INTO ")
	b.WriteString(p.keyspace)
	b.WriteByte('.')
	b.WriteString(table)
	b.WriteString(" (")
	b.WriteString(strings.Join(p.insertCols, ", "))
	b.WriteString(") VALUES (")
	for i := range p.insertCols {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('?')
	}
	b.WriteByte(')')
	switch {
	case p.ttlValue != nil && p.wts != wtsServer:
		b.WriteString(" USING TTL ? AND TIMESTAMP ?")
	case p.ttlValue != nil:
		b.WriteString(" USING TTL ?")
	case p.wts != wtsServer:
		b.WriteString(" USING TIMESTAMP ?")
	}
	return &batcher.Target{
		Keyspace:    p.keyspace,
		Table:       table,
		Insert:      b.String(),
		Columns:     p.insertCols,
		Consistency: p.consistency,
	}
}

// bucket returns the cached derivations of bucket idx.
func (p *plan) bucket(idx int64) *bucketEntry {
	if e := p.last.Load(); e != nil && e.idx == idx {
		return e
	}
	e := &bucketEntry{idx: idx, value: p.policy.Value(idx), target: p.target}
	e.ser = appendSerialized(nil, p.bucketKind, e.value)
	if p.sliced {
		s := p.policy.SliceOfBucket(idx)
		e.suffix = string(p.policy.AppendSliceSuffix(nil, s))
		if t, ok := p.targets.Load(s); ok {
			e.target = t.(*batcher.Target)
		} else {
			t, _ := p.targets.LoadOrStore(s, p.newTarget(p.table+"_"+e.suffix))
			e.target = t.(*batcher.Target)
		}
	}
	p.last.Store(e)
	return e
}

// Map turns one record into the row its topic's policy says, or a *RecordError.
func (m *Mapper) Map(rec Record) (batcher.Row, error) {
	p := m.byKafka[rec.Topic]
	if p == nil {
		return batcher.Row{}, &RecordError{rec.Topic, rec.Partition, rec.Offset, ReasonMap,
			fmt.Errorf("%w (configured topics read %s)", ErrUnknownTopic, strings.Join(m.kafkaTopics(), ", "))}
	}
	s := m.pool.Get().(*scratch)
	out, reason, err := p.mapRecord(&rec, s)
	m.release(s)
	if err != nil {
		return batcher.Row{}, &RecordError{rec.Topic, rec.Partition, rec.Offset, reason, err}
	}
	return out.row, nil
}

// maxScratch bounds the buffers a pooled scratch keeps, so one huge record does not pin its
// size in memory for every goroutine's scratch afterwards.
const maxScratch = 64 << 10

func (m *Mapper) release(s *scratch) {
	if cap(s.buf) > maxScratch {
		s.buf = make([]byte, 0, 256)
	}
	if cap(s.key) > maxScratch {
		s.key = make([]byte, 0, 128)
	}
	if cap(s.text) > maxScratch {
		s.text = make([]byte, 0, 256)
	}
	m.pool.Put(s)
}

func (m *Mapper) kafkaTopics() []string {
	out := make([]string, 0, len(m.byKafka))
	for _, p := range m.byName {
		out = append(out, p.kafkaTopic)
	}
	sort.Strings(out)
	return out
}

// outcome is a mapped record plus the intermediate results explain shows.
type outcome struct {
	row         batcher.Row
	eventTime   time.Time
	bucket      *bucketEntry
	eventBucket int
	writeTS     int64
}

func (p *plan) mapRecord(rec *Record, s *scratch) (outcome, string, error) {
	var out outcome
	if len(rec.Value) == 0 {
		return out, ReasonDecode, errors.New("decoding JSON: the value is empty, not a JSON object")
	}
	root, err := s.parser.ParseBytes(rec.Value)
	if err != nil {
		return out, ReasonDecode, fmt.Errorf("decoding JSON: %w", err)
	}
	if root.Type() != fastjson.TypeObject {
		return out, ReasonDecode, fmt.Errorf("decoding JSON: the value is a JSON %s, not an object", root.Type())
	}

	t, err := p.eventTime(root, rec, s)
	if err != nil {
		return out, ReasonMap, err
	}
	out.eventTime = t

	mem := p.mem.alloc()
	vals := mem.values()
	s.text, s.texts = s.text[:0], s.texts[:0]
	for i := range p.cols {
		v, err := p.value(&p.cols[i], root, rec, t, s, mem)
		if err != nil {
			return out, ReasonMap, err
		}
		vals[i] = v
	}
	n := len(p.cols)

	b := p.bucket(p.policy.Index(t))
	out.bucket = b
	vals[n] = b.value
	n++
	if p.eventBuckets > 1 {
		h := bucketer.NewIDHash()
		for _, ci := range p.hashCols {
			v := vals[ci]
			if v == p.absent {
				return out, ReasonMap, fmt.Errorf("event bucket: column %s has no value to hash", p.cols[ci].name)
			}
			if str, ok := v.(string); ok {
				h.PartString(str)
				continue
			}
			if p.cols[ci].typ.kind == kDate {
				s.buf = appendDateCanonical(s.buf[:0], v.(time.Time))
			} else {
				s.buf = appendCanonical(s.buf[:0], v)
			}
			h.Part(s.buf)
		}
		out.eventBucket = h.Bucket(p.eventBuckets)
		vals[n] = p.ebValues[out.eventBucket]
		n++
	}
	if p.ttlValue != nil {
		vals[n] = p.ttlValue
		n++
	}
	switch p.wts {
	case wtsKafka:
		if rec.Timestamp.IsZero() {
			return out, ReasonMap, errors.New("write timestamp: the record has no Kafka timestamp (write_timestamp kafka needs one)")
		}
		// The offset tiebreak orders records of one partition produced in the same millisecond.
		out.writeTS = rec.Timestamp.UnixMilli()*1000 + rec.Offset%1000
		vals[n] = mem.putInt64(p.wtsWord, out.writeTS)
	case wtsEventTime:
		out.writeTS = t.UnixMicro()
		vals[n] = mem.putInt64(p.wtsWord, out.writeTS)
	}

	// Row key: the routing key of the full partition key (ids, bucket, event bucket).
	key := s.key[:0]
	components := len(p.ids) + 1
	if p.eventBuckets > 1 {
		components++
	}
	for _, ci := range p.ids {
		at := len(key)
		key = appendComponent(key, components, p.cols[ci].typ.kind, vals[ci])
		if n := len(key) - at; n > maxKeyComponent+3 {
			s.key = key[:0]
			return out, ReasonMap, fmt.Errorf("column %s: the value is %d bytes; Cassandra limits a partition key value to %d", p.cols[ci].name, n-3, maxKeyComponent)
		}
	}
	if components == 1 {
		key = append(key, b.ser...)
	} else {
		key = binary.BigEndian.AppendUint16(key, uint16(len(b.ser)))
		key = append(key, b.ser...)
		key = append(key, 0)
	}
	if p.eventBuckets > 1 {
		key = append(key, 0, 4)
		key = binary.BigEndian.AppendUint32(key, uint32(out.eventBucket))
		key = append(key, 0)
	}
	s.key = key

	size := rowOverhead
	for _, v := range vals {
		size += 4 + encodedSize(v)
	}
	out.row = batcher.Row{
		Target:    b.target,
		Key:       finishRow(mem, s, key),
		Values:    vals,
		Size:      size,
		Source:    batcher.Source{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset},
		EventTime: t,
	}
	return out, "", nil
}

// finishRow copies the row's string bytes and its key into one allocation, points the string
// slots there, and returns the key. Until now the slots pointed into scratch.text, which the
// next record reuses.
func finishRow(mem rowMem, s *scratch, key []byte) string {
	own := make([]byte, len(s.text)+len(key))
	copy(own, s.text)
	copy(own[len(s.text):], key)
	for _, r := range s.texts {
		if r.n > 0 {
			*mem.str(r.slot) = unsafe.String(&own[r.off], r.n)
		}
	}
	return unsafe.String(&own[len(s.text)], len(key))
}

// maxKeyComponent is Cassandra's limit on one partition key value (its length is a uint16).
const maxKeyComponent = 65535

// rowOverhead approximates the framing of one batch entry around its values: kind, prepared id
// (16 bytes plus length), value count.
const rowOverhead = 24

// appendComponent appends one partition key component in routing-key form.
func appendComponent(dst []byte, components int, k kind, v any) []byte {
	if components == 1 {
		return appendSerialized(dst, k, v)
	}
	at := len(dst)
	dst = append(dst, 0, 0)
	dst = appendSerialized(dst, k, v)
	binary.BigEndian.PutUint16(dst[at:], uint16(len(dst)-at-2))
	return append(dst, 0)
}

// eventTime finds the record's event time per the topic's time settings.
func (p *plan) eventTime(root *fastjson.Value, rec *Record, s *scratch) (time.Time, error) {
	if p.timeFromKafka {
		if rec.Timestamp.IsZero() {
			return time.Time{}, errors.New("event time: the record has no Kafka timestamp")
		}
		if !inTimeRange(rec.Timestamp) {
			return time.Time{}, fmt.Errorf("event time: the Kafka timestamp %s is out of range (years 0001 to 9999)", rec.Timestamp.UTC().Format(time.RFC3339Nano))
		}
		return rec.Timestamp.UTC(), nil
	}
	v := root.Get(p.timePath...)
	if v == nil {
		return time.Time{}, fmt.Errorf("event time: field %q is missing", p.timeField)
	}
	if v.Type() == fastjson.TypeNull {
		return time.Time{}, fmt.Errorf("event time: field %q is null", p.timeField)
	}
	if p.timeUnit == 0 {
		if v.Type() == fastjson.TypeString {
			b, _ := v.StringBytes()
			if t, err := parseRFC3339(bstr(b)); err == nil {
				if !inTimeRange(t) {
					return time.Time{}, fmt.Errorf("event time: field %q is %s, out of range (years 0001 to 9999)", p.timeField, show(v, s))
				}
				return t, nil
			}
		}
		return time.Time{}, fmt.Errorf("event time: field %q is %s, not RFC 3339 with an offset (e.g. 2024-01-15T10:00:00Z)", p.timeField, show(v, s))
	}
	text, ok := numberText(v, s.buf)
	s.buf = text
	if !ok {
		return time.Time{}, fmt.Errorf("event time: field %q is %s, not a %s number", p.timeField, show(v, s), p.timeFormat)
	}
	t, ok := parseUnix(bstr(text), p.timeUnit)
	if !ok {
		return time.Time{}, fmt.Errorf("event time: field %q is %s, out of range for %s (years 0001 to 9999)", p.timeField, show(v, s), p.timeFormat)
	}
	return t, nil
}

// value computes the bound value of one column, in its row memory slot when it has one.
func (p *plan) value(c *column, root *fastjson.Value, rec *Record, t time.Time, s *scratch, mem rowMem) (any, error) {
	switch c.source {
	case srcField:
		v := root.Get(c.path...)
		if v == nil || v.Type() == fastjson.TypeNull {
			state := "missing"
			if v != nil {
				state = "null"
			}
			if c.need != "" {
				return nil, fmt.Errorf("column %s: field %q is %s, and %s", c.name, c.field, state, c.need)
			}
			// Unset, not null: a null would write a tombstone cell that every read must skip,
			// while an unset column costs nothing and reads back as null all the same.
			return p.absent, nil
		}
		x, pr := p.convertField(c, v, s, mem)
		if !pr.ok() {
			if pr.elem != "" {
				return nil, fmt.Errorf("column %s: field %q %s is %s, %s", c.name, c.field, pr.elem, show(pr.val, s), pr.msg)
			}
			return nil, fmt.Errorf("column %s: field %q is %s, %s", c.name, c.field, show(pr.val, s), pr.msg)
		}
		return x, nil
	case srcEventTime:
		return mem.putTime(c.at, t), nil
	case srcKafkaTimestamp:
		if rec.Timestamp.IsZero() {
			if c.need != "" {
				return nil, fmt.Errorf("column %s: the record has no Kafka timestamp, and %s", c.name, c.need)
			}
			return p.absent, nil
		}
		return mem.putTime(c.at, rec.Timestamp.UTC()), nil
	case srcKafkaKey:
		if rec.Key == nil {
			if c.need != "" {
				return nil, fmt.Errorf("column %s: the record has no Kafka key, and %s", c.name, c.need)
			}
			return p.absent, nil
		}
		return bytesAs(c, rec.Key, "Kafka key", s, mem)
	case srcRaw:
		return bytesAs(c, rec.Value, "record value", s, mem)
	case srcKafkaTopic:
		return p.topicValue, nil
	case srcKafkaPartition:
		if c.typ.kind == kBigint {
			return mem.putInt64(c.at, int64(rec.Partition)), nil
		}
		return mem.putInt32(c.at, rec.Partition), nil
	case srcKafkaOffset:
		return mem.putInt64(c.at, rec.Offset), nil
	case srcTimeUUID:
		u, ok := timeUUID(t, rec.Topic, rec.Partition, rec.Offset)
		if !ok {
			return nil, fmt.Errorf("column %s: event time %s is outside the range of a timeuuid (1582-10-15 to 5236)", c.name, t.Format(time.RFC3339Nano))
		}
		return mem.putUUID(c.at, u), nil
	}
	return nil, fmt.Errorf("column %s: unsupported source", c.name)
}

// convertField converts a field's JSON value for column c: the kinds row memory holds are
// stored in their slot, the others boxed by convert.
func (p *plan) convertField(c *column, v *fastjson.Value, s *scratch, mem rowMem) (any, problem) {
	k := c.typ.kind
	switch c.slot {
	case slotString:
		b, pr := textOf(k, v, &s.buf)
		if !pr.ok() {
			return nil, pr
		}
		return putText(c, b, s, mem), problem{}
	case slotWord:
		if k == kFloat || k == kDouble {
			f, pr := floatOf(k, v, &s.buf)
			if !pr.ok() {
				return nil, pr
			}
			if k == kFloat {
				return mem.putFloat32(c.at, float32(f)), problem{}
			}
			return mem.putFloat64(c.at, f), problem{}
		}
		n, pr := intOf(k, v, &s.buf)
		if !pr.ok() {
			return nil, pr
		}
		switch k {
		case kInt:
			return mem.putInt32(c.at, int32(n)), problem{}
		case kSmallint:
			return mem.putInt16(c.at, int16(n)), problem{}
		case kTinyint:
			return mem.putInt8(c.at, int8(n)), problem{}
		}
		return mem.putInt64(c.at, n), problem{}
	case slotTime:
		var t time.Time
		var pr problem
		if k == kDate {
			t, pr = dateOf(v)
		} else {
			t, pr = timestampOf(v, &s.buf)
		}
		if !pr.ok() {
			return nil, pr
		}
		return mem.putTime(c.at, t), problem{}
	case slotUUID:
		u, pr := uuidOf(k, v)
		if !pr.ok() {
			return nil, pr
		}
		return mem.putUUID(c.at, u), problem{}
	}
	return convert(c.typ, v, &s.buf)
}

// putText stores the text of column c's string slot. Its bytes go to scratch.text for now
// (finishRow moves them into memory the row owns); the slot meanwhile points there, so the event
// bucket hash can read it.
func putText(c *column, b []byte, s *scratch, mem rowMem) any {
	off := len(s.text)
	s.text = append(s.text, b...)
	s.texts = append(s.texts, textRef{slot: c.at, off: off, n: len(b)})
	return mem.putString(c.at, bstr(s.text[off:]))
}

// bytesAs binds Kafka bytes to a text, ascii or blob column.
func bytesAs(c *column, b []byte, what string, s *scratch, mem rowMem) (any, error) {
	switch c.typ.kind {
	case kBlob:
		return append([]byte(nil), b...), nil
	case kASCII:
		for _, x := range b {
			if x >= 0x80 {
				return nil, fmt.Errorf("column %s: the %s is not ASCII for CQL ascii", c.name, what)
			}
		}
	}
	return putText(c, b, s, mem), nil
}

// maxShown bounds how much of a bad value an error message repeats.
const maxShown = 64

// show renders a JSON value for an error message: its JSON text, shortened when long.
func show(v *fastjson.Value, s *scratch) string {
	b := v.MarshalTo(s.key[:0])
	if len(b) > maxShown {
		return string(b[:maxShown]) + "..."
	}
	return string(b)
}
