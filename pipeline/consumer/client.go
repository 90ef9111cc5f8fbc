package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/internal/refusal"
)

// ClientOptions are the options every Kafka client of the sink shares: the brokers, the client id, the
// logger, the isolation level, TLS and SASL. The group consumer adds GroupOptions, the dead-letter
// producer deadletter.ProducerOptions.
func ClientOptions(k config.Kafka, log *slog.Logger) ([]kgo.Opt, error) {
	common := []kgo.Opt{
		kgo.SeedBrokers(k.Brokers...),
		kgo.ClientID(k.ClientID),
		kgo.WithLogger(kgoLogger{log}),
		// In the common options, so that the re-read of a refused row's record (deadletter/reread.go,
		// with the producer's options) sees the log as the group did.
		kgo.FetchIsolationLevel(isolationLevel(k.IsolationLevel)),
	}
	if k.TLS.Enabled {
		tc, err := k.TLS.ClientConfig("kafka.tls")
		if err != nil {
			return nil, err
		}
		common = append(common, kgo.DialTLSConfig(tc))
	}
	if k.SASL.Mechanism != "" {
		m, err := saslMechanism(k.SASL)
		if err != nil {
			return nil, err
		}
		common = append(common, kgo.SASL(m))
	}
	return common, nil
}

// Rebalance holds the group's rebalance callbacks (the pipeline's assignment wiring).
type Rebalance struct {
	Assigned, Revoked, Lost func(context.Context, *kgo.Client, map[string][]int32)
}

// GroupOptions are the options the group consumer adds to ClientOptions: the group and its topics,
// where a new group starts, the session and rebalance timeouts, the rebalance callbacks, the fetch pools
// and the fetch sizes. Commits are configured by offsets.ClientOptions.
func GroupOptions(k config.Kafka, w config.Writer, topics []string, cb Rebalance) []kgo.Opt {
	start := kgo.NewOffset().AtStart()
	if k.StartOffset == "latest" { // validated and lower-cased by config
		start = kgo.NewOffset().AtEnd()
	}
	fetchMax := int32(k.FetchMaxBytes)
	pools := &fetchPools{}
	return []kgo.Opt{
		kgo.ConsumerGroup(k.Group),
		kgo.ConsumeTopics(topics...),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.ConsumeResetOffset(start),
		kgo.SessionTimeout(k.SessionTimeout.Std()),
		kgo.RebalanceTimeout(k.RebalanceTimeout.Std()),
		// Callbacks never run while a poll's records are being queued, so a revoke cannot interleave
		// with dispatch; the poll loop never blocks, so rebalances are never held for long.
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsAssigned(cb.Assigned),
		kgo.OnPartitionsRevoked(cb.Revoked),
		kgo.OnPartitionsLost(cb.Lost),
		// Record structs and decompressed batches are reused: the worker recycles each record once it is
		// mapped (pools.go).
		kgo.WithPools(pools), kgo.WithHooks(pools),
		// Fetch memory is bounded by FetchMaxBytes × MaxConcurrentFetches, on top of the byte budget of
		// the pipeline itself, and the concurrency is derived from both (docs/PIPELINE.md, "Backpressure
		// and memory").
		kgo.FetchMaxBytes(fetchMax),
		kgo.BrokerMaxReadBytes(max(fetchMax+(1<<20), 100<<20)),
		kgo.FetchMaxPartitionBytes(int32(k.FetchMaxPartitionBytes)),
		kgo.MaxConcurrentFetches(config.MaxConcurrentFetches(
			w.MaxBufferedBytes, config.Bytes(fetchMax))),
		// A fetch waits in the broker for FetchMinBytes or FetchMaxWait, whichever comes first: at a
		// steady rate that is what sets how often the client and every stage after it wake up.
		kgo.FetchMinBytes(int32(max(1, min(k.FetchMinBytes, k.FetchMaxBytes)))),
		kgo.FetchMaxWait(k.FetchMaxWait.Std()),
	}
}

