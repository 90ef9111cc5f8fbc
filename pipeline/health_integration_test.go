package pipeline

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestIntegrationReadinessFollowsTheGroupThroughAKafkaOutage: every connection of the member to Kafka goes
// through a proxy, which cuts them all mid-stream. Once the group session is lost the member is not ready
// (/readyz and sink_ready), although Cassandra answers; once Kafka is back it joins again, is ready, and
// consumes to the end.
func TestIntegrationReadinessFollowsTheGroupThroughAKafkaOutage(t *testing.T) {
	s := newStack(t, 3, nil)
	proxy := newCutProxy(t, s.cfg.Kafka.Brokers[0])
	// The broker advertises its own address; the dialer sends every connection to the proxy instead.
	var d net.Dialer
	s.kafkaOpts = []kgo.Opt{kgo.Dialer(func(ctx context.Context, network, _ string) (net.Conn, error) {
		return d.DialContext(ctx, network, proxy.addr())
	})}
	m := s.start(nil)
	recs := makeRecords(3000, 0, 3)
	s.produce(recs[:1000])
	ready := func() bool { return m.pl.Ready() == nil && testutil.ToFloat64(m.metrics.Ready) == 1 }
	s.waitFor(time.Minute, "ready and the first records committed", func() bool { return ready() && s.allCommitted() })

	proxy.setCut(true)
	s.waitFor(time.Minute, "not ready once the group session is lost", func() bool {
		err := m.pl.Ready()
		return err != nil && strings.Contains(err.Error(), "consumer group") && testutil.ToFloat64(m.metrics.Ready) == 0
	})
	s.produce(recs[1000:])
	proxy.setCut(false)
	s.waitFor(2*time.Minute, "ready again and every record committed", func() bool { return ready() && s.allCommitted() })
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	s.checkPlacement()
}
