package pipeline

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/bucketsink/sink/cassandra"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/pipeline/deadletter"
)

// One Kafka topic read by three entries, each writing its own table, on the real stack.

// threeEntries makes the stack's topic feed three tables: readings (by device and hour, the stack's
// entry with a site column), by_site (by site and day) and third (thirdEntry). Every entry writes with
// the event time as its write timestamp, so that the rows of any pass, replayed or not, are the same
// cells with the same timestamps.
func threeEntries(c *config.Config) {
	base := c.Topics["readings"]
	base.WriteTimestamp = config.WriteTimestampEventTime
	base.Columns = append(base.Columns, config.Column{Name: "site", Type: "text", Field: "site"})
	c.Topics["readings"] = base
	bySite := base
	bySite.Table, bySite.ID = "by_site", []string{"site"}
	bySite.Bucket = config.Bucket{Width: "1d", Key: "text"}
	bySite.Clustering = []config.Clustering{{Column: "ts", Order: "desc"}, {Column: "device_id", Order: "asc"}}
	c.Topics["by_site"] = bySite
	c.Topics["third"] = thirdEntry(base)
}

// thirdEntry is the third table of the topic: the latest reading of each device (bucket width none, one
// row per device, written at its event time, so the newest event wins whatever the order of the writes).
func thirdEntry(base config.Topic) config.Topic {
	t := base
	t.Table = "third"
	t.Bucket = config.Bucket{Width: config.BucketNone}
	t.Clustering = nil
	return t
}

// siteOf is the site of a device: its last digit.
func siteOf(device string) string { return "site-" + device[len(device)-1:] }

// siteRecords is makeRecords' good records with a site field.
func siteRecords(n int, partitions int32) []*itRecord {
	recs := makeRecords(n, 0, partitions)
	for _, r := range recs {
		r.value = fmt.Appendf(nil, `{"device_id":%q,"site":%q,"ts":%q,"value":1.5}`, r.device, siteOf(r.device), r.ts.Format(time.RFC3339Nano))
	}
	return recs
}

// entryKey is where entry name writes r: device, site, bucket and event time; for a latest-value entry
// the device alone, whose one row holds its newest event.
func (s *stack) entryKey(name string, r *itRecord) string {
	if s.cfg.Topics[name].Latest() {
		return r.device
	}
	p, err := s.cfg.Policy(name)
	if err != nil {
		s.t.Fatal(err)
	}
	return fmt.Sprintf("%s|%s|%s|%s", r.device, siteOf(r.device), p.Text(p.Index(r.ts)), r.ts.Format(time.RFC3339Nano))
}

// entryRow is what a table holds under an entryKey: the row's event time and the write timestamp of its
// value.
type entryRow struct {
	ts time.Time
	wt int64
}

// entryRows reads every row of an entry's table by entryKey.
func (s *stack) entryRows(name string) map[string]entryRow {
	s.t.Helper()
	table := s.cfg.Topics[name].Table
	latest := s.cfg.Topics[name].Latest()
	cols := "device_id, site, bucket, ts, writetime(value)"
	if latest {
		cols = "device_id, site, ts, writetime(value)"
	}
	iter := s.session.Driver().Query("SELECT " + cols + " FROM " + s.ks + "." + table).
		PageSize(5000).IterContext(context.Background())
	out := make(map[string]entryRow)
	var device, site, bucket string
	var row entryRow
	dest := []any{&device, &site, &bucket, &row.ts, &row.wt}
	if latest {
		dest = []any{&device, &site, &row.ts, &row.wt}
	}
	for iter.Scan(dest...) {
		row.ts = row.ts.UTC()
		if latest {
			out[device] = row
		} else {
			out[fmt.Sprintf("%s|%s|%s|%s", device, site, bucket, row.ts.Format(time.RFC3339Nano))] = row
		}
	}
	if err := iter.Close(); cassandra.IsMissingTable(err) {
		return out // not created yet: no row
	} else if err != nil {
		s.t.Fatalf("reading %s.%s: %v", s.ks, table, err)
	}
	return out
}

