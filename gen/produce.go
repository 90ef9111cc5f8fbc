package gen

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ProduceConfig says where and how fast generated records go.
type ProduceConfig struct {
	Brokers []string
	Topic   string
	// Count stops after this many records; 0 = no limit.
	Count int64
	// Rate caps records per second of wall time; 0 = as fast as the brokers acknowledge.
	Rate float64
	// Duration stops after this long; 0 = no limit. With neither Count nor Duration the
	// producer runs until ctx is cancelled.
	Duration time.Duration
	// Partitions creates the topic with this many partitions when it does not exist; 0 lets
	// the broker's num.partitions decide. An existing topic is never changed.
	Partitions int32
	// Encoder, when set, writes each event in a schema-registry format (see Register) instead of JSON.
	Encoder *Encoder
	// Progress, when set, is called about every ProgressInterval and once at the end.
	Progress         func(Stats)
	ProgressInterval time.Duration // default 1s
}

// Stats counts what happened so far.
type Stats struct {
	Produced int64 // handed to the client
	Acked    int64 // acknowledged by all in-sync replicas
	Failed   int64 // failed for good (after the client's retries)
	Bad      int64 // deliberately bad records among Produced
	Elapsed  time.Duration
}

// Produce sends records from g to cfg.Topic, keyed by device id, with an idempotent producer
// that waits for all in-sync replicas. It returns once every record handed to the client is
// acknowledged or failed; cancelling ctx stops generating, and what was already handed over
// is still flushed. The error is the first produce failure, if any.
func Produce(ctx context.Context, g *Generator, cfg ProduceConfig) (Stats, error) {
	if len(cfg.Brokers) == 0 || cfg.Topic == "" {
		return Stats{}, errors.New("producing sample events: brokers and topic are required")
	}
	if cfg.ProgressInterval <= 0 {
		cfg.ProgressInterval = time.Second
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.DefaultProduceTopic(cfg.Topic),
		kgo.ClientID("sink-generate"),
		// acks=all and idempotence are franz-go's defaults; they are stated here because the
		// demo's promise (every acknowledged record is in Kafka exactly once) rests on them.
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(5 * time.Millisecond),
		kgo.ProducerBatchCompression(kgo.Lz4Compression()),
		kgo.MaxBufferedRecords(50_000),
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return Stats{}, fmt.Errorf("creating the Kafka producer for %v: %w", cfg.Brokers, err)
	}
	defer cl.Close()

	// Bounded, so that unreachable brokers end the command with an error instead of a hang.
	topicCtx, cancelTopic := context.WithTimeout(ctx, topicTimeout)
	err = ensureTopic(topicCtx, kadm.NewClient(cl), cfg.Topic, cfg.Partitions)
	cancelTopic()
	if err != nil {
		return Stats{}, err
	}

	var (
		acked, failed atomic.Int64
		errMu         sync.Mutex
		firstErr      error
	)
	onAck := func(r *kgo.Record, err error) {
		if err != nil {
			failed.Add(1)
			errMu.Lock()
			if firstErr == nil {
				firstErr = fmt.Errorf("producing to topic %s partition %d: %w", cfg.Topic, r.Partition, err)
			}
			errMu.Unlock()
			return
		}
		acked.Add(1)
	}

	start := time.Now()
	genCtx := ctx
	if cfg.Duration > 0 {
		var cancel context.CancelFunc
		genCtx, cancel = context.WithTimeout(ctx, cfg.Duration)
		defer cancel()
	}
	// Records are produced under a context that outlives genCtx: kgo fails buffered records whose
	// context ends, and a record handed over before the duration ran out or before SIGTERM must
	// still be delivered. The flush below bounds how long that may take.
	recCtx := context.WithoutCancel(ctx)
	var st Stats
	snapshot := func() Stats {
		s := st
		s.Acked, s.Failed, s.Elapsed = acked.Load(), failed.Load(), time.Since(start)
		return s
	}
	nextProgress := start.Add(cfg.ProgressInterval)
	pace := pacer{rate: cfg.Rate, start: start}

	for (cfg.Count == 0 || st.Produced < cfg.Count) && genCtx.Err() == nil {
		now := time.Now()
		if cfg.Progress != nil && !now.Before(nextProgress) {
			cfg.Progress(snapshot())
			nextProgress = now.Add(cfg.ProgressInterval)
		}
		if wait := pace.wait(st.Produced, now); wait > 0 {
			t := time.NewTimer(min(wait, cfg.ProgressInterval))
			select {
			case <-genCtx.Done():
			case <-t.C:
			}
			t.Stop()
			continue
		}
		// kgo keeps the record until it is acknowledged, so each record owns its bytes: one
		// allocation holds both key and value.
		_, ev := g.Append(make([]byte, 0, 192))
		value := ev.Value
		if cfg.Encoder != nil {
			if value, err = cfg.Encoder.Append(make([]byte, 0, 96), ev); err != nil {
				return snapshot(), err
			}
		}
		if ev.Defect != Good {
			st.Bad++
		}
		// Produce blocks while MaxBufferedRecords are unacknowledged: that is the backpressure
		// when no rate is set.
		cl.Produce(recCtx, &kgo.Record{Key: ev.Key, Value: value, Timestamp: ev.Time}, onAck)
		st.Produced++
	}

	flushCtx, cancel := context.WithTimeout(recCtx, flushTimeout)
	defer cancel()
	flushErr := cl.Flush(flushCtx)
	final := snapshot()
	if cfg.Progress != nil {
		cfg.Progress(final)
	}
	if flushErr != nil {
		return final, fmt.Errorf("flushing records to topic %s (%d of %d acknowledged after %s): %w",
			cfg.Topic, final.Acked, final.Produced, flushTimeout, flushErr)
	}
	if final.Failed > 0 {
		errMu.Lock()
		defer errMu.Unlock()
		return final, fmt.Errorf("%d of %d records failed; first: %w", final.Failed, final.Produced, firstErr)
	}
	return final, nil
}

// flushTimeout bounds the wait for outstanding acknowledgements once generation stops. It is
// shorter than the usual 30s container stop grace so a stopped generator still reports.
const flushTimeout = 20 * time.Second

// topicTimeout bounds looking up (and creating) the topic before producing.
const topicTimeout = 30 * time.Second

// ensureTopic creates topic when it is missing. Replication is left to the broker default so the
// same command works against a single-node demo broker and a real cluster.
func ensureTopic(ctx context.Context, adm *kadm.Client, topic string, partitions int32) error {
	details, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return fmt.Errorf("looking up topic %s: %w", topic, err)
	}
	if d, ok := details[topic]; ok && d.Err == nil {
		return nil
	}
	p := partitions
	if p == 0 {
		p = -1
	}
	resp, err := adm.CreateTopic(ctx, p, -1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("creating topic %s with %d partitions: %w", topic, partitions, err)
	}
	return nil
}

// pacer spreads records evenly over time: record n is due at start + n/rate.
type pacer struct {
	rate  float64
	start time.Time
}

// wait returns how long to wait before record n may be sent; 0 when it is due.
func (p pacer) wait(n int64, now time.Time) time.Duration {
	if p.rate <= 0 {
		return 0
	}
	due := p.start.Add(time.Duration(float64(n) * float64(time.Second) / p.rate))
	return due.Sub(now)
}
