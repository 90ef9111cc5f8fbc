package mapper

import (
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
	"github.com/bucketsink/sink/config"
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
}

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

// Reasons of a RecordError, also the reason label of sink_records_dead_lettered_total.
const (
	ReasonDecode  = "decode"  // the value is not a JSON object
	ReasonMap     = "map"     // a field is missing or does not fit its column, or the time is unusable
	ReasonExpired = "expired" // ttl_from event_time: the event is older than the ttl, so its row would be born expired
	// ReasonLate and ReasonFuture: the event time lies further before (after) the record's Kafka
	// timestamp than the topic's accept window allows.
	ReasonLate   = "late"
	ReasonFuture = "future"
)

// RecordError is why one record cannot become a row. The pipeline sends the record to its
// topic's dead-letter topic with these coordinates and the message.
type RecordError struct {
	Topic     string
	Partition int32
	Offset    int64
	Reason    string // ReasonDecode, ReasonMap, ReasonExpired, ReasonLate or ReasonFuture
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
	tables  schema.Tables    // topics.<name> → the table its rows are bound to
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
	// canonText collects the canonical text of the row's hashed columns while they are converted,
	// from the typed values before encoding; canon says where each one is (see column.hash).
	canonText []byte
	canon     []span
	// raw is where the single-pass scan found each field path of the topic (scan.go).
	raw []rawValue
	// blocks is this scratch's row memory per topic, for rows that are packed (rowBlock); block
	// and blockOf are the last one used.
	blocks  map[*plan]rowMem
	block   rowMem
	blockOf *plan
	noPack  bool   // map into a block of the row's own (mapRecord)
	pack    []byte // the packed values of the row being finished (pack)
}

// span is a range of a scratch buffer.
type span struct{ off, n int }

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
	at     int       // its string slot, or its byte offset in the fixed part
	hash   int       // its index in scratch.canon when the event bucket hashes it; -1 otherwise
	shared any       // the value of every row, for a kafka_topic column
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
	maxEventBuckets   int   // the most event buckets any row may use: eventBuckets, or the split cap
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
	ttlValue          any  // int32 seconds, encoded once; nil without TTL
	ttlFromEvent      bool // ttl_from event_time: each row's TTL is ttl minus its age (rowTTL)
	ttlAt             int  // with ttlFromEvent, the byte offset of the row's TTL in row memory
	now               func() time.Time
	wts               writeTS
	consistency       string
	insertCols        []string  // cols, bucket column, event bucket column
	nvals             int       // len(insertCols) + TTL + timestamp
	ebValues          []any     // int32(0..eventBuckets-1), encoded once
	scan              *scanPlan // the single-pass field reader (scan.go); nil: fastjson only
	absent            any       // bound for a missing optional value: gocql.UnsetValue, or nil on protocol 3
	mem               rowLayout // the row memory block (rowmem.go)
	packable          bool      // rows are packed (packed.go): every column's value is encoded
	wtsAt             int       // the byte offset of the write timestamp in row memory
	nhash             int       // how many columns record their canonical text in scratch.canon
	target            *batcher.Target
	routes            Routes                      // split decisions of open buckets (route.go)
	targets           sync.Map                    // slice index (int64) → *batcher.Target
	last              atomic.Pointer[bucketEntry] // the bucket most recently mapped

	// desc is the table the rows are bound to (package schema): its INSERT and columns.
	desc schema.Table
}

// bucketEntry is everything derived from a bucket index alone. Records arrive roughly in time
// order, so caching the last one spares the key formatting and the slice lookup on most records.
type bucketEntry struct {
	idx    int64
	value  any    // the bound value, encoded once for every row of the bucket
	ser    []byte // the bucket value as a routing-key component
	target *batcher.Target
	suffix string
}

