package secured

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bucketsink/sink/internal/testenv"
)

// exitRefused is the documented exit code of `sink run` when a server refuses the connection at start.
const exitRefused = 6

// sinkBin builds the sink binary once, on first use: a run where every test skips builds nothing.
var sinkBin = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "sink-secured-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "sink")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/bucketsink/sink/cmd/sink").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("building the sink: %w\n%s", err, out)
	}
	return bin, nil
})

func TestMain(m *testing.M) {
	code := m.Run()
	if bin, err := sinkBin(); err == nil {
		os.RemoveAll(filepath.Dir(bin))
	}
	os.Exit(code)
}

// kafkaSide is the Kafka half of a sink config: where to connect and how.
type kafkaSide struct {
	broker    string
	mechanism string // "" for none
	user      string
	passFile  string
	tls       tlsSide
}

type tlsSide struct {
	enabled            bool
	ca, cert, key, sni string
}

// cassSide is the Cassandra half.
type cassSide struct {
	host        string   // one node, or
	hosts       []string // several
	consistency string   // default LOCAL_ONE
	user        string
	passFile    string
	tls         tlsSide
}

func (t tlsSide) yaml(indent string) string {
	if !t.enabled {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%stls:\n%s  enabled: true\n", indent, indent)
	for _, kv := range [][2]string{{"ca_file", t.ca}, {"cert_file", t.cert}, {"key_file", t.key}, {"server_name", t.sni}} {
		if kv[1] != "" {
			fmt.Fprintf(&b, "%s  %s: %q\n", indent, kv[0], kv[1])
		}
	}
	return b.String()
}

// writeConfig writes a sink config for one topic into the test's directory and returns its path. Secrets are
// password files, as a deployment would mount them.
func writeConfig(t *testing.T, name string, k kafkaSide, c cassSide, keyspace, topic, group string, extra ...string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "kafka:\n  brokers: [%q]\n  group: %s\n", k.broker, group)
	b.WriteString(k.tls.yaml("  "))
	if k.mechanism != "" {
		fmt.Fprintf(&b, "  sasl:\n    mechanism: %s\n    username: %q\n    password_file: %q\n", k.mechanism, k.user, k.passFile)
	}
	hosts, cons := c.hosts, c.consistency
	if c.host != "" {
		hosts = append(hosts, c.host)
	}
	if cons == "" {
		cons = "LOCAL_ONE"
	}
	quoted := make([]string, len(hosts))
	for i, h := range hosts {
		quoted[i] = strconv.Quote(h)
	}
	fmt.Fprintf(&b, "cassandra:\n  hosts: [%s]\n  keyspace: %s\n  consistency: %s\n  connect_timeout: 10s\n",
		strings.Join(quoted, ", "), keyspace, cons)
	b.WriteString(c.tls.yaml("  "))
	if c.user != "" {
		fmt.Fprintf(&b, "  auth:\n    username: %q\n    password_file: %q\n", c.user, c.passFile)
	}
	metrics := "metrics:\n  address: \"\"\n"
	for _, e := range extra {
		if strings.HasPrefix(e, "metrics:") { // the test's own metrics block replaces the default
			metrics = e
			continue
		}
		b.WriteString(e)
	}
	b.WriteString(metrics)
	fmt.Fprintf(&b, `log:
  level: debug
  format: json
topics:
  events:
    topic: %s
    id: [device_id]
    time: {source: field, field: ts, format: rfc3339}
    bucket: {width: 1d, key: text, layout: "2006-01-02"}
    table: events
    columns:
      - {name: device_id, type: text, field: device_id}
      - {name: event_time, type: timestamp, source: event_time}
      - {name: value, type: bigint, field: value}
    clustering: [{column: event_time, order: desc}]
`, topic)
	path := filepath.Join(t.TempDir(), name+".yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// sinkProc is one `sink` process with its combined output.
type sinkProc struct {
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan error
}

func startSink(t *testing.T, args ...string) *sinkProc {
	t.Helper()
	bin, err := sinkBin()
	if err != nil {
		t.Fatal(err)
	}
	p := &sinkProc{cmd: exec.Command(bin, args...), out: &lockedBuffer{}, done: make(chan error, 1)}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	// Nothing from the environment may reach the config: the test's file is the whole configuration.
	p.cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", strings.Join(args, " "), err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// wait returns the exit code, or fails the test when the process runs longer than limit.
func (p *sinkProc) wait(t *testing.T, limit time.Duration) int {
	t.Helper()
	select {
	case err := <-p.done:
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("waiting for the sink: %v", err)
		}
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(limit):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("the sink still ran after %s; output:\n%s", limit, p.out.String())
		return -1
	}
}

// runSink runs one sink command to its end and returns the exit code and output.
func runSink(t *testing.T, limit time.Duration, args ...string) (int, string) {
	t.Helper()
	p := startSink(t, args...)
	code := p.wait(t, limit)
	return code, p.out.String()
}

// assertNoSecrets fails the test when the output holds any of the passwords.
func assertNoSecrets(t *testing.T, output string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if s != "" && strings.Contains(output, s) {
			t.Errorf("the sink's output holds a password (%d characters); it must never be logged", len(s))
		}
	}
}

// applySchema creates the topic's table as the superuser: the sink's own role gets only MODIFY.
func applySchema(t *testing.T, s *testenv.Secured, k kafkaSide, keyspace, topic string) {
	t.Helper()
	admin := cassSide{host: s.Cassandra, user: s.AdminUser, passFile: s.AdminPass,
		tls: tlsSide{enabled: true, ca: s.TLSFile("ca.pem")}}
	cfg := writeConfig(t, "admin", k, admin, keyspace, topic, "unused")
	code, out := runSink(t, 2*time.Minute, "schema", "--apply", "--config", cfg)
	if code != 0 {
		t.Fatalf("sink schema --apply as %s exited %d:\n%s", s.AdminUser, code, out)
	}
	assertNoSecrets(t, out, s.Secret(t, s.AdminPass), s.Secret(t, s.KafkaPass))
}

// produce writes records from to from+n-1: record i has value i and a distinct event time, so every record is
// its own row and the values of n rows sum to a known total.
func produce(t *testing.T, broker, topic string, from, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	recs := make([]*kgo.Record, n)
	base := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	for j := range recs {
		i := from + j
		v := fmt.Sprintf(`{"device_id":"dev-%d","ts":%q,"value":%d}`, i%5, base.Add(time.Duration(i)*time.Second).Format(time.RFC3339), i)
		recs[j] = &kgo.Record{Key: []byte(fmt.Sprint(i % 5)), Value: []byte(v)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing %d records to %s: %v", n, topic, err)
	}
}

// committed sums the group's committed offsets on topic.
func committed(t *testing.T, broker, group string) int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	offs, err := kadm.NewClient(cl).FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("fetching the offsets of group %s: %v", group, err)
	}
	var total int64
	offs.Each(func(o kadm.OffsetResponse) { total += o.At })
	return total
}

