// Command democheck answers the questions scripts/demo asks of Kafka and Cassandra.
//
// Usage:
//
//	democheck topic  -brokers B -topic T -partitions N       # create T if missing
//	democheck wait   -brokers B -group G -topic T [-timeout 5m] # until committed offsets reach the end offsets
//	democheck report -brokers B -group G -topic T -dlq D -cassandra H -table KS.TBL
//
// wait prints progress every few seconds and exits 0 when, for every partition of T, the group's committed
// offset equals the end offset; 1 on timeout. report prints the committed offsets, the rows in the table,
// and the dead-letter topic's record count with the headers of its first record.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: democheck topic|wait|report [flags]")
		return 2
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	brokers := fs.String("brokers", "127.0.0.1:9092", "Kafka brokers, comma separated")
	group := fs.String("group", "sink-demo", "consumer group")
	topic := fs.String("topic", "sensor-readings", "topic")
	partitions := fs.Int("partitions", 3, "partitions of a created topic")
	timeout := fs.Duration("timeout", 5*time.Minute, "how long wait waits")
	dlq := fs.String("dlq", "sensor-readings.dlq", "dead-letter topic")
	hosts := fs.String("cassandra", "127.0.0.1:9042", "Cassandra host:port")
	table := fs.String("table", "sink_demo.readings", "keyspace.table to count")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(*brokers, ",")...))
	if err != nil {
		fmt.Fprintln(stderr, "democheck:", err)
		return 1
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx := context.Background()

	switch args[0] {
	case "topic":
		err = createTopic(ctx, adm, *topic, int32(*partitions))
	case "wait":
		err = wait(ctx, adm, *group, *topic, *timeout, stdout)
	case "report":
		err = report(ctx, cl, adm, *group, *topic, *dlq, *hosts, *table, stdout)
	default:
		fmt.Fprintf(stderr, "democheck: unknown command %q\n", args[0])
		return 2
	}
	if err != nil {
		fmt.Fprintln(stderr, "democheck:", err)
		return 1
	}
	return 0
}

func createTopic(ctx context.Context, adm *kadm.Client, topic string, partitions int32) error {
	resp, err := adm.CreateTopic(ctx, partitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if errors.Is(err, kerr.TopicAlreadyExists) {
		return nil
	}
	return err
}

// progress is the committed and end offsets of every partition of a topic.
type progress struct {
	parts          []int32
	committed, end map[int32]int64
}

func (p progress) done() bool {
	for _, part := range p.parts {
		if p.committed[part] != p.end[part] {
			return false
		}
	}
	return len(p.parts) > 0
}

func (p progress) String() string {
	var b strings.Builder
	var behind int64
	for _, part := range p.parts {
		fmt.Fprintf(&b, " %d:%d/%d", part, p.committed[part], p.end[part])
		behind += p.end[part] - max(p.committed[part], 0)
	}
	return fmt.Sprintf("committed/end%s (%d behind)", b.String(), behind)
}

func fetchProgress(ctx context.Context, adm *kadm.Client, group, topic string) (progress, error) {
	p := progress{committed: map[int32]int64{}, end: map[int32]int64{}}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return p, err
	}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err == nil {
			p.parts = append(p.parts, o.Partition)
			p.end[o.Partition] = o.Offset
		}
	})
	slices.Sort(p.parts)
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return p, err
	}
	committed.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic && o.Err == nil {
			p.committed[o.Partition] = o.At
		}
	})
	return p, nil
}

func wait(ctx context.Context, adm *kadm.Client, group, topic string, timeout time.Duration, stdout io.Writer) error {
	deadline := time.Now().Add(timeout)
	last := time.Time{}
	for {
		p, err := fetchProgress(ctx, adm, group, topic)
		if err == nil && p.done() {
			fmt.Fprintln(stdout, "caught up:", p)
			return nil
		}
		if time.Since(last) > 3*time.Second {
			if err != nil {
				fmt.Fprintln(stdout, "waiting:", err)
			} else {
				fmt.Fprintln(stdout, "waiting:", p)
			}
			last = time.Now()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("group %s did not commit the end of %s within %s", group, topic, timeout)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func report(ctx context.Context, cl *kgo.Client, adm *kadm.Client, group, topic, dlq, hosts, table string, stdout io.Writer) error {
	p, err := fetchProgress(ctx, adm, group, topic)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "kafka   %s group %s: %s\n", topic, group, p)

	cluster := gocql.NewCluster(strings.Split(hosts, ",")...)
	cluster.Consistency = gocql.One
	cluster.Timeout = 30 * time.Second
	session, err := cluster.CreateSession()
	if err != nil {
		return fmt.Errorf("connecting to cassandra %s: %w", hosts, err)
	}
	defer session.Close()
	var rows int64
	if err := session.Query("SELECT COUNT(*) FROM "+table).ScanContext(ctx, &rows); err != nil {
		return fmt.Errorf("counting %s: %w", table, err)
	}
	fmt.Fprintf(stdout, "cassandra %s: %d rows\n", table, rows)

	starts, err := adm.ListStartOffsets(ctx, dlq)
	if err != nil {
		return err
	}
	ends, err := adm.ListEndOffsets(ctx, dlq)
	if err != nil {
		return err
	}
	var n int64
	ends.Each(func(o kadm.ListedOffset) {
		if s, ok := starts.Lookup(dlq, o.Partition); ok {
			n += o.Offset - s.Offset
		}
	})
	fmt.Fprintf(stdout, "dead letters %s: %d records\n", dlq, n)
	if n == 0 {
		return nil
	}
	c, err := kgo.NewClient(kgo.SeedBrokers(cl.OptValue(kgo.SeedBrokers).([]string)...),
		kgo.ConsumeTopics(dlq), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return err
	}
	defer c.Close()
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		fs := c.PollRecords(pctx, 1)
		if pctx.Err() != nil {
			return errors.New("no dead letter could be read within 10s")
		}
		if recs := fs.Records(); len(recs) > 0 {
			r := recs[0]
			fmt.Fprintf(stdout, "first dead letter: key=%q value=%.80q\n", r.Key, r.Value)
			for _, h := range r.Headers {
				fmt.Fprintf(stdout, "  %s: %s\n", h.Key, h.Value)
			}
			return nil
		}
	}
}