// New validates cfg (see config.Validate), takes each topic's table from package schema (columns,
// keys, the INSERT statement) and compiles every topic: column plans, field paths, the bucket
// policy. cfg must have its defaults applied (config.Load does; a Config built in Go calls
// ApplyDefaults).
func New(cfg *config.Config) (*Mapper, error) {
	tables, err := schema.Describe(cfg)
	if err != nil {
		return nil, err
	}
	m := &Mapper{byKafka: map[string]*plan{}, byName: map[string]*plan{}, tables: tables}
	m.pool.New = func() any {
		return &scratch{buf: make([]byte, 0, 256), key: make([]byte, 0, 128), text: make([]byte, 0, 256)}
	}
	var errs []error
	for _, name := range cfg.TopicNames() {
		p, err := compile(name, cfg.Topics[name], tables[name])
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

// compile compiles topics.<name> to bind its rows to desc, the topic's table.
func compile(name string, t config.Topic, desc schema.Table) (*plan, error) {
	kp := "topics." + name
	policy := desc.Policy
	_, sliced := policy.Sliced()
	p := &plan{
		name: name, kafkaTopic: t.Topic, keyspace: t.Keyspace, table: t.Table,
		policy: policy, sliced: sliced, desc: desc,
		eventBuckets:      max(t.Bucket.EventBuckets, 1),
		ebColumn:          t.UsesEventBucketColumn(),
		maxEventBuckets:   max(t.Bucket.EventBuckets, 1),
		split:             t.Split.Enabled,
		bucketColumn:      t.Bucket.Column,
		eventBucketColumn: t.Bucket.EventBucketColumn,
		ttl:               time.Duration(t.TTL),
		ttlFromEvent:      t.TTL > 0 && t.TTLFrom == config.TTLFromEventTime,
		now:               time.Now,
		consistency:       t.Consistency,
		acceptBefore:      time.Duration(t.Accept.Before),
		acceptAfter:       time.Duration(t.Accept.After),
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
	if t.Split.Enabled {
		p.maxEventBuckets = max(p.maxEventBuckets, t.Split.MaxEventBuckets)
	}
	if p.ebColumn {
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
		for i := range p.maxEventBuckets {
			p.ebValues = append(p.ebValues, encodeShared(kInt, int32(i)))
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
	case config.WriteTimestampOffset:
		p.wts = wtsOffset
	}

	p.insertCols = desc.InsertColumns()
	p.nvals = desc.NumValues()
	if desc.BindsTTL() {
		p.ttlValue = encodeShared(kInt, int32(p.ttl/time.Second))
	}
	if !sliced {
		p.target = p.newTarget(p.table)
	}
	p.layoutRowMemory()
	p.scan = newScanPlan(p)
	return p, nil
}

// layoutRowMemory gives every column whose value row memory can hold its slot, the write
// timestamp its bytes, each hashed column its canonical-text entry, and each kafka_topic column
// its shared encoded value.
func (p *plan) layoutRowMemory() {
	var nstr, nbytes int
	for i := range p.cols {
		c := &p.cols[i]
		c.slot, c.hash, c.shared = slotNone, -1, nil
		switch c.source {
		case srcField, srcEventTime, srcKafkaTimestamp, srcKafkaPartition, srcKafkaOffset, srcTimeUUID:
			switch {
			case c.typ.kind == kText || c.typ.kind == kASCII:
				c.slot = slotString
			case fixedWidth(c.typ.kind) > 0:
				c.slot = slotFixed
			}
		case srcKafkaKey, srcRaw:
			if c.typ.kind == kText || c.typ.kind == kASCII {
				c.slot = slotString
			}
		case srcKafkaTopic:
			c.shared = encodeShared(c.typ.kind, p.kafkaTopic)
		}
		switch c.slot {
		case slotString:
			c.at, nstr = nstr, nstr+1
		case slotFixed:
			c.at, nbytes = nbytes, nbytes+fixedWidth(c.typ.kind)
		}
	}
	p.nhash = 0
	if p.ebColumn {
		for _, ci := range p.hashCols {
			c := &p.cols[ci]
			if c.hash < 0 && (c.slot != slotNone || c.source == srcKafkaTopic) {
				c.hash, p.nhash = p.nhash, p.nhash+1
			}
		}
	}
	if p.wts != wtsServer {
		p.wtsAt, nbytes = nbytes, nbytes+fixedWidth(kBigint)
	}
	if p.ttlFromEvent {
		p.ttlAt, nbytes = nbytes, nbytes+fixedWidth(kInt)
	}
	p.mem = newRowLayout(p.nvals, nstr, nbytes)
	// Packing needs every column's value encoded (or absent); the other values of a row always are.
	p.packable = true
	for i := range p.cols {
		c := &p.cols[i]
		if _, shared := c.shared.(encoded); c.slot == slotNone && !shared {
			p.packable = false
		}
	}
}

// newTarget builds the target of one table (the topic's, or one slice's): its INSERT is the
// table description's (schema.Table.Insert).
func (p *plan) newTarget(name string) *batcher.Target {
	return &batcher.Target{
		Keyspace:    p.keyspace,
		Table:       name,
		Insert:      p.desc.Insert(name),
		Columns:     p.insertCols,
		Consistency: p.consistency,
	}
}

// bucket returns the cached derivations of bucket idx.
func (p *plan) bucket(idx int64) *bucketEntry {
	if e := p.last.Load(); e != nil && e.idx == idx {
		return e
	}
	v := p.policy.Value(idx)
	e := &bucketEntry{idx: idx, value: encodeShared(p.bucketKind, v), target: p.target}
	e.ser = appendSerialized(nil, p.bucketKind, v)
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
	if cap(s.pack) > maxScratch {
		s.pack = nil
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
	split       *Generation   // the split generation that chose the event bucket; nil: generation 0
	entityLen   int           // the id columns' bytes at the start of row.Key (EntityKey)
	ttl         time.Duration // the TTL bound (0: none)
	writeTS     int64
	unpacked    bool // built in scratch memory but pack refused a value: map again with noPack
}

// mapRecord maps one record: by the single-pass scan when it handles the record (scan.go), else
// by the fastjson path, which is the reference for every result and every error message. A row
// pack refused (a value of a kind it does not pack, such as a bucket at the zero time) is mapped
// again into memory of its own.
func (p *plan) mapRecord(rec *Record, s *scratch) (outcome, string, error) {
	out, reason, err := p.mapOnce(rec, s)
	if err == nil && out.unpacked {
		s.noPack = true
		out, reason, err = p.mapOnce(rec, s)
		s.noPack = false
	}
	return out, reason, err
}

func (p *plan) mapOnce(rec *Record, s *scratch) (outcome, string, error) {
	if p.scan != nil {
		if out, ok := p.mapScanned(rec, s); ok {
			return out, "", nil
		}
	}
	return p.mapParsed(rec, s)
}

// mapParsed maps one record from fastjson's value tree.
func (p *plan) mapParsed(rec *Record, s *scratch) (outcome, string, error) {
	var out outcome
	if rec.Value == nil {
		// Kafka's null value: a tombstone, which compacted topics use to delete a key.
		return out, ReasonDecode, errors.New("decoding JSON: the record value is null (a tombstone), not a JSON object")
	}
	if len(rec.Value) == 0 {
		return out, ReasonDecode, errors.New("decoding JSON: the record value is empty (0 bytes), not a JSON object")
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
	if reason, err := p.accept(t, rec); err != nil {
		return out, reason, err
	}
	out.eventTime = t

	mem := p.rowBlock(s)
	vals := mem.values()
	s.begin(p)
	for i := range p.cols {
		v, err := p.value(&p.cols[i], root, rec, t, s, mem)
		if err != nil {
			return out, ReasonMap, err
		}
		vals[i] = v
	}
	if err := p.complete(&out, rec, s, mem); err != nil {
		if errors.Is(err, errExpired) {
			return out, ReasonExpired, err
		}
		return out, ReasonMap, err
	}
	return out, "", nil
}

// begin readies the scratch buffers that collect a row's strings and canonical texts.
func (s *scratch) begin(p *plan) {
	s.text, s.texts = s.text[:0], s.texts[:0]
	s.canonText = s.canonText[:0]
	if cap(s.canon) < p.nhash {
		s.canon = make([]span, p.nhash)
	}
	s.canon = s.canon[:p.nhash]
}

// ebValue is the bound value of event bucket eb: encoded once for the buckets the policy allows, on
// the spot for a routing record written under a larger cap (the record is what rows follow).
func (p *plan) ebValue(eb int) any {
	if eb < len(p.ebValues) {
		return p.ebValues[eb]
	}
	return encodeShared(kInt, int32(eb))
}

// hashBucket is the event bucket among k of the row whose values are in vals: the hash of the
// canonical texts of its hash columns (bucketer.IDHash), mod k.
func (p *plan) hashBucket(vals []any, s *scratch, k int) (int, error) {
	h := bucketer.NewIDHash()
	for _, ci := range p.hashCols {
		c := &p.cols[ci]
		v := vals[ci]
		if v == p.absent {
			return 0, fmt.Errorf("event bucket: column %s has no value to hash", c.name)
		}
		if c.hash >= 0 {
			// Encoded: its canonical text was taken from the typed value (value, store).
			sp := s.canon[c.hash]
			h.Part(s.canonText[sp.off : sp.off+sp.n])
			continue
		}
		s.buf = appendCanonical(s.buf[:0], v)
		h.Part(s.buf)
	}
	return h.Bucket(k), nil
}

// complete finishes a row whose column values are in mem and whose event time is out.eventTime:
// bucket, event bucket, TTL, write timestamp, routing key and size. Its errors are ReasonMap.
func (p *plan) complete(out *outcome, rec *Record, s *scratch, mem rowMem) error {
	t := out.eventTime
	vals := mem.values()
	n := len(p.cols)

	b := p.bucket(p.policy.Index(t))
	out.bucket = b
	vals[n] = b.value
	n++
	// The id columns' part of the routing key comes first: a split entity is known by it.
	key := s.key[:0]
	components := len(p.ids) + 1
	if p.ebColumn {
		components++
	}
	for _, ci := range p.ids {
		at := len(key)
		key = appendComponent(key, components, p.cols[ci].typ.kind, vals[ci])
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
			if g := p.routes.Route(b.idx, string(key), t, rec.Partition, rec.Offset); g != nil {
				k, first, out.split = g.Buckets, g.First, g
			}
		}
		out.eventBucket = first
		if k > 1 {
			eb, err := p.hashBucket(vals, s, k)
			if err != nil {
				return err
			}
			out.eventBucket = first + eb
		}
		vals[n] = p.ebValue(out.eventBucket)
		n++
	}
	out.ttl = p.ttl
	if p.ttlFromEvent {
		secs, err := p.rowTTL(t)
		if err != nil {
			return err
		}
		e := mem.int(p.ttlAt)
		e.set(secs)
		vals[n] = e
		out.ttl = time.Duration(secs) * time.Second
		n++
	} else if p.ttlValue != nil {
		vals[n] = p.ttlValue
		n++
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
	case wtsOffset:
		// Strictly increasing along a partition, the same on every replay, and independent of
		// any clock.
		out.writeTS = rec.Offset
	}
	if p.wts != wtsServer {
		e := mem.bigint(p.wtsAt)
		e.set(out.writeTS)
		vals[n] = e
	}

	// Row key: the routing key of the full partition key (ids, then bucket and event bucket).
	key = s.key
	if components == 1 {
		key = append(key, b.ser...)
	} else {
		key = binary.BigEndian.AppendUint16(key, uint16(len(b.ser)))
		key = append(key, b.ser...)
		key = append(key, 0)
	}
	if p.ebColumn {
		key = append(key, 0, 4)
		key = binary.BigEndian.AppendUint32(key, uint32(out.eventBucket))
		key = append(key, 0)
	}
	s.key = key

	out.row = batcher.Row{
		Target:    b.target,
		Source:    batcher.Source{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset},
		EventTime: t,
	}
	if mem.scratch {
		// The values are in the scratch's block: copy their bytes out (packed.go).
		var ok bool
		if s.pack, ok = pack(&out.row, vals, key, s.pack); !ok {
			out.unpacked = true
		}
		return nil
	}
	size := rowOverhead
	for _, v := range vals {
		size += 4 + encodedSize(v)
	}
	out.row.Key = finishRow(mem, s, key)
	out.row.Values = vals
	out.row.Size = size
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
		return 0, fmt.Errorf("%w: event time %s plus ttl %s was %s ago; the row would be born expired (ttl_from event_time)",
			errExpired, t.Format(time.RFC3339Nano), config.Duration(p.ttl), config.Duration(age-p.ttl))
	case age < p.ttl-maxTTL*time.Second:
		return maxTTL, nil
	}
	return int32((p.ttl - age) / time.Second), nil
}

// rowBlock returns the row memory for the next row of p: the scratch's own block, reused row after
// row, when the row will be packed, or a new block the row keeps (a topic with a column type the
// mapper does not encode, or a row pack refused).
func (p *plan) rowBlock(s *scratch) rowMem {
	if !p.packable || s.noPack {
		return p.mem.alloc()
	}
	if s.blockOf != p {
		if s.blocks == nil {
			s.blocks = make(map[*plan]rowMem)
		}
		m, ok := s.blocks[p]
		if !ok {
			m = p.mem.alloc()
			m.scratch = true
			s.blocks[p] = m
		}
		s.block, s.blockOf = m, p
	}
	return s.block
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
			if t, err := parseRFC3339(bstr(b)); err == nil {
				if !inTimeRange(t) {
					return time.Time{}, fmt.Errorf("event time: field %q is %s, out of range (years 0000 to 9999)", p.timeField, show(v, s))
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
		return time.Time{}, fmt.Errorf("event time: field %q is %s, out of range for %s (years 0000 to 9999)", p.timeField, show(v, s), p.timeFormat)
	}
	return t, nil
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

// value computes the bound value of one column: encoded in its row memory slot when it has one
// (store), shared, or boxed.
func (p *plan) value(c *column, root *fastjson.Value, rec *Record, t time.Time, s *scratch, mem rowMem) (any, error) {
	var x cell
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
		// The kinds row memory holds convert into x, to be encoded by store; the others to their
		// boxed Go value.
		var pr problem
		switch k := c.typ.kind; {
		case c.slot == slotNone:
			var out any
			if out, pr = convert(c.typ, v, &s.buf); pr.ok() {
				return out, nil
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
		default: // tinyint to bigint: layoutRowMemory gives a slot to no other kind
			x.n, pr = intOf(k, v, &s.buf)
		}
		if !pr.ok() {
			if pr.val == nil { // a value whose bytes are not text is described, not shown
				return nil, fmt.Errorf("column %s: field %q%s %s", c.name, c.field, prefixed(" ", pr.elem), pr.msg)
			}
			if pr.elem != "" {
				return nil, fmt.Errorf("column %s: field %q %s is %s, %s", c.name, c.field, pr.elem, show(pr.val, s), pr.msg)
			}
			return nil, fmt.Errorf("column %s: field %q is %s, %s", c.name, c.field, show(pr.val, s), pr.msg)
		}
	case srcEventTime:
		x.t = t
	case srcKafkaTimestamp:
		kt, ok := kafkaTime(rec)
		if !ok {
			if c.need != "" {
				return nil, fmt.Errorf("column %s: the record has no Kafka timestamp (-1), and %s", c.name, c.need)
			}
			return p.absent, nil
		}
		x.t = kt
	case srcKafkaKey, srcRaw:
		b, what := rec.Value, "record value"
		if c.source == srcKafkaKey {
			b, what = rec.Key, "Kafka key"
			if b == nil {
				if c.need != "" {
					return nil, fmt.Errorf("column %s: the record has no Kafka key, and %s", c.name, c.need)
				}
				return p.absent, nil
			}
		}
		if c.slot == slotNone { // blob
			return append([]byte(nil), b...), nil
		}
		if c.typ.kind == kASCII {
			for _, ch := range b {
				if ch >= 0x80 {
					return nil, fmt.Errorf("column %s: the %s is not ASCII for CQL ascii", c.name, what)
				}
			}
		} else if msg := utf8Problem(b); msg != "" {
			return nil, fmt.Errorf("column %s: the %s %s", c.name, what, msg)
		}
		x.b = b
	case srcKafkaTopic:
		if c.hash >= 0 {
			// A view, not a copy: canonical only reads it.
			x.b = unsafe.Slice(unsafe.StringData(p.kafkaTopic), len(p.kafkaTopic))
			s.canonical(c, &x)
		}
		return c.shared, nil
	case srcKafkaPartition:
		x.n = int64(rec.Partition)
	case srcKafkaOffset:
		x.n = rec.Offset
	case srcTimeUUID:
		u, ok := timeUUID(t, rec.Topic, rec.Partition, rec.Offset)
		if !ok {
			return nil, fmt.Errorf("column %s: event time %s is outside the range of a timeuuid (1582-10-15 to 5236)", c.name, t.Format(time.RFC3339Nano))
		}
		x.u = u
	default:
		return nil, fmt.Errorf("column %s: unsupported source", c.name)
	}
	return store(c, &x, s, mem), nil
}

// cell is one converted value of a row memory column on its way to being encoded; only the
// field of the column's kind is set.
type cell struct {
	b []byte     // text, ascii: the bytes; they alias the parser, the record or scratch.buf
	n int64      // tinyint, smallint, int, bigint (range-checked for the kind)
	f float64    // float (in range for float32), double
	t time.Time  // timestamp, date; never the zero time
	u gocql.UUID // uuid, timeuuid
}

// store encodes the value of column c into its row memory slot and returns the bound value: a
// pointer to the encoding, typed for the column's CQL type. A hashed column first records its
// canonical text, from the typed value.
func store(c *column, x *cell, s *scratch, mem rowMem) any {
	if c.hash >= 0 {
		s.canonical(c, x)
	}
	switch c.typ.kind {
	case kText, kASCII:
		return putText(c, x.b, s, mem)
	case kBigint:
		e := mem.bigint(c.at)
		e.set(x.n)
		return e
	case kInt:
		e := mem.int(c.at)
		e.set(int32(x.n))
		return e
	case kSmallint:
		e := mem.smallint(c.at)
		e.set(int16(x.n))
		return e
	case kTinyint:
		e := mem.tinyint(c.at)
		e.set(int8(x.n))
		return e
	case kFloat:
		e := mem.float(c.at)
		e.set(float32(x.f))
		return e
	case kDouble:
		e := mem.double(c.at)
		e.set(x.f)
		return e
	case kTimestamp:
		e := mem.timestamp(c.at)
		e.set(x.t)
		return e
	case kDate:
		e := mem.date(c.at)
		e.set(x.t)
		return e
	case kUUID:
		e := mem.uuid(c.at)
		e.set(x.u)
		return e
	case kTimeUUID:
		e := mem.timeUUID(c.at)
		e.set(x.u)
		return e
	}
	panic("mapper: column " + c.name + " has a row memory slot but no encoding") // layoutRowMemory gives slots only to the kinds above
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

// putText stores the text of column c's string slot. Its bytes go to scratch.text for now
// (finishRow moves them into memory the row owns).
func putText(c *column, b []byte, s *scratch, mem rowMem) any {
	off := len(s.text)
	s.text = append(s.text, b...)
	s.texts = append(s.texts, textRef{slot: c.at, off: off, n: len(b)})
	p := mem.str(c.at)
	*p = bstr(s.text[off:])
	if c.typ.kind == kASCII {
		return (*encASCII)(p)
	}
	return (*encText)(p)
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
