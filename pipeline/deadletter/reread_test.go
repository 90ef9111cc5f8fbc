package deadletter

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestRereadSweep(t *testing.T) {
	for _, tc := range []struct {
		name  string
		want  []int64
		read  []int64 // offsets of the records read, in order
		found []int64
		gone  []int64
		next  int64 // first unresolved offset, -1 for none
	}{
		{name: "all found", want: []int64{3, 5}, read: []int64{2, 3, 4, 5, 6}, found: []int64{3, 5}, next: -1},
		{name: "below the first wanted is skipped", want: []int64{10}, read: []int64{7, 8, 9}, next: 10},
		{name: "a gap proves the record gone", want: []int64{3, 5, 9}, read: []int64{3, 6, 7}, found: []int64{3}, gone: []int64{5}, next: 9},
		{name: "one record past several wanted", want: []int64{4, 5, 6}, read: []int64{8}, gone: []int64{4, 5, 6}, next: -1},
		{name: "nothing read", want: []int64{1}, next: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newRereadSweep(tc.want)
			for _, o := range tc.read {
				s.add(&kgo.Record{Offset: o})
			}
			var found, gone []int64
			for i, o := range tc.want {
				if s.recs[i] != nil {
					if s.recs[i].Offset != o {
						t.Errorf("want[%d] = %d resolved to the record at %d", i, o, s.recs[i].Offset)
					}
					found = append(found, o)
				}
				if s.gone[i] {
					gone = append(gone, o)
				}
			}
			if !slices.Equal(found, tc.found) || !slices.Equal(gone, tc.gone) {
				t.Errorf("found %v gone %v, want %v and %v", found, gone, tc.found, tc.gone)
			}
			next, ok := s.pending()
			if !ok {
				next = -1
			}
			if next != tc.next {
				t.Errorf("pending %d, want %d", next, tc.next)
			}
		})
	}
}

func TestRereadSweepSeeksOnlyFarAhead(t *testing.T) {
	s := newRereadSweep([]int64{10, 10 + rereadSeek + 1, 10 + 2*rereadSeek + 100})
	if _, ok := s.seek(); ok {
		t.Fatal("seek before anything was read: the client starts at the first wanted offset")
	}
	s.add(&kgo.Record{Offset: 10})
	if o, ok := s.seek(); !ok || o != 10+rereadSeek+1 {
		t.Fatalf("seek = %d, %v; want the next wanted offset, more than rereadSeek ahead", o, ok)
	}
	s.add(&kgo.Record{Offset: 10 + rereadSeek + 1})
	s.add(&kgo.Record{Offset: 10 + 2*rereadSeek})
	if o, ok := s.seek(); ok {
		t.Fatalf("seek to %d, 100 offsets ahead: reading on is cheaper", o)
	}
	s.skip()
	if _, ok := s.pending(); ok || !s.gone[2] {
		t.Fatal("skip did not resolve the last offset as gone")
	}
}

// testTopic is the topic the re-read tests read back.
const testTopic = "events"

// rereadValue is the value of the record at offset i: padded, so that a re-read takes several fetches.
func rereadValue(i int64) string { return fmt.Sprintf(`{"n":%d,"pad":"%0300d"}`, i, 0) }

// rereadCluster is a one-partition kfake topic holding n records with headers; every record's key, value
// and headers name its index, so a re-read record can be checked against what was produced.
func rereadCluster(t *testing.T, n int) (addrs []string, adm *kadm.Client) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, testTopic))
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ProducerBatchMaxBytes(64<<10),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cl.Close()
		c.Close()
	})
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: testTopic, Key: fmt.Appendf(nil, "k%d", i), Value: []byte(rereadValue(int64(i))),
			Headers:   []kgo.RecordHeader{{Key: "trace", Value: fmt.Appendf(nil, "t%d", i)}, {Key: "empty"}},
			Timestamp: time.UnixMilli(1_700_000_000_000 + int64(i))}
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return c.ListenAddrs(), kadm.NewClient(cl)
}

func checkReread(t *testing.T, r *kgo.Record, offset int64) {
	t.Helper()
	want := rereadValue(offset)
	if r.Offset != offset || string(r.Key) != fmt.Sprintf("k%d", offset) || string(r.Value) != want ||
		len(r.Headers) != 2 || string(r.Headers[0].Value) != fmt.Sprintf("t%d", offset) || r.Headers[1].Key != "empty" ||
		r.Timestamp.UnixMilli() != 1_700_000_000_000+offset {
		t.Errorf("re-read offset %d: got offset %d key %q value %q headers %v time %v", offset, r.Offset, r.Key, r.Value,
			r.Headers, r.Timestamp)
	}
}

func TestRereadFindsRecordsByOffset(t *testing.T) {
	const n = 20_000
	addrs, _ := rereadCluster(t, n)
	// Close together (one fetch), in the same batch, and far apart (a seek: a 1 MiB fetch holds about
	// 3,000 of these records), up to the last record.
	want := []int64{0, 1, 17, 900, 9_000, 15_001, n - 1}
	recs, gone, err := Reread(t.Context(), []kgo.Opt{kgo.SeedBrokers(addrs...)}, testTopic, 0, want, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range want {
		if gone[i] || recs[i] == nil {
			t.Fatalf("offset %d not found (gone %v)", o, gone[i])
		}
		checkReread(t, recs[i], o)
	}
}

func TestRereadReportsRecordsTheLogNoLongerHolds(t *testing.T) {
	addrs, adm := rereadCluster(t, 1000)
	// Retention removed everything below 500: the records there are gone for good, the others are not.
	resp, err := adm.DeleteRecords(t.Context(), kadm.Offsets{testTopic: {0: {Topic: testTopic, Partition: 0, At: 500}}})
	if err != nil || resp.Error() != nil {
		t.Fatalf("deleting records: %v %v", err, resp.Error())
	}
	want := []int64{10, 499, 500, 999}
	recs, gone, err := Reread(t.Context(), []kgo.Opt{kgo.SeedBrokers(addrs...)}, testTopic, 0, want, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !gone[0] || !gone[1] || recs[0] != nil || recs[1] != nil {
		t.Errorf("offsets 10 and 499, below the log start: gone %v, records %v", gone[:2], recs[:2])
	}
	for i := 2; i < 4; i++ {
		if gone[i] || recs[i] == nil {
			t.Fatalf("offset %d still in the log not found", want[i])
		}
		checkReread(t, recs[i], want[i])
	}
}

func TestRereadGivesUpAfterTimeoutWithoutGuessing(t *testing.T) {
	addrs, _ := rereadCluster(t, 10)
	// Offset 10 is the log end: not written yet, so neither found nor provably gone.
	start := time.Now()
	recs, gone, err := Reread(t.Context(), []kgo.Opt{kgo.SeedBrokers(addrs...)}, testTopic, 0, []int64{3, 10}, 500*time.Millisecond)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want a deadline exceeded", err)
	}
	if recs[0] == nil || recs[1] != nil || gone[1] {
		t.Fatalf("records %v gone %v: offset 3 found, offset 10 unresolved", recs, gone)
	}
	checkReread(t, recs[0], 3)
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("gave up after %s, timeout 500ms", d)
	}
}
