package mapper

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
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
	"github.com/bucketsink/sink/codec"
	jsonc "github.com/bucketsink/sink/codec/json"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/packed"
	"github.com/bucketsink/sink/routing"
	"github.com/bucketsink/sink/schema"
)

// Record is one Kafka record, as much of it as mapping needs.
type Record struct {
	Topic     string // the Kafka topic
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte
	Timestamp time.Time // the record timestamp (create or log-append time); see kafkaTime
	// SchemaIDHeader: the record has a __value_schema_id header, the newer Confluent clients' way of
	// carrying the writer schema's id beside the value instead of in its first 5 bytes. The sink does
	// not read that form (decoded.go says so in the dead letter).
	SchemaIDHeader bool
	// KeySchemaIDHeader: the record has a __key_schema_id header, the same form for the key, which a
	// registry key codec does not read either (latest.go says so in the dead letter).
	KeySchemaIDHeader bool
	// Headers are the record's headers, which filters read (where.go); the mapper does not keep them.
	Headers []Header
}

// HeaderValueSchemaID and HeaderKeySchemaID are the record headers in which the newer Confluent
// clients carry a value's and a key's writer schema id (a GUID) instead of the wire format's prefix.
const (
	HeaderValueSchemaID = "__value_schema_id"
	HeaderKeySchemaID   = "__key_schema_id"
)

// kafkaTime is the record's Kafka timestamp, and false when it has none. A record produced
// without a timestamp carries -1, which franz-go hands on as 1969-12-31T23:59:59.999Z, and
// brokers refuse every other negative timestamp, so any instant before the Unix epoch (the
// zero time.Time included) means "no timestamp", never an event of 1969.
func kafkaTime(rec *Record) (time.Time, bool) {
	if rec.Timestamp.UnixMilli() < 0 {
		return time.Time{}, false
	}
	return rec.Timestamp.UTC(), true
}

// Reasons of a RecordError, also the reason label of sink_records_dead_lettered_total (of
// sink_records_skipped_total for ReasonExpired: the pipeline skips such a record, it is not bad input).
const (
	ReasonDecode  = "decode"  // the value is not a JSON object
	ReasonMap     = "map"     // a field is missing or does not fit its column, or the time is unusable
	ReasonExpired = "expired" // ttl_from event_time: the event is older than the ttl, so its row would be born expired
	// ReasonSchema: the writer schema cannot feed a configured field (codec.SchemaError), or the
	// registry has no schema with the record's id.
	ReasonSchema = codec.ReasonSchema
	// ReasonLate and ReasonFuture: the event time lies further before (after) the record's Kafka
	// timestamp than the topic's accept window allows.
	ReasonLate   = "late"
	ReasonFuture = "future"
	// ReasonTombstone: the record is a tombstone (a null value) and its entry's on_tombstone is skip;
	// the pipeline skips it, like ReasonExpired.
	ReasonTombstone = "tombstone"
	// ReasonKey: on_tombstone delete, and the tombstone's Kafka key does not name an entity of the
	// entry (latest.go says how a key names one).
	ReasonKey = "key"
)

// Skipped reports whether reason is a skip reason (ReasonExpired, ReasonTombstone, ReasonFiltered): the record is not
// bad input, and its entry makes no row of it; the pipeline commits it and counts it in
// sink_records_skipped_total{reason}. Every other reason is a refusal.
func Skipped(reason string) bool {
	return reason == ReasonExpired || reason == ReasonTombstone || reason == ReasonFiltered
}

// RecordError is why one entry cannot make a row of one record, or skips it (a skip reason: ReasonExpired,
// ReasonTombstone). The pipeline sends the record to its topic's dead-letter topic with these
// coordinates and the message.
type RecordError struct {
	Topic     string
	Partition int32
	Offset    int64
	Reason    string // ReasonDecode, ReasonMap, ReasonSchema, ReasonExpired, ReasonLate, ReasonFuture, ReasonTombstone or ReasonKey
	Err       error
	// Entry is the entry (topics.<name>) that refused the record; "" for an error of the whole
	// record that no entry was asked about (ErrUnknownTopic).
	Entry string
	// shared: the Kafka topic has several entries, so the message names the one that refused.
	shared bool
}

func (e *RecordError) Error() string {
	head := "topic " + e.Topic + " partition " + strconv.FormatInt(int64(e.Partition), 10) +
		" offset " + strconv.FormatInt(e.Offset, 10) + ": "
	if e.shared {
		head += "topics." + e.Entry + ": "
	}
	return head + e.Err.Error()
}

func (e *RecordError) Unwrap() error { return e.Err }

