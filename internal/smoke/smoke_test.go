package smoke

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bucketsink/sink/internal/testenv"
)

const records = 1000

// TestKafkaProduceConsumeCommit produces 1,000 records, reads them back in a consumer group, commits, and checks
// that the group's committed offsets cover exactly what was produced.
func TestKafkaProduceConsumeCommit(t *testing.T) {
	t.Parallel()
	brokers := testenv.Kafka(t)
	topic := testenv.Name(t, "smoke")
	const partitions = 3
	testenv.CreateTopic(t, brokers, topic, partitions)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	producer, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	batch := make([]*kgo.Record, records)
	for i := range batch {
		batch[i] = &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: []byte(fmt.Sprintf("value-%d", i))}
	}
	if err := producer.ProduceSync(ctx, batch...).FirstErr(); err != nil {
		t.Fatalf("producing %d records to %s: %v", records, topic, err)
	}

	group := testenv.Name(t, "group")
	consumer, err := kgo.NewClient(
		kgo.SeedBrokers(brokers...),
		kgo.ConsumeTopics(topic),
		kgo.ConsumerGroup(group),
		kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()

	seen := make(map[int]bool, records)
	for len(seen) < records {
		fetches := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records from %s before the deadline", len(seen), records, topic)
		}
		fetches.EachError(func(tp string, p int32, err error) { t.Fatalf("fetching %s[%d]: %v", tp, p, err) })
		fetches.EachRecord(func(r *kgo.Record) {
			i, err := strconv.Atoi(string(r.Key))
			if err != nil || i < 0 || i >= records {
				t.Fatalf("%s[%d]@%d: unexpected key %q", r.Topic, r.Partition, r.Offset, r.Key)
			}
			if want := fmt.Sprintf("value-%d", i); string(r.Value) != want {
				t.Fatalf("%s[%d]@%d: value %q, want %q", r.Topic, r.Partition, r.Offset, r.Value, want)
			}
			if seen[i] {
				t.Fatalf("%s[%d]@%d: key %d read twice", r.Topic, r.Partition, r.Offset, i)
			}
			seen[i] = true
		})
		if err := consumer.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatalf("committing offsets of group %s: %v", group, err)
		}
	}

	// The committed offsets of the group must sum to exactly the records produced.
	adm := kadm.NewClient(consumer)
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("fetching committed offsets of group %s: %v", group, err)
	}
	var total int64
	committed.Each(func(o kadm.OffsetResponse) {
		if o.Err != nil {
			t.Fatalf("committed offset of %s[%d]: %v", o.Topic, o.Partition, o.Err)
		}
		total += o.At
	})
	if total != records {
		t.Fatalf("group %s committed offsets summing to %d, want %d", group, total, records)
	}
}

// TestCassandraWriteRead writes 1,000 rows across many partitions and reads every one back.
func TestCassandraWriteRead(t *testing.T) {
	t.Parallel()
	hosts := testenv.Cassandra(t)
	ks := testenv.Keyspace(t, hosts)
	s := testenv.Session(t, hosts, ks)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	const buckets = 10
	if err := s.Query(`CREATE TABLE readings (
		bucket int, seq int, value text, at timestamp,
		PRIMARY KEY ((bucket), seq))`).ExecContext(ctx); err != nil {
		t.Fatalf("creating %s.readings: %v", ks, err)
	}
	base := time.Date(2024, 1, 15, 0, 0, 0, 0, time.UTC)
	insert := s.Query("INSERT INTO readings (bucket, seq, value, at) VALUES (?, ?, ?, ?)")
	for i := range records {
		if err := insert.Bind(i%buckets, i, fmt.Sprintf("value-%d", i), base.Add(time.Duration(i)*time.Second)).ExecContext(ctx); err != nil {
			t.Fatalf("inserting row %d into %s.readings: %v", i, ks, err)
		}
	}

	var count int64
	if err := s.Query("SELECT count(*) FROM readings").ScanContext(ctx, &count); err != nil {
		t.Fatalf("counting %s.readings: %v", ks, err)
	}
	if count != records {
		t.Fatalf("%s.readings holds %d rows, want %d", ks, count, records)
	}

	read := 0
	for b := range buckets {
		iter := s.Query("SELECT seq, value, at FROM readings WHERE bucket = ?", b).IterContext(ctx)
		var (
			seq   int
			value string
			at    time.Time
			prev  = -1
		)
		for iter.Scan(&seq, &value, &at) {
			if seq%buckets != b || seq <= prev {
				t.Fatalf("bucket %d: row seq %d out of place (previous %d)", b, seq, prev)
			}
			if want := fmt.Sprintf("value-%d", seq); value != want {
				t.Fatalf("bucket %d seq %d: value %q, want %q", b, seq, value, want)
			}
			if want := base.Add(time.Duration(seq) * time.Second); !at.Equal(want) {
				t.Fatalf("bucket %d seq %d: at %v, want %v", b, seq, at, want)
			}
			prev = seq
			read++
		}
		if err := iter.Close(); err != nil {
			t.Fatalf("reading bucket %d of %s.readings: %v", b, ks, err)
		}
	}
	if read != records {
		t.Fatalf("read %d rows back from %s.readings, want %d", read, ks, records)
	}
}

// The consistency used by the helpers is ONE; writing at QUORUM as well proves the node answers a stricter level
// on a single replica, which is what a production sink configured for QUORUM will ask of this stack.
func TestCassandraQuorumOnSingleNode(t *testing.T) {
	t.Parallel()
	hosts := testenv.Cassandra(t)
	ks := testenv.Keyspace(t, hosts)
	s := testenv.Session(t, hosts, ks)
	if err := s.Query("CREATE TABLE kv (k int PRIMARY KEY, v int)").Exec(); err != nil {
		t.Fatal(err)
	}
	if err := s.Query("INSERT INTO kv (k, v) VALUES (1, 2)").Consistency(gocql.Quorum).Exec(); err != nil {
		t.Fatalf("writing at QUORUM: %v", err)
	}
	var v int
	if err := s.Query("SELECT v FROM kv WHERE k = 1").Consistency(gocql.Quorum).Scan(&v); err != nil || v != 2 {
		t.Fatalf("reading at QUORUM: v = %d, err %v", v, err)
	}
}
