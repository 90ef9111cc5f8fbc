package reader

import (
	"context"
	"fmt"
	"log/slog"
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
)

// The integration tests write their rows the way production does, through the pipeline with the
// real mapper and Cassandra writer, from records produced to real Kafka topics, and read them back
// through the reader. The oracle is the list of records produced.

// event is one produced record: its topic (key under topics:), entity and time, and a sequence
// number stored in the row's seq column, which identifies the row when read back.
type event struct {
	topic  string
	id     []string
	ts     time.Time
	seq    int64
	extras map[string]any // more fields of the JSON record
}

// fixture is a keyspace, one Kafka topic per configured topic, and the events written.
type fixture struct {
	cfg     *config.Config
	session *cassandra.Session
	gs      *gocql.Session
	events  []event

	cl         *kgo.Client
	kafkaTopic map[string]string // by topic name
}

// newFixture creates the topics and tables of cfg (its Kafka topics and keyspace are renamed to
// unique ones), produces events and runs a pipeline until every record is committed. sliceDays are
// the instants whose slice tables are created for sliced topics (others are left missing).
func newFixture(t testing.TB, topics map[string]config.Topic, events []event, sliceDays []time.Time) *fixture {
	t.Helper()
	brokers := testenv.Kafka(t)
	hosts := testenv.Cassandra(t)
	ks := testenv.Name(t, "ks")
	cfg := &config.Config{
		Kafka: config.Kafka{Brokers: brokers, Group: testenv.Name(t, "g"),
			SessionTimeout: config.Duration(10 * time.Second), RebalanceTimeout: config.Duration(30 * time.Second)},
		Cassandra: config.Cassandra{Hosts: hosts, Keyspace: ks, Consistency: "ONE",
			Replication: map[string]string{"class": "SimpleStrategy", "replication_factor": "1"}},
		Writer: config.Writer{CommitInterval: config.Duration(200 * time.Millisecond),
			ShutdownTimeout: config.Duration(15 * time.Second)},
		Topics: make(map[string]config.Topic),
	}
	kafkaTopic := make(map[string]string)
	for name, tc := range topics {
		tc.Topic = testenv.Name(t, name)
		if tc.Table == "" {
			tc.Table = name
		}
		kafkaTopic[name] = tc.Topic
		cfg.Topics[name] = tc
		testenv.CreateTopic(t, brokers, tc.Topic, 2)
	}
	cfg.ApplyDefaults()
	cfg.Metrics.Address = ""
	if err := cfg.Validate(); err != nil {
		t.Fatalf("test config: %v", err)
	}
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
	metrics := pipeline.NewMetrics(prometheus.NewRegistry())
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
	f := &fixture{cfg: cfg, session: session, gs: session.Driver(), cl: cl, kafkaTopic: kafkaTopic}
	f.write(t, events)
	return f
}

// write produces events and waits until the pipeline has committed them, i.e. written them.
func (f *fixture) write(t testing.TB, events []event) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	recs := make([]*kgo.Record, 0, len(events))
	for _, e := range events {
		recs = append(recs, &kgo.Record{Topic: f.kafkaTopic[e.topic], Key: []byte(e.id[len(e.id)-1]), Value: e.json(f.cfg.Topics[e.topic])})
	}
	if err := f.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing: %v", err)
	}
	waitCommitted(ctx, t, f.cl, f.cfg.Kafka.Group, f.kafkaTopic)
	f.events = append(f.events, events...)
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

// json renders the record of e for topic tc: the id fields, "ts" in RFC 3339, "seq", and extras.
func (e event) json(tc config.Topic) []byte {
	b := []byte{'{'}
	for i, c := range tc.ID {
		b = fmt.Appendf(b, "%q:%q,", c, e.id[i])
	}
	for k, v := range e.extras {
		b = fmt.Appendf(b, "%q:%v,", k, v)
	}
	return fmt.Appendf(b, `"ts":%q,"seq":%d}`, e.ts.Format(time.RFC3339Nano), e.seq)
}

// expected is the oracle: the seq of the events of topic and entity in the range, in reading
// order (time, then seq for ties: the tests give every row of an entity its own time).
func (f *fixture) expected(topic string, id []string, from, to time.Time) []int64 {
	lo, hi, desc := msRange(from, to)
	var in []event
	for _, e := range f.events {
		ms := e.ts.Truncate(time.Millisecond)
		if e.topic == topic && fmt.Sprint(e.id) == fmt.Sprint(id) && !ms.Before(lo) && ms.Before(hi) {
			in = append(in, e)
		}
	}
	sort.Slice(in, func(i, j int) bool {
		if desc {
			return in[i].ts.After(in[j].ts)
		}
		return in[i].ts.Before(in[j].ts)
	})
	out := make([]int64, len(in))
	for i, e := range in {
		out[i] = e.seq
	}
	return out
}

func (f *fixture) reader(t testing.TB, topic string, obs gocql.QueryObserver) *Reader {
	t.Helper()
	r, err := New(Config{Session: f.gs, Sink: f.cfg, Topic: topic, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// seqs are the seq values of rows.
func seqs(rows []Row) []int64 {
	out := make([]int64, len(rows))
	for i, r := range rows {
		out[i] = r.Values["seq"].(int64)
	}
	return out
}

// columns of every test topic: the id columns, the event time, a sequence number.
func testColumns(ids ...string) []config.Column {
	var cols []config.Column
	for _, id := range ids {
		cols = append(cols, config.Column{Name: id, Type: "text", Field: id})
	}
	return append(cols,
		config.Column{Name: "ts", Type: "timestamp", Source: "event_time"},
		config.Column{Name: "seq", Type: "bigint", Field: "seq", Required: true})
}

func testTopic(bucket config.Bucket, order string, ids ...string) config.Topic {
	return config.Topic{
		ID:         ids,
		Time:       config.EventTime{Source: "field", Field: "ts", Format: "rfc3339"},
		Bucket:     bucket,
		Columns:    testColumns(ids...),
		Clustering: []config.Clustering{{Column: "ts", Order: order}},
	}
}