// Quoted is Error with the bad value shown (see the package function Quoted).
func (e *RecordError) Quoted() string { return Quoted(e) }

// ErrUnknownTopic is wrapped by the RecordError of a record whose Kafka topic no configured topic
// reads; the pipeline subscribes only to configured topics, so it means a wiring bug.
var ErrUnknownTopic = errors.New("no configured topic reads this Kafka topic")

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

// scratch is the per-call working memory: a fastjson parser (not safe for concurrent use, so
// pooled) and byte buffers reused across records.
type scratch struct {
	parser fastjson.Parser
	buf    []byte
	key    []byte
	// w collects the row's values in their packed form while they are converted, and spans says
	// where each column's bytes are in it. Once the row is complete, its values and key are copied
	// into the one allocation the row owns (packed.Writer.Finish).
	w     packed.Writer
	spans []packed.Span
	// canonText collects the canonical text of the row's hashed columns while they are converted,
	// from the typed values before encoding; canon says where each one is (see column.hash).
	canonText []byte
	canon     []span
	// coll and entries are where a value that is not encoded through a cell is converted (a
	// collection, boolean, blob, inet, decimal or varint: appendConverted).
	coll    []byte
	entries []mapEntry
	// vals are a schema-registry codec's decoded fields (decoded.go).
	vals []codec.Value
	// arena builds the value a tombstone's key stands for (keyRoot).
	arena fastjson.Arena
	// joint is set while the entries of a Kafka topic map one record from their shared values
	// (fanout.go): complete then appends each row's packed values and key to rows, where they are
	// at rowSpans, and the record's rows get one allocation between them (jointRows).
	joint    bool
	rows     []byte
	rowSpans []rowSpan
	// where is what filters reuse (where.go); nil until a filter first runs.
	where *whereScratch
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
)

var sources = map[string]source{
	"": srcField, config.SourceEventTime: srcEventTime, config.SourceKafkaKey: srcKafkaKey,
	config.SourceKafkaTimestamp: srcKafkaTimestamp, config.SourceKafkaTopic: srcKafkaTopic,
	config.SourceKafkaPartition: srcKafkaPartition, config.SourceKafkaOffset: srcKafkaOffset,
	config.SourceTimeUUID: srcTimeUUID, config.SourceRaw: srcRaw, config.SourceHeader: srcHeader,
	config.SourceKey: srcKey,
}

