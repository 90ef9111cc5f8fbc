package pipeline

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/pipeline/deadletter"
)

// produceTo appends records to one partition of the fixture's topic and to what it expects.
func (f *fixture) produceTo(partition int32, values ...string) (first int64) {
	f.t.Helper()
	first = f.end[partition]
	var recs []*kgo.Record
	for i, v := range values {
		o := first + int64(i)
		recs = append(recs, &kgo.Record{Topic: testTopic, Partition: partition,
			Key: fmt.Appendf(nil, "k-%d-%d", partition, o), Value: []byte(v),
			Headers: []kgo.RecordHeader{{Key: "trace-id", Value: fmt.Appendf(nil, "trace-%d", o)}}})
		if strings.HasPrefix(v, "bad") || strings.HasPrefix(v, "boom") {
			f.bad[batcher.Source{Topic: testTopic, Partition: partition, Offset: o}] = true
		}
	}
	if err := f.admCl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		f.t.Fatal(err)
	}
	f.end[partition] += int64(len(values))
	return first
}

// setDLQMaxMessageBytes sets the dead-letter topic's max.message.bytes.
func (f *fixture) setDLQMaxMessageBytes(n int) {
	f.t.Helper()
	v := strconv.Itoa(n)
	resp, err := f.adm.AlterTopicConfigs(context.Background(),
		[]kadm.AlterConfig{{Op: kadm.SetConfig, Name: "max.message.bytes", Value: &v}}, testDLQ)
	if err == nil {
		_, err = resp.On(testDLQ, nil)
	}
	if err != nil {
		f.t.Fatal(err)
	}
}

// dlqByOffset reads want dead letters and indexes them by source partition and offset.
func (f *fixture) dlqByOffset(want int) map[[2]int64]*kgo.Record {
	f.t.Helper()
	out := make(map[[2]int64]*kgo.Record)
	for _, r := range f.deadLetters(want) {
		p, _ := strconv.ParseInt(header(r, deadletter.HeaderSourcePartition), 10, 32)
		o, _ := strconv.ParseInt(header(r, deadletter.HeaderSourceOffset), 10, 64)
		if out[[2]int64{p, o}] != nil {
			f.t.Errorf("dead letter %d/%d twice", p, o)
		}
		out[[2]int64{p, o}] = r
	}
	return out
}

// checkGoodWritten asserts every good record is written and no bad one is.
func (f *fixture) checkGoodWritten(w *memWriter) {
	f.t.Helper()
	for p, end := range f.end {
		for o := range end {
			src := batcher.Source{Topic: testTopic, Partition: p, Offset: o}
			if got := w.has(src); got == f.bad[src] {
				f.t.Errorf("partition %d offset %d: written %v, bad %v", p, o, got, f.bad[src])
			}
		}
	}
}

