package pipeline

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/bucketsink/sink/bucketer"
	"github.com/bucketsink/sink/cassandra"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/internal/testenv"
	"github.com/bucketsink/sink/mapper"
	"github.com/bucketsink/sink/reader"
)

// splitStack is newStack with split on: a table whose partition key has the event bucket column, a
// budget of splitBudgetRows rows, and decisions allowed 100 ms after an assignment (cassandra.timeout).
const splitBudgetRows = 200

func splitStack(t *testing.T, partitions int32) *stack {
	s := newStack(t, partitions, nil)
	tp := s.cfg.Topics["readings"]
	tp.Table = "split_readings"
	tp.Split = config.Split{Enabled: true, MaxEventBuckets: 32, MaxRows: splitBudgetRows}
	tp.PartitionBudget = config.Bytes(1_000_000)
	s.cfg.Topics["readings"] = tp
	s.cfg.Cassandra.Timeout = config.Duration(100 * time.Millisecond)
	if err := s.cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cassandra.ApplySchema(ctx, s.session, s.cfg, nil, itBase); err != nil {
		t.Fatal(err)
	}
	return s
}

// zipfRecords is one hour of a skewed stream in event-time order: the hot entity writes hot rows, and
// each of cold entities writes 2 (the median), so the hot one writes hot/2 times the median's rate.
func zipfRecords(hot, cold int, partitions int32) []*itRecord {
	var recs []*itRecord
	for i := range hot {
		ts := itBase.Add(time.Duration(i) * time.Hour / time.Duration(hot))
		recs = append(recs, &itRecord{device: "hot", ts: ts, partition: 0})
	}
	for c := range cold {
		for j := range 2 {
			ts := itBase.Add(time.Duration(c*2+j)*time.Hour/time.Duration(cold*2) + 7*time.Millisecond)
			recs = append(recs, &itRecord{device: fmt.Sprintf("cold-%03d", c), ts: ts, partition: int32(c) % partitions})
		}
	}
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].ts.Before(recs[j].ts) })
	for i, r := range recs {
		r.value = fmt.Appendf(nil, `{"device_id":%q,"ts":%q,"value":%d.5}`, r.device, r.ts.Format(time.RFC3339Nano), i)
	}
	return recs
}

// splitRow is one row as Cassandra holds it: its partition (device, bucket, event bucket) and time.
type splitRow struct {
	device, bucket string
	eb             int
	ts             time.Time
}

func (s *stack) splitRows() []splitRow {
	s.t.Helper()
	iter := s.session.Driver().Query("SELECT device_id, bucket, event_bucket, ts FROM " + s.ks + ".split_readings").
		WithContext(context.Background()).PageSize(5000).Iter()
	var out []splitRow
	var r splitRow
	for iter.Scan(&r.device, &r.bucket, &r.eb, &r.ts) {
		r.ts = r.ts.UTC()
		out = append(out, r)
	}
	if err := iter.Close(); err != nil {
		s.t.Fatalf("reading %s.split_readings: %v", s.ks, err)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].device != out[j].device {
			return out[i].device < out[j].device
		}
		return out[i].ts.Before(out[j].ts)
	})
	return out
}

// checkSplitLayout checks what Cassandra holds against the stream and the routing records: every
// record's row exactly once, no partition over the row budget, cold entities in event bucket 0 only,
// and every hot row in the event bucket its record's generation gives it. It returns the rows.
func (s *stack) checkSplitLayout(recs []*itRecord) []splitRow {
	t := s.t
	t.Helper()
	rows := s.splitRows()
	seen := map[string]int{}
	perPartition := map[string]int{}
	for _, r := range rows {
		seen[r.device+"/"+r.ts.Format(time.RFC3339Nano)]++
		perPartition[fmt.Sprintf("%s/%s/%d", r.device, r.bucket, r.eb)]++
		if r.device != "hot" && r.eb != 0 {
			t.Errorf("cold entity %s has a row in event bucket %d; a median entity must stay in one partition", r.device, r.eb)
		}
	}
	if len(rows) != len(recs) {
		t.Errorf("Cassandra holds %d rows; the stream has %d records", len(rows), len(recs))
	}
	for _, r := range recs {
		if n := seen[r.device+"/"+r.ts.Format(time.RFC3339Nano)]; n != 1 {
			t.Errorf("record %s at %s is in %d partitions; want exactly 1", r.device, r.ts.Format(time.RFC3339Nano), n)
		}
	}
	hotParts := 0
	for p, n := range perPartition {
		if n > splitBudgetRows {
			t.Errorf("partition %s holds %d rows, over the budget of %d", p, n, splitBudgetRows)
		}
		if len(p) > 4 && p[:4] == "hot/" {
			hotParts++
		}
	}
	if hotParts < 2 {
		t.Errorf("the hot entity is in %d partition(s); it should have split", hotParts)
	}

	// Rows are where the routing records say.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	recsOf, err := cassandra.NewSplits(s.session, s.ks, s.cfg.Cassandra).Bucket(ctx, "split_readings", itBase)
	if err != nil {
		t.Fatal(err)
	}
	var gens []mapper.Generation
	for _, r := range recsOf {
		if string(r.Entity) != "\x00\x03hot\x00" {
			t.Errorf("a routing record for entity %q; only the hot entity should split", r.Entity)
			continue
		}
		if r.Generation != len(gens)+1 {
			t.Errorf("routing records of the hot entity: generation %d after %d; want one record per generation", r.Generation, len(gens))
		}
		gens = append(gens, mapper.Generation{N: r.Generation, From: r.From, Buckets: r.EventBuckets})
	}
	for _, r := range rows {
		if r.device != "hot" {
			continue
		}
		want := 0
		if g := mapper.Applying(gens, r.ts); g != nil {
			want = bucketer.EventBucketString(r.ts.Format("2006-01-02T15:04:05.000Z"), g.Buckets)
		}
		if r.eb != want {
			t.Errorf("hot row at %s is in event bucket %d; its routing record gives %d", r.ts.Format(time.RFC3339Nano), r.eb, want)
		}
	}
	t.Logf("hot entity: %d generations %v; %d partitions", len(gens), gens, hotParts)
	s.checkHotReadBack(recs)
	return rows
}