// TestSinkRunsThroughSASLAndMTLSIntoTLSPasswordCassandra runs `sink run` through each way into the secured
// Kafka (SASL_SSL with SCRAM-SHA-256, SCRAM-SHA-512 and PLAIN; mTLS), writing into the TLS-only Cassandra as a
// role that holds nothing but MODIFY on the keyspace, and checks every row, the committed offsets, a clean exit
// and that no password appears in the output.
func TestSinkRunsThroughSASLAndMTLSIntoTLSPasswordCassandra(t *testing.T) {
	s := testenv.Secure(t)
	ca := s.TLSFile("ca.pem")
	sasl := func(mech string) kafkaSide {
		return kafkaSide{broker: s.KafkaSASL, mechanism: mech, user: s.KafkaUser, passFile: s.KafkaPass,
			tls: tlsSide{enabled: true, ca: ca}}
	}
	cases := []struct {
		name  string
		kafka kafkaSide
	}{
		{"scram_sha_256", sasl("SCRAM-SHA-256")},
		{"scram_sha_512", sasl("SCRAM-SHA-512")},
		{"plain", sasl("PLAIN")},
		{"mtls", kafkaSide{broker: s.KafkaMTLS,
			tls: tlsSide{enabled: true, ca: ca, cert: s.TLSFile("client.pem"), key: s.TLSFile("client-key.pem")}}},
	}
	secrets := []string{s.Secret(t, s.KafkaPass), s.Secret(t, s.CassPass), s.Secret(t, s.AdminPass)}
	const records = 60
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			topic := testenv.Name(t, "secured")
			testenv.CreateTopic(t, []string{s.Kafka}, topic, 2)
			keyspace := s.Keyspace(t, "MODIFY")
			applySchema(t, s, tc.kafka, keyspace, topic)
			produce(t, s.Kafka, topic, 0, records)

			group := testenv.Name(t, "group")
			cass := cassSide{host: s.Cassandra, user: s.CassUser, passFile: s.CassPass, tls: tlsSide{enabled: true, ca: ca}}
			cfg := writeConfig(t, "sink", tc.kafka, cass, keyspace, topic, group)
			p := startSink(t, "run", "--config", cfg)

			admin := s.AdminSession(t)
			deadline := time.Now().Add(2 * time.Minute)
			var rows int
			for {
				if err := admin.Query("SELECT count(*) FROM " + keyspace + ".events").Scan(&rows); err != nil {
					t.Fatalf("counting rows: %v", err)
				}
				if rows == records {
					break
				}
				select {
				case err := <-p.done:
					t.Fatalf("the sink exited (%v) with %d of %d rows written; output:\n%s", err, rows, records, p.out.String())
				default:
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d of %d rows written after 2 minutes; output:\n%s", rows, records, p.out.String())
				}
				time.Sleep(500 * time.Millisecond)
			}
			// Every value arrived, once, in the right partition.
			var sum int64
			iter := admin.Query("SELECT value FROM " + keyspace + ".events").Iter()
			var v int64
			for iter.Scan(&v) {
				sum += v
			}
			if err := iter.Close(); err != nil {
				t.Fatal(err)
			}
			if want := int64(records * (records - 1) / 2); sum != want {
				t.Errorf("the values sum to %d, want %d", sum, want)
			}

			if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if code := p.wait(t, 2*time.Minute); code != 0 {
				t.Fatalf("sink run exited %d after SIGTERM; output:\n%s", code, p.out.String())
			}
			if got := committed(t, s.Kafka, group); got != records {
				t.Errorf("group %s committed offsets summing to %d, want %d", group, got, records)
			}
			assertNoSecrets(t, p.out.String(), secrets...)
		})
	}
}

