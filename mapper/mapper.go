package mapper

import (
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/bucketer"
	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/packed"
	"github.com/bucketsink/sink/routing"
	"github.com/bucketsink/sink/schema"
)

// Mapper maps records of every configured topic. It is immutable after New apart from its
// caches, and safe for concurrent use.
type Mapper struct {
	byKafka map[string]*feed // Kafka topic → its entries (fanout.go)
	byName  map[string]*plan // topics.<name> → plan
	tables  schema.Tables    // topics.<name> → the table its rows are bound to
	pool    sync.Pool        // *scratch
	// registry serves the writer schemas of the topics whose codec reads them; nil when none does.
	registry codec.Registry
}

// scratch is the per-call working memory, pooled: byte buffers reused across records.
type scratch struct {
	buf []byte // the decoded values' bytes (codec.Plan.Decode's buf)
	key []byte
	// w collects the row's values in their packed form while they are converted, and spans says
	// where each column's bytes are in it. Once the row is complete, its values and key are copied
	// into the one allocation the row owns (packed.Writer.Finish).
	w     packed.Writer
	spans []packed.Span
	// canonText collects the canonical text of the row's hashed columns while they are converted,
	// from the typed values before encoding; canon says where each one is (see column.hash).
	canonText []byte
	canon     []span
	// vals are the codec's decoded fields (decodeValues).
	vals []codec.Value
	// joint is set while the entries of a Kafka topic map one record from their shared values
	// (fanout.go): complete then appends each row's packed values and key to rows, where they are
	// at rowSpans, and the record's rows get one allocation between them (jointRows).
	joint    bool
	rows     []byte
	rowSpans []rowSpan
	// where and src are what filters and header and key columns reuse (where.go, sources.go); nil
	// until first needed.
	where *whereScratch
	src   *sourceScratch
	// image is the row image of a change event being mapped (envelope.go), for messages.
	image image
	// keyOf is the entry whose registry key decoding of the record being mapped (registryKey) is in kvals
	// (their bytes in kbuf), or failed with kerr; nil before the entry first reads the key.
	keyOf *plan
	kvals []codec.Value
	kbuf  []byte
	kerr  error
}

// image is the part of a change event a value is read from.
type image uint8

const (
	imgChange image = iota // the envelope itself (op, ts_ms, source...)
	imgAfter
	imgBefore
)

var imageNames = [...]string{imgChange: "change", imgAfter: "after", imgBefore: "before"}

// sourceScratch is what header and key columns convert into, reused record after record.
type sourceScratch struct {
	buf  []byte
	vals [1]codec.Value
}

// rowSpan is where one row lies in scratch.rows: from off to end, its values the first n bytes.
type rowSpan struct{ off, n, end int }

// span is a range of a scratch buffer.
type span struct{ off, n int }

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
	srcHeader // a record header (sources.go)
	srcKey    // the Kafka key read as text or a JSON object (sources.go)
	srcChange // a change event's envelope (envelope.go)
)

var sources = map[string]source{
	"": srcField, config.SourceEventTime: srcEventTime, config.SourceKafkaKey: srcKafkaKey,
	config.SourceKafkaTimestamp: srcKafkaTimestamp, config.SourceKafkaTopic: srcKafkaTopic,
	config.SourceKafkaPartition: srcKafkaPartition, config.SourceKafkaOffset: srcKafkaOffset,
	config.SourceTimeUUID: srcTimeUUID, config.SourceRaw: srcRaw, config.SourceHeader: srcHeader,
	config.SourceKey: srcKey, config.SourceChange: srcChange,
}

// column is one compiled column mapping.
type column struct {
	name   string
	typ    cqlType
	source source
	field  string // dot path as configured, for messages
	header string // the record header of source header
	// keyPlan reads a column of source key with a field from the key as a JSON object (sources.go);
	// regSlot is its field's index in the registry key decoding (plan.keyReg) instead, -1 when none.
	keyPlan codec.Plan
	regSlot int
	time    codec.TimeFormat // a timestamp or date column's format (config.Column.Format)
	path    []string         // field split at dots, once
	need    string           // why a value is mandatory ("an id column", ...); "" when it may be absent
	// absent is what a missing or null value binds: gocql.UnsetValue (no tombstone), or nil for a
	// column with write_null, or on protocol 3, which has no unset values.
	absent any
	hash   int // its index in scratch.canon when the event bucket hashes it; -1 otherwise
	// direct: the codec hands over a typed value, written by store (text, ascii, the integers,
	// float, double, timestamp, date, uuid, timeuuid); the codec hands the other kinds (boolean,
	// blob, inet, decimal, varint, collections) over as wire bytes (codec.Wire), written by putWire.
	direct bool
}

