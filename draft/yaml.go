package draft

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/bucketsink/sink/config"
)

// Block is the drafted topic as an entry of topics:, indented two spaces, with its comments.
func (d *Draft) Block() string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	w("  %s:", scalar(d.Name))
	if d.in.Source != "" {
		w("    # Drafted by `sink init` from %s.", d.in.Source)
	}
	w("    topic: %s", scalar(d.in.Topic))
	if d.in.Codec != "json" {
		w("    codec: %s", d.in.Codec)
	}
	ids := make([]string, 0, len(d.in.ID))
	for _, c := range d.Columns {
		if c.Field != "" && len(ids) < len(d.in.ID) {
			ids = append(ids, c.Name)
		}
	}
	w("    id: [%s]", strings.Join(ids, ", "))
	switch {
	case d.TimeFormat != "":
		w("    # %s is a count since the epoch: %s reads milliseconds; make it unix_s, unix_us or unix_ns if the producer counts otherwise.",
			d.in.Time, d.TimeFormat)
		w("    time: {source: field, field: %s, format: %s}", scalar(d.in.Time), d.TimeFormat)
	default:
		w("    time: {source: field, field: %s}", scalar(d.in.Time))
	}
	p := d.Policy
	if p.Plan != "" {
		w("    # Bucket policy for %s: what `sink plan` recommends for it:", p.Rate)
		for _, line := range strings.Split(strings.TrimRight(p.Plan, "\n"), "\n") {
			w("    #   %s", strings.TrimRight(line, " "))
		}
	}
	if p.EventBuckets > 1 {
		w("    bucket: {width: %s, event_buckets: %d}", p.Width, p.EventBuckets)
	} else {
		w("    bucket: {width: %s}", p.Width)
	}
	table := d.in.Table
	if table == "" {
		table = TableName(d.in.Topic)
	}
	w("    table: %s", table)
	if d.in.Keyspace != "" {
		w("    keyspace: %s", d.in.Keyspace)
	}
	w("    columns:")
	for _, c := range d.Columns {
		src := "source: event_time"
		if c.Field != "" {
			src = "field: " + scalar(c.Field)
		}
		w("      - {name: %s, type: %s, %s}  # %s", c.Name, scalar(c.Type.String()), src, c.Leaf.Writer)
	}
	if len(d.Unfit) > 0 {
		w("    # Fields no column is drafted for:")
		for _, l := range d.Unfit {
			w("    #   %s (%s): %s", l.Name(), l.Writer, oneLine(l.Reason))
		}
	}
	w("    clustering:")
	w("      - {column: %s, order: desc}", d.timeColumn)
	w("    # Choices no schema can make; uncomment one to take it.")
	w("    # Without a dead-letter topic the first record that cannot be written (undecodable, a value that does")
	w("    # not fit its column) stops its partition until it is fixed; with one, it goes there and the partition")
	w("    # moves on. The sink never creates it: create it before `sink run`.")
	w("    # dead_letter_topic: %s", scalar(d.in.Topic+".dlq"))
	w("    # Rows stay until deleted unless they expire: ttl counts from the write, or with ttl_from: event_time")
	w("    # from the event; whole expired buckets are then dropped cheaply by the table's compaction.")
	w("    # ttl: 30d")
	w("    # A record with a null value (a Kafka tombstone) is bad input by default (dead_letter: to the dead-letter")
	w("    # topic, or the partition stops without one); skip commits and counts it; delete needs bucket: none.")
	w("    # on_tombstone: skip")
	return trimLines(b.String())
}

// trimLines drops the spaces at the ends of lines (a comment of an empty line of the plan).
func trimLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}

// Base is what a standalone draft says of the servers.
type Base struct {
	Brokers  []string
	Group    string // default sink-<topic name>
	Hosts    []string
	Keyspace string
	Registry []string // schema_registry.urls, for a registry codec
}

// Config is a whole config holding the drafted topic, its servers from b.
func (d *Draft) Config(b Base) string {
	var s strings.Builder
	fmt.Fprintln(&s, "# Drafted by `sink init`. Review it, then: sink validate, sink schema --apply, sink run (each with --config).")
	fmt.Fprintln(&s, "kafka:")
	fmt.Fprintf(&s, "  brokers: %s\n", list(b.Brokers))
	group := b.Group
	if group == "" {
		group = "sink-" + d.Name
	}
	fmt.Fprintf(&s, "  group: %s\n", scalar(group))
	fmt.Fprintln(&s, "cassandra:")
	fmt.Fprintf(&s, "  hosts: %s\n", list(b.Hosts))
	if b.Keyspace != "" {
		fmt.Fprintf(&s, "  keyspace: %s\n", b.Keyspace)
	}
	if config.NeedsRegistry(d.in.Codec) {
		fmt.Fprintln(&s, "schema_registry:")
		fmt.Fprintf(&s, "  urls: %s\n", list(b.Registry))
	}
	fmt.Fprintln(&s, "topics:")
	s.WriteString(d.Block())
	return s.String()
}

var topicsLine = regexp.MustCompile(`(?m)^topics:[ \t]*(#.*)?$`)

// Merge puts the drafted topic into the config text: under its topics: key, kept as the file has it
// (comments and all), or under a new one at the end. A topic of a registry codec in a config without
// schema_registry brings one, with the URLs given.
func (d *Draft) Merge(text string, registry []string) (string, error) {
	if config.NeedsRegistry(d.in.Codec) && !regexp.MustCompile(`(?m)^schema_registry:`).MatchString(text) {
		if text != "" && !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		text += "schema_registry:\n  urls: " + list(registry) + "\n"
	}
	if regexp.MustCompile(`(?m)^topics:[ \t]*[^ \t#\n]`).MatchString(text) {
		return "", errors.New("its topics: is written inline (flow style); write it as a block to merge a drafted topic into it")
	}
	loc := topicsLine.FindStringIndex(text)
	if loc == nil {
		if text != "" && !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		return text + "topics:\n" + d.Block(), nil
	}
	end := loc[1]
	// After the topics: line, and after the entries already there: the block is appended to them.
	rest := text[end:]
	if len(rest) > 0 && rest[0] == '\n' {
		end++
		rest = rest[1:]
	}
	for len(rest) > 0 {
		nl := strings.IndexByte(rest, '\n')
		line := rest
		if nl >= 0 {
			line = rest[:nl+1]
		}
		if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(line, " ") && !strings.HasPrefix(line, "\t") {
			break // the next top-level key (or a top-level comment before it)
		}
		end += len(line)
		rest = rest[len(line):]
	}
	head := text[:end]
	if !strings.HasSuffix(head, "\n") {
		head += "\n"
	}
	return head + d.Block() + text[end:], nil
}

var plain = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.\-/]*$`)

// scalar is s as a YAML scalar: as is when plain, else double-quoted.
func scalar(s string) string {
	if plain.MatchString(s) && !yamlWord(s) {
		return s
	}
	return strconv.Quote(s)
}

// yamlWord reports whether s would read as something other than a string.
func yamlWord(s string) bool {
	switch strings.ToLower(s) {
	case "true", "false", "yes", "no", "on", "off", "null", "y", "n":
		return true
	}
	return false
}

func list(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = strconv.Quote(x)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
