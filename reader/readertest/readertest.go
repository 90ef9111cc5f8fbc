// Package readertest writes rows the way production does, for the tests of package reader and of
// `sink query`: records produced to real Kafka topics, consumed and written by the pipeline with
// the real mapper and Cassandra writer, on the stack of internal/testenv. It keeps the list of
// events written, which is the oracle the reads are checked against.
package readertest

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bucketsink/sink/cassandra"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/internal/testenv"
	"github.com/bucketsink/sink/mapper"
	"github.com/bucketsink/sink/pipeline"
	"github.com/bucketsink/sink/pipeline/metrics"
)

// Event is one produced record: its topic (key under topics:), entity and time, and a sequence
// number stored in the row's seq column, which identifies the row when read back.
type Event struct {
	Topic string
	ID    []string
	TS    time.Time
	Seq   int64
	Extra string // more members of the record, as JSON text without braces ("" for none)
}

// Fixture is a keyspace, one Kafka topic per configured topic, and the events written.
type Fixture struct {
	Config  *config.Config
	Session *gocql.Session
	Events  []Event // every event written, in order

	cl         *kgo.Client
	kafkaTopic map[string]string // by topic name
}

// Config is a configuration of topics on the test stack, with unique Kafka topics, group and
// keyspace (a topic's table defaults to its name). NewFixture creates them.
func Config(t testing.TB, topics map[string]config.Topic) *config.Config {
	t.Helper()
	cfg := &config.Config{
		Kafka: config.Kafka{Brokers: testenv.Kafka(t), Group: testenv.Name(t, "g"),
			SessionTimeout: config.Duration(10 * time.Second), RebalanceTimeout: config.Duration(30 * time.Second)},
		Cassandra: config.Cassandra{Hosts: testenv.Cassandra(t), Keyspace: testenv.Name(t, "ks"), Consistency: "ONE",
			Replication: map[string]string{"class": "SimpleStrategy", "replication_factor": "1"}},
		Writer: config.Writer{CommitInterval: config.Duration(200 * time.Millisecond),
			ShutdownTimeout: config.Duration(15 * time.Second)},
		Topics: make(map[string]config.Topic),
	}
	for name, tc := range topics {
		tc.Topic = testenv.Name(t, name)
		if tc.Table == "" {
			tc.Table = name
		}
		cfg.Topics[name] = tc
	}
	cfg.ApplyDefaults()
	cfg.Metrics.Address = ""
	if err := cfg.Validate(); err != nil {
		t.Fatalf("test config: %v", err)
	}
	return cfg
}

// NewFixture creates the Kafka topics, keyspace and tables of cfg (whose names must be unique to
// the test, see Config), starts a pipeline, and writes events through it. sliceDays are the
// instants whose slice tables (that of the instant and the next) are created for sliced topics;
// other slices are left missing. Everything is stopped and dropped when the test ends.
func NewFixture(t testing.TB, cfg *config.Config, events []Event, sliceDays []time.Time) *Fixture {
	t.Helper()
	kafkaTopic := make(map[string]string)
	for name, tc := range cfg.Topics {
		kafkaTopic[name] = tc.Topic
		testenv.CreateTopic(t, cfg.Kafka.Brokers, tc.Topic, 2)
	}
	brokers, ks := cfg.Kafka.Brokers, cfg.Cassandra.Keyspace
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	session, err := cassandra.Connect(ctx, cfg.Cassandra)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = session.Driver().Query("DROP KEYSPACE IF EXISTS " + ks).Exec()
		session.Close()
	})
	if err := cassandra.ApplySchema(ctx, session, cfg, nil, sliceDays[0]); err != nil {
		t.Fatal(err)
	}
	for _, d := range sliceDays[1:] {
		if err := cassandra.ApplySchema(ctx, session, cfg, nil, d); err != nil {
			t.Fatal(err)
		}
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	m, err := mapper.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	metrics := metrics.NewMetrics(prometheus.NewRegistry())
	w := cassandra.NewWriter(session, cassandra.WriterConfig{MaxInFlight: 16, RetryInitial: 50 * time.Millisecond, RetryMax: time.Second}, metrics)
	pl, err := pipeline.New(pipeline.Config{Sink: cfg, Mapper: m, Writer: w, Metrics: metrics,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- pl.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("pipeline: %v", err)
		}
	})
	f := &Fixture{Config: cfg, Session: session.Driver(), cl: cl, kafkaTopic: kafkaTopic}
	f.Write(t, events)
	return f
}

