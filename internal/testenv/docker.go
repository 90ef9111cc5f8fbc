package testenv

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"github.com/testcontainers/testcontainers-go"
)

// Images used when no address is given and a Docker engine answers. They match docker-compose.yml.
const (
	kafkaImage       = "apache/kafka:4.1.1"
	cassandraImage   = "cassandra:5.0"
	containerTimeout = 5 * time.Minute
)

var (
	dockerOnce sync.Once
	dockerOK   bool
)

// dockerAnswers pings the Docker engine's API once per test binary with a short timeout. It is deliberately
// cheaper than testcontainers-go's own discovery: on a machine without Docker, tests must skip (or fail under CI)
// at once rather than wait for a provider to give up.
func dockerAnswers() bool {
	dockerOnce.Do(func() {
		network, addr := dockerEndpoint(os.Getenv("DOCKER_HOST"), os.Getenv("HOME"))
		dockerOK = pingDocker(network, addr, 2*time.Second)
	})
	return dockerOK
}

// dockerEndpoint returns the network and address of the Docker API: DOCKER_HOST when set (unix:// or tcp://),
// else the first socket file that exists among the usual places.
func dockerEndpoint(dockerHost, home string) (network, addr string) {
	switch {
	case strings.HasPrefix(dockerHost, "unix://"):
		return "unix", strings.TrimPrefix(dockerHost, "unix://")
	case strings.HasPrefix(dockerHost, "tcp://"):
		return "tcp", strings.TrimPrefix(dockerHost, "tcp://")
	case dockerHost != "":
		return "", "" // ssh:// and npipe:// are not probed; testcontainers-go would need its own setup there
	}
	for _, p := range []string{"/var/run/docker.sock", filepath.Join(home, ".docker/run/docker.sock")} {
		if _, err := os.Stat(p); err == nil {
			return "unix", p
		}
	}
	return "", ""
}

func pingDocker(network, addr string, timeout time.Duration) bool {
	if network == "" {
		return false
	}
	client := &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}},
	}
	defer client.CloseIdleConnections()
	resp, err := client.Get("http://docker/_ping")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// startKafkaContainer starts one combined KRaft node. The broker must advertise the port Docker maps on the host,
// which is known only after the container starts, so the container waits for a start script that is copied in
// once the mapping exists. The inter-broker listener stays inside the container.
func startKafkaContainer(ctx context.Context) ([]string, error) {
	const script = "/tmp/sink-testenv-start.sh"
	req := testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			Image:        kafkaImage,
			ExposedPorts: []string{"9092/tcp"},
			Entrypoint:   []string{"sh", "-c", "while [ ! -f " + script + " ]; do sleep 0.1; done; exec sh " + script},
			Env: map[string]string{
				"KAFKA_NODE_ID":                                          "1",
				"KAFKA_PROCESS_ROLES":                                    "broker,controller",
				"KAFKA_CONTROLLER_QUORUM_VOTERS":                         "1@localhost:9093",
				"KAFKA_LISTENERS":                                        "PLAINTEXT://0.0.0.0:9092,BROKER://localhost:9094,CONTROLLER://localhost:9093",
				"KAFKA_LISTENER_SECURITY_PROTOCOL_MAP":                   "PLAINTEXT:PLAINTEXT,BROKER:PLAINTEXT,CONTROLLER:PLAINTEXT",
				"KAFKA_INTER_BROKER_LISTENER_NAME":                       "BROKER",
				"KAFKA_CONTROLLER_LISTENER_NAMES":                        "CONTROLLER",
				"KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR":                 "1",
				"KAFKA_OFFSETS_TOPIC_NUM_PARTITIONS":                     "1",
				"KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR":         "1",
				"KAFKA_TRANSACTION_STATE_LOG_MIN_ISR":                    "1",
				"KAFKA_SHARE_COORDINATOR_STATE_TOPIC_REPLICATION_FACTOR": "1",
				"KAFKA_SHARE_COORDINATOR_STATE_TOPIC_MIN_ISR":            "1",
				"KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS":                 "0",
				"KAFKA_NUM_PARTITIONS":                                   "1",
				"KAFKA_HEAP_OPTS":                                        "-Xmx512M -Xms512M",
			},
		},
		Started: true,
	}
	c, err := testcontainers.GenericContainer(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", kafkaImage, err)
	}
	host, port, err := mapped(ctx, c, "9092/tcp")
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	start := "export KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://" + addr + ",BROKER://localhost:9094\nexec /etc/kafka/docker/run\n"
	if err := c.CopyToContainer(ctx, []byte(start), script, 0o755); err != nil {
		return nil, fmt.Errorf("copying the start script into the %s container: %w", kafkaImage, err)
	}
	return []string{addr}, waitUntil(ctx, func(ctx context.Context) error { return checkKafka(ctx, []string{addr}) })
}