// codecField is what a codec decodes for field column c: its path, for its type, in its time format
// (by default an integer that feeds a timestamp counts milliseconds, as JSON's epoch milliseconds do).
func (c *column) codecField() codec.Field {
	return codec.Field{Path: c.path, Column: c.name, Type: c.typ.packed(), Time: c.time}
}

// subject names where column c's value comes from, for messages: field "a.b", header "NAME", key
// field "a.b" or the Kafka key.
func (c *column) subject() string {
	switch {
	case c.source == srcHeader:
		return "header " + strconv.Quote(c.header)
	case c.source == srcKey && c.path == nil:
		return "the Kafka key"
	case c.source == srcKey:
		return "key field " + strconv.Quote(c.field)
	case c.source == srcChange:
		return "change field " + strconv.Quote(c.field)
	}
	return "field " + strconv.Quote(c.field)
}

type writeTS uint8

const (
	wtsKafka writeTS = iota
	wtsEventTime
	wtsServer
	wtsOffset
)

// String is the write_timestamp value of w.
func (w writeTS) String() string {
	return [...]string{config.WriteTimestampKafka, config.WriteTimestampEventTime, config.WriteTimestampServer, config.WriteTimestampOffset}[w]
}

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
	eventBuckets      int   // configured (generation 0); 1 = none
	ebColumn          bool  // the partition key has the event bucket column (event buckets or split on)
	split             bool  // split.enabled
	bucketColumn      string
	eventBucketColumn string
	bucketKind        kind
	timeFromKafka     bool
	timeField         string
	timePath          []string
	timeFormat        codec.TimeFormat // the event time's format
	acceptBefore      time.Duration    // the accept window (config.Accept)
	acceptAfter       time.Duration
	ttl               time.Duration
	ttlWire           []byte    // the TTL in seconds as a CQL int, encoded once; nil without TTL
	ttlFromEvent      bool      // ttl_from event_time: each row's TTL is ttl minus its age (rowTTL)
	ttlField          *ttlField // ttl_field: each row's TTL from a field of its record (ttl.go); nil without
	now               func() time.Time
	wts               writeTS
	consistency       string
	insertCols        []string // cols, bucket column, event bucket column
	nhash             int      // how many columns record their canonical text in scratch.canon
	target            *batcher.Target
	routes            routing.Routes              // split decisions of open buckets (route.go)
	targets           sync.Map                    // slice index (int64) → *batcher.Target
	last              atomic.Pointer[bucketEntry] // the bucket most recently mapped

	// desc is the table the rows are bound to (package schema): its INSERT and columns.
	desc schema.Table

	// A latest-value entry (latest.go): no bucket, the write timestamp is the event time with the
	// tie rule's microseconds, and a tombstone may delete (deleteTarget, its DELETE statement).
	latest       bool
	onTombstone  string
	deleteTarget *batcher.Target // nil unless on_tombstone is delete
	keyFields    int             // id columns read from a field: from the tombstone's key when it deletes
	// keyCodec is the entry's key_codec. key decodes a tombstone's Kafka key by a registry key codec
	// (avro, protobuf or json_schema; latest.go); nil for text, and when no id column is read from a
	// field (the key's bytes name the entity as they are). keySlot (per column) is an id column's index
	// in key.fields; -1 for a column that is no id read from a field.
	keyCodec string
	key      *decoder
	keySlot  []int
	// keyIDs are the id fields a tombstone's key holds (keySlot indexes them), and keyText the plan
	// that reads them from a text key holding several (a JSON object; textKey).
	keyIDs  []codec.Field
	keyText codec.Plan

	// decoder is the value's format and the fields the entry's columns and event time need from it
	// (decoder.go).
	decoder
	colSlot  []int // per column: its index in fields; -1 for the other sources
	timeSlot int   // the event time's index in fields; -1 when it comes from Kafka
	ttlSlot  int   // the ttl_field's index in fields; -1 without one

	// The fan-out (fanout.go): shared, the Kafka topic has other entries too; then sharedSlot (per
	// column) and sharedTime are colSlot and timeSlot in the fields the topic decodes for them all.
	shared     bool
	sharedSlot []int
	sharedTime int
	sharedTTL  int

	// where is the entry's filter (where.go); nil when it maps every record. whereSlot (per value field
	// it tests) is the field's index in fields, sharedWhere in the shared decoding's.
	where                  *filter
	whereSlot, sharedWhere []int

	// keyReg decodes the Kafka key by a registry key codec for the key fields that columns of source key
	// and the filter read (sources.go), once per record; nil under key_codec text, and when nothing reads
	// a key field. whereKey (per key field the filter tests) is its index in keyReg.fields.
	keyReg   *decoder
	whereKey []int

	// env reads the entry's change events (envelope.go); nil for an entry without an envelope.
	// timeFromChange: the event time is the change's source time (timePath, read by env).
	env            *envelope
	timeFromChange bool
	onDelete       string
}

