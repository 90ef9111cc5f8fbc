package pipeline

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"gopkg.in/inf.v0"

	"github.com/bucketsink/sink/cassandra"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/internal/testenv"
)

// The change-data-capture test runs the whole path a database's changes take: PostgreSQL (logical decoding,
// pgoutput) → Debezium's PostgreSQL connector in Kafka Connect (JsonConverter, the value with its schema) → Kafka →
// `sink run` → Cassandra, every server real, the sink killed on the way.

// cdcRow is one row of the source table as the test compares it: PostgreSQL's values, or a Cassandra row's.
type cdcRow struct {
	id      int64
	balance *inf.Dec // numeric(14,4): Debezium's Decimal of scale 4
	rate    *inf.Dec // numeric without a scale: Debezium's VariableScaleDecimal
	updated time.Time
	opened  time.Time // a date, at midnight UTC
	note    *string   // nullable
	// Cassandra only: updated_text, the ZonedTimestamp's text, which keeps the microseconds a timestamp column
	// (milliseconds) cannot; and the change's LSN.
	updatedText string
	lsn         int64
	// op is the change's op: c, u or r (the snapshot's reads).
	op string
}

// pgColumns reads a source row exactly: numerics as their text, the timestamp with its microseconds.
const pgColumns = "id, balance::text, rate::text, updated, opened, note"

func scanPG(row pgx.Row) (cdcRow, error) {
	var r cdcRow
	var balance, rate string
	if err := row.Scan(&r.id, &balance, &rate, &r.updated, &r.opened, &r.note); err != nil {
		return r, err
	}
	var ok bool
	if r.balance, ok = new(inf.Dec).SetString(balance); !ok {
		return r, fmt.Errorf("balance %q is no decimal", balance)
	}
	if r.rate, ok = new(inf.Dec).SetString(rate); !ok {
		return r, fmt.Errorf("rate %q is no decimal", rate)
	}
	r.updated, r.opened = r.updated.UTC(), r.opened.UTC()
	return r, nil
}

// diff says how Cassandra's row got differs from the source row want, "" when every column is equal: the decimals
// by value, the timestamp column to the millisecond (what Cassandra keeps) and its text to the microsecond, the date
// exactly, the nullable column null for null, and the op of the change that wrote the row when want has one.
func (want cdcRow) diff(got cdcRow) string {
	var d []string
	if got.balance == nil || want.balance.Cmp(got.balance) != 0 {
		d = append(d, fmt.Sprintf("balance %v, want %v", got.balance, want.balance))
	}
	if got.rate == nil || want.rate.Cmp(got.rate) != 0 {
		d = append(d, fmt.Sprintf("rate %v, want %v", got.rate, want.rate))
	}
	if !got.updated.Equal(want.updated.Truncate(time.Millisecond)) {
		d = append(d, fmt.Sprintf("updated %v, want %v", got.updated, want.updated.Truncate(time.Millisecond)))
	}
	if text, err := time.Parse(time.RFC3339Nano, got.updatedText); err != nil || !text.Equal(want.updated) {
		d = append(d, fmt.Sprintf("updated_text %q, want %s", got.updatedText, want.updated.Format(time.RFC3339Nano)))
	}
	if !got.opened.Equal(want.opened) {
		d = append(d, fmt.Sprintf("opened %s, want %s", got.opened.Format(time.DateOnly), want.opened.Format(time.DateOnly)))
	}
	if want.op != "" && got.op != want.op {
		d = append(d, fmt.Sprintf("op %q, want %q", got.op, want.op))
	}
	switch {
	case (got.note == nil) != (want.note == nil):
		d = append(d, fmt.Sprintf("note %s, want %s", strPtr(got.note), strPtr(want.note)))
	case got.note != nil && *got.note != *want.note:
		d = append(d, fmt.Sprintf("note %q, want %q", *got.note, *want.note))
	}
	return strings.Join(d, "; ")
}

func strPtr(s *string) string {
	if s == nil {
		return "null"
	}
	return fmt.Sprintf("%q", *s)
}

