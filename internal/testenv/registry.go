package testenv

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
)

// EnvRegistry is the base URL of a Confluent-compatible schema registry for integration tests, as
// `scripts/stack env` sets it (Apicurio's compatibility API, ending in /apis/ccompat/v7).
const EnvRegistry = "SINK_TEST_REGISTRY"

// Registry returns the base URL of a real schema registry from SINK_TEST_REGISTRY, after checking once
// per test binary that it answers GET <url>/subjects. Unset, the test is skipped, or fails under CI=true;
// set but not answering, it fails. There is no container fallback: the stack starts the registry.
func Registry(t testing.TB) string {
	t.Helper()
	u := strings.TrimRight(strings.TrimSpace(os.Getenv(EnvRegistry)), "/")
	if u == "" {
		msg := "no schema registry for integration tests: " + EnvRegistry + " is not set. " +
			"Start the local stack with `scripts/stack up` and `export $(scripts/stack env)` (or run `make test`)"
		if isTrue(os.Getenv(EnvCI)) {
			t.Fatal(msg + "; CI=true, so this is a failure, not a skip")
		}
		t.Skip(msg)
	}
	_, err := memo("registry|"+u, func() ([]string, error) { return nil, checkRegistry(u) })
	if err != nil {
		t.Fatalf("schema registry at %s (from %s) does not answer: %v. Is the stack up? Run `scripts/stack status`",
			u, EnvRegistry, err)
	}
	return u
}

func checkRegistry(u string) error {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u+"/subjects", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s/subjects: %s", u, resp.Status)
	}
	return nil
}