// bucketEntry is everything derived from a bucket index alone. Records arrive roughly in time
// order, so caching the last one spares the key formatting and the slice lookup on most records.
type bucketEntry struct {
	idx    int64
	ser    []byte // the bucket value's wire bytes: its bound value and its routing-key component
	target *batcher.Target
	suffix string
}

// bucket returns the cached derivations of bucket idx.
func (p *plan) bucket(idx int64) *bucketEntry {
	if e := p.last.Load(); e != nil && e.idx == idx {
		return e
	}
	v := p.policy.Value(idx)
	e := &bucketEntry{idx: idx, target: p.target}
	ser, err := packed.AppendValue(nil, packed.Scalar(p.bucketKind), v)
	if err != nil { // the policy's values are of its CQL type (bucketer.Policy.Value)
		panic("mapper: topic " + p.name + ": bucket value: " + err.Error())
	}
	e.ser = ser
	if p.sliced {
		s := p.policy.SliceOfBucket(idx)
		e.suffix = string(p.policy.AppendSliceSuffix(nil, s))
		if t, ok := p.targets.Load(s); ok {
			e.target = t.(*batcher.Target)
		} else {
			t, _ := p.targets.LoadOrStore(s, p.newTarget(p.desc.NameOfSlice(s)))
			e.target = t.(*batcher.Target)
		}
	}
	p.last.Store(e)
	return e
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
	s.w.Shrink(maxScratch)
	if cap(s.rows) > maxScratch {
		s.rows = nil
	}
	m.pool.Put(s)
}

func (m *Mapper) kafkaTopics() []string {
	out := make([]string, 0, len(m.byKafka))
	for topic := range m.byKafka {
		out = append(out, topic)
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
	split       *routing.Generation // the split generation that chose the event bucket; nil: generation 0
	entityLen   int                 // the id columns' bytes at the start of row.Key (EntityKey)
	ttl         time.Duration       // the TTL bound (0: none)
	writeTS     int64
	deleted     bool // the row is a delete (a tombstone, on_tombstone delete; a delete event)
	fieldTTL    bool // ttl is the record's ttl_field's (ttl.go), cut to its max or not
	ttlClamped  bool // the ttl_field asked for more than its max
	keySchema   int  // a delete by a registry key codec: the key's writer schema id
	op          byte // a change event's op (c, u, r, d); 0 for a record without an envelope
	// fromKey: the id columns (bit ci mod 64) a delete event's row took from the Kafka key, before lacking them.
	fromKey uint64
}

// newTarget builds the target of one table (the topic's, or one slice's): its INSERT is the
// table description's (schema.Table.Insert).
func (p *plan) newTarget(name string) *batcher.Target {
	return &batcher.Target{
		Topic:       p.kafkaTopic,
		Keyspace:    p.keyspace,
		Table:       name,
		Insert:      p.desc.Insert(name),
		Columns:     p.insertCols,
		Consistency: p.consistency,
		Entry:       p.name,
		Shape:       insertShape(p.desc),
	}
}

// insertShape is what Cassandra counts of the rows of t's INSERT (batcher.DataSize): every column is
// bound, the partition key and clustering columns among them, the others each a cell.
func insertShape(t schema.Table) batcher.RowShape {
	return batcher.RowShape{KeyColumns: len(t.PartitionKey), Clustering: len(t.Clustering),
		Regular: len(t.Columns) - len(t.PartitionKey) - len(t.Clustering), TTL: t.BindsTTL(), Timestamp: t.BindsTimestamp()}
}

// deleteShape is the shape of the rows of t's DELETE: the write timestamp, then the partition key.
func deleteShape(t schema.Table) batcher.RowShape {
	return batcher.RowShape{KeyColumns: len(t.PartitionKey), Timestamp: true}
}

// feed is one Kafka topic as the mapper reads it: its entries and, when it has several, the
// decoding they share.
type feed struct {
	entries []*plan  // in entry-name order
	names   []string // the entries' names, in the same order
	// alone: some entry has an envelope, so each entry maps the records on its own (each reads its own
	// row image, envelope.go); its filter is judged on the change event as written (decoded.go).
	alone bool
	// filtered: some entry has a filter (where). The entries still map from the shared decoding, each
	// judging its filter on it first; only a value that cannot be decoded is left to each entry's own
	// path (refuseAll), where a filter of a header or the key may skip it rather than refuse it.
	filtered bool
	// decoder decodes the union of the entries' fields (each field, type and unit once); unused
	// with one entry, which decodes by its own plan as it always has.
	decoder
}
