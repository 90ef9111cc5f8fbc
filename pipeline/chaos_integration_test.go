//go:build chaos

package pipeline

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bucketsink/sink/config"
)

// TestChaosHotEntitySplitsWithinBudgetUnderChurn: a hot entity written over all 6 Kafka partitions
// at 100 rows a second of event time for 3 minutes of one-minute buckets (6,000 rows a bucket
// against split.max_rows 1,000), produced as a live stream for about two and a half minutes while
// one `sink run` member is killed with SIGKILL every 3 to 15 s and restarted, and a second member
// joins a third of the way in and leaves with SIGTERM two thirds of the way. Afterwards one member
// consumes to the end. Every partition of the table holds at most 1.25 x split.max_rows rows, every
// record is there exactly once, and a group reset and a full replay from offset 0 leave exactly the
// same rows and routing records. It runs under `make test-chaos` (build tag chaos): it takes about
// five minutes.
func TestChaosHotEntitySplitsWithinBudgetUnderChurn(t *testing.T) {
	s := splitStack(t, 6, rowBudget(64, 1000), func(tp *config.Topic) { tp.Bucket.Width = "1m" })
	s.cfg.Cassandra.Timeout = config.Duration(2 * time.Second) // the settle time of every new owner
	tp := s.cfg.Topics["readings"]
	recs := hotOverPartitions(liveHotStream(18_000, 10*time.Millisecond, 40, 6), 6)

	churnedAddr := freeAddr(t)
	s.cfg.Metrics.Address = churnedAddr
	churned := s.writeConfig()
	s.cfg.Metrics.Address = freeAddr(t)
	visitor := s.writeConfig()
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.produceStream(recs, 12, 100*time.Millisecond) // about 120 records a second
	}()
	rng := rand.New(rand.NewPCG(34, uint64(time.Now().UnixNano())))
	start := time.Now()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the second member: joins at 50 s, leaves at 100 s
		defer wg.Done()
		time.Sleep(50 * time.Second)
		cmd, _ := runSink(t, visitor)
		time.Sleep(50 * time.Second)
		if code, took := stopSink(t, cmd); code != 0 {
			t.Errorf("the visiting member exited %d %s after SIGTERM, want 0", code, took.Round(time.Millisecond))
		}
	}()
	kills := 0
	for time.Since(start) < 2*time.Minute || !isClosed(done) {
		cmd, _ := runSink(t, churned)
		time.Sleep(time.Duration(3000+rng.IntN(12001)) * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		kills++
	}
	wg.Wait()
	t.Logf("%d kills in %s", kills, time.Since(start).Round(time.Second))
	cmd, _ := runSink(t, churned)
	// Ready first: the offsets may be committed to the end already, and a SIGTERM before the process has its
	// signal handlers ends it as the signal's default does (exit -1), not as a shutdown.
	s.cfg.Metrics.Address = churnedAddr // what sinkReady asks
	s.waitFor(time.Minute, "sink run to be ready after the churn", s.sinkReady)
	s.waitFor(5*time.Minute, "committed offsets to reach the end after the churn", s.allCommitted)
	if code, took := stopSink(t, cmd); code != 0 {
		t.Errorf("sink run exited %d %s after SIGTERM, want 0", code, took.Round(time.Millisecond))
	}

	rows := s.splitRows()
	s.checkOncePerRecord(recs, rows)
	perPartition, order := partitionCounts(rows)
	limit := int(tp.Split.MaxRows) * 5 / 4
	largest := ""
	for p, n := range perPartition {
		if n > limit {
			t.Errorf("partition %s holds %d rows, over 1.25 x split.max_rows (%d)", p, n, limit)
		}
		if largest == "" || n > perPartition[largest] {
			largest = p
		}
	}
	t.Logf("%d partitions; the largest, %s, holds %d rows", len(perPartition), largest, perPartition[largest])
	records := s.routingRecords(order)
	for i, b := range order {
		for _, r := range records[i] {
			t.Logf("bucket %s: generation %d from %s: event buckets %d..%d", b, r.Generation, r.From.Format(time.RFC3339), r.FirstEventBucket, r.FirstEventBucket+r.EventBuckets-1)
		}
	}

	s.replayRows(rows)
	if after := s.routingRecords(order); fmt.Sprint(after) != fmt.Sprint(records) {
		t.Errorf("the replay changed the routing records:\n%v\nbefore\n%v", after, records)
	}
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// liveHotStream is hot records of the entity hot, one every every from itBase on, and cold entities'
// 2 records each spread over the same span, in event-time order, over partitions Kafka partitions.
func liveHotStream(hot int, every time.Duration, cold int, partitions int32) []*itRecord {
	var recs []*itRecord
	span := time.Duration(hot) * every
	for i := range hot {
		recs = append(recs, &itRecord{device: "hot", ts: itBase.Add(time.Duration(i) * every)})
	}
	for c := range cold {
		for j := range 2 {
			ts := itBase.Add(time.Duration(c*2+j)*span/time.Duration(cold*2) + 7*time.Millisecond)
			recs = append(recs, &itRecord{device: fmt.Sprintf("cold-%03d", c), ts: ts, partition: int32(c) % partitions})
		}
	}
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].ts.Before(recs[j].ts) })
	for i, r := range recs {
		r.value = fmt.Appendf(nil, `{"device_id":%q,"ts":%q,"value":%d.5}`, r.device, r.ts.Format(time.RFC3339Nano), i)
	}
	return recs
}