// cdcSource is the source table and the test's record of every change made to it.
type cdcSource struct {
	t    *testing.T
	conn *pgx.Conn
	rng  *rand.Rand
	// changes holds, per id, the row after each insert and update in commit order: what the history table
	// must hold, one row per change. Deletes leave no row there (on_delete: skip).
	changes map[int64][]cdcRow
	ids     []int64 // live ids
	deleted []int64 // ids deleted, some inserted again later
	deletes int64
	events  int64 // records Debezium writes: one per snapshot read and change, and a tombstone per delete
}

// fail reports a statement that failed and ends the calling goroutine: the changes are made from the stream's
// goroutine, where FailNow may not be called; its deferred close tells the test, which then sees t.Failed.
func (c *cdcSource) fail(sql string, err error) {
	c.t.Helper()
	c.t.Errorf("%s: %v", sql, err)
	runtime.Goexit()
}

func (c *cdcSource) exec(sql string, args ...any) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.conn.Exec(ctx, sql, args...); err != nil {
		c.fail(sql, err)
	}
}

// change runs one statement that returns the changed row, and records the row as a change of op.
func (c *cdcSource) change(op, sql string, args ...any) cdcRow {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := scanPG(c.conn.QueryRow(ctx, sql+" RETURNING "+pgColumns, args...))
	if err != nil {
		c.fail(sql, err)
	}
	r.op = op
	c.changes[r.id] = append(c.changes[r.id], r)
	c.events++
	return r
}

// randomValues gives a balance of scale 4 (negative ones, whole ones, the column's largest), a rate of any scale,
// a timestamp with microseconds and a date from 1900 to 2200.
func (c *cdcSource) randomValues() (balance, rate string, updated time.Time, opened string) {
	switch c.rng.IntN(4) {
	case 0:
		balance = "9999999999.9999"
	case 1:
		balance = fmt.Sprintf("-%d.%04d", c.rng.IntN(1e6), c.rng.IntN(1e4))
	default:
		balance = fmt.Sprintf("%d.%04d", c.rng.IntN(1e9), c.rng.IntN(1e4))
	}
	scale := c.rng.IntN(12)
	rate = fmt.Sprintf("%d", c.rng.Int64N(1e15)-5e14)
	if scale > 0 {
		rate = fmt.Sprintf("%s.%0*d", rate, scale, c.rng.Int64N(int64(pow10(scale))))
	}
	updated = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).
		Add(time.Duration(c.rng.Int64N(40*365*24*3600*1e6)) * time.Microsecond)
	opened = time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, c.rng.IntN(300*365)).Format(time.DateOnly)
	return balance, rate, updated, opened
}

func pow10(n int) float64 {
	p := 1.0
	for range n {
		p *= 10
	}
	return p
}

func (c *cdcSource) insert() {
	balance, rate, updated, opened := c.randomValues()
	var note any
	if c.rng.IntN(3) > 0 {
		note = fmt.Sprintf("note %d", c.rng.IntN(1000))
	}
	r := c.change("c", "INSERT INTO accounts (balance, rate, updated, opened, note) VALUES ($1, $2, $3, $4, $5)",
		balance, rate, updated, opened, note)
	c.ids = append(c.ids, r.id)
}

// update changes one live row: one column, or the nullable column to NULL, or back from NULL.
func (c *cdcSource) update() {
	if len(c.ids) == 0 {
		c.insert()
		return
	}
	id := c.ids[c.rng.IntN(len(c.ids))]
	balance, rate, updated, opened := c.randomValues()
	switch c.rng.IntN(6) {
	case 0:
		c.change("u", "UPDATE accounts SET balance = $1 WHERE id = $2", balance, id)
	case 1:
		c.change("u", "UPDATE accounts SET rate = $1, updated = $2 WHERE id = $3", rate, updated, id)
	case 2:
		c.change("u", "UPDATE accounts SET opened = $1 WHERE id = $2", opened, id)
	case 3:
		c.change("u", "UPDATE accounts SET note = NULL WHERE id = $1", id)
	case 4:
		c.change("u", "UPDATE accounts SET note = $1 WHERE id = $2", fmt.Sprintf("back %d", c.rng.IntN(1000)), id)
	default:
		c.change("u", "UPDATE accounts SET balance = $1, rate = $2, updated = $3, opened = $4, note = $5 WHERE id = $6",
			balance, rate, updated, opened, "all "+balance, id)
	}
}