// TestOversizedDeadLetterIsTruncatedToFitTheTopic: a bad record larger than the dead-letter topic's
// max.message.bytes reaches it cut to fit, with its coordinates, reason and error, sink.truncated and
// its original value size; the partition goes on past it. It used to be retried, and refused, forever.
func TestOversizedDeadLetterIsTruncatedToFitTheTopic(t *testing.T) {
	f := newFixture(t, 50, 0)
	f.setDLQMaxMessageBytes(2048)
	big := "bad " + randomText(10_000) // incompressible: the broker measures the batch as sent
	at := f.produceTo(0, big)
	f.produceTo(0, `{"n":1}`, `{"n":2}`, "bad small one")
	w := newMemWriter()
	m := f.start(f.config(nil), w)
	f.waitFor(20*time.Second, "committed offsets to reach the end", f.allCommitted)
	dls := f.dlqByOffset(2)
	r := dls[[2]int64{0, at}]
	if r == nil {
		t.Fatalf("no dead letter for the oversized record; got %v", dls)
	}
	if n := deadletter.WireBatchOverhead + deadletter.WireSize(r); n > 2048 {
		t.Errorf("dead letter takes %d bytes, more than the topic's 2048", n)
	}
	if header(r, deadletter.HeaderTruncated) != "value" || header(r, deadletter.HeaderSourceValueSize) != strconv.Itoa(len(big)) ||
		header(r, deadletter.HeaderReason) != deadletter.ReasonDecode || !strings.Contains(header(r, deadletter.HeaderError), "not an object") ||
		header(r, deadletter.HeaderSourceTopic) != testTopic || header(r, "trace-id") != fmt.Sprint("trace-", at) ||
		string(r.Key) != fmt.Sprintf("k-0-%d", at) || len(r.Value) < 1000 || !strings.HasPrefix(big, string(r.Value)) {
		t.Errorf("truncated dead letter: key %q, %d value bytes, headers %v", r.Key, len(r.Value), r.Headers)
	}
	if small := dls[[2]int64{0, at + 3}]; small == nil || string(small.Value) != "bad small one" || header(small, deadletter.HeaderTruncated) != "" {
		t.Errorf("the small dead letter after it: %v", small)
	}
	f.checkGoodWritten(w)
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(m.pl.metrics.RecordsFailed.WithLabelValues(testTopic)); got != 0 {
		t.Errorf("sink_records_failed_total %v, want 0", got)
	}
	if got := testutil.ToFloat64(m.pl.metrics.DLTruncated.WithLabelValues(testTopic)); got != 1 {
		t.Errorf("sink_dead_letters_truncated_total %v, want 1", got)
	}
}

// TestDeadLetterRefusedAsTooLargeIsCutSmallerAndRetried: the sink believes the dead-letter topic takes a
// megabyte (the topic was changed after it looked), the broker refuses. Dead letters refused together
// are retried one by one; one refused on its own makes the sink learn the topic's limit again and cut it
// smaller. Every one arrives, nothing is retried forever.
func TestDeadLetterRefusedAsTooLargeIsCutSmallerAndRetried(t *testing.T) {
	f := newFixture(t, 20, 0)
	f.setDLQMaxMessageBytes(2048)
	w := newMemWriter()
	m := f.start(f.config(nil), w)
	m.pl.dlqLimits.Set(testDLQ, 1<<20)
	// Incompressible: the broker measures the batch as sent, compressed.
	medium := "bad " + randomText(1500)
	at := f.produceTo(1, medium, "bad "+randomText(1500), "bad "+randomText(20_000), "bad "+randomText(1500), `{"n":9}`)
	f.waitFor(20*time.Second, "committed offsets to reach the end", f.allCommitted)
	dls := f.dlqByOffset(4)
	for o := at; o < at+4; o++ {
		r := dls[[2]int64{1, o}]
		switch {
		case r == nil:
			t.Errorf("offset %d not dead-lettered", o)
		case o == at+2 && (header(r, deadletter.HeaderTruncated) != "value" || header(r, deadletter.HeaderSourceValueSize) != "20004"):
			t.Errorf("offset %d: want it truncated; headers %v", o, r.Headers)
		case o != at+2 && (len(r.Value) != 1504 || header(r, deadletter.HeaderTruncated) != ""):
			t.Errorf("offset %d: value cut to %d bytes, want it whole", o, len(r.Value))
		}
	}
	f.checkGoodWritten(w)
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
}

