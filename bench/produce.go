package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bucketsink/sink/gen"
	"github.com/bucketsink/sink/mapper"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// record is one produced Kafka record with its final coordinates, kept so the ceiling can map
// exactly the records the sink will consume.
type record struct {
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte
	Timestamp time.Time
}

// mapperRecord is r as the mapper takes it, read from topic.
func (r record) mapperRecord(topic string) mapper.Record {
	return mapper.Record{Topic: topic, Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp}
}

// backlogStart is the event time of the first of n backlog records: the start of the latest UTC day
// from which n events at the generator's rate end before now. Starting on a day boundary makes the
// backlog fill the same set of daily partitions on every run (1,000,000 events at the generator's 100
// events/s span under three hours), and a recent day keeps the rows well inside the table's TTL. The
// backlog must end in the past: the broker refuses a record timestamped more than
// log.message.timestamp.after.max.ms ahead of its clock (one hour by default in Kafka 4), and a
// 1,000,000-event backlog started on the current day was refused in the first two hours of every UTC day.
func backlogStart(n int) time.Time { return backlogStartAt(time.Now(), n) }

// backlogStartAt is backlogStart at the given now.
func backlogStartAt(now time.Time, n int) time.Time {
	span := time.Duration(float64(n) / gen.DefaultRate * float64(time.Second))
	return now.UTC().Add(-span).Truncate(24 * time.Hour)
}

// producerOpts are the client settings of both producers: the same as `sink generate` uses (lz4,
// short linger, acks=all, idempotent), so the sink consumes what a real producer would write.
func producerOpts(brokers []string, topic string) []kgo.Opt {
	return []kgo.Opt{
		kgo.SeedBrokers(brokers...),
		kgo.DefaultProduceTopic(topic),
		kgo.ClientID("sinkbench"),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(5 * time.Millisecond),
		kgo.ProducerBatchCompression(kgo.Lz4Compression()),
		kgo.MaxBufferedRecords(100_000),
	}
}

const compressionName = "lz4"

// steadySeed is the generator's seed of the steady phase: the sink's producer and the 50-row client
// draw the same events from it.
const steadySeed = 2

// createTopic makes a fresh topic with the given partitions and the broker's default replication.
func createTopic(ctx context.Context, adm *kadm.Client, topic string, partitions int) error {
	resp, err := adm.CreateTopic(ctx, int32(partitions), -1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("creating topic %s with %d partitions: %w", topic, partitions, err)
	}
	return nil
}