func (c *cdcSource) delete() {
	if len(c.ids) == 0 {
		return
	}
	i := c.rng.IntN(len(c.ids))
	id := c.ids[i]
	c.exec("DELETE FROM accounts WHERE id = $1", id)
	c.ids = slices.Delete(c.ids, i, i+1)
	c.deleted = append(c.deleted, id)
	c.deletes++
	c.events += 2 // the delete event and its tombstone
}

// reinsert inserts a deleted id again: its latest-value row, deleted before, is there again, and its history goes on.
func (c *cdcSource) reinsert() {
	if len(c.deleted) == 0 {
		return
	}
	id := c.deleted[0]
	c.deleted = c.deleted[1:]
	balance, rate, updated, opened := c.randomValues()
	c.change("c", "INSERT INTO accounts (id, balance, rate, updated, opened, note) VALUES ($1, $2, $3, $4, $5, NULL)",
		id, balance, rate, updated, opened)
	c.ids = append(c.ids, id)
}

// transaction makes two changes of one row in one transaction: both events carry the transaction's commit time as
// their source time, and the later offset must win on the latest-value table.
func (c *cdcSource) transaction() {
	if len(c.ids) == 0 {
		return
	}
	c.exec("BEGIN")
	c.update()
	if c.rng.IntN(2) == 0 {
		c.delete()
	} else {
		c.update()
	}
	c.exec("COMMIT")
}

// step makes one random change.
func (c *cdcSource) step() {
	switch n := c.rng.IntN(100); {
	case n < 30:
		c.insert()
	case n < 75:
		c.update()
	case n < 87:
		c.delete()
	case n < 92:
		c.reinsert()
	default:
		c.transaction()
	}
}

// table reads the whole source table.
func (c *cdcSource) table() map[int64]cdcRow {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rows, err := c.conn.Query(ctx, "SELECT "+pgColumns+" FROM accounts")
	if err != nil {
		c.t.Fatal(err)
	}
	defer rows.Close()
	out := map[int64]cdcRow{}
	for rows.Next() {
		r, err := scanPG(rows)
		if err != nil {
			c.t.Fatal(err)
		}
		out[r.id] = r
	}
	if err := rows.Err(); err != nil {
		c.t.Fatal(err)
	}
	return out
}

// cdcConfig is the sink's configuration: one Debezium topic feeding a latest-value table (accounts, the source
// table's copy: inserts and updates upsert, deletes delete) and a daily history table (accounts_history, one row per
// insert or update, clustered by the change's source time and LSN, so a replay writes the same rows, and two
// changes of one transaction, which share a source time, stay two rows; deletes skipped).
func cdcConfig(brokers, hosts []string, group, ks, topic, dlq, metrics string) string {
	columns := `      - {name: id, type: bigint, field: id}
      - {name: balance, type: decimal, field: balance}
      - {name: rate, type: decimal, field: rate}
      - {name: updated, type: timestamp, field: updated}
      - {name: updated_text, type: text, field: updated}
      - {name: opened, type: date, field: opened}
      - {name: note, type: text, field: note}
      - {name: lsn, type: bigint, source: change, field: source.lsn}
      - {name: op, type: text, source: change, field: op}
`
	return fmt.Sprintf(`kafka:
  brokers: %s
  group: %s
  session_timeout: 10s
  rebalance_timeout: 30s
cassandra:
  hosts: %s
  keyspace: %s
  consistency: ONE
  replication: {class: SimpleStrategy, replication_factor: 1}
writer:
  commit_interval: 200ms
  shutdown_timeout: 15s
  linger: 5ms
metrics:
  address: %q
log:
  level: warn
topics:
  accounts:
    topic: %[6]s
    codec: json
    envelope: debezium
    id: [id]
    time: {source: change}
    bucket: {width: none}
    table: accounts
    gc_grace: 10d
    columns:
%[8]s    dead_letter_topic: %[7]s
  accounts_history:
    topic: %[6]s
    codec: json
    envelope: debezium
    on_delete: skip
    id: [id]
    time: {source: change}
    bucket: {width: 1d, key: date}
    table: accounts_history
    columns:
%[8]s      - {name: changed, type: timestamp, source: event_time}
    clustering:
      - {column: changed, order: asc}
      - {column: lsn, order: asc}
    dead_letter_topic: %[7]s
`, yamlList(brokers), group, yamlList(hosts), ks, metrics, topic, dlq, columns)
}

