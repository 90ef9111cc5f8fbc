// Command stackcheck answers one question for scripts/stack: does the server at an address really serve?
//
// Usage:
//
//	stackcheck [-timeout 5s] kafka host:port       # a Kafka metadata request answers
//	stackcheck [-timeout 5s] cassandra host:port   # CQL SELECT release_version FROM system.local answers
//	stackcheck [-timeout 5s] -secure-dir DIR kafka-secure host:port      # as kafka, on the plaintext listener
//	stackcheck [-timeout 5s] -secure-dir DIR cassandra-secure host:port  # TLS and login; creates the roles
//	stackcheck [-timeout 5s] -ring-size N cassandra-ring host:port       # serves, and knows its N-1 peers
//	stackcheck [-timeout 5s] registry host:port    # the Confluent-compatible API lists its subjects
//	stackcheck [-timeout 5s] connect host:port     # Kafka Connect's REST API: every connector and task RUNNING
//
// For cassandra-secure, DIR is the directory scripts/stack made the certificates and passwords in (tls/ca.pem,
// passwords/cassandra-admin, passwords/cassandra-sink). The first check that gets in (as the default superuser,
// cassandra/cassandra) creates the superuser stackadmin and the login role sink (no permissions: tests grant
// them per keyspace), then disables the default superuser's login; later checks log in as stackadmin.
//
// It makes one attempt and exits 0 when the server answered, 1 when it did not (the reason on stderr), 2 on a usage
// error. The polling, deadlines and log tails are the script's job.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("stackcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	timeout := fs.Duration("timeout", 5*time.Second, "how long the one attempt may take")
	secureDir := fs.String("secure-dir", "", "the secured servers' certificates and passwords (cassandra-secure)")
	ringSize := fs.Int("ring-size", 0, "the number of nodes of the ring (cassandra-ring)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 2 {
		fmt.Fprintln(stderr, "usage: stackcheck [-timeout 5s] [-secure-dir DIR] [-ring-size N] kafka|cassandra|kafka-secure|cassandra-secure|cassandra-ring|registry|connect host:port")
		return 2
	}
	kind, addr := fs.Arg(0), fs.Arg(1)
	if _, _, err := net.SplitHostPort(addr); err != nil {
		fmt.Fprintf(stderr, "stackcheck: address %q: %v\n", addr, err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()

	var (
		info string
		err  error
	)
	switch kind {
	case "kafka", "kafka-secure":
		info, err = checkKafka(ctx, addr)
	case "cassandra":
		info, err = checkCassandra(ctx, addr, *timeout)
	case "cassandra-ring":
		info, err = checkRingNode(ctx, addr, *timeout, *ringSize)
	case "registry":
		info, err = checkRegistry(ctx, addr)
	case "connect":
		info, err = checkConnect(ctx, addr)
	case "cassandra-secure":
		if *secureDir == "" {
			fmt.Fprintln(stderr, "stackcheck: cassandra-secure needs -secure-dir")
			return 2
		}
		info, err = checkSecureCassandra(ctx, addr, *timeout, *secureDir)
	default:
		fmt.Fprintf(stderr, "stackcheck: unknown server kind %q (want kafka, cassandra, kafka-secure, cassandra-secure, cassandra-ring, registry or connect)\n", kind)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "stackcheck: %s at %s: %v\n", kind, addr, err)
		return 1
	}
	fmt.Fprintf(stdout, "%s at %s: %s\n", kind, addr, info)
	return 0
}

// checkKafka sends one metadata request. A broker that answers with itself and a controller can serve clients and
// consumer groups; one that answers without a controller is still electing and is reported as not ready.
func checkKafka(ctx context.Context, addr string) (string, error) {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.DialTimeout(2*time.Second),
		kgo.RequestRetries(0),
		kgo.RetryTimeout(0),
	)
	if err != nil {
		return "", fmt.Errorf("creating client: %w", err)
	}
	defer cl.Close()
	md, err := kadm.NewClient(cl).BrokerMetadata(ctx)
	if err != nil {
		return "", fmt.Errorf("requesting metadata: %w", err)
	}
	if len(md.Brokers) == 0 {
		return "", errors.New("metadata lists no brokers")
	}
	if md.Controller < 0 {
		return "", errors.New("metadata names no active controller yet")
	}
	return fmt.Sprintf("cluster %s, %d broker(s), controller %d", md.Cluster, len(md.Brokers), md.Controller), nil
}

