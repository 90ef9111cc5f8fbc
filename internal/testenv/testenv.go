// Package testenv gives integration tests the addresses of a real Apache Kafka broker, a real Apache Cassandra
// node and a real Confluent-compatible Schema Registry (Apicurio Registry), unique names, and small setup helpers
// (topics, keyspaces, sessions, a private registry) that clean up after themselves.
//
// Where the servers come from, in order:
//
//  1. SINK_TEST_KAFKA and SINK_TEST_CASSANDRA (comma-separated host:port lists) and SINK_TEST_REGISTRY (the
//     registry API's base URL), as `make test` sets them after `scripts/stack up`. An address given this way must
//     answer: if it does not, the test fails and names it.
//  2. Otherwise, when a Docker engine answers, containers started once per test binary with testcontainers-go
//     (apache/kafka, cassandra and apicurio/apicurio-registry-mem images) and reused by every test of the binary.
//  3. Otherwise the test is skipped with a message saying how to start the local stack, except under CI=true, where
//     a missing server is a failure: CI must never go green on skipped integration tests.
//
// Every function is safe for concurrent use by parallel tests.
package testenv

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// Environment variables read by this package.
const (
	EnvKafka     = "SINK_TEST_KAFKA"
	EnvCassandra = "SINK_TEST_CASSANDRA"
	EnvCI        = "CI"
)

// probeTimeout bounds the one reachability check made for each address given through the environment.
const probeTimeout = 20 * time.Second

// Kafka returns the bootstrap addresses of a real Kafka broker, or skips/fails t as the package comment describes.
func Kafka(t testing.TB) []string {
	t.Helper()
	return resolve(t, kafkaServer)
}

// Cassandra returns the host:port contact points of a real Cassandra node, or skips/fails t as the package comment
// describes.
func Cassandra(t testing.TB) []string {
	t.Helper()
	return resolve(t, cassandraServer)
}

// server describes one kind of server: its variable, how to check an address, how to start a container.
type server struct {
	name  string
	env   string
	check func(ctx context.Context, addrs []string) error
	start func(ctx context.Context) ([]string, error)
}

var (
	kafkaServer     = &server{name: "Kafka", env: EnvKafka, check: checkKafka, start: startKafkaContainer}
	cassandraServer = &server{name: "Cassandra", env: EnvCassandra, check: checkCassandra, start: startCassandraContainer}
)

// action is what resolve does for a test; decide computes it without touching the network.
type action int

const (
	useEnv    action = iota // the addresses from the environment
	useDocker               // containers through testcontainers-go
	skipTest                // t.Skip with the message
	failTest                // t.Fatal with the message
)

// decide chooses where the addresses come from. envValue is the server's variable, ci the CI variable, and
// dockerAnswers reports whether a Docker engine answers (called only when the variable is empty).
func decide(serverName, envName, envValue, ci string, dockerAnswers func() bool) (action, []string, string) {
	if addrs := splitAddrs(envValue); len(addrs) > 0 {
		return useEnv, addrs, ""
	}
	if dockerAnswers() {
		return useDocker, nil, ""
	}
	msg := fmt.Sprintf("no %s for integration tests: %s is not set and no Docker engine answers. "+
		"Start the local stack with `scripts/stack up` and export SINK_TEST_KAFKA=127.0.0.1:9092 "+
		"SINK_TEST_CASSANDRA=127.0.0.1:9042 SINK_TEST_REGISTRY=http://127.0.0.1:8081/apis/ccompat/v7 "+
		"(`export $(scripts/stack env)`), or run `make test`", serverName, envName)
	if isTrue(ci) {
		return failTest, nil, msg + "; CI=true, so this is a failure, not a skip"
	}
	return skipTest, nil, msg
}

func splitAddrs(v string) []string {
	var out []string
	for _, a := range strings.Split(v, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// isTrue reads CI the way CI systems set it ("true", "1", "yes"; any case).
func isTrue(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true", "1", "yes":
		return true
	}
	return false
}

// result memoises one outcome per server per address list, so a test binary checks or starts each server once.
type result struct {
	once  sync.Once
	addrs []string
	err   error
}

var results sync.Map // key: server name + "|" + source → *result

func memo(key string, f func() ([]string, error)) ([]string, error) {
	v, _ := results.LoadOrStore(key, &result{})
	r := v.(*result)
	r.once.Do(func() { r.addrs, r.err = f() })
	return r.addrs, r.err
}

func resolve(t testing.TB, s *server) []string {
	t.Helper()
	act, addrs, msg := decide(s.name, s.env, os.Getenv(s.env), os.Getenv(EnvCI), dockerAnswers)
	switch act {
	case useEnv:
		_, err := memo(s.name+"|env|"+strings.Join(addrs, ","), func() ([]string, error) {
			ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
			defer cancel()
			return addrs, s.check(ctx, addrs)
		})
		if err != nil {
			t.Fatalf("%s at %s (from %s) does not answer: %v. Is the stack up? Run `scripts/stack status`",
				s.name, strings.Join(addrs, ","), s.env, err)
		}
		return append([]string(nil), addrs...)
	case useDocker:
		got, err := memo(s.name+"|docker", func() ([]string, error) {
			ctx, cancel := context.WithTimeout(context.Background(), containerTimeout)
			defer cancel()
			return s.start(ctx)
		})
		if err != nil {
			t.Fatalf("starting a %s container with testcontainers-go: %v", s.name, err)
		}
		return append([]string(nil), got...)
	case skipTest:
		t.Skip(msg)
	default:
		t.Fatal(msg)
	}
	return nil
}