// TestIntegrationChangeStreamFromPostgresSurvivesKillsAndAReplay: a source table in a real PostgreSQL with a
// numeric(14,4), an unscaled numeric, a timestamp with time zone, a date and a nullable column. Rows inserted
// before Debezium's connector starts reach Kafka as its snapshot; then a stream of random inserts, updates
// (the nullable column to NULL and back among them), deletes, re-inserts of deleted ids and two-change
// transactions reaches Kafka through the connector, while `sink run` is killed with SIGKILL several times. Once
// every change is committed, the latest-value table equals the PostgreSQL table row for row, every column compared
// exactly, and the history table holds every insert and update once, in LSN order per id, with no dead letter.
// Then the group replays the topic from offset 0: both tables are the same again.
func TestIntegrationChangeStreamFromPostgresSurvivesKillsAndAReplay(t *testing.T) {
	brokers := testenv.Kafka(t)
	hosts := testenv.Cassandra(t)
	pg := testenv.StartPostgres(t)

	// ctx bounds the setup; Kafka Connect's start alone may take two minutes on a busy machine.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		t.Fatalf("connecting to PostgreSQL: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	src := &cdcSource{t: t, conn: conn, rng: rand.New(rand.NewPCG(38, uint64(time.Now().UnixNano()))), changes: map[int64][]cdcRow{}}
	src.exec(`CREATE TABLE accounts (
		id bigserial PRIMARY KEY,
		balance numeric(14,4) NOT NULL,
		rate numeric NOT NULL,
		updated timestamptz NOT NULL,
		opened date NOT NULL,
		note text)`)
	for range 8 {
		src.insert()
	}
	for _, w := range src.changes {
		w[0].op = "r" // read by the connector's snapshot
	}

	prefix := testenv.Name(t, "cdc")
	topic := prefix + ".public.accounts"
	s := &stack{t: t, topic: topic, dlq: prefix + "_dlq", ks: testenv.Name(t, "ks"), group: testenv.Name(t, "g"),
		produced: map[int32]int64{}}
	if s.cl, err = kgo.NewClient(kgo.SeedBrokers(brokers...)); err != nil {
		t.Fatal(err)
	}
	s.adm = kadm.NewClient(s.cl)
	keep := map[string]*string{"retention.ms": kadm.StringPtr("-1")}
	if _, err := s.adm.CreateTopic(ctx, 3, 1, keep, topic); err != nil {
		t.Fatal(err)
	}
	if _, err := s.adm.CreateTopic(ctx, 1, 1, keep, s.dlq); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = s.adm.DeleteTopics(dctx, topic, s.dlq)
		_, _ = s.adm.DeleteGroup(dctx, s.group)
		s.cl.Close()
	})

	metrics := freeAddr(t)
	cfgPath := filepath.Join(t.TempDir(), "sink.yaml")
	if err := os.WriteFile(cfgPath, []byte(cdcConfig(brokers, hosts, s.group, s.ks, topic, s.dlq, metrics)), 0o600); err != nil {
		t.Fatal(err)
	}
	if s.cfg, err = config.Check(ctx, cfgPath, nil); err != nil {
		t.Fatalf("the change-data-capture config: %v", err)
	}
	if s.session, err = cassandra.Connect(ctx, s.cfg.Cassandra); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = s.session.Driver().Query("DROP KEYSPACE IF EXISTS " + s.ks).Exec()
		s.session.Close()
	})
	// The tables are made while Kafka Connect starts: both take a while on a busy machine.
	schema := make(chan error, 1)
	go func() { schema <- cassandra.ApplySchema(ctx, s.session, s.cfg, nil, time.Now()) }()

	slot := strings.ReplaceAll(prefix, "-", "_")
	testenv.StartConnect(t, map[string]string{
		"name":                        prefix,
		"connector.class":             "io.debezium.connector.postgresql.PostgresConnector",
		"tasks.max":                   "1",
		"database.hostname":           "127.0.0.1",
		"database.port":               fmt.Sprint(pg.Port),
		"database.user":               "sink",
		"database.password":           "sink",
		"database.dbname":             "sink",
		"topic.prefix":                prefix,
		"plugin.name":                 "pgoutput",
		"slot.name":                   slot,
		"publication.name":            slot,
		"publication.autocreate.mode": "filtered",
		"table.include.list":          "public.accounts",
		// Debezium's defaults, written out as the test relies on them: numeric(p,s) as Connect's Decimal,
		// an unscaled numeric as VariableScaleDecimal, timestamptz as ZonedTimestamp, date as Date (days).
		"decimal.handling.mode": "precise",
		"time.precision.mode":   "adaptive",
		"snapshot.mode":         "initial",
	})
	if err := <-schema; err != nil {
		t.Fatal(err)
	}
	s.waitFor(2*time.Minute, "the connector's snapshot to reach Kafka", func() bool { return s.topicEnd() >= 8 })

	cmd, _ := runSink(t, cfgPath)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 240 {
			src.step()
			time.Sleep(time.Duration(10+src.rng.IntN(40)) * time.Millisecond)
		}
	}()
	const kills = 5
	for i := range kills {
		s.waitFor(time.Minute, "sink run to be ready", s.sinkReady)
		time.Sleep(time.Duration(500+rand.IntN(2500)) * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		s.removeMembers()
		if i < kills-1 {
			cmd, _ = runSink(t, cfgPath)
		}
	}
	<-done
	if t.Failed() {
		return
	}
	s.waitFor(2*time.Minute, fmt.Sprintf("Debezium's %d records to reach Kafka", src.events), func() bool {
		return s.topicEnd() >= src.events
	})
	if end := s.topicEnd(); end != src.events {
		t.Fatalf("the topic holds %d records, want %d: a record per snapshot read and change, and a tombstone per delete", end, src.events)
	}
	want := src.table()
	for id, r := range want {
		r.op = src.changes[id][len(src.changes[id])-1].op // the row holds the last insert or update
		want[id] = r
	}
	t.Logf("%d records of %d ids; %d rows in PostgreSQL", src.events, len(src.changes), len(want))

	catchUp := func(what string, check func()) {
		cmd, _ := runSink(t, cfgPath)
		s.waitFor(time.Minute, "sink run to be ready "+what, s.sinkReady)
		s.waitFor(3*time.Minute, "committed offsets to reach the end "+what, s.allCommitted)
		if check != nil {
			check()
		}
		if code, _ := stopSink(t, cmd); code != 0 {
			t.Errorf("sink run exited %d after SIGTERM %s, want 0", code, what)
		}
	}
	catchUp("after the kills", nil)
	s.checkLatest(want)
	history := s.checkHistory(src.changes)
	if dl := s.dlqRecords(); len(dl) > 0 {
		t.Errorf("%d dead letters, want none; the first: %s", len(dl), dl[0].Value)
	}

	// A replay from offset 0 writes every row again, the same, and one process reads every record: each delete
	// is skipped by the history entry, each tombstone by both entries, and counted so.
	dctx, dcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer dcancel()
	if _, err := s.adm.DeleteGroup(dctx, s.group); err != nil {
		t.Fatal(err)
	}
	catchUp("of the replay", func() {
		if got := s.sinkMetric("sink_records_skipped_total", `reason="deleted"`); got != float64(src.deletes) {
			t.Errorf("sink_records_skipped_total{reason=deleted} %v after the replay, want %d: one per delete, by the history entry", got, src.deletes)
		}
		if got := s.sinkMetric("sink_records_skipped_total", `reason="tombstone"`); got != float64(2*src.deletes) {
			t.Errorf("sink_records_skipped_total{reason=tombstone} %v after the replay, want %d: each of the %d tombstones by both entries", got, 2*src.deletes, src.deletes)
		}
	})
	s.checkLatest(want)
	if again := s.checkHistory(src.changes); again != history {
		t.Errorf("the replay left %d history rows, want the %d it found before", again, history)
	}
}

