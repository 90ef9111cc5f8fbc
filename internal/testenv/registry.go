package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/testcontainers/testcontainers-go"
)

// EnvRegistry is the base URL of a Confluent-compatible Schema Registry API, as `scripts/stack env` prints it
// (Apicurio Registry's http://127.0.0.1:8081/apis/ccompat/v7).
const EnvRegistry = "SINK_TEST_REGISTRY"

// registryImage matches the registry service of docker-compose.yml; registryAPI is where its Confluent-compatible
// API lives.
const (
	registryImage = "apicurio/apicurio-registry-mem:2.6.13.Final"
	registryAPI   = "/apis/ccompat/v7"
)

var registryServer = &server{name: "Schema Registry", env: EnvRegistry, check: checkRegistry, start: startRegistryContainer}

// Registry returns the base URL of a real Confluent-compatible Schema Registry (for franz-go's sr.URLs), or
// skips/fails t as the package comment describes. The registry is shared by every test: register schemas under
// subjects named with Name, and set a subject's compatibility level yourself when the test relies on it (Apicurio's
// default is NONE, Confluent's BACKWARD).
func Registry(t testing.TB) string {
	t.Helper()
	return resolve(t, registryServer)[0]
}

// checkRegistry lists the subjects: the API answering with a JSON list means the registry and its storage serve.
func checkRegistry(ctx context.Context, urls []string) error {
	for _, u := range urls {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(u, "/")+"/subjects", nil)
		if err != nil {
			return err
		}
		req.Close = true // no idle connection left behind for goleak to find in the test binaries that probe
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return fmt.Errorf("listing subjects: %w", err)
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if err != nil {
			return fmt.Errorf("reading the subject list: %w", err)
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("listing subjects at %s: HTTP %s: %.200s", u, resp.Status, body)
		}
		var subjects []string
		if err := json.Unmarshal(body, &subjects); err != nil {
			return fmt.Errorf("listing subjects at %s: not a JSON list of names (is the URL the /apis/ccompat/v7 API?): %w", u, err)
		}
	}
	return nil
}

func startRegistryContainer(ctx context.Context) ([]string, error) {
	req := testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			Image:        registryImage,
			ExposedPorts: []string{"8080/tcp"},
			Env:          map[string]string{"JAVA_OPTS": "-Xmx384m"},
		},
		Started: true,
	}
	c, err := testcontainers.GenericContainer(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", registryImage, err)
	}
	host, port, err := mapped(ctx, c, "8080/tcp")
	if err != nil {
		return nil, err
	}
	url := "http://" + net.JoinHostPort(host, strconv.Itoa(port)) + registryAPI
	return []string{url}, waitUntil(ctx, func(ctx context.Context) error { return checkRegistry(ctx, []string{url}) })
}

// PrivateRegistry is a registry of a test's own, beside the shared one, for a test that stops its registry
// mid-stream (stopping the shared one would fail every other test using it). Its schemas are kept in a file, so
// they survive Stop and Start, as a production registry's do.
type PrivateRegistry struct {
	// URL is the base URL of its Confluent-compatible API, for sr.URLs.
	URL  string
	name string
	port int
}

// StartPrivateRegistry starts a private Apicurio Registry through `scripts/stack registry start` on a free
// loopback port, returns once it serves (about 30 s on a busy machine), and removes it when the test ends. It needs
// what the local stack needs (JDK 17, Maven, the stack's cache); like every integration test it is skipped without
// the shared registry (SINK_TEST_REGISTRY), except under CI=true, where it fails.
func StartPrivateRegistry(t testing.TB) *PrivateRegistry {
	t.Helper()
	Registry(t)
	port, err := freePort()
	if err != nil {
		t.Fatalf("finding a free port for a private registry: %v", err)
	}
	r := &PrivateRegistry{name: stackName(t, "reg"), port: port}
	r.URL = "http://127.0.0.1:" + strconv.Itoa(port) + registryAPI
	t.Cleanup(func() {
		if err := stackRegistry("remove", r.name); err != nil {
			t.Errorf("removing private registry %s: %v", r.name, err)
		}
	})
	if err := stackRegistry("start", r.name, strconv.Itoa(port)); err != nil {
		t.Fatalf("starting private registry %s: %v", r.name, err)
	}
	return r
}

// Stop stops the private registry (SIGTERM; its schemas stay on disk). It is safe to call from any goroutine.
func (r *PrivateRegistry) Stop() error { return stackRegistry("stop", r.name) }

// Start starts the stopped private registry again on the same port with the same schemas and returns once it
// serves. It is safe to call from any goroutine.
func (r *PrivateRegistry) Start() error { return stackRegistry("start", r.name, strconv.Itoa(r.port)) }

func stackRegistry(args ...string) error {
	return stackCommand(nil, append([]string{"registry"}, args...)...)
}

// freePort asks the kernel for a free loopback port. Another process may take it before the registry binds it;
// scripts/stack then refuses to start and names the port.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