// isolationLevel is kafka.isolation_level as franz-go's option; config has validated it and lower-cased
// it (read_committed by default).
func isolationLevel(s string) kgo.IsolationLevel {
	if s == config.IsolationReadUncommitted {
		return kgo.ReadUncommitted()
	}
	return kgo.ReadCommitted()
}

// brokerCheckTimeout bounds the start-up check of the brokers.
const brokerCheckTimeout = 30 * time.Second

// CheckBrokers asks the brokers for their API versions once, through cl's TLS and SASL settings, so a
// configuration that can never connect (a refused login, a certificate not trusted or for another name,
// TLS at one end only) stops the sink at start with a *refusal.Error naming the cause. Brokers that do not
// answer at all are not an error here: the client keeps retrying them, as it does later in the run.
func CheckBrokers(ctx context.Context, cl *kgo.Client, k config.Kafka, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, brokerCheckTimeout)
	defer cancel()
	err := cl.Ping(ctx)
	if err == nil || ctx.Err() != nil {
		return nil
	}
	if cause := kafkaRefusal(err, k); cause != "" {
		return &refusal.Error{Server: "kafka", Addrs: k.Brokers, Cause: cause, Err: err}
	}
	log.Warn("no broker answered the start-up check; the client keeps retrying",
		slog.Any("brokers", k.Brokers), slog.Any("error", err))
	return nil
}

// kafkaRefusal names the configuration cause of a failed connection to the brokers, or returns "" for
// failures that may pass (a broker down, a timeout).
func kafkaRefusal(err error, k config.Kafka) string {
	var eof *kgo.ErrFirstReadEOF
	switch {
	case errors.Is(err, kerr.SaslAuthenticationFailed):
		return fmt.Sprintf("authentication failed: wrong kafka.sasl.username or password, or the user has no %s credentials", k.SASL.Mechanism)
	case errors.Is(err, kerr.UnsupportedSaslMechanism):
		return fmt.Sprintf("the listener does not enable SASL mechanism %s (kafka.sasl.mechanism)", k.SASL.Mechanism)
	case strings.Contains(err.Error(), "appear to be a tls alert record"):
		return "the listener speaks TLS and the client does not: set kafka.tls.enabled: true or dial its plaintext port"
	case errors.As(err, &eof):
		if k.TLS.Enabled {
			return "the broker closed the connection at once, as a plaintext listener does with a TLS client: set kafka.tls.enabled: false or dial its TLS port"
		}
		return "the broker closed the connection at once: the listener may require TLS (kafka.tls.enabled) or SASL (kafka.sasl)"
	}
	return refusal.Cause(err, "kafka.tls")
}

func saslMechanism(s config.SASL) (sasl.Mechanism, error) {
	pass := s.Password.Reveal()
	switch strings.ToUpper(s.Mechanism) {
	case "PLAIN":
		return plain.Auth{User: s.Username, Pass: pass}.AsMechanism(), nil
	case "SCRAM-SHA-256":
		return scram.Auth{User: s.Username, Pass: pass}.AsSha256Mechanism(), nil
	case "SCRAM-SHA-512":
		return scram.Auth{User: s.Username, Pass: pass}.AsSha512Mechanism(), nil
	}
	return nil, fmt.Errorf("kafka.sasl.mechanism: %q is not supported; use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", s.Mechanism)
}

// kgoLogger routes the client's log lines to slog, one level down: the client is chatty at info about
// routine group events.
type kgoLogger struct{ l *slog.Logger }

func (k kgoLogger) Level() kgo.LogLevel {
	switch {
	case k.l.Enabled(context.Background(), slog.LevelDebug):
		return kgo.LogLevelInfo
	case k.l.Enabled(context.Background(), slog.LevelInfo):
		return kgo.LogLevelWarn
	}
	return kgo.LogLevelError
}

func (k kgoLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	lvl := slog.LevelDebug
	switch level {
	case kgo.LogLevelError:
		lvl = slog.LevelError
	case kgo.LogLevelWarn:
		lvl = slog.LevelWarn
	}
	k.l.Log(context.Background(), lvl, "kafka: "+msg, keyvals...)
}