func checkCassandra(ctx context.Context, addr string, timeout time.Duration) (string, error) {
	cluster, err := newCluster(addr, timeout)
	if err != nil {
		return "", err
	}
	session, err := cluster.CreateSession()
	if err != nil {
		return "", fmt.Errorf("connecting: %w", err)
	}
	defer session.Close()
	return releaseVersion(ctx, session)
}

func newCluster(addr string, timeout time.Duration) (*gocql.ClusterConfig, error) {
	host, portText, _ := net.SplitHostPort(addr)
	port, err := strconv.Atoi(portText)
	if err != nil {
		return nil, fmt.Errorf("port %q: %w", portText, err)
	}
	cluster := gocql.NewCluster(host)
	cluster.Port = port
	cluster.Timeout = timeout
	cluster.ConnectTimeout = timeout
	cluster.NumConns = 1
	return cluster, nil
}

func releaseVersion(ctx context.Context, session *gocql.Session) (string, error) {
	var release string
	if err := session.Query("SELECT release_version FROM system.local").ScanContext(ctx, &release); err != nil {
		return "", fmt.Errorf("querying system.local: %w", err)
	}
	return "release_version " + release, nil
}

// checkSecureCassandra logs in over TLS as stackadmin; when that role does not exist yet, it logs in as the
// default superuser and creates the roles (see the package comment).
func checkSecureCassandra(ctx context.Context, addr string, timeout time.Duration, dir string) (string, error) {
	ca, err := os.ReadFile(filepath.Join(dir, "tls", "ca.pem"))
	if err != nil {
		return "", err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return "", fmt.Errorf("%s holds no certificate", filepath.Join(dir, "tls", "ca.pem"))
	}
	secret := func(name string) (string, error) {
		b, err := os.ReadFile(filepath.Join(dir, "passwords", name))
		return strings.TrimSpace(string(b)), err
	}
	adminPass, err := secret("cassandra-admin")
	if err != nil {
		return "", err
	}
	sinkPass, err := secret("cassandra-sink")
	if err != nil {
		return "", err
	}
	connect := func(user, pass string) (*gocql.Session, error) {
		cluster, err := newCluster(addr, timeout)
		if err != nil {
			return nil, err
		}
		cluster.SslOpts = &gocql.SslOptions{
			Config:                 &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
			EnableHostVerification: true,
		}
		cluster.Authenticator = gocql.PasswordAuthenticator{Username: user, Password: pass}
		return cluster.CreateSession()
	}
	session, err := connect("stackadmin", adminPass)
	if err != nil {
		// Not set up yet (or not serving: then the default superuser fails too, and that error is reported).
		first, err := connect("cassandra", "cassandra")
		if err != nil {
			return "", fmt.Errorf("connecting over TLS as stackadmin or as the default superuser: %w", err)
		}
		defer first.Close()
		// Hex passwords made by scripts/stack: nothing to escape in a CQL string.
		for _, stmt := range []string{
			"CREATE ROLE IF NOT EXISTS stackadmin WITH SUPERUSER = true AND LOGIN = true AND PASSWORD = '" + adminPass + "'",
			"CREATE ROLE IF NOT EXISTS sink WITH LOGIN = true AND PASSWORD = '" + sinkPass + "'",
		} {
			if err := first.Query(stmt).ExecContext(ctx); err != nil {
				return "", fmt.Errorf("creating the roles: %w", err)
			}
		}
		if session, err = connect("stackadmin", adminPass); err != nil {
			return "", fmt.Errorf("logging in as stackadmin after creating it: %w", err)
		}
		// A well-known password must not open the node.
		if err := session.Query("ALTER ROLE cassandra WITH LOGIN = false").ExecContext(ctx); err != nil {
			session.Close()
			return "", fmt.Errorf("disabling the default superuser: %w", err)
		}
	}
	defer session.Close()
	return releaseVersion(ctx, session)
}