// Write produces events and waits until the pipeline has committed them, i.e. written them.
func (f *Fixture) Write(t testing.TB, events []Event) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	recs := make([]*kgo.Record, 0, len(events))
	for _, e := range events {
		recs = append(recs, &kgo.Record{Topic: f.kafkaTopic[e.Topic], Key: []byte(e.ID[len(e.ID)-1]), Value: e.json(f.Config.Topics[e.Topic])})
	}
	if err := f.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing: %v", err)
	}
	waitCommitted(ctx, t, f.cl, f.Config.Kafka.Group, f.kafkaTopic)
	f.Events = append(f.Events, events...)
}

// waitCommitted waits until the group's committed offsets reach the end of every topic.
func waitCommitted(ctx context.Context, t testing.TB, cl *kgo.Client, group string, topics map[string]string) {
	t.Helper()
	adm := kadm.NewClient(cl)
	var names []string
	for _, kt := range topics {
		names = append(names, kt)
	}
	ends, err := adm.ListEndOffsets(ctx, names...)
	if err != nil {
		t.Fatal(err)
	}
	for {
		committed, err := adm.FetchOffsets(ctx, group)
		if err == nil {
			caughtUp := true
			ends.Each(func(o kadm.ListedOffset) {
				c, ok := committed.Lookup(o.Topic, o.Partition)
				if o.Offset > 0 && (!ok || c.At < o.Offset) {
					caughtUp = false
				}
			})
			if caughtUp {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the pipeline did not commit every record in time")
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// json renders the record of e for topic tc: the id fields, "ts" in RFC 3339, "seq", and Extra.
func (e Event) json(tc config.Topic) []byte {
	b := []byte{'{'}
	for i, c := range tc.ID {
		b = fmt.Appendf(b, "%q:%q,", c, e.ID[i])
	}
	b = fmt.Appendf(b, `"ts":%q,"seq":%d`, e.TS.Format(time.RFC3339Nano), e.Seq)
	if e.Extra != "" {
		b = append(append(b, ','), e.Extra...)
	}
	return append(b, '}')
}

// Expected is the oracle: the seq of the events of topic and entity between from and to, in
// reading order. From before To: [from, to) oldest first; from after to: (to, from] newest first;
// at the millisecond, which is what Cassandra keeps of a timestamp. The tests give every row of an
// entity its own instant, so the order is the order of the event times.
func (f *Fixture) Expected(topic string, id []string, from, to time.Time) []int64 {
	desc := from.After(to)
	var in []Event
	for _, e := range f.Events {
		ms := e.TS.Truncate(time.Millisecond)
		var inRange bool
		if desc {
			inRange = ms.After(to.Truncate(time.Millisecond)) && !ms.After(from)
		} else {
			inRange = !ms.Before(from) && ms.Before(to)
		}
		if e.Topic == topic && slices.Equal(e.ID, id) && inRange {
			in = append(in, e)
		}
	}
	sort.Slice(in, func(i, j int) bool {
		if desc {
			return in[i].TS.After(in[j].TS)
		}
		return in[i].TS.Before(in[j].TS)
	})
	out := make([]int64, len(in))
	for i, e := range in {
		out[i] = e.Seq
	}
	return out
}

// Series is one entity's events of topic every step over [from, to), numbered from *seq + 1.
func Series(topic string, id []string, from, to time.Time, step time.Duration, seq *int64) []Event {
	var out []Event
	for ts := from; ts.Before(to); ts = ts.Add(step) {
		*seq++
		out = append(out, Event{Topic: topic, ID: id, TS: ts, Seq: *seq})
	}
	return out
}

// Columns are those of every test topic: the id columns (text), the event time ts, and seq.
func Columns(ids ...string) []config.Column {
	var cols []config.Column
	for _, id := range ids {
		cols = append(cols, config.Column{Name: id, Type: "text", Field: id})
	}
	return append(cols,
		config.Column{Name: "ts", Type: "timestamp", Source: "event_time"},
		config.Column{Name: "seq", Type: "bigint", Field: "seq", Required: true})
}

// Topic is a test topic with bucket policy b, clustered by ts in order, with the given id columns.
func Topic(b config.Bucket, order string, ids ...string) config.Topic {
	return config.Topic{
		ID:         ids,
		Time:       config.EventTime{Source: "field", Field: "ts", Format: "rfc3339"},
		Bucket:     b,
		Columns:    Columns(ids...),
		Clustering: []config.Clustering{{Column: "ts", Order: order}},
	}
}

// LatestTopic is a latest-value test topic (bucket width none, no clustering) with the given id
// columns.
func LatestTopic(ids ...string) config.Topic {
	t := Topic(config.Bucket{Width: config.BucketNone}, "", ids...)
	t.Clustering = nil
	return t
}

// At is the event of topic for entity id at sec seconds after base, numbered seq.
func At(topic, id string, base time.Time, sec int, seq int64) Event {
	return Event{Topic: topic, ID: []string{id}, TS: base.Add(time.Duration(sec) * time.Second), Seq: seq}
}