// topicEnd is the number of records on the stack's topic, and sets produced to its end offsets, which allCommitted
// compares the group's committed offsets with.
func (s *stack) topicEnd() int64 {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ends, err := s.adm.ListEndOffsets(ctx, s.topic)
	if err != nil {
		return -1
	}
	var n int64
	s.recsMu.Lock()
	defer s.recsMu.Unlock()
	ends.Each(func(o kadm.ListedOffset) {
		n += o.Offset
		if o.Offset > 0 {
			s.produced[o.Partition] = o.Offset
		}
	})
	return n
}

// cassandraRows reads the table's rows; with history, every row of every day.
func (s *stack) cassandraRows(table string) []cdcRow {
	s.t.Helper()
	iter := s.session.Driver().Query("SELECT id, balance, rate, updated, updated_text, opened, note, lsn, op FROM " + s.ks + "." + table).
		PageSize(1000).IterContext(context.Background())
	var out []cdcRow
	for {
		var r cdcRow
		if !iter.Scan(&r.id, &r.balance, &r.rate, &r.updated, &r.updatedText, &r.opened, &r.note, &r.lsn, &r.op) {
			break
		}
		r.updated, r.opened = r.updated.UTC(), r.opened.UTC()
		out = append(out, r)
	}
	if err := iter.Close(); err != nil {
		s.t.Fatalf("reading %s: %v", table, err)
	}
	return out
}