// checkCommittedHaveEveryRow checks that every record below the committed offsets has its row in every
// entry's table: the commit rule across tables.
func (s *stack) checkCommittedHaveEveryRow(kill int) {
	s.t.Helper()
	committed := s.committed()
	tables := map[string]map[string]entryRow{}
	for _, name := range s.cfg.TopicNames() {
		tables[name] = s.entryRows(name)
	}
	s.recsMu.Lock()
	defer s.recsMu.Unlock()
	missing, below := 0, 0
	for _, r := range s.recs {
		if r.offset >= committed[r.partition] {
			continue
		}
		below++
		for name, rows := range tables {
			// A latest-value table's row of the device holds this event or a newer one.
			if row, ok := rows[s.entryKey(name, r)]; !ok || row.ts.Before(r.ts) {
				if missing++; missing <= 10 {
					s.t.Errorf("kill %d: partition %d committed at %d, but offset %d has no row in table %s (found %v, event time %v)",
						kill, r.partition, committed[r.partition], r.offset, s.cfg.Topics[name].Table, ok, row.ts)
				}
			}
		}
	}
	s.t.Logf("kill %d: committed %v (%d records below), rows %d/%d/%d", kill, committed, below,
		len(tables["readings"]), len(tables["by_site"]), len(tables["third"]))
}

