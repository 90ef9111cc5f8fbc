package consumer

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bucketsink/sink/config"
)

// TestKafkaRefusalNamesCause classifies what franz-go returns from a secured broker (the texts recorded
// against Kafka 4.1): each configuration cause is named, a broker that is simply down is not a refusal.
func TestKafkaRefusalNamesCause(t *testing.T) {
	sasl := config.Kafka{SASL: config.SASL{Mechanism: "SCRAM-SHA-512"}, TLS: config.TLS{Enabled: true}}
	plain := config.Kafka{}
	cases := []struct {
		name string
		err  error
		k    config.Kafka
		want string
	}{
		{"wrong password", fmt.Errorf("%w: invalid credentials", kerr.SaslAuthenticationFailed), sasl, "authentication failed"},
		{"mechanism off", kerr.UnsupportedSaslMechanism, sasl, "does not enable SASL mechanism SCRAM-SHA-512"},
		{"plaintext on a TLS port", errors.New("invalid large response size 352518912 > limit 104857600; the first three bytes received appear to be a tls alert record for TLS v1.2"), plain, "speaks TLS and the client does not"},
		{"TLS on a plaintext port", &kgo.ErrFirstReadEOF{}, sasl, "plaintext listener"},
		{"untrusted", errors.New("unable to dial: tls: failed to verify certificate: x509: certificate signed by unknown authority"), sasl, "untrusted certificate"},
		{"down", errors.New("unable to dial: dial tcp 127.0.0.1:9: connect: connection refused"), sasl, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := kafkaRefusal(tc.err, tc.k)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Fatalf("kafkaRefusal = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestGroupOptionsFetchWait: the group's fetches wait in the broker for kafka.fetch_min_bytes, up to
// kafka.fetch_max_wait, as configured; before these keys every fetch returned at its first byte, so a
// steady stream woke the client and every stage after it for each few records.
func TestGroupOptionsFetchWait(t *testing.T) {
	c := config.Config{Kafka: config.Kafka{Brokers: []string{"127.0.0.1:1"}, Group: "g", ClientID: "c"}}
	c.ApplyDefaults()
	if c.Kafka.FetchMinBytes <= 1 {
		t.Fatalf("default kafka.fetch_min_bytes is %s: fetches return at their first byte", c.Kafka.FetchMinBytes)
	}
	c.Kafka.FetchMinBytes, c.Kafka.FetchMaxWait = 12345, config.Duration(70*time.Millisecond)
	opts := append([]kgo.Opt{kgo.SeedBrokers(c.Kafka.Brokers...)}, GroupOptions(c.Kafka, c.Writer, []string{"t"}, Rebalance{})...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if got := cl.OptValue(kgo.FetchMinBytes); got != int32(12345) {
		t.Errorf("FetchMinBytes = %v, want 12345", got)
	}
	if got := cl.OptValue(kgo.FetchMaxWait); got != 70*time.Millisecond {
		t.Errorf("FetchMaxWait = %v, want 70ms", got)
	}
}