// checkHotReadBack reads the hot entity's hour back through the reader (what `sink query` runs),
// oldest first and newest first: every row of the hot entity, in order, each exactly once.
func (s *stack) checkHotReadBack(recs []*itRecord) {
	t := s.t
	t.Helper()
	var want []time.Time
	for _, r := range recs {
		if r.device == "hot" {
			want = append(want, r.ts.Truncate(time.Millisecond))
		}
	}
	rd, err := reader.New(reader.Config{Session: s.session.Driver(), Sink: s.cfg, Topic: "readings"})
	if err != nil {
		t.Fatal(err)
	}
	for _, desc := range []bool{false, true} {
		from, to := itBase, itBase.Add(time.Hour)
		if desc {
			from, to = to.Add(-time.Millisecond), from.Add(-time.Millisecond) // (to, from]
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		page, err := rd.Read(ctx, reader.Query{ID: []any{"hot"}, From: from, To: to})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		var got []time.Time
		for _, r := range page.Rows {
			got = append(got, r.Values["ts"].(time.Time).UTC())
		}
		exp := slices.Clone(want)
		if desc {
			slices.Reverse(exp)
		}
		if !slices.EqualFunc(got, exp, time.Time.Equal) {
			t.Errorf("reading the hot entity back (newest first %v): %d rows, want %d in order, each once", desc, len(got), len(exp))
		}
		if page.Partitions < 2 {
			t.Errorf("reading the hot entity opened %d partitions; its split bucket has more", page.Partitions)
		}
	}
}

// TestIntegrationZipfHotEntitySplitsWithinBudget: one hour of a stream in which the hot entity writes
// 1000 times the median entity's rate (2,000 rows against 2), at a width (1h) chosen for the median
// and a budget of 200 rows per partition. Measured in Cassandra afterwards: no partition is over its
// budget, the median entities stay at one partition, every row exists exactly once and where the
// routing records say. Then a second group replays the whole topic from the start: Cassandra holds
// exactly the same rows in the same partitions.
func TestIntegrationZipfHotEntitySplitsWithinBudget(t *testing.T) {
	s := splitStack(t, 2)
	recs := zipfRecords(2000, 40, 2)
	m := s.start(nil)
	s.waitFor(time.Minute, "the group to be joined", m.pl.joined.Load)
	time.Sleep(time.Second) // the partitions are assigned and settled
	s.produceStream(recs, 50, 30*time.Millisecond)
	s.waitFor(2*time.Minute, "the stream to be committed", s.allCommitted)
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	if n := testutil.ToFloat64(m.metrics.Splits.WithLabelValues(s.topic)); n < 1 {
		t.Errorf("sink_partition_splits_total{topic} = %v; want at least one split", n)
	}
	first := s.checkSplitLayout(recs)

	firstGroup := s.group
	t.Cleanup(func() {
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = s.adm.DeleteGroup(dctx, firstGroup)
	})
	s.group = testenv.Name(t, "replay")
	s.cfg.Kafka.Group = s.group
	m = s.start(nil)
	s.waitFor(2*time.Minute, "the replay to be committed", s.allCommitted)
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	second := s.checkSplitLayout(recs)
	if fmt.Sprint(first) != fmt.Sprint(second) {
		t.Errorf("the replay changed the rows: %d before, %d after", len(first), len(second))
	}
}