// checkRingNode checks that a ring node serves and has met every other node: its system.peers lists size-1
// peers, so the ring is whole before a test creates a keyspace with replication factor size.
func checkRingNode(ctx context.Context, addr string, timeout time.Duration, size int) (string, error) {
	cluster, err := newCluster(addr, timeout)
	if err != nil {
		return "", err
	}
	// Only this node: the check is about what it knows, not about its peers' answers.
	host, _, _ := net.SplitHostPort(addr)
	cluster.HostFilter = gocql.WhiteListHostFilter(host)
	cluster.DisableInitialHostLookup = true
	session, err := cluster.CreateSession()
	if err != nil {
		return "", fmt.Errorf("connecting: %w", err)
	}
	defer session.Close()
	info, err := releaseVersion(ctx, session)
	if err != nil {
		return "", err
	}
	var peers int
	if err := session.Query("SELECT count(*) FROM system.peers_v2").ScanContext(ctx, &peers); err != nil {
		return "", fmt.Errorf("counting peers: %w", err)
	}
	if peers < size-1 {
		return "", fmt.Errorf("knows %d of its %d peers", peers, size-1)
	}
	return fmt.Sprintf("%s, %d peers", info, peers), nil
}

// registryAPI is the path of the registry's Confluent-compatible API (Apicurio serves its own API beside it).
const registryAPI = "/apis/ccompat/v7"

// checkRegistry lists the registry's subjects through the Confluent-compatible API: the HTTP server answering is
// not enough, the API (and the storage behind it) must be up.
func checkRegistry(ctx context.Context, addr string) (string, error) {
	var subjects []string
	if err := getJSON(ctx, "http://"+addr+registryAPI+"/subjects", "subjects", "a JSON list of names", &subjects); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d subject(s)", len(subjects)), nil
}

// getJSON GETs url and decodes its 200 answer into v; what names the list in errors, shape what v should be.
func getJSON(ctx context.Context, url, what, shape string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("listing %s: %w", what, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("reading the %s list: %w", what, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("listing %s: HTTP %s: %.200s", what, resp.Status, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("listing %s: not %s: %w", what, shape, err)
	}
	return nil
}

// connectorStatus is one entry of Kafka Connect's GET /connectors?expand=status.
type connectorStatus struct {
	Status struct {
		Connector struct {
			State string `json:"state"`
			Trace string `json:"trace"`
		} `json:"connector"`
		Tasks []struct {
			ID    int    `json:"id"`
			State string `json:"state"`
			Trace string `json:"trace"`
		} `json:"tasks"`
	} `json:"status"`
}

// checkConnect asks a Kafka Connect worker for its connectors' status: it serves once it has at least one
// connector and every connector and every task of it is RUNNING. A failed one is reported with the first line of
// its trace, which is where Connect says why (a database it cannot reach, a bad property).
func checkConnect(ctx context.Context, addr string) (string, error) {
	var connectors map[string]connectorStatus
	if err := getJSON(ctx, "http://"+addr+"/connectors?expand=status", "connectors", "a JSON object of statuses", &connectors); err != nil {
		return "", err
	}
	if len(connectors) == 0 {
		return "", errors.New("no connector yet")
	}
	firstLine := func(s string) string { line, _, _ := strings.Cut(s, "\n"); return line }
	for name, c := range connectors {
		if st := c.Status.Connector.State; st != "RUNNING" {
			return "", fmt.Errorf("connector %s is %s %s", name, st, firstLine(c.Status.Connector.Trace))
		}
		if len(c.Status.Tasks) == 0 {
			return "", fmt.Errorf("connector %s has no task yet", name)
		}
		for _, task := range c.Status.Tasks {
			if task.State != "RUNNING" {
				return "", fmt.Errorf("task %d of connector %s is %s %s", task.ID, name, task.State, firstLine(task.Trace))
			}
		}
	}
	return fmt.Sprintf("%d connector(s) running", len(connectors)), nil
}