// TestDeadLetterThatCannotFitHealsWhenTheTopicAcceptsMore: a dead-letter topic whose max.message.bytes
// is too small for even the sink.* headers holds the partition before the bad record (retried, counted);
// once the topic's setting is raised, the sender learns it again and the dead letter goes through.
func TestDeadLetterThatCannotFitHealsWhenTheTopicAcceptsMore(t *testing.T) {
	f := newFixture(t, 20, 0)
	f.setDLQMaxMessageBytes(150)
	at := f.produceTo(0, "bad record", `{"n":1}`)
	m := f.start(f.config(nil), newMemWriter())
	f.waitFor(20*time.Second, "the dead letter to fail and partition 0 to commit up to it", func() bool {
		return testutil.ToFloat64(m.pl.metrics.RecordsFailed.WithLabelValues(testTopic)) >= 2 && f.committed()[0] == at
	})
	f.setDLQMaxMessageBytes(1 << 20)
	f.waitFor(20*time.Second, "committed offsets to reach the end", f.allCommitted)
	if r := f.dlqByOffset(1)[[2]int64{0, at}]; r == nil || string(r.Value) != "bad record" || header(r, deadletter.HeaderTruncated) != "" {
		t.Errorf("dead letter %v, want the whole record", r)
	}
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
}

// startWithoutDLQ starts a member on 50 records per partition, offsets 24 and 49 bad, whose dead-letter
// topic does not exist, and waits until every partition waits before its first bad record.
func startWithoutDLQ(t *testing.T, mut func(*config.Config)) (*fixture, *member, *memWriter) {
	t.Helper()
	f := newFixture(t, 50, 25)
	if _, err := f.adm.DeleteTopics(t.Context(), testDLQ); err != nil {
		t.Fatal(err)
	}
	w := newMemWriter()
	m := f.start(f.config(mut), w)
	f.waitFor(30*time.Second, "every partition committed up to its first bad record", func() bool {
		c := f.committed()
		return c[0] == 24 && c[1] == 24 && c[2] == 24
	})
	return f, m, w
}

// TestDeadLetterTopicCreatedLateHeals: the dead-letter topic does not exist when the first bad records
// come. Their partitions wait before them (counted stuck and failed, still ready) and retry; once the topic is created they
// go on by themselves, without a restart.
func TestDeadLetterTopicCreatedLateHeals(t *testing.T) {
	f, m, w := startWithoutDLQ(t, nil)
	f.waitFor(30*time.Second, "a stuck partition to be counted", func() bool {
		return testutil.ToFloat64(m.pl.metrics.StuckPartitions.WithLabelValues(testTopic)) >= 1
	})
	if _, err := f.adm.CreateTopic(t.Context(), 1, 1, nil, testDLQ); err != nil {
		t.Fatal(err)
	}
	f.waitFor(60*time.Second, "committed offsets to reach the end", f.allCommitted)
	f.waitFor(10*time.Second, "no partition stuck any more", func() bool {
		return testutil.ToFloat64(m.pl.metrics.StuckPartitions.WithLabelValues(testTopic)) == 0
	})
	if got := len(f.dlqByOffset(6)); got != 6 {
		t.Errorf("%d dead letters, want 6", got)
	}
	f.checkGoodWritten(w)
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
}

// TestStopWhileDeadLettersFailDoesNotWaitForShutdownTimeout: with the dead-letter topic missing, a
// shutdown gives up on the failing dead letters at once instead of retrying them for the whole
// writer.shutdown_timeout, and commits nothing past them.
func TestStopWhileDeadLettersFailDoesNotWaitForShutdownTimeout(t *testing.T) {
	f, m, _ := startWithoutDLQ(t, func(c *config.Config) { c.Writer.ShutdownTimeout = config.Duration(90 * time.Second) })
	start := time.Now()
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	// Generous: the point is not waiting out the 90 s, whatever the machine's load.
	if took := time.Since(start); took > 45*time.Second {
		t.Errorf("shutdown took %v with failing dead letters; writer.shutdown_timeout is 90s", took)
	}
	if c := f.committed(); c[0] != 24 || c[1] != 24 || c[2] != 24 {
		t.Errorf("committed %v after shutdown, want 24 everywhere (the undelivered dead letters)", c)
	}
}

// randomText is n random lower-case letters: text no compression codec shrinks much.
func randomText(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a' + byte(rand.N(26))
	}
	return string(b)
}
