package cassandra

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bucketsink/sink/bucketer"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/schema"
)

// The DDL below is generated from each topic's table description (schema.Table), the one the
// mapper binds rows to, so the tables `sink schema` creates are exactly the ones the INSERTs bind.
// Identifiers come from a validated config (plain CQL identifiers, no reserved words, re-checked
// by package schema) and are written unquoted, as the INSERTs write them; option values are
// numbers computed here or replication settings, quoted as CQL string literals.

// SchemaDDL returns the CREATE TABLE IF NOT EXISTS statements of topics.<topic>: one table, or,
// for a sliced topic, the table of the slice holding now and the table of the next slice (create
// the following ones ahead of time by running it again, e.g. daily). Statements carry no
// trailing semicolon. The keyspace statement comes from KeyspaceDDL.
func SchemaDDL(cfg *config.Config, topic string, now time.Time) ([]string, error) {
	t, err := describe(cfg, topic)
	if err != nil {
		return nil, err
	}
	return tableDDL(t, cfg.Topics[topic], now), nil
}

// Schema returns every statement `sink schema` prints for the given topics (all when empty):
// each keyspace they use, once, the routing table (sink_splits) of each keyspace with a split
// topic, then the tables of each topic in name order, each followed by its rollup tables.
func Schema(cfg *config.Config, topics []string, now time.Time) ([]string, error) {
	all, err := schema.Describe(cfg)
	if err != nil {
		return nil, err
	}
	if len(topics) == 0 {
		topics = all.Names()
	}
	rollups, err := schema.DescribeRollups(cfg, all)
	if err != nil {
		return nil, err
	}
	var keyspaces, tables []string
	for _, name := range topics {
		t, err := all.Get(name)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(keyspaces, t.Keyspace) {
			keyspaces = append(keyspaces, t.Keyspace)
		}
		tables = append(tables, tableDDL(t, cfg.Topics[name], now)...)
		for _, r := range rollups[name] {
			tables = append(tables, createTable(r.Table, cfg.Topics[name], r.Table.Name))
		}
	}
	out := make([]string, 0, len(keyspaces)+len(tables))
	for _, ks := range keyspaces {
		out = append(out, KeyspaceDDL(cfg, ks))
	}
	out = append(out, typeDDL(all, topics)...)
	for _, ks := range routingTableKeyspaces(cfg, topics) {
		out = append(out, routingTableDDL(ks)...)
	}
	for _, ks := range pendingKeyspaces(cfg, topics) {
		out = append(out, pendingTableDDL(ks))
	}
	return append(out, tables...), nil
}