// produceBacklog writes n generated events to topic as fast as the broker acknowledges and
// returns them with their partitions and offsets, in no particular order. The first event's time is
// start (backlogStart(n) for the backlog phases). The events are JSON, or encoded by enc in its
// schema-registry format; the generator's seed makes them the same events.
func produceBacklog(ctx context.Context, brokers []string, topic string, n, entities int, start time.Time, done *atomic.Int64, enc *gen.Encoder) ([]record, int64, error) {
	g, err := gen.New(gen.Config{Entities: entities, Seed: 1, Start: start})
	if err != nil {
		return nil, 0, err
	}
	cl, err := kgo.NewClient(producerOpts(brokers, topic)...)
	if err != nil {
		return nil, 0, fmt.Errorf("creating the Kafka producer for %v: %w", brokers, err)
	}
	defer cl.Close()

	out := make([]record, n)
	var (
		bytes    int64
		errOnce  sync.Once
		firstErr error
	)
	for i := range n {
		// kgo holds the record until it is acknowledged, so each record owns its bytes.
		_, ev := g.Append(make([]byte, 0, 192))
		if ev.Defect != gen.Good {
			return nil, 0, fmt.Errorf("generator made a %v record with no bad fraction configured", ev.Defect)
		}
		value := ev.Value
		if enc != nil {
			if value, err = enc.Append(make([]byte, 0, len(ev.Value)), ev); err != nil {
				return nil, 0, err
			}
		}
		bytes += int64(len(ev.Key) + len(value))
		rec := &kgo.Record{Key: ev.Key, Value: value, Timestamp: ev.Time}
		cl.Produce(ctx, rec, func(r *kgo.Record, err error) {
			if err != nil {
				errOnce.Do(func() { firstErr = fmt.Errorf("producing to topic %s: %w", topic, err) })
				return
			}
			out[i] = record{Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp}
			done.Add(1)
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return nil, 0, fmt.Errorf("flushing records to topic %s: %w", topic, err)
	}
	if firstErr != nil {
		return nil, 0, firstErr
	}
	return out, bytes, nil
}

// paced produces generated events at rate per second for d, logging each record's produce time.
// The record timestamp is the produce time, and the generator's event times follow the same
// schedule, so the event time in the JSON is within a tick of when the record was sent.
// It returns how many records it sent and how long sending them took, which exceeds d when the
// machine could not keep up with the rate.
//
// Every sampleEvery-th event (0: none) is also offered to probes, without waiting: a probe the poller
// cannot take at once is skipped. probes is closed when the producer returns.
func producePaced(ctx context.Context, brokers []string, topic string, entities int, rate float64, d time.Duration, log *produceLog, done *atomic.Int64,
	probes chan<- probe, sampleEvery int) (int, time.Duration, error) {
	defer close(probes)
	start := time.Now()
	g, err := gen.New(gen.Config{Entities: entities, Seed: steadySeed, Start: start, Rate: rate})
	if err != nil {
		return 0, 0, err
	}
	cl, err := kgo.NewClient(producerOpts(brokers, topic)...)
	if err != nil {
		return 0, 0, fmt.Errorf("creating the Kafka producer for %v: %w", brokers, err)
	}
	defer cl.Close()

	var (
		errOnce  sync.Once
		firstErr error
		sent     int
	)
	total := int(rate * d.Seconds())
	// Sending in small steps on a 2 ms tick keeps the instantaneous rate close to the target
	// without a timer per record.
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for sent < total {
		select {
		case <-ctx.Done():
			return sent, time.Since(start), ctx.Err()
		case <-tick.C:
		}
		due := min(total, int(time.Since(start).Seconds()*rate))
		for ; sent < due; sent++ {
			_, ev := g.Append(make([]byte, 0, 192))
			now := time.Now()
			if sampleEvery > 0 && sent%sampleEvery == 0 {
				select {
				case probes <- probe{device: string(ev.Key), event: ev.Time, produced: now}:
				default:
				}
			}
			rec := &kgo.Record{Key: ev.Key, Value: ev.Value, Timestamp: now}
			cl.Produce(ctx, rec, func(r *kgo.Record, err error) {
				if err != nil {
					errOnce.Do(func() { firstErr = fmt.Errorf("producing to topic %s: %w", topic, err) })
					return
				}
				log.Add(r.Partition, r.Offset, now)
				done.Add(1)
			})
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return sent, time.Since(start), fmt.Errorf("flushing records to topic %s: %w", topic, err)
	}
	return sent, time.Since(start), firstErr
}

// endOffsets returns the high watermark of every partition of topic.
func endOffsets(ctx context.Context, adm *kadm.Client, topic string) (map[int32]int64, error) {
	l, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("listing end offsets of topic %s: %w", topic, err)
	}
	if err := l.Error(); err != nil {
		return nil, fmt.Errorf("listing end offsets of topic %s: %w", topic, err)
	}
	out := make(map[int32]int64)
	l.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	if len(out) == 0 {
		return nil, fmt.Errorf("topic %s has no partitions", topic)
	}
	return out, nil
}

// committed returns the committed offset of every partition of topic for group (absent partitions
// have committed nothing).
func committed(ctx context.Context, adm *kadm.Client, group, topic string) (map[int32]int64, error) {
	resp, err := adm.FetchOffsetsForTopics(ctx, group, topic)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		// A coordinator that is loading or moving answers with a retriable error; the next poll
		// will do, and meanwhile nothing new counts as committed.
		if kerr.IsRetriable(err) {
			return map[int32]int64{}, nil
		}
		return nil, fmt.Errorf("fetching committed offsets of group %s: %w", group, err)
	}
	out := make(map[int32]int64)
	resp.Each(func(o kadm.OffsetResponse) {
		if o.At >= 0 {
			out[o.Partition] = o.At
		}
	})
	return out, nil
}

// allCommitted reports how many records are committed and whether every partition reached its end.
func allCommitted(got, end map[int32]int64) (int64, bool) {
	var n int64
	ok := true
	for p, e := range end {
		c := got[p]
		n += min(c, e)
		if c < e {
			ok = false
		}
	}
	return n, ok
}