// column is one compiled column mapping.
type column struct {
	name   string
	typ    cqlType
	source source
	field  string   // dot path as configured, for messages
	header string   // the record header of source header
	path   []string // field split at dots, once
	need   string   // why a value is mandatory ("an id column", ...); "" when it may be absent
	// absent is what a missing or null value binds: gocql.UnsetValue (no tombstone), or nil for a
	// column with write_null, or on protocol 3, which has no unset values.
	absent any
	hash   int // its index in scratch.canon when the event bucket hashes it; -1 otherwise
	// direct: the value converts to a cell and is written by store (text, ascii, the integers,
	// float, double, timestamp, date, uuid, timeuuid); the other kinds (boolean, blob, inet,
	// decimal, varint, collections) are appended as wire bytes straight from the JSON
	// (appendConverted, then putWire).
	direct bool
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
	timeFormat        string
	timeUnit          unit
	acceptBefore      time.Duration // the accept window (config.Accept)
	acceptAfter       time.Duration
	ttl               time.Duration
	ttlWire           []byte // the TTL in seconds as a CQL int, encoded once; nil without TTL
	ttlFromEvent      bool   // ttl_from event_time: each row's TTL is ttl minus its age (rowTTL)
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

	// decoder is the value's format and the fields the entry's columns and event time need from it
	// (decoded.go).
	decoder
	colSlot  []int // per column: its index in fields; -1 for the other sources
	timeSlot int   // the event time's index in fields; -1 when it comes from Kafka

	// The fan-out (fanout.go): shared, the Kafka topic has other entries too; then sharedSlot (per
	// column) and sharedTime are colSlot and timeSlot in the fields the topic decodes for them all.
	shared     bool
	sharedSlot []int
	sharedTime int

	// where is the entry's filter (where.go); nil when it maps every record.
	where *where
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

// Map turns one record into the row its topic's policy says, or a *RecordError; see MapContext.
func (m *Mapper) Map(rec Record) (batcher.Row, error) {
	return m.MapContext(context.Background(), rec)
}

// MapContext is Map, with ctx bounding a fetch of the record's writer schema from the registry
// (the first record of each schema id). When the registry does not answer, the error wraps a
// *codec.UnavailableError and is no *RecordError: the record is not at fault, and mapping it again
// later will succeed. It maps for a Kafka topic read by one entry; a topic with several is an error
// that says to use MapAll.
func (m *Mapper) MapContext(ctx context.Context, rec Record) (batcher.Row, error) {
	f := m.byKafka[rec.Topic]
	if f == nil {
		return batcher.Row{}, m.unknownTopic(&rec)
	}
	if len(f.entries) > 1 {
		return batcher.Row{}, fmt.Errorf("mapper: Kafka topic %s is read by %d entries (%s): map its records with MapAll",
			rec.Topic, len(f.entries), strings.Join(f.names, ", "))
	}
	return m.mapEntry(ctx, f.entries[0], &rec)
}

// unknownTopic is the error of a record whose Kafka topic no entry reads.
func (m *Mapper) unknownTopic(rec *Record) error {
	return &RecordError{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset, Reason: ReasonMap,
		Err: fmt.Errorf("%w (configured topics read %s)", ErrUnknownTopic, strings.Join(m.kafkaTopics(), ", "))}
}

// recordError is the error of a record that entry p cannot map: a *RecordError, except while the
// registry does not answer.
func (p *plan) recordError(rec *Record, reason string, err error) error {
	if ue := (*codec.UnavailableError)(nil); errors.As(err, &ue) {
		return fmt.Errorf("topic %s partition %d offset %d: %w", rec.Topic, rec.Partition, rec.Offset, err)
	}
	return &RecordError{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset, Reason: reason, Err: err,
		Entry: p.name, shared: p.shared}
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
	if cap(s.coll) > maxScratch {
		s.coll = nil
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
	deleted     bool // the row is a delete (a tombstone, on_tombstone delete)
	keySchema   int  // a delete by a registry key codec: the key's writer schema id
}

// mapRecord maps one record by its topic's codec, the same way for every codec: a registry
// codec's framing and writer schema first (decoded.go), then the plan's values into the row
// (mapValues). Plain JSON is a codec with no writer schema; json_schema is the framing and the
// JSON codec. A JSON plan maps only what it is sure of (package codec/json): every other JSON
// record, and every error, is mapped again by fastjson (mapParsed), the reference for JSON's rows
// and error messages.
func (p *plan) mapRecord(ctx context.Context, rec *Record, s *scratch) (outcome, string, error) {
	if p.where != nil {
		if err := p.takes(rec, s); err != nil {
			return outcome{}, ReasonFiltered, err
		}
	}
	if rec.Value == nil && p.onTombstone != config.OnTombstoneDeadLetter {
		return p.tombstone(ctx, rec, s)
	}
	if !p.framed {
		if p.scan != nil {
			if out, ok := p.mapScanned(rec, s); ok {
				return out, "", nil
			}
		}
		return p.mapParsed(rec, s)
	}
	id, body, err := p.frame(rec)
	if err != nil {
		return outcome{}, ReasonDecode, err
	}
	wp, reason, err := p.writerPlan(ctx, id)
	if err != nil {
		return outcome{}, reason, err
	}
	if !p.reference {
		return p.mapValues(wp, rec, body, s)
	}
	// json_schema: from here on the record's value is its JSON body (a raw column writes the body).
	inner := *rec
	inner.Value = body
	if out, _, err := p.mapValues(wp, &inner, body, s); err == nil {
		return out, "", nil
	}
	return p.mapParsed(&inner, s)
}

// mapScanned maps a plain JSON record through the topic's plan; false when the plan, or any step
// after it, does not map the record, which the reference must then map.
func (p *plan) mapScanned(rec *Record, s *scratch) (outcome, bool) {
	out, _, err := p.mapValues(p.scan, rec, rec.Value, s)
	return out, err == nil
}

// mapParsed maps one record from fastjson's value tree.
func (p *plan) mapParsed(rec *Record, s *scratch) (outcome, string, error) {
	root, err := parseJSON(rec, s)
	if err != nil {
		return outcome{}, ReasonDecode, err
	}
	return p.mapRoot(root, rec, s)
}

// parseJSON parses the record's value with fastjson, the reference: the root object, or the decode
// error of the whole value (whose reason is ReasonDecode). The root lives until s.parser parses again.
func parseJSON(rec *Record, s *scratch) (*fastjson.Value, error) {
	if rec.Value == nil {
		// Kafka's null value: a tombstone, which compacted topics use to delete a key.
		return nil, errors.New("decoding JSON: the record value is null (a tombstone), not a JSON object")
	}
	if len(rec.Value) == 0 {
		return nil, errors.New("decoding JSON: the record value is empty (0 bytes), not a JSON object")
	}
	root, err := s.parser.ParseBytes(rec.Value)
	if err != nil {
		return nil, notJSON(err)
	}
	if root.Type() != fastjson.TypeObject {
		return nil, fmt.Errorf("decoding JSON: the value is a JSON %s, not an object", root.Type())
	}
	if bad, path := lenientNumber(root, s); bad != nil {
		const why = "a number outside JSON's grammar (NaN, Infinity, +1, 1-2 and the like), refused in any field"
		return nil, &valueError{plain: "decoding JSON: the value holds " + why,
			quoted: fmt.Sprintf("decoding JSON: field %q is %s, %s", path, show(bad, s), why)}
	}
	return root, nil
}

// mapRoot maps one record from the root of its fastjson tree.
func (p *plan) mapRoot(root *fastjson.Value, rec *Record, s *scratch) (outcome, string, error) {
	var out outcome
	t, err := p.eventTime(root, rec, s)
	if reason, err := p.admit(t, err, rec); err != nil {
		return out, reason, err
	}
	out.eventTime = t

	s.begin(p)
	for i := range p.cols {
		if err := p.value(&p.cols[i], root, rec, t, s); err != nil {
			return out, ReasonMap, err
		}
		s.spans[i] = s.w.Last()
	}
	reason, err := p.completeRow(&out, rec, s)
	return out, reason, err
}

// completeRow is complete, with the reason of its error.
func (p *plan) completeRow(out *outcome, rec *Record, s *scratch) (string, error) {
	if err := p.complete(out, rec, s); err != nil {
		if errors.Is(err, errExpired) {
			return ReasonExpired, err
		}
		return ReasonMap, err
	}
	return "", nil
}

// begin readies the scratch buffers that collect a row's values and canonical texts.
func (s *scratch) begin(p *plan) {
	s.w.Reset()
	if cap(s.spans) < len(p.cols) {
		s.spans = make([]packed.Span, len(p.cols))
	}
	s.spans = s.spans[:len(p.cols)]
	s.canonText = s.canonText[:0]
	if cap(s.canon) < p.nhash {
		s.canon = make([]span, p.nhash)
	}
	s.canon = s.canon[:p.nhash]
}

// hashBucket is the event bucket among k of the row being built: the hash of the canonical texts
// of its hash columns (bucketer.IDHash), mod k.
func (p *plan) hashBucket(s *scratch, k int) (int, error) {
	h := bucketer.NewIDHash()
	for _, ci := range p.hashCols {
		c := &p.cols[ci]
		if s.spans[ci].Absent() {
			return 0, fmt.Errorf("event bucket: column %s has no value to hash", c.name)
		}
		sp := s.canon[c.hash]
		h.Part(s.canonText[sp.off : sp.off+sp.n])
	}
	return h.Bucket(k), nil
}

// complete finishes a row whose column values are in s.w and whose event time is out.eventTime:
// bucket, event bucket, TTL, write timestamp, routing key and size. Its errors are ReasonMap.
func (p *plan) complete(out *outcome, rec *Record, s *scratch) error {
	t := out.eventTime
	w := &s.w

	components := len(p.ids)
	var b *bucketEntry
	if !p.latest {
		b = p.bucket(p.policy.Index(t))
		out.bucket = b
		w.Encoded(packed.Scalar(p.bucketKind), b.ser)
		components++
	}
	// The id columns' part of the routing key comes first: a split entity is known by it.
	key := s.key[:0]
	if p.ebColumn {
		components++
	}
	for _, ci := range p.ids {
		at := len(key)
		key = packed.AppendKeyComponent(key, components, w.Wire(s.spans[ci]))
		if n := len(key) - at; n > maxKeyComponent+3 {
			s.key = key[:0]
			return fmt.Errorf("column %s: the value is %d bytes; Cassandra limits a partition key value to %d", p.cols[ci].name, n-3, maxKeyComponent)
		}
	}
	s.key = key
	out.entityLen = len(key)
	if p.ebColumn {
		k, first := p.eventBuckets, 0
		out.split = nil
		if p.routes.HasBucket(b.idx) {
			// Route keeps no reference to the entity: a view of the scratch key allocates nothing.
			if g := p.routes.Route(b.idx, bstr(key), t, rec.Partition, rec.Offset); g != nil {
				k, first, out.split = g.Buckets, g.First, g
			}
		}
		out.eventBucket = first
		if k > 1 {
			eb, err := p.hashBucket(s, k)
			if err != nil {
				return err
			}
			out.eventBucket = first + eb
		}
		w.Integer(kInt, int64(out.eventBucket))
	}
	out.ttl = p.ttl
	if p.ttlFromEvent {
		secs, err := p.rowTTL(t)
		if err != nil {
			return err
		}
		w.Integer(kInt, int64(secs))
		out.ttl = time.Duration(secs) * time.Second
	} else if p.ttlWire != nil {
		w.Encoded(packed.Scalar(kInt), p.ttlWire)
	}
	switch p.wts {
	case wtsKafka:
		kt, ok := kafkaTime(rec)
		if !ok {
			return errors.New("write timestamp: the record has no Kafka timestamp (-1); write_timestamp kafka needs one")
		}
		// The offset tiebreak orders records of one partition produced in the same millisecond,
		// but only within a run of 1000 offsets: offset 2000 loses to 1999 (write_timestamp offset
		// has no such wrap).
		out.writeTS = kt.UnixMilli()*1000 + rec.Offset%1000
	case wtsEventTime:
		out.writeTS = t.UnixMicro()
		if p.latest {
			out.writeTS = latestWriteTS(t, rec.Offset)
		}
	case wtsOffset:
		// Strictly increasing along a partition, the same on every replay, and independent of
		// any clock.
		out.writeTS = rec.Offset
	}
	if p.wts != wtsServer {
		w.Integer(kBigint, out.writeTS)
	}

	// Row key: the routing key of the full partition key (ids, then bucket and event bucket).
	target := p.target
	if b != nil {
		key, target = packed.AppendKeyComponent(s.key, components, b.ser), b.target
	}
	if p.ebColumn {
		key = append(key, 0, 4)
		key = binary.BigEndian.AppendUint32(key, uint32(out.eventBucket))
		key = append(key, 0)
	}
	s.key = key

	out.row = batcher.Row{
		Target:      target,
		Offset:      rec.Offset,
		EventMicros: batcher.EventMicros(t),
		Partition:   rec.Partition,
		Size:        int32(rowOverhead + w.Size()),
	}
	if s.joint {
		off := len(s.rows)
		var n int
		s.rows, n = w.AppendRow(s.rows, key)
		s.rowSpans = append(s.rowSpans, rowSpan{off, n, len(s.rows)})
		return nil
	}
	out.row.Packed, out.row.Key = w.Finish(key)
	return nil
}

// maxTTL is Cassandra's largest TTL, 20 years, in seconds.
const maxTTL = 20 * 365 * 24 * 3600

// errExpired is wrapped by the error of a record whose event is older than its topic's ttl under
// ttl_from event_time; its reason is ReasonExpired.
var errExpired = errors.New("expired")

// rowTTL is the TTL of a row with event time t under ttl_from event_time: what is left of the ttl
// at p.now(), in whole seconds rounded down, so that the row expires at t + ttl (later only by the
// time between mapping and the write). Cassandra counts a TTL from the moment the coordinator
// applies the write, whatever the write timestamp, so that is the only way to make the expiry a
// function of the event: a replay a year later writes a TTL a year shorter, and the same expiry.
// An event in the future gets more than ttl, up to Cassandra's limit of 20 years. Less than one
// second left is errExpired: a TTL of 0 would mean "never expires".
func (p *plan) rowTTL(t time.Time) (int32, error) {
	age := p.now().Sub(t) // Sub saturates at the extremes; the comparisons below never overflow
	switch {
	case age > p.ttl-time.Second:
		// Within the last second of the ttl the end is still ahead, but less than the one second a TTL
		// can say; past it, the distance is said to the second (time.Sub's sub-second digits are noise).
		var ends string
		switch past := age - p.ttl; {
		case past < 0:
			ends = "ends in under a second, and a TTL counts whole seconds (0 would mean never)"
		case past < time.Second:
			ends = "ended under a second ago"
		default:
			ends = "ended " + distance(past) + " ago"
		}
		return 0, fmt.Errorf("%w: event time %s plus ttl %s %s; the row would be born expired (ttl_from event_time)",
			errExpired, t.Format(time.RFC3339Nano), config.Duration(p.ttl), ends)
	case age < p.ttl-maxTTL*time.Second:
		return maxTTL, nil
	}
	return int32((p.ttl - age) / time.Second), nil
}

// maxKeyComponent is Cassandra's limit on one partition key value (its length is a uint16).
const maxKeyComponent = 65535

// rowOverhead approximates the framing of one batch entry around its values: kind, prepared id
// (16 bytes plus length), value count.
const rowOverhead = 24

// eventTime finds the record's event time per the topic's time settings.
func (p *plan) eventTime(root *fastjson.Value, rec *Record, s *scratch) (time.Time, error) {
	if p.timeFromKafka {
		kt, ok := kafkaTime(rec)
		if !ok {
			return time.Time{}, errors.New("event time: the record has no Kafka timestamp (-1), and time.source kafka takes the event time from it")
		}
		if !inTimeRange(kt) {
			return time.Time{}, fmt.Errorf("event time: the Kafka timestamp %s is out of range (years 0000 to 9999)", kt.Format(time.RFC3339Nano))
		}
		return kt, nil
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
			if t, err := jsonc.ParseRFC3339(bstr(b)); err == nil {
				if !inTimeRange(t) {
					return time.Time{}, badValue(fmt.Sprintf("event time: field %q", p.timeField), show(v, s), "out of range (years 0000 to 9999)")
				}
				return t, nil
			} else if err == jsonc.ErrRFC3339Offset {
				return time.Time{}, badValue(fmt.Sprintf("event time: field %q", p.timeField), show(v, s), jsonc.OffsetProblem)
			}
		}
		return time.Time{}, badValue(fmt.Sprintf("event time: field %q", p.timeField), show(v, s), "not RFC 3339 with an offset (e.g. 2024-01-15T10:00:00Z)")
	}
	text, ok := numberText(v, s.buf)
	s.buf = text
	if !ok {
		return time.Time{}, badValue(fmt.Sprintf("event time: field %q", p.timeField), show(v, s), "not a "+p.timeFormat+" number")
	}
	t, ok := jsonc.ParseUnix(bstr(text), time.Duration(p.timeUnit))
	if !ok {
		return time.Time{}, badValue(fmt.Sprintf("event time: field %q", p.timeField), show(v, s), "out of range for "+p.timeFormat+" (years 0000 to 9999)")
	}
	return t, nil
}

// admit is the reason and error of a record whose event time is t, or could not be found (err):
// ReasonMap for err, else accept's.
func (p *plan) admit(t time.Time, err error, rec *Record) (string, error) {
	if err != nil {
		return ReasonMap, err
	}
	return p.accept(t, rec)
}

// accept checks event time t against the record's Kafka timestamp and the topic's accept window; the
// error's reason is ReasonLate or ReasonFuture. A record without a usable Kafka timestamp (none, or
// before 1970: Kafka's "no timestamp" is -1) and a topic whose event time is the Kafka timestamp have
// nothing to compare.
func (p *plan) accept(t time.Time, rec *Record) (string, error) {
	kts := rec.Timestamp
	if p.timeFromKafka || kts.IsZero() || kts.UnixMilli() < 0 {
		return "", nil
	}
	const msg = "event time %s is %s %s the record's Kafka timestamp %s; accept.%s allows %s (check the producer's clock and time.format, or widen topics.%s.accept.%s)"
	kts = kts.UTC()
	if d := kts.Sub(t); d > p.acceptBefore {
		return ReasonLate, fmt.Errorf(msg, t.Format(time.RFC3339Nano), distance(d), "before",
			kts.Format(time.RFC3339Nano), "before", config.Duration(p.acceptBefore), p.name, "before")
	}
	if d := t.Sub(kts); d > p.acceptAfter {
		return ReasonFuture, fmt.Errorf(msg, t.Format(time.RFC3339Nano), distance(d), "after",
			kts.Format(time.RFC3339Nano), "after", config.Duration(p.acceptAfter), p.name, "after")
	}
	return "", nil
}

// distance says how far apart two instants are, to the second. time.Time.Sub saturates at about 292
// years, so a larger distance (a year-1 event time against today) is said as such, not as the
// saturated value.
func distance(d time.Duration) string {
	if d == math.MaxInt64 {
		return "more than 292 years"
	}
	return config.Duration(d.Round(time.Second)).String()
}

// value converts the value of one column and writes it to s.w: through a cell (store) for the
// kinds the mapper encodes directly, else as wire bytes appended straight from the JSON
// (appendConverted, putWire).
func (p *plan) value(c *column, root *fastjson.Value, rec *Record, t time.Time, s *scratch) error {
	var x cell
	switch c.source {
	case srcField, srcHeader, srcKey:
		var v *fastjson.Value
		switch c.source {
		case srcField:
			v = root.Get(c.path...)
		case srcKey:
			v = keyValue(c, rec, s)
		default:
			var done bool
			if v, done = headerValue(c, rec, s); done {
				return nil
			}
		}
		if v == nil || v.Type() == fastjson.TypeNull {
			state := "missing"
			if v != nil {
				state = "null"
			}
			if c.need != "" {
				return fmt.Errorf("column %s: %s is %s, and %s", c.name, c.subject(), state, c.need)
			}
			// Unset, not null (unless the column asks for null): a null would write a tombstone cell
			// that every read must skip, while an unset column costs nothing and reads back as null
			// all the same.
			s.w.Absent(c.absent)
			return nil
		}
		// The direct kinds convert into x, to be encoded by store; the others to their Go value.
		var pr problem
		switch k := c.typ.kind; {
		case !c.direct:
			if s.coll, pr = appendConverted(s.coll[:0], c.typ, v, &s.buf, &s.entries); pr.ok() {
				s.putWire(c, s.coll)
				return nil
			}
		case k == kText || k == kASCII:
			x.b, pr = textOf(k, v, &s.buf)
		case k == kDouble || k == kFloat:
			x.f, pr = floatOf(k, v, &s.buf)
		case k == kTimestamp:
			x.t, pr = timestampOf(v, &s.buf)
		case k == kDate:
			x.t, pr = dateOf(v)
		case k == kUUID || k == kTimeUUID:
			x.u, pr = uuidOf(k, v)
		default: // tinyint to bigint: layoutColumns makes no other kind direct
			x.n, pr = intOf(k, v, &s.buf)
		}
		if !pr.ok() {
			return pr.err("column "+c.name+": "+c.subject(), s)
		}
	case srcEventTime:
		x.t = t
	case srcKafkaTimestamp:
		kt, ok := kafkaTime(rec)
		if !ok {
			if c.need != "" {
				return fmt.Errorf("column %s: the record has no Kafka timestamp (-1), and %s", c.name, c.need)
			}
			s.w.Absent(c.absent)
			return nil
		}
		x.t = kt
	case srcKafkaKey, srcRaw:
		b, what := rec.Value, "record value"
		if c.source == srcKafkaKey {
			b, what = rec.Key, "Kafka key"
			if b == nil {
				if c.need != "" {
					return fmt.Errorf("column %s: the record has no Kafka key, and %s", c.name, c.need)
				}
				s.w.Absent(c.absent)
				return nil
			}
		}
		if !c.direct { // blob
			s.putWire(c, b)
			return nil
		}
		if c.typ.kind == kASCII {
			for _, ch := range b {
				if ch >= 0x80 {
					return fmt.Errorf("column %s: the %s is not ASCII for CQL ascii", c.name, what)
				}
			}
		} else if msg := utf8Problem(b); msg != "" {
			return fmt.Errorf("column %s: the %s %s", c.name, what, msg)
		}
		x.b = b
	case srcKafkaTopic:
		// text, ascii or blob: the topic's bytes. A view, not a copy: the writer copies them.
		s.putWire(c, unsafe.Slice(unsafe.StringData(p.kafkaTopic), len(p.kafkaTopic)))
		return nil
	case srcKafkaPartition:
		x.n = int64(rec.Partition)
	case srcKafkaOffset:
		x.n = rec.Offset
	case srcTimeUUID:
		u, ok := timeUUID(t, rec.Topic, rec.Partition, rec.Offset)
		if !ok {
			return fmt.Errorf("column %s: event time %s is outside the range of a timeuuid (1582-10-15 to 5236)", c.name, t.Format(time.RFC3339Nano))
		}
		x.u = u
	default:
		return fmt.Errorf("column %s: unsupported source", c.name)
	}
	store(c, &x, s)
	return nil
}

// cell is one converted value of a direct column on its way to being encoded; only the field of
// the column's kind is set.
type cell struct {
	b []byte     // text, ascii: the bytes; they alias the parser, the record or scratch.buf
	n int64      // tinyint, smallint, int, bigint (range-checked for the kind)
	f float64    // float (in range for float32), double
	t time.Time  // timestamp, date; never the zero time
	u gocql.UUID // uuid, timeuuid
}

// store writes the value of direct column c to s.w. A hashed column first records its canonical
// text, from the typed value.
func store(c *column, x *cell, s *scratch) {
	if c.hash >= 0 {
		s.canonical(c, x)
	}
	switch k := c.typ.kind; k {
	case kText, kASCII:
		s.w.Text(k, x.b)
	case kBigint, kInt, kSmallint, kTinyint:
		s.w.Integer(k, x.n)
	case kFloat, kDouble:
		s.w.Floating(k, x.f)
	case kTimestamp, kDate:
		s.w.Time(k, x.t)
	case kUUID, kTimeUUID:
		s.w.UUID(k, x.u)
	default:
		panic("mapper: column " + c.name + " is direct but has no encoding") // layoutColumns makes only the kinds above direct
	}
}

// putWire writes the wire bytes b of column c, a column value encodes without a cell, to s.w,
// and records its canonical text when the event bucket hashes it, read back from the bytes.
func (s *scratch) putWire(c *column, b []byte) {
	t := c.typ.packed()
	if c.hash >= 0 {
		off := len(s.canonText)
		s.canonText = appendCanonical(s.canonText, packed.GoValue(&packed.Value{Type: t, Wire: b}))
		s.canon[c.hash] = span{off, len(s.canonText) - off}
	}
	s.w.Encoded(t, b)
}

// canonical records the canonical text of column c's typed value (the event bucket hash
// contract, see the package comment) in scratch.canon.
func (s *scratch) canonical(c *column, x *cell) {
	off := len(s.canonText)
	b := s.canonText
	switch k := c.typ.kind; k {
	case kText, kASCII:
		b = append(b, x.b...)
	case kTinyint, kSmallint, kInt, kBigint:
		b = strconv.AppendInt(b, x.n, 10)
	case kFloat:
		b = strconv.AppendFloat(b, float64(float32(x.f)), 'g', -1, 32)
	case kDouble:
		b = strconv.AppendFloat(b, x.f, 'g', -1, 64)
	case kTimestamp:
		b = appendTimeCanonical(b, x.t)
	case kDate:
		b = appendDateCanonical(b, x.t)
	case kUUID, kTimeUUID:
		b = appendUUIDCanonical(b, x.u)
	}
	s.canonText = b
	s.canon[c.hash] = span{off, len(b) - off}
}

// maxShown bounds how much of a bad value a quoted error message repeats.
const maxShown = 64

// valueError is a problem with a value of the record. Its message (Error) names the column, the field
// and, in a collection, the element or the entry by its position, and says what is wrong; never the
// value, nor a map key (both are the record's data, and logs are kept longer and read by more people
// than the data). quoted is the same message with the value and the key shown, which Quoted returns.
type valueError struct{ plain, quoted string }

func (e *valueError) Error() string { return e.plain }

// badValue is the valueError "<subject> is <reason>", quoted "<subject> is <shown>, <reason>".
func badValue(subject, shown, reason string) *valueError {
	return &valueError{plain: subject + " is " + reason, quoted: subject + " is " + shown + ", " + reason}
}

// lenientNumber finds a number fastjson takes but JSON does not have (fastjson's number token is any run
// of digits, signs, dots and e, or inf and nan: NaN, Infinity, +1, 1-2) anywhere in the document, read
// by a column or not. The scan refuses such a document wherever the number is, so this path does too: a
// record is JSON or it is not, whichever fields a topic reads. It returns the number and its path
// (a.b[2].c; in quoted messages only, as keys can be data), or nil.
func lenientNumber(v *fastjson.Value, s *scratch) (*fastjson.Value, string) {
	switch v.Type() {
	case fastjson.TypeNumber:
		s.buf = v.MarshalTo(s.buf[:0])
		if !jsonc.IsNumber(bstr(s.buf)) {
			return v, ""
		}
	case fastjson.TypeArray:
		a, _ := v.Array()
		for i, e := range a {
			if bad, path := lenientNumber(e, s); bad != nil {
				return bad, "[" + strconv.Itoa(i) + "]" + dotted(path)
			}
		}
	case fastjson.TypeObject:
		o, _ := v.Object()
		var bad *fastjson.Value
		var path string
		o.Visit(func(key []byte, e *fastjson.Value) {
			if bad == nil {
				if bad, path = lenientNumber(e, s); bad != nil {
					path = string(key) + dotted(path)
				}
			}
		})
		return bad, path
	}
	return nil, ""
}

// dotted joins the rest of a path to its key: "" stays "", "[2]" is an index, anything else a key.
func dotted(rest string) string {
	if rest == "" || rest[0] == '[' {
		return rest
	}
	return "." + rest
}

// notJSON is the decode error of a value fastjson cannot parse. fastjson's messages quote the document
// (the unexpected value, the unparsed tail); the plain message keeps what is wrong and not the text.
func notJSON(err error) *valueError {
	quoted := "decoding JSON: " + err.Error()
	plain, _, _ := strings.Cut(quoted, "; unparsed tail: ")
	plain, _, _ = strings.Cut(plain, `: "`)
	return &valueError{plain: plain, quoted: quoted}
}

// Quoted returns err's message with the bad value shown, where err is about a value of the record (a
// field that does not convert, an event time that does not parse, a value that is not JSON); for any
// other error, its message. Dead letters carry it in sink.error (they carry the record anyway); logs
// carry it only when log.quote_values is set, Error otherwise.
func Quoted(err error) string {
	if err == nil {
		return ""
	}
	msg := err.Error()
	var ve *valueError
	if errors.As(err, &ve) {
		return strings.Replace(msg, ve.plain, ve.quoted, 1)
	}
	return msg
}

// show renders a JSON value for an error message: its JSON text, shortened when long.
func show(v *fastjson.Value, s *scratch) string {
	b := v.MarshalTo(s.key[:0])
	if len(b) > maxShown {
		return string(b[:maxShown]) + "..."
	}
	return string(b)
}
