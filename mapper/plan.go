package mapper

import (
	"errors"
	"fmt"
	"strings"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/codec"
	jsonc "github.com/bucketsink/sink/codec/json"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/packed"
	"github.com/bucketsink/sink/schema"
)

// The plan compiler: New compiles each configured topic once into a plan, which the per-record
// path (path.go, row.go) then follows for every record of the topic.

// Option configures New.
type Option func(*Mapper)

// WithRegistry makes the mapper fetch writer schemas from r (registry.ForConfig builds the client of
// a configuration's schema_registry block). The mapper builds no network client of its own: a topic
// whose codec (or key_codec) reads writer schemas needs one. A nil r gives none.
func WithRegistry(r codec.Registry) Option { return func(m *Mapper) { m.registry = r } }

// New validates cfg (see config.Validate), takes each topic's table from package schema (columns,
// keys, the INSERT statement) and compiles every topic: column plans, field paths, the bucket
// policy, the codec. cfg must have its defaults applied (config.Load does; a Config built in Go
// calls ApplyDefaults). A topic whose codec or key_codec reads a schema registry needs the registry
// client WithRegistry gives; without one, New refuses it.
func New(cfg *config.Config, opts ...Option) (*Mapper, error) {
	tables, err := schema.Describe(cfg)
	if err != nil {
		return nil, err
	}
	m := &Mapper{byKafka: map[string]*feed{}, byName: map[string]*plan{}, tables: tables}
	for _, o := range opts {
		o(m)
	}
	m.pool.New = func() any {
		return &scratch{buf: make([]byte, 0, 256), key: make([]byte, 0, 128)}
	}
	var errs []error
	for _, name := range cfg.TopicNames() {
		p, err := compile(name, cfg.Topics[name], tables[name])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if m.registry == nil && (p.framed || p.key != nil || p.keyReg != nil) {
			what := "codec " + p.codecName
			if !p.framed {
				what = "key_codec " + p.keyCodec
			}
			errs = append(errs, fmt.Errorf("topics.%s: %s reads writer schemas from a schema registry, and the mapper was given no registry client (mapper.WithRegistry)", name, what))
			continue
		}
		p.registry = m.registry
		for _, d := range []*decoder{p.key, p.keyReg} {
			if d != nil {
				d.registry = m.registry
			}
		}
		if p.where != nil && p.where.value != nil {
			p.where.value.registry = m.registry
		}
		// Unset values need native protocol 4; a session pinned to protocol 3 writes nulls instead.
		var absent any = gocql.UnsetValue
		if cfg.Cassandra.ProtocolVersion == 3 {
			absent = nil
		}
		for i, c := range cfg.Topics[name].Columns {
			p.cols[i].absent = absent
			if c.WriteNull || p.latest {
				// The column asks for null, a tombstone that clears an earlier value; a latest-value row
				// always does, so that it is the newest event's, never an older event's value in a column
				// the newest lacks.
				p.cols[i].absent = nil
			}
		}
		m.byName[name] = p
		f := m.byKafka[p.kafkaTopic]
		if f == nil {
			f = &feed{}
			m.byKafka[p.kafkaTopic] = f
		}
		f.entries, f.names = append(f.entries, p), append(f.names, name) // TopicNames is sorted
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	for _, f := range m.byKafka {
		f.share(m.registry)
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
		split:             t.Split.Enabled,
		bucketColumn:      t.Bucket.Column,
		eventBucketColumn: t.Bucket.EventBucketColumn,
		ttl:               time.Duration(t.TTL),
		ttlFromEvent:      t.TTL > 0 && t.TTLFrom == config.TTLFromEventTime,
		now:               time.Now,
		consistency:       t.Consistency,
		acceptBefore:      time.Duration(t.Accept.Before),
		acceptAfter:       time.Duration(t.Accept.After),
		latest:            desc.Latest,
		onTombstone:       t.OnTombstone,
		onDelete:          t.OnDelete,
	}
	if t.Where != nil {
		var err error
		if p.where, err = compileFilter(t.Where, t.Codec, t.KeyCodec); err != nil {
			return nil, fmt.Errorf("topics.%s.where: %w", name, err)
		}
	}
	if policy != nil {
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
	}

	index := map[string]int{}
	for i, c := range t.Columns {
		cp := fmt.Sprintf("%s.columns[%d]", kp, i)
		typ, err := parseType(c)
		if err != nil {
			return nil, fmt.Errorf("%s.type: %w", cp, err)
		}
		src, ok := sources[c.Source]
		if !ok {
			return nil, fmt.Errorf("%s.source: %q is not a source", cp, c.Source)
		}
		col := column{name: c.Name, typ: typ, source: src, field: c.Field, header: c.Header, regSlot: -1}
		if typ.kind == kTimestamp || typ.kind == kDate {
			if col.time, err = timeFormat(c.Format, c.Zone, typ.name); err != nil {
				return nil, fmt.Errorf("%s.format: %w", cp, err)
			}
		}
		if c.Field != "" { // a field of the value, or of the key (source key)
			col.path = strings.Split(c.Field, ".")
		}
		if err := col.compileKeyPlan(t.KeyCodec); err != nil {
			return nil, fmt.Errorf("%s: %w", cp, err)
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
		if p.cols[ci].source == srcField {
			p.keyFields++
		}
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
	}

	switch t.Time.Source {
	case config.TimeSourceKafka:
		p.timeFromKafka = true
	case config.TimeSourceChange:
		// The change's source time: source.ts_ms of a Debezium event, in milliseconds (envelope.go).
		p.timeFromChange, p.timeField, p.timePath = true, "source.ts_ms", []string{"source", "ts_ms"}
		p.timeFormat = codec.TimeFormat{Form: codec.TimeUnix, Unit: time.Millisecond, Name: config.TimeFormatUnixMS}
	default:
		p.timeField, p.timePath = t.Time.Field, strings.Split(t.Time.Field, ".")
		format := t.Time.Format
		if format == "" {
			format = config.TimeFormatRFC3339
		}
		var err error
		if p.timeFormat, err = timeFormat(format, t.Time.Zone, "event"); err != nil {
			return nil, fmt.Errorf("%s.time.format: %w", kp, err)
		}
	}
	if t.TTLField != nil {
		var err error
		if p.ttlField, err = compileTTLField(t); err != nil {
			return nil, fmt.Errorf("%s.ttl_field: %w", kp, err)
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
	if desc.BindsTTL() {
		p.ttlWire = packed.AppendInt(nil, int32(p.ttl/time.Second))
	}
	if !sliced {
		p.target = p.newTarget(p.table)
	}
	if p.onTombstone == config.OnTombstoneDelete || t.Enveloped() && p.latest {
		p.deleteTarget = &batcher.Target{
			Topic: p.kafkaTopic, Keyspace: p.keyspace, Table: p.table, Insert: desc.Delete(), Delete: true,
			Columns: desc.IDColumns(), Consistency: p.consistency, Entry: p.name, Shape: deleteShape(desc),
		}
	}
	p.layoutColumns()
	if !p.decoder.setCodec(t.Codec, false) {
		return nil, fmt.Errorf("%s.codec: %s has no decoder in this build", kp, t.Codec)
	}
	p.decodeFields()
	p.keyCodec = t.KeyCodec
	if p.onTombstone == config.OnTombstoneDelete {
		p.keyDecodeFields()
		switch {
		case p.keyFields == 0: // the key's bytes name the entity as they are: nothing to decode
		case config.NeedsRegistry(t.KeyCodec):
			p.key = &decoder{fields: p.keyIDs}
			if !p.key.setCodec(t.KeyCodec, true) {
				return nil, fmt.Errorf("%s.key_codec: %s has no decoder in this build", kp, t.KeyCodec)
			}
		case p.keyFields > 1: // a text key holding several id fields is a JSON object (textKey)
			p.keyText, _ = jsonc.Codec{Key: true}.Compile(nil, p.keyIDs)
		}
	}
	if t.Enveloped() {
		if err := p.compileEnvelope(); err != nil {
			return nil, fmt.Errorf("%s.envelope: %w", kp, err)
		}
		if p.where != nil {
			if err := p.where.compileChange(p.codecName); err != nil {
				return nil, fmt.Errorf("%s.where: %w", kp, err)
			}
		}
	}
	if err := p.compileKeyFields(); err != nil {
		return nil, fmt.Errorf("%s.key_codec: %w", kp, err)
	}
	if !p.framed {
		// Plain JSON has no writer schema: one plan for the topic's life. (A plan of a nil schema
		// is never an error.)
		p.scan, _ = p.codec.Compile(nil, p.fields)
	}
	return p, nil
}

// layoutColumns marks the columns whose values the mapper encodes directly (see value) and gives
// each column the event bucket hashes its canonical-text entry.
func (p *plan) layoutColumns() {
	for i := range p.cols {
		c := &p.cols[i]
		c.hash, c.direct = -1, false
		switch c.source {
		case srcField, srcChange, srcHeader, srcKey, srcEventTime, srcKafkaTimestamp, srcKafkaPartition, srcKafkaOffset, srcTimeUUID:
			c.direct = c.typ.kind == kText || c.typ.kind == kASCII || (packed.Width(c.typ.kind) > 0 && c.typ.kind != kBoolean)
		case srcKafkaKey, srcRaw:
			c.direct = c.typ.kind == kText || c.typ.kind == kASCII
		}
	}
	p.nhash = 0
	if p.ebColumn {
		for _, ci := range p.hashCols {
			if c := &p.cols[ci]; c.hash < 0 {
				c.hash, p.nhash = p.nhash, p.nhash+1
			}
		}
	}
}

// decodeFields lists what the topic's codec must decode: each field column's value, then the
// event time field. colSlot (per column) and timeSlot say where each is in the list.
func (p *plan) decodeFields() {
	p.colSlot = make([]int, len(p.cols))
	p.fields = p.fields[:0]
	for i := range p.cols {
		c := &p.cols[i]
		p.colSlot[i] = -1
		if c.source != srcField {
			continue
		}
		p.colSlot[i] = len(p.fields)
		p.fields = append(p.fields, c.codecField())
	}
	p.timeSlot = -1
	if !p.timeFromKafka {
		p.timeSlot = len(p.fields)
		p.fields = append(p.fields, codec.Field{Path: p.timePath, Type: packed.Scalar(kTimestamp), Time: p.timeFormat})
	}
	p.ttlSlot = -1
	if p.ttlField != nil {
		p.ttlSlot = len(p.fields)
		p.fields = append(p.fields, p.ttlField.field)
	}
	p.whereSlot = nil
	if p.where != nil {
		for _, f := range p.where.vfields {
			p.whereSlot = append(p.whereSlot, len(p.fields))
			p.fields = append(p.fields, f)
		}
	}
}

// keyDecodeFields lists what is decoded from a tombstone's key (p.keyIDs): each id column read from a
// field, at its path. A lone one is the whole key when the key is not a record or object (an Avro
// "string" or "long", a JSON scalar, a text key: codec.Field.Whole).
func (p *plan) keyDecodeFields() {
	p.keySlot = make([]int, len(p.cols))
	for i := range p.keySlot {
		p.keySlot[i] = -1
	}
	for _, ci := range p.ids {
		c := &p.cols[ci]
		if c.source != srcField {
			continue
		}
		p.keySlot[ci] = len(p.keyIDs)
		f := c.codecField()
		f.Whole = p.keyFields == 1
		p.keyIDs = append(p.keyIDs, f)
	}
}