// TestIntegrationOneTopicThreeTablesSurvivesKills: one Kafka topic feeds three tables (two bucketed by
// different ids and widths, and the latest reading per device). `sink run` is killed with SIGKILL at random moments (10 times)
// while the stream is produced, and restarted each time; after every kill no committed offset is past a
// record with a row missing in any table. The third table does not exist for the first kills (its rows
// are retried while the other tables' are written: a commit that counted a record done at its first row
// would pass records without their third row, which the check after those kills catches). Then it runs
// to the end: every table holds exactly the rows a clean single pass writes (one per record, where its
// entry's policy puts it, with the event time as its write timestamp), and nothing else.
func TestIntegrationOneTopicThreeTablesSurvivesKills(t *testing.T) {
	s := newStackWith(t, 3, nil, threeEntries)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.session.Driver().Query("DROP TABLE " + s.ks + "." + s.cfg.Topics["third"].Table).ExecContext(ctx); err != nil {
		t.Fatal(err)
	}
	const tableAfter = 3 // kills before the third table is created
	recs := siteRecords(3000, 3)
	s.cfg.Metrics.Address = freeAddr(t)
	cfgPath := s.writeConfig()
	done := make(chan struct{})
	rng := rand.New(rand.NewPCG(26, uint64(time.Now().UnixNano())))
	const kills = 10
	for i := range kills {
		cmd, _ := runSink(t, cfgPath)
		if i == 0 {
			go func() {
				defer close(done)
				s.produceStream(recs, 20, 100*time.Millisecond)
			}()
		}
		// Killed at a random moment once it owns its partitions: mapping, writing, committing.
		s.waitFor(time.Minute, "sink run to be ready", s.sinkReady)
		time.Sleep(time.Duration(200+rng.IntN(2000)) * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		s.checkCommittedHaveEveryRow(i + 1)
		s.removeMembers()
		if i+1 == tableAfter {
			if err := cassandra.ApplySchema(ctx, s.session, s.cfg, nil, itBase); err != nil {
				t.Fatal(err)
			}
		}
	}
	<-done
	cmd, _ := runSink(t, cfgPath)
	s.waitFor(time.Minute, "sink run to be ready after the kills", s.sinkReady)
	s.waitFor(3*time.Minute, "committed offsets to reach the end after the kills", s.allCommitted)
	if code, took := stopSink(t, cmd); code != 0 {
		t.Errorf("sink run exited %d %s after SIGTERM, want 0", code, took.Round(time.Millisecond))
	}
	for _, name := range s.cfg.TopicNames() {
		rows := s.entryRows(name)
		// One row per record where its entry's policy puts it, at its event time; in the latest-value
		// table one row per device, its newest event, written at that event's millisecond (the tie rule
		// fills the microseconds below it).
		want := make(map[string]entryRow, len(recs))
		for _, r := range recs {
			if k := s.entryKey(name, r); !r.ts.Before(want[k].ts) {
				want[k] = entryRow{ts: r.ts, wt: r.ts.UnixMicro()}
			}
		}
		if len(rows) != len(want) {
			t.Errorf("table %s holds %d rows, want %d", s.cfg.Topics[name].Table, len(rows), len(want))
		}
		latest := s.cfg.Topics[name].Latest()
		bad := 0
		for k, w := range want {
			got, ok := rows[k]
			wt := got.wt
			if latest {
				wt = got.wt / 1000 * 1000
			}
			if (!ok || !got.ts.Equal(w.ts) || wt != w.wt) && bad < 10 {
				bad++
				t.Errorf("table %s: row %s found %v, event time %v written at %d; want %v at %d", s.cfg.Topics[name].Table, k, ok, got.ts, got.wt, w.ts, w.wt)
			}
		}
	}
}

// removeMembers removes every member of the stack's group, as their LeaveGroup would: a process killed
// with SIGKILL sends none, and its partitions would wait kafka.session_timeout for their next owner.
func (s *stack) removeMembers() {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	groups, err := s.adm.DescribeGroups(ctx, s.group)
	if err != nil {
		s.t.Fatal(err)
	}
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Group = s.group
	for _, m := range groups[s.group].Members {
		lm := kmsg.NewLeaveGroupRequestMember()
		lm.MemberID = m.MemberID
		req.Members = append(req.Members, lm)
	}
	if len(req.Members) == 0 {
		return
	}
	if _, err := req.RequestWith(ctx, s.cl); err != nil {
		s.t.Fatal(err)
	}
}

// TestIntegrationRecordOneEntryRefusesOtherEntriesWrite: a record without a site is refused by by_site
// (its id) and accepted by the two other entries: one dead letter naming by_site and its table, the
// other two rows written, and the partition goes on to its end.
func TestIntegrationRecordOneEntryRefusesOtherEntriesWrite(t *testing.T) {
	s := newStackWith(t, 1, nil, threeEntries)
	recs := siteRecords(40, 1)
	refused := recs[20]
	refused.value = fmt.Appendf(nil, `{"device_id":%q,"ts":%q,"value":1.5}`, refused.device, refused.ts.Format(time.RFC3339Nano))
	s.produce(recs)
	m := s.start(nil)
	s.waitFor(time.Minute, "committed offsets to reach the end", s.allCommitted)
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	dls := s.dlqRecords()
	if len(dls) != 1 {
		t.Fatalf("%d dead letters, want 1", len(dls))
	}
	r := dls[0]
	if got, want := headers(r, deadletter.HeaderEntry), []string{"by_site"}; !slices.Equal(got, want) {
		t.Errorf("sink.entry %v, want %v", got, want)
	}
	if got, want := headers(r, deadletter.HeaderTable), []string{s.ks + ".by_site"}; !slices.Equal(got, want) {
		t.Errorf("sink.table %v, want %v", got, want)
	}
	if header(r, deadletter.HeaderSourceOffset) != fmt.Sprint(refused.offset) || header(r, deadletter.HeaderReason) != deadletter.ReasonMap ||
		string(r.Value) != string(refused.value) {
		t.Errorf("dead letter of offset %s reason %s value %s; want offset %d, reason map, the record", header(r, deadletter.HeaderSourceOffset),
			header(r, deadletter.HeaderReason), r.Value, refused.offset)
	}
	for _, name := range s.cfg.TopicNames() {
		rows := s.entryRows(name)
		keys := map[string]bool{}
		for _, r := range recs {
			if name != "by_site" || r != refused {
				keys[s.entryKey(name, r)] = true
			}
		}
		want := len(keys) // one per record; in the latest-value table one per device
		if len(rows) != want {
			t.Errorf("table %s holds %d rows, want %d", name, len(rows), want)
		}
	}
	// The refused record's rows in readings and third carry no site (null).
	p, _ := s.cfg.Policy("readings")
	var n int
	if err := s.session.Driver().Query("SELECT count(*) FROM "+s.ks+".readings WHERE device_id = ? AND bucket = ? AND ts = ?",
		refused.device, p.Text(p.Index(refused.ts)), refused.ts).Scan(&n); err != nil || n != 1 {
		t.Errorf("table readings: the refused record's row: %d rows, %v; want 1", n, err)
	}
	if err := s.session.Driver().Query("SELECT count(*) FROM "+s.ks+".third WHERE device_id = ? AND ts = ?  ALLOW FILTERING",
		refused.device, refused.ts).Scan(&n); err != nil || n != 1 {
		t.Errorf("table third: the refused record's device holds %d rows of its event time, %v; want 1 (no newer event of it)", n, err)
	}
}
