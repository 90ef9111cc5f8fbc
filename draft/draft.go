// Package draft writes the config of a topic from its writer schema: the work of `sink init`. It is
// pure: a schema's leaves (listed by the codec packages, with the column type each feeds) and the
// choices of the command line in, YAML text out; no registry, no Kafka, no clock. Safe for concurrent
// use.
//
// A draft maps every leaf field the pairing tables of the topic's codec can feed to one column, named
// after its dot path in lower snake case, and lists the others in a comment with the reason. The id and
// event-time columns come from the caller, the clustering is the event time descending, the bucket
// policy is the one `sink plan` recommends (the caller computes it; RowBytes is the row size it needs),
// and the choices no schema can make (dead-letter topic, TTL, tombstones) are left as comments with
// their trade-offs.
package draft

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/packed"
)

// Input is what a topic is drafted from.
type Input struct {
	Name   string // the key under topics:; default the Kafka topic made a valid name
	Topic  string // the Kafka topic (required)
	Codec  string // json, avro, protobuf or json_schema (required)
	Source string // where the leaves come from, for the header: "subject t-value version 3 (schema id 7)"
	Leaves []codec.Leaf
	// Check, when set, compiles fields with the topic's codec against the writer schema: a column it
	// refuses is listed with its error instead of drafted, and a refused time field refuses the draft.
	Check    func(fields []codec.Field) error
	ID       []string // dot paths of the id fields (at least one)
	Time     string   // dot path of the event-time field
	Table    string   // default the Kafka topic in lower snake case
	Keyspace string   // the topic's keyspace; "" leaves it to cassandra.keyspace
}

// Column is one drafted column.
type Column struct {
	Name  string
	Type  packed.Type
	Field string // "" for the event time (source: event_time)
	Leaf  codec.Leaf
}

// Policy is the bucket policy `sink plan` recommends for the draft's rate and row size.
type Policy struct {
	Width        string
	EventBuckets int
	Rate         string // how the rate was known, for the comment: "10 rows/s per entity (--rate)"
	Plan         string // the plan's table, printed as a comment
}

// Draft is a topic drafted from its leaves.
type Draft struct {
	in         Input
	Name       string
	Columns    []Column
	Unfit      []codec.Leaf // leaves no column is drafted for; Reason says why
	TimeFormat string       // "" (the type says, or rfc3339) or a unix_* format
	timeColumn string
	Policy     Policy
}

// Errors of New, for callers that tell the user which flag to fix.
var (
	ErrNoField   = errors.New("no such field")
	ErrTimeField = errors.New("cannot be an event time")
	ErrIDField   = errors.New("cannot be an id")
)

// bucketColumns are the names the bucket policy generates; no drafted column takes them.
var bucketColumns = []string{"bucket", "event_bucket"}

// New drafts the columns of in.
func New(in Input) (*Draft, error) {
	if in.Topic == "" || in.Codec == "" {
		return nil, errors.New("draft: a topic and a codec are required")
	}
	if len(in.ID) == 0 || in.Time == "" {
		return nil, errors.New("draft: the id and time fields are required")
	}
	if len(in.Leaves) == 0 {
		return nil, errors.New("the schema has no fields")
	}
	d := &Draft{in: in, Name: in.Name}
	if d.Name == "" {
		d.Name = TopicName(in.Topic)
	}
	byPath := map[string]codec.Leaf{}
	for _, l := range in.Leaves {
		byPath[l.Name()] = l
	}
	find := func(flag, path string) (codec.Leaf, error) {
		l, ok := byPath[path]
		if !ok {
			return l, fmt.Errorf("%s %q: %w in the schema; its fields: %s", flag, path, ErrNoField, d.paths())
		}
		return l, nil
	}
	taken := slices.Clone(bucketColumns)
	name := func(path []string) string {
		n := ColumnName(path, taken)
		taken = append(taken, n)
		return n
	}
	isID := map[string]bool{}
	for _, p := range in.ID {
		l, err := find("--id", p)
		if err != nil {
			return nil, err
		}
		if p == in.Time {
			return nil, fmt.Errorf("--id %q is also the --time field; an entity is what writes events over time", p)
		}
		if isID[p] {
			return nil, fmt.Errorf("--id %q given twice", p)
		}
		switch {
		case !l.Fits():
			return nil, fmt.Errorf("--id %q (%s) %w: %s", p, l.Writer, ErrIDField, l.Reason)
		case l.Type.Kind.Collection():
			return nil, fmt.Errorf("--id %q (%s) %w: a collection cannot be part of a partition key", p, l.Writer, ErrIDField)
		}
		isID[p] = true
		d.Columns = append(d.Columns, Column{Name: name(l.Path), Type: l.Type, Field: p, Leaf: l})
	}
	tl, err := find("--time", in.Time)
	if err != nil {
		return nil, err
	}
	if d.TimeFormat, err = timeFormat(tl); err != nil {
		return nil, err
	}
	if in.Check != nil {
		f := codec.Field{Path: tl.Path, Type: packed.Scalar(packed.KTimestamp), Time: timeOf(d.TimeFormat)}
		if err := in.Check([]codec.Field{f}); err != nil {
			return nil, fmt.Errorf("--time %q (%s) %w: %v", in.Time, tl.Writer, ErrTimeField, err)
		}
	}
	d.timeColumn = name(tl.Path)
	d.Columns = append(d.Columns, Column{Name: d.timeColumn, Type: packed.Scalar(packed.KTimestamp), Leaf: tl})
	for _, l := range in.Leaves {
		p := l.Name()
		if isID[p] || p == in.Time {
			continue
		}
		if !l.Fits() {
			d.Unfit = append(d.Unfit, l)
			continue
		}
		col := Column{Name: ColumnName(l.Path, taken), Type: l.Type, Field: p, Leaf: l}
		if in.Check != nil {
			f := codec.Field{Path: l.Path, Column: col.Name, Type: l.Type}
			if err := in.Check([]codec.Field{f}); err != nil {
				l.Reason = err.Error()
				d.Unfit = append(d.Unfit, l)
				continue
			}
		}
		taken = append(taken, col.Name)
		d.Columns = append(d.Columns, col)
	}
	if in.Check != nil {
		// The id columns too, and all of them at once, as the sink compiles them.
		var fields []codec.Field
		for _, c := range d.Columns {
			if c.Field != "" {
				fields = append(fields, codec.Field{Path: c.Leaf.Path, Column: c.Name, Type: c.Type})
			}
		}
		if err := in.Check(fields); err != nil {
			return nil, fmt.Errorf("the drafted columns do not compile against the schema: %w", err)
		}
	}
	return d, nil
}

