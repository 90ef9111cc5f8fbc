// Command stackcheck answers one question for scripts/stack: does the server at an address really serve?
//
// Usage:
//
//	stackcheck [-timeout 5s] kafka host:port       # a Kafka metadata request answers
//	stackcheck [-timeout 5s] cassandra host:port   # CQL SELECT release_version FROM system.local answers
//
// It makes one attempt and exits 0 when the server answered, 1 when it did not (the reason on stderr), 2 on a usage
// error. The polling, deadlines and log tails are the script's job.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
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
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 2 {
		fmt.Fprintln(stderr, "usage: stackcheck [-timeout 5s] kafka|cassandra host:port")
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
	case "kafka":
		info, err = checkKafka(ctx, addr)
	case "cassandra":
		info, err = checkCassandra(ctx, addr, *timeout)
	default:
		fmt.Fprintf(stderr, "stackcheck: unknown server kind %q (want kafka or cassandra)\n", kind)
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
	host, portText, _ := net.SplitHostPort(addr)
	port, err := strconv.Atoi(portText)
	if err != nil {
		return "", fmt.Errorf("port %q: %w", portText, err)
	}
	cluster := gocql.NewCluster(host)
	cluster.Port = port
	cluster.Timeout = timeout
	cluster.ConnectTimeout = timeout
	cluster.NumConns = 1
	session, err := cluster.CreateSession()
	if err != nil {
		return "", fmt.Errorf("connecting: %w", err)
	}
	defer session.Close()
	var release string
	if err := session.Query("SELECT release_version FROM system.local").WithContext(ctx).Scan(&release); err != nil {
		return "", fmt.Errorf("querying system.local: %w", err)
	}
	return "release_version " + release, nil
}
