package testenv

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// EnvPython names the Python 3 that scripts/pyclients creates its environment with (default python3).
const EnvPython = "SINK_PYTHON"

// pyclientsTimeout bounds one run of scripts/pyclients: a cold install downloads about 30 MB of wheels, and a
// second caller waits on the first one's lock.
const pyclientsTimeout = 10 * time.Minute

// pyclients runs scripts/pyclients once per test binary; `make test` has usually started it already, so this only
// waits for that run to finish and reads the path.
var pyclients = sync.OnceValues(func() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), pyclientsTimeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, repoScript("pyclients"))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("scripts/pyclients: %w\n%s", err, stderr.Bytes())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	py := lines[len(lines)-1]
	if _, err := os.Stat(py); err != nil {
		return "", fmt.Errorf("scripts/pyclients printed %q, which is not a file: %w", py, err)
	}
	return py, nil
})

// PythonClients returns the python of the environment scripts/pyclients makes, which has Confluent's Python client
// (confluent-kafka with its Avro, Protobuf and JSON Schema serializers) and grpcio-tools, creating the environment
// first when it is missing. Without a Python 3 on the PATH the test is skipped, except under CI=true, where it
// fails; an environment that cannot be made (no PyPI, a failed install) fails the test everywhere.
func PythonClients(t testing.TB) string {
	t.Helper()
	python := cmp.Or(os.Getenv(EnvPython), "python3")
	if _, err := exec.LookPath(python); err != nil {
		msg := fmt.Sprintf("no %s for the Python client tests (scripts/pyclients needs Python 3 with venv and pip; "+
			"%s names another): %v", python, EnvPython, err)
		if isTrue(os.Getenv(EnvCI)) {
			t.Fatal(msg + "; CI=true, so this is a failure, not a skip")
		}
		t.Skip(msg)
	}
	py, err := pyclients()
	if err != nil {
		t.Fatalf("making the Python client environment: %v", err)
	}
	return py
}

// repoScript is the path of scripts/<name> of this repository, wherever the test binary runs from.
func repoScript(name string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "scripts", name)
}