func (d *Draft) paths() string {
	var ps []string
	for _, l := range d.in.Leaves {
		ps = append(ps, l.Name())
	}
	return strings.Join(ps, ", ")
}

// timeFormat is the time.format an event time read from l needs: none when its type says it is an
// instant or it is a string (rfc3339, the default), unix_ms for an integer.
func timeFormat(l codec.Leaf) (string, error) {
	switch {
	case !l.Fits():
		return "", fmt.Errorf("--time %q (%s) %w: %s", l.Name(), l.Writer, ErrTimeField, l.Reason)
	case l.Time:
		return "", nil
	}
	switch l.Type.Kind {
	case packed.KText:
		return "", nil
	case packed.KInt, packed.KBigint, packed.KVarint:
		return "unix_ms", nil
	}
	return "", fmt.Errorf("--time %q is %s (column type %s), which %w: use a timestamp, a whole count since the epoch or an RFC 3339 string",
		l.Name(), l.Writer, l.Type, ErrTimeField)
}

// timeOf is the codec form of a drafted time.format.
func timeOf(format string) codec.TimeFormat {
	switch format {
	case "unix_s":
		return codec.TimeFormat{Form: codec.TimeUnix, Unit: time.Second, Name: format}
	case "unix_ms":
		return codec.TimeFormat{Form: codec.TimeUnix, Unit: time.Millisecond, Name: format}
	case "unix_us":
		return codec.TimeFormat{Form: codec.TimeUnix, Unit: time.Microsecond, Name: format}
	case "unix_ns":
		return codec.TimeFormat{Form: codec.TimeUnix, Unit: time.Nanosecond, Name: format}
	}
	return codec.TimeFormat{Form: codec.TimeRFC3339, Name: "rfc3339"}
}

// RowBytes estimates the bytes one row of the draft takes, for `sink plan`: each fixed-width value its
// width, text and blobs 24 bytes, a collection 64, and 2 bytes of cell overhead per column. A sample
// measures better (the caller may pass its record size instead).
func (d *Draft) RowBytes() float64 {
	total := 0.0
	for _, c := range d.Columns {
		w := packed.Width(c.Type.Kind)
		switch {
		case c.Type.Kind.Collection():
			w = 64
		case w == 0:
			w = 24
		}
		total += float64(w) + 2
	}
	return total
}

// TopicName makes a Kafka topic a valid key under topics: (letters, digits, _ and -).
func TopicName(topic string) string {
	var b strings.Builder
	for _, r := range topic {
		if r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '-') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// TableName makes a Kafka topic a table name: lower snake case, a letter first, at most 48 characters
// (Cassandra's limit).
func TableName(topic string) string {
	n := snake(topic)
	if len(n) > config.MaxNameLen {
		n = strings.TrimRight(n[:config.MaxNameLen], "_")
	}
	if config.Reserved(n) {
		n += "_data"
	}
	return n
}

// ColumnName is the column of the field at path: its parts in lower snake case joined by _, a letter
// first, never a reserved CQL word nor one of taken (a suffix _2, _3, ... makes it unique).
func ColumnName(path []string, taken []string) string {
	parts := make([]string, 0, len(path))
	for _, p := range path {
		if s := snake(p); s != "" {
			parts = append(parts, s)
		}
	}
	n := strings.Join(parts, "_")
	if n == "" {
		n = "field"
	}
	if config.Reserved(n) {
		n += "_value"
	}
	base := n
	for i := 2; slices.Contains(taken, n); i++ {
		n = fmt.Sprintf("%s_%d", base, i)
	}
	return n
}

// snake is s in lower snake case: camelCase split at its humps, every other character an underscore,
// no leading, trailing or doubled underscores, and "f_" before a leading digit.
func snake(s string) string {
	var b strings.Builder
	rs := []rune(s)
	under := func() {
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "_") {
			b.WriteByte('_')
		}
	}
	for i, r := range rs {
		switch {
		case r < unicode.MaxASCII && unicode.IsUpper(r):
			prevLower := i > 0 && (unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1]))
			nextLower := i > 0 && i+1 < len(rs) && unicode.IsUpper(rs[i-1]) && unicode.IsLower(rs[i+1])
			if prevLower || nextLower {
				under()
			}
			b.WriteRune(unicode.ToLower(r))
		case r < unicode.MaxASCII && (unicode.IsLower(r) || unicode.IsDigit(r)):
			b.WriteRune(r)
		default:
			under()
		}
	}
	n := strings.TrimRight(b.String(), "_")
	if n != "" && unicode.IsDigit(rune(n[0])) {
		n = "f_" + n
	}
	return n
}