// TestSinkRunRefusedAtStartNamesServerAndCause checks that every connection a server refuses for a
// configuration cause stops `sink run` at start with exit code 6 and an error that names the server, its
// address and the cause, and that no password (right or wrong) reaches the output.
func TestSinkRunRefusedAtStartNamesServerAndCause(t *testing.T) {
	s := testenv.Secure(t)
	ca := s.TLSFile("ca.pem")
	wrongPass := filepath.Join(t.TempDir(), "wrong-password")
	wrong := "wrong-" + testenv.Name(t, "pw")
	if err := os.WriteFile(wrongPass, []byte(wrong+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	goodKafka := kafkaSide{broker: s.KafkaSASL, mechanism: "SCRAM-SHA-512", user: s.KafkaUser, passFile: s.KafkaPass,
		tls: tlsSide{enabled: true, ca: ca}}
	goodCass := cassSide{host: s.Cassandra, user: s.CassUser, passFile: s.CassPass, tls: tlsSide{enabled: true, ca: ca}}
	with := func(f func(k *kafkaSide, c *cassSide)) (kafkaSide, cassSide) {
		k, c := goodKafka, goodCass
		f(&k, &c)
		return k, c
	}
	cases := []struct {
		name  string
		edit  func(k *kafkaSide, c *cassSide)
		want  []string // in the output
		where string   // the server named
	}{
		{"kafka_wrong_password", func(k *kafkaSide, _ *cassSide) { k.passFile = wrongPass },
			[]string{"authentication failed"}, "kafka at " + s.KafkaSASL},
		{"kafka_unknown_user", func(k *kafkaSide, _ *cassSide) { k.user = "nobody" },
			[]string{"authentication failed"}, "kafka at " + s.KafkaSASL},
		{"kafka_untrusted_certificate", func(k *kafkaSide, _ *cassSide) { k.tls.ca = s.TLSFile("other-ca.pem") },
			[]string{"untrusted certificate"}, "kafka at " + s.KafkaSASL},
		{"kafka_server_name_mismatch", func(k *kafkaSide, _ *cassSide) { k.tls.sni = "kafka.invalid" },
			[]string{"server name mismatch"}, "kafka at " + s.KafkaSASL},
		{"kafka_plaintext_client_on_tls_port", func(k *kafkaSide, _ *cassSide) { k.tls = tlsSide{} },
			[]string{"speaks TLS and the client does not"}, "kafka at " + s.KafkaSASL},
		{"kafka_mtls_without_client_certificate", func(k *kafkaSide, _ *cassSide) {
			*k = kafkaSide{broker: s.KafkaMTLS, tls: tlsSide{enabled: true, ca: ca}}
		}, []string{"rejected the TLS handshake"}, "kafka at " + s.KafkaMTLS},
		{"cassandra_wrong_password", func(_ *kafkaSide, c *cassSide) { c.passFile = wrongPass },
			[]string{"authentication failed"}, "cassandra at " + s.Cassandra},
		{"cassandra_unknown_user", func(_ *kafkaSide, c *cassSide) { c.user = "nobody" },
			[]string{"authentication failed"}, "cassandra at " + s.Cassandra},
		{"cassandra_untrusted_certificate", func(_ *kafkaSide, c *cassSide) { c.tls.ca = s.TLSFile("other-ca.pem") },
			[]string{"untrusted certificate"}, "cassandra at " + s.Cassandra},
		{"cassandra_server_name_mismatch", func(_ *kafkaSide, c *cassSide) { c.tls.sni = "cassandra.invalid" },
			[]string{"server name mismatch"}, "cassandra at " + s.Cassandra},
		{"cassandra_plaintext_client_on_tls_port", func(_ *kafkaSide, c *cassSide) { c.tls = tlsSide{} },
			[]string{"TLS-only port"}, "cassandra at " + s.Cassandra},
	}
	secrets := []string{s.Secret(t, s.KafkaPass), s.Secret(t, s.CassPass), s.Secret(t, s.AdminPass), wrong}
	keyspace := s.Keyspace(t, "MODIFY")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			k, c := with(tc.edit)
			cfg := writeConfig(t, "sink", k, c, keyspace, testenv.Name(t, "refused"), testenv.Name(t, "group"))
			// "Fast": well inside the 30 s start-up check and the connect timeout, never a retry loop.
			code, out := runSink(t, 90*time.Second, "run", "--config", cfg)
			if code != exitRefused {
				t.Fatalf("sink run exited %d, want %d (refused); output:\n%s", code, exitRefused, out)
			}
			for _, w := range append([]string{tc.where, "refused the connection"}, tc.want...) {
				if !strings.Contains(out, w) {
					t.Errorf("the output does not say %q; output:\n%s", w, out)
				}
			}
			assertNoSecrets(t, out, secrets...)
		})
	}
}

// lockedBuffer is a bytes.Buffer that the test may read while the process writes to it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