// cassandraContainerAddr is the host endpoint of the Cassandra container. The node announces its container IP in
// system.local and system.peers; sessions to the container translate every announced address to this endpoint.
var (
	cassandraContainerMu   sync.Mutex
	cassandraContainerAddr string
)

func startCassandraContainer(ctx context.Context) ([]string, error) {
	req := testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			Image:        cassandraImage,
			ExposedPorts: []string{"9042/tcp"},
			Env: map[string]string{
				"MAX_HEAP_SIZE":             "1G",
				"HEAP_NEWSIZE":              "256M",
				"JVM_EXTRA_OPTS":            "-Dcassandra.skip_wait_for_gossip_to_settle=0 -Dcassandra.unsafesystem=true",
				"CASSANDRA_ENDPOINT_SNITCH": "SimpleSnitch",
				"CASSANDRA_NUM_TOKENS":      "1",
				"CASSANDRA_CLUSTER_NAME":    "sink-testenv",
			},
		},
		Started: true,
	}
	c, err := testcontainers.GenericContainer(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", cassandraImage, err)
	}
	host, port, err := mapped(ctx, c, "9042/tcp")
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	cassandraContainerMu.Lock()
	cassandraContainerAddr = addr
	cassandraContainerMu.Unlock()
	return []string{addr}, waitUntil(ctx, func(ctx context.Context) error { return checkCassandra(ctx, []string{addr}) })
}

// containerTranslator returns the address translator for sessions to the Cassandra container, or nil when hosts
// are not the container's endpoint.
func containerTranslator(hosts []string) gocql.AddressTranslator {
	cassandraContainerMu.Lock()
	addr := cassandraContainerAddr
	cassandraContainerMu.Unlock()
	if addr == "" || len(hosts) != 1 || hosts[0] != addr {
		return nil
	}
	host, portText, _ := net.SplitHostPort(addr)
	ip := net.ParseIP(host)
	port, _ := strconv.Atoi(portText)
	return gocql.AddressTranslatorFunc(func(net.IP, int) (net.IP, int) { return ip, port })
}

// mapped returns the host IP and port Docker mapped for a container port. The host is resolved to an IP because
// gocql's address translation works on IPs.
func mapped(ctx context.Context, c testcontainers.Container, port string) (string, int, error) {
	host, err := c.Host(ctx)
	if err != nil {
		return "", 0, fmt.Errorf("reading the container host: %w", err)
	}
	if ip := net.ParseIP(host); ip == nil {
		ips, err := net.DefaultResolver.LookupIP(ctx, "ip4", host)
		if err != nil || len(ips) == 0 {
			return "", 0, fmt.Errorf("resolving the container host %q: %v", host, err)
		}
		host = ips[0].String()
	}
	p, err := c.MappedPort(ctx, port)
	if err != nil {
		return "", 0, fmt.Errorf("reading the mapped port of %s: %w", port, err)
	}
	return host, int(p.Num()), nil
}

// waitUntil retries check until it succeeds or ctx ends; container servers take tens of seconds to boot.
func waitUntil(ctx context.Context, check func(ctx context.Context) error) error {
	for {
		tryCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := check(tryCtx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not serving after %s: %w", containerTimeout, err)
		case <-time.After(time.Second):
		}
	}
}