// checkLatest compares the latest-value table with the PostgreSQL table, row for row.
func (s *stack) checkLatest(want map[int64]cdcRow) {
	s.t.Helper()
	got := map[int64]cdcRow{}
	for _, r := range s.cassandraRows("accounts") {
		got[r.id] = r
	}
	bad := 0
	for _, id := range slices.Sorted(maps.Keys(want)) {
		g, ok := got[id]
		switch {
		case !ok:
			s.t.Errorf("accounts: id %d is in PostgreSQL but not in Cassandra", id)
			bad++
		case want[id].diff(g) != "":
			s.t.Errorf("accounts: id %d: %s", id, want[id].diff(g))
			bad++
		}
	}
	for id, g := range got {
		if _, ok := want[id]; !ok {
			s.t.Errorf("accounts: id %d (op %s, lsn %d) is in Cassandra but deleted from PostgreSQL", id, g.op, g.lsn)
			bad++
		}
	}
	if bad == 0 {
		s.t.Logf("accounts: the %d rows equal PostgreSQL's", len(want))
	}
}

// checkHistory compares the history table with every insert and update made: per id, one row per change in the
// order they were made (their LSNs increase), each with the row's values after it. It returns the row count.
func (s *stack) checkHistory(changes map[int64][]cdcRow) int {
	s.t.Helper()
	rows := s.cassandraRows("accounts_history")
	got := map[int64][]cdcRow{}
	for _, r := range rows {
		got[r.id] = append(got[r.id], r)
	}
	for _, id := range slices.Sorted(maps.Keys(changes)) {
		g, w := got[id], changes[id]
		slices.SortFunc(g, func(a, b cdcRow) int { return cmp.Compare(a.lsn, b.lsn) })
		if len(g) != len(w) {
			s.t.Errorf("accounts_history: id %d has %d rows, want one per change: %d", id, len(g), len(w))
			continue
		}
		for i := range w {
			if d := w[i].diff(g[i]); d != "" {
				s.t.Errorf("accounts_history: id %d, change %d of %d (lsn %d, op %s): %s", id, i+1, len(w), g[i].lsn, g[i].op, d)
			}
		}
	}
	for id := range got {
		if _, ok := changes[id]; !ok {
			s.t.Errorf("accounts_history: id %d has rows but was never changed", id)
		}
	}
	return len(rows)
}