// KeyspaceDDL is the CREATE KEYSPACE IF NOT EXISTS statement of keyspace, with the replication
// of cassandra.replication (config.DefaultReplication when a config built in Go has none). An
// existing keyspace is left as it is: replication is the operator's to change.
func KeyspaceDDL(cfg *config.Config, keyspace string) string {
	repl := cfg.Cassandra.Replication
	if len(repl) == 0 {
		repl = config.DefaultReplication()
	}
	keys := make([]string, 0, len(repl))
	for k := range repl {
		if k != "class" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	parts := []string{cqlString("class") + ": " + cqlString(repl["class"])}
	for _, k := range keys {
		parts = append(parts, cqlString(k)+": "+cqlString(repl[k]))
	}
	return "CREATE KEYSPACE IF NOT EXISTS " + keyspace + " WITH replication = {" + strings.Join(parts, ", ") + "}"
}

// typeDDL is the CREATE TYPE IF NOT EXISTS statement of every UDT the topics' columns have, once per
// keyspace and name (config.Validate made every definition of one agree), in the order the topics
// and their columns name them, ahead of the tables that use them. An existing type is left as it is;
// the schema check compares its fields.
func typeDDL(all schema.Tables, topics []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, name := range topics {
		t, ok := all[name]
		if !ok {
			continue
		}
		for _, c := range t.Columns {
			if c.UDT == nil || seen[t.Keyspace+"."+c.UDT.Name] {
				continue
			}
			seen[t.Keyspace+"."+c.UDT.Name] = true
			fields := make([]string, len(c.UDT.Fields))
			for i, f := range c.UDT.Fields {
				fields[i] = f.Name + " " + f.Type
			}
			out = append(out, "CREATE TYPE IF NOT EXISTS "+t.Keyspace+"."+c.UDT.Name+" ("+strings.Join(fields, ", ")+")")
		}
	}
	return out
}

// cqlString quotes s as a CQL string literal.
func cqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// SliceTableDDL returns the name (keyspace.table) and CREATE TABLE IF NOT EXISTS statement of the
// table of the slice of topics.<topic> that holds at: the statement `sink schema --at` prints for it.
func SliceTableDDL(cfg *config.Config, topic string, at time.Time) (name, stmt string, err error) {
	t, err := describe(cfg, topic)
	if err != nil {
		return "", "", err
	}
	if _, sliced := t.Policy.Sliced(); !sliced {
		return "", "", fmt.Errorf("topics.%s: not sliced (bucket.slice is not set)", topic)
	}
	name = t.NameOfSlice(t.Policy.SliceIndex(at))
	return t.Keyspace + "." + name, createTable(t, cfg.Topics[topic], name), nil
}

// describe is the table of topics.<topic>, from a validated cfg.
func describe(cfg *config.Config, topic string) (schema.Table, error) {
	all, err := schema.Describe(cfg)
	if err != nil {
		return schema.Table{}, err
	}
	return all.Get(topic)
}

// SliceMaker creates the table of a slice on demand, when a record's slice has none
// (bucket.missing_slice: create). It is safe for concurrent use: creations are serialized, so one
// missing slice hit by many batches at once is created once (concurrent CREATE TABLE of one table
// can leave replicas with different table ids on Cassandra before 5.0), and a table it created a
// moment ago is not created again.
type SliceMaker struct {
	s   *Session
	cfg *config.Config
	now func() time.Time

	mu      sync.Mutex
	created map[string]time.Time // keyspace.table → when this maker created it
}

// recreateAfter is how long a table this maker created is taken as existing without asking again:
// the batches that failed on it before it existed come back within this time.
const recreateAfter = time.Minute

// NewSliceMaker returns a SliceMaker on s for the topics of cfg (validated, defaults applied).
func NewSliceMaker(s *Session, cfg *config.Config) *SliceMaker {
	return &SliceMaker{s: s, cfg: cfg, now: time.Now, created: make(map[string]time.Time)}
}

// CreateSlice creates the table of the slice of topics.<topic> that holds at, from the topic's own
// DDL, and waits until the cluster agrees on the schema. It returns the table's name
// (keyspace.table), and ran=false when it skipped the statement because it created the table
// within recreateAfter. Creating a table that exists is a no-op (IF NOT EXISTS).
func (m *SliceMaker) CreateSlice(ctx context.Context, topic string, at time.Time) (name string, ran bool, err error) {
	name, stmt, err := SliceTableDDL(m.cfg, topic, at)
	if err != nil {
		return "", false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if t, ok := m.created[name]; ok && m.now().Sub(t) < recreateAfter {
		return name, false, nil
	}
	if err := m.s.gs.Query(stmt).ExecContext(ctx); err != nil {
		return name, true, fmt.Errorf("creating slice table %s: %w", name, err)
	}
	if err := m.s.gs.AwaitSchemaAgreement(ctx); err != nil {
		return name, true, fmt.Errorf("waiting for schema agreement after creating slice table %s: %w", name, err)
	}
	for k, t := range m.created {
		if m.now().Sub(t) >= recreateAfter {
			delete(m.created, k)
		}
	}
	m.created[name] = m.now()
	return name, true, nil
}

// tableDDL renders the table(s) of one topic at time now.
func tableDDL(t schema.Table, tc config.Topic, now time.Time) []string {
	if _, sliced := t.Policy.Sliced(); sliced {
		s := t.Policy.SliceIndex(now)
		return []string{createTable(t, tc, t.NameOfSlice(s)), createTable(t, tc, t.NameOfSlice(s+1))}
	}
	return []string{createTable(t, tc, t.Name)}
}

func createTable(t schema.Table, tc config.Topic, name string) string {
	var b strings.Builder
	b.WriteString("CREATE TABLE IF NOT EXISTS " + t.Keyspace + "." + name + " (\n")
	for _, c := range t.Columns {
		b.WriteString("    " + c.Name + " " + ddlType(c) + ",\n")
	}
	b.WriteString("    PRIMARY KEY ((" + strings.Join(t.PartitionKey, ", ") + ")")
	for _, c := range t.Clustering {
		b.WriteString(", " + c.Name)
	}
	b.WriteString(")\n)")
	with := "WITH "
	if len(t.Clustering) > 0 {
		order := make([]string, len(t.Clustering))
		for i, c := range t.Clustering {
			order[i] = c.Name + " " + map[bool]string{true: "DESC", false: "ASC"}[c.Desc]
		}
		b.WriteString(" WITH CLUSTERING ORDER BY (" + strings.Join(order, ", ") + ")")
		with = "AND "
	}
	if t.Latest {
		// One row per entity, overwritten in place: time windows would keep every version of a row in
		// a window of its own, while leveled compaction keeps a row's versions (and its deletes) in
		// few SSTables, so a read of the latest row touches one or two.
		b.WriteString("\n    " + with + "compaction = {'class': 'LeveledCompactionStrategy'}")
	} else {
		unit, size := CompactionWindow(t.Policy.Width())
		b.WriteString("\n    " + with + "compaction = {'class': 'TimeWindowCompactionStrategy', " +
			"'compaction_window_unit': '" + unit + "', 'compaction_window_size': '" + strconv.Itoa(size) + "'}")
	}
	if t.TTL > 0 {
		b.WriteString("\n    AND default_time_to_live = " + strconv.FormatInt(int64(t.TTL/time.Second), 10))
	}
	b.WriteString("\n    AND gc_grace_seconds = " + strconv.FormatInt(int64(time.Duration(tc.GCGrace)/time.Second), 10))
	return b.String()
}

// ddlType is the type a column is created with: a collection is frozen. A row is always written
// whole, so nothing is lost by freezing, and a frozen collection is one cell, overwritten whole by
// a replay or a retried batch; a non-frozen list written again at the same write timestamp keeps
// both copies of its elements (['a','b'] becomes ['a','b','a','b']). Sets and maps would survive
// that, but one rule for every collection is simpler to reason about.
//
// A tuple is frozen in any case (Cassandra freezes every tuple), and a UDT column is frozen for the
// same reason as a collection: one cell, overwritten whole.
func ddlType(c schema.Column) string {
	if isCollection(c.Type) || c.UDT != nil || strings.HasPrefix(normalizeType(c.Type), "tuple<") {
		return "frozen<" + c.Type + ">"
	}
	return c.Type
}

// isCollection reports whether typ (a config or system_schema spelling, not frozen) is a list, set
// or map.
func isCollection(typ string) bool {
	t := normalizeType(typ)
	return strings.HasPrefix(t, "list<") || strings.HasPrefix(t, "set<") || strings.HasPrefix(t, "map<")
}

// CompactionWindow is the TimeWindowCompactionStrategy window matching a bucket width, so each
// SSTable window holds about one bucket and expires whole under a TTL. Fixed widths map exactly
// to DAYS, HOURS or MINUTES (a sub-minute width gets a one-minute window, TWCS's finest). Calendar
// units are approximations, since TWCS windows are fixed: a week is 7 DAYS (exact), a month 30
// DAYS and a year 365 DAYS.
func CompactionWindow(w bucketer.Width) (unit string, size int) {
	switch w.Unit {
	case bucketer.Week:
		return "DAYS", 7
	case bucketer.Month:
		return "DAYS", 30
	case bucketer.Year:
		return "DAYS", 365
	}
	s := w.Seconds
	switch {
	case s%86400 == 0:
		return "DAYS", int(s / 86400)
	case s%3600 == 0:
		return "HOURS", int(s / 3600)
	case s%60 == 0:
		return "MINUTES", int(s / 60)
	}
	return "MINUTES", max(1, int(s/60))
}

// SchemaColumn is one row of system_schema.columns.
type SchemaColumn struct {
	Name     string
	Kind     string // partition_key, clustering, regular, static
	Position int
	Order    string // clustering_order: asc, desc, none
	Type     string
}

// ApplySchema runs the statements of Schema against the cluster, then checks that every table
// they name, new or already there, has the columns, partition key and clustering the policy
// needs. CREATE ... IF NOT EXISTS makes it idempotent; it never alters or drops anything.
func ApplySchema(ctx context.Context, s *Session, cfg *config.Config, topics []string, now time.Time) error {
	stmts, err := Schema(cfg, topics, now)
	if err != nil {
		return err
	}
	for _, stmt := range stmts {
		if err := s.gs.Query(stmt).ExecContext(ctx); err != nil {
			head, _, _ := strings.Cut(stmt, "(")
			return fmt.Errorf("applying %s: %w", strings.TrimSpace(head), err)
		}
	}
	missing, err := CheckSchema(ctx, s, cfg, topics, now)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return fmt.Errorf("after applying the schema, tables are still missing: %s", strings.Join(missing, ", "))
	}
	return nil
}

// CheckSchema checks that every existing table the topics write to (all topics when topics is empty;
// for a sliced policy the slice of now and the next) has the columns, column types, partition key and
// clustering the configuration needs, and lists the tables that do not exist (keyspace.table). `sink
// run` calls it before consuming: values are bound pre-encoded for the configured column types, so a
// table whose column type differs would refuse every row; failing at start names the column instead.
func CheckSchema(ctx context.Context, s *Session, cfg *config.Config, topics []string, now time.Time) (missing []string, err error) {
	all, err := schema.Describe(cfg)
	if err != nil {
		return nil, err
	}
	if len(topics) == 0 {
		topics = all.Names()
	}
	rollups, err := schema.DescribeRollups(cfg, all)
	if err != nil {
		return nil, err
	}
	for _, ks := range routingTableKeyspaces(cfg, topics) {
		for _, table := range routingTables {
			cols, err := ReadSchemaColumns(ctx, s, ks, table)
			if err != nil {
				return nil, err
			}
			if len(cols) == 0 {
				missing = append(missing, ks+"."+table)
			} else if err := checkRoutingTable(ks, table, cols); err != nil {
				return nil, err
			}
		}
	}
	for _, ks := range pendingKeyspaces(cfg, topics) {
		cols, err := ReadSchemaColumns(ctx, s, ks, PendingTable)
		if err != nil {
			return nil, err
		}
		if len(cols) == 0 {
			missing = append(missing, ks+"."+PendingTable)
		}
	}
	for _, name := range topics {
		t, err := all.Get(name)
		if err != nil {
			return nil, err
		}
		names := []string{t.Name}
		if _, sliced := t.Policy.Sliced(); sliced {
			sl := t.Policy.SliceIndex(now)
			names = []string{t.NameOfSlice(sl), t.NameOfSlice(sl + 1)}
		}
		for _, table := range names {
			if missing, err = checkTable(ctx, s, t, table, missing); err != nil {
				return nil, err
			}
		}
		for _, r := range rollups[name] {
			if missing, err = checkTable(ctx, s, r.Table, r.Table.Name, missing); err != nil {
				return nil, err
			}
		}
	}
	return missing, nil
}

// checkTable checks the table name of t against the cluster's schema, or adds it to missing.
func checkTable(ctx context.Context, s *Session, t schema.Table, name string, missing []string) ([]string, error) {
	cols, err := ReadSchemaColumns(ctx, s, t.Keyspace, name)
	if err != nil {
		return nil, err
	}
	if len(cols) == 0 {
		return append(missing, t.Keyspace+"."+name), nil
	}
	if err := CheckTable(t, name, cols); err != nil {
		return missing, err
	}
	for _, c := range t.Columns {
		if c.UDT == nil {
			continue
		}
		names, types, err := ReadUDT(ctx, s, t.Keyspace, c.UDT.Name)
		if err != nil {
			return missing, err
		}
		if err := CheckUDT(t, c, names, types); err != nil {
			return missing, err
		}
	}
	return missing, nil
}

// ReadSchemaColumns reads the columns of keyspace.table from system_schema.columns.
func ReadSchemaColumns(ctx context.Context, s *Session, keyspace, table string) ([]SchemaColumn, error) {
	iter := s.gs.Query(`SELECT column_name, kind, position, clustering_order, type FROM system_schema.columns `+
		`WHERE keyspace_name = ? AND table_name = ?`, keyspace, table).IterContext(ctx)
	var out []SchemaColumn
	var c SchemaColumn
	for iter.Scan(&c.Name, &c.Kind, &c.Position, &c.Order, &c.Type) {
		out = append(out, c)
	}
	if err := iter.Close(); err != nil {
		return nil, fmt.Errorf("reading system_schema.columns of %s.%s: %w", keyspace, table, err)
	}
	return out, nil
}

// CheckTable compares an existing table (its system_schema.columns rows) with what topic t needs.
// A table created earlier for another policy keeps its old key after CREATE TABLE IF NOT EXISTS,
// and rows would then land in partitions readers do not expect: that is an error, with the fix.
func CheckTable(t schema.Table, name string, cols []SchemaColumn) error {
	full := t.Keyspace + "." + name
	if len(cols) == 0 {
		return fmt.Errorf("table %s does not exist after CREATE TABLE IF NOT EXISTS; check the keyspace and permissions", full)
	}
	byName := make(map[string]SchemaColumn, len(cols))
	var pk, ck []SchemaColumn
	for _, c := range cols {
		byName[c.Name] = c
		switch c.Kind {
		case "partition_key":
			pk = append(pk, c)
		case "clustering":
			ck = append(ck, c)
		}
	}
	byPos := func(a, b SchemaColumn) int { return a.Position - b.Position }
	slices.SortFunc(pk, byPos)
	slices.SortFunc(ck, byPos)
	fix := fmt.Sprintf("the table was created for another policy; drop it (if its data can go) or set topics.%s.table to a new table", t.Topic)

	var gotPK []string
	for _, c := range pk {
		gotPK = append(gotPK, c.Name)
	}
	wantPK := lower(t.PartitionKey)
	if !slices.Equal(gotPK, wantPK) {
		return fmt.Errorf("table %s has partition key (%s), but topics.%s needs (%s); %s",
			full, strings.Join(gotPK, ", "), t.Topic, strings.Join(wantPK, ", "), fix)
	}
	var gotCK, wantCK []string
	for _, c := range ck {
		gotCK = append(gotCK, c.Name+" "+strings.ToUpper(c.Order))
	}
	for _, c := range t.Clustering {
		wantCK = append(wantCK, strings.ToLower(c.Name)+" "+map[bool]string{true: "DESC", false: "ASC"}[c.Desc])
	}
	if !slices.Equal(gotCK, wantCK) {
		return fmt.Errorf("table %s has clustering (%s), but topics.%s needs (%s); %s",
			full, strings.Join(gotCK, ", "), t.Topic, strings.Join(wantCK, ", "), fix)
	}
	for _, c := range t.Columns {
		got, ok := byName[strings.ToLower(c.Name)]
		if !ok {
			return fmt.Errorf("table %s has no column %s (%s) that topics.%s writes; add it with ALTER TABLE %s ADD %s %s",
				full, c.Name, ddlType(c), t.Topic, full, c.Name, ddlType(c))
		}
		// Frozen or not, a collection binds the same: compare what it holds, then whether a replay
		// can write it again.
		gotType, frozen := unfrozen(got.Type)
		if gotType != normalizeType(c.Type) {
			return fmt.Errorf("table %s column %s is %s, but topics.%s writes it as %s; %s",
				full, c.Name, got.Type, t.Topic, c.Type, fix)
		}
		if !frozen && strings.HasPrefix(gotType, "list<") && t.DeterministicTimestamp() {
			return fmt.Errorf("table %s column %s is a %s that is not frozen: with write_timestamp %s a replay or a retried batch writes a row again at the same timestamp, "+
				"and Cassandra then keeps both copies of the list's elements (['a','b'] becomes ['a','b','a','b']); "+
				"make it %s (what `sink schema` creates; ALTER TABLE %s DROP %s, then ADD %s %s, which drops the column's data), "+
				"or use a new table, or set topics.%s.write_timestamp: server (not deterministic on replay)",
				full, c.Name, got.Type, t.WriteTimestamp, ddlType(c), full, c.Name, c.Name, ddlType(c), t.Topic)
		}
	}
	return nil
}

// unfrozen is a system_schema type normalized (normalizeType) without its frozen<...>, at any depth
// (a tuple's collections are frozen inside it), and whether it had one at the top.
func unfrozen(typ string) (string, bool) {
	t := normalizeType(typ)
	_, frozen := strings.CutPrefix(t, "frozen<")
	for {
		at := strings.Index(t, "frozen<")
		if at < 0 {
			return t, frozen
		}
		// Drop "frozen<" and the '>' that closes it.
		depth, end := 0, len(t)
		for i := at + len("frozen"); i < len(t); i++ {
			if t[i] == '<' {
				depth++
			} else if t[i] == '>' {
				if depth--; depth == 0 {
					end = i
					break
				}
			}
		}
		if end == len(t) {
			return t, frozen // unbalanced: compared as it is
		}
		t = t[:at] + t[at+len("frozen<"):end] + t[end+1:]
	}
}

// CheckUDT compares the fields of an existing UDT (system_schema.types: its field names and types, in
// order) with the fields topic t's column c gives it. `sink schema` creates a UDT only if it does not
// exist, so a type created earlier with other fields would make every row of the column fail: that is
// an error, with the fix.
func CheckUDT(t schema.Table, c schema.Column, names, types []string) error {
	full := t.Keyspace + "." + c.UDT.Name
	if len(names) == 0 {
		return fmt.Errorf("type %s that topics.%s column %s has does not exist; run `sink schema` to create it", full, t.Topic, c.Name)
	}
	want := make([]string, len(c.UDT.Fields))
	for i, f := range c.UDT.Fields {
		want[i] = strings.ToLower(f.Name) + " " + normalizeType(f.Type)
	}
	got := make([]string, len(names))
	for i := range names {
		typ := ""
		if i < len(types) {
			typ, _ = unfrozen(types[i])
		}
		got[i] = strings.ToLower(names[i]) + " " + typ
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("type %s has fields (%s), but topics.%s column %s needs (%s); the type was created with other fields: "+
			"give the column a new UDT name, or (if no table uses it) DROP TYPE %s and run `sink schema` again",
			full, strings.Join(got, ", "), t.Topic, c.Name, strings.Join(want, ", "), full)
	}
	return nil
}

// ReadUDT reads the field names and types of keyspace's UDT name from system_schema.types; none when
// it does not exist.
func ReadUDT(ctx context.Context, s *Session, keyspace, name string) (names, types []string, err error) {
	iter := s.gs.Query(`SELECT field_names, field_types FROM system_schema.types WHERE keyspace_name = ? AND type_name = ?`,
		keyspace, name).IterContext(ctx)
	iter.Scan(&names, &types)
	if err := iter.Close(); err != nil {
		return nil, nil, fmt.Errorf("reading system_schema.types of %s.%s: %w", keyspace, name, err)
	}
	return names, types, nil
}

func lower(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = strings.ToLower(n)
	}
	return out
}

// normalizeType compares CQL type names as system_schema spells them: varchar is text, and
// spaces inside collections do not matter.
func normalizeType(s string) string {
	s = strings.ReplaceAll(strings.ToLower(s), " ", "")
	return strings.ReplaceAll(s, "varchar", "text")
}

// FormatDDL renders statements as a CQL script, each ending in a semicolon, blank lines between.
func FormatDDL(stmts []string) string {
	var b strings.Builder
	for i, s := range stmts {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(s + ";\n")
	}
	return b.String()
}
