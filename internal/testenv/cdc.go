package testenv

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Postgres is a PostgreSQL of a test's own, the source of a change-data-capture test: Debian's package run by
// `scripts/stack postgres start` on a free loopback port with logical decoding on (wal_level=logical, for
// Debezium's pgoutput), loopback connections trusted, superuser and database `sink`.
type Postgres struct {
	// Port is its loopback port (host 127.0.0.1).
	Port int
	name string
}

// DSN is a libpq connection URL for the database `sink` as the superuser `sink`.
func (p *Postgres) DSN() string {
	return "postgres://sink@127.0.0.1:" + strconv.Itoa(p.Port) + "/sink?sslmode=disable"
}

// StartPostgres starts a PostgreSQL of the test's own, returns once it serves, and removes it (data and all) when
// the test ends. Like every integration test it needs Kafka (it is skipped without, except under CI=true); a
// machine without PostgreSQL skips it too when scripts/stack cannot install it (not root), except under CI=true,
// where that, and any failure to start, fails the test.
func StartPostgres(t testing.TB) *Postgres {
	t.Helper()
	Kafka(t)
	if !postgresInstalled() && os.Geteuid() != 0 {
		msg := "no PostgreSQL for the change-data-capture test: install Debian's package (`apt-get install postgresql`, " +
			"or run `scripts/stack postgres install` as root) or set SINK_STACK_POSTGRES_BIN"
		if isTrue(os.Getenv(EnvCI)) {
			t.Fatal(msg + "; CI=true, so this is a failure, not a skip")
		}
		t.Skip(msg)
	}
	port, err := freePort()
	if err != nil {
		t.Fatalf("finding a free port for PostgreSQL: %v", err)
	}
	p := &Postgres{Port: port, name: stackName(t, "pg")}
	t.Cleanup(func() {
		if err := stackCommand(nil, "postgres", "remove", p.name); err != nil {
			t.Errorf("removing PostgreSQL %s: %v", p.name, err)
		}
	})
	if err := stackCommand(nil, "postgres", "start", p.name, strconv.Itoa(port)); err != nil {
		t.Fatalf("starting PostgreSQL %s: %v", p.name, err)
	}
	return p
}

// postgresInstalled reports whether scripts/stack finds a PostgreSQL without installing one.
func postgresInstalled() bool {
	if dir := os.Getenv("SINK_STACK_POSTGRES_BIN"); dir != "" {
		_, err := os.Stat(filepath.Join(dir, "postgres"))
		return err == nil
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres")
	return len(found) > 0
}

// StartConnect starts Kafka Connect standalone (`scripts/stack connect start`: the stack's Kafka version with
// Debezium's PostgreSQL connector, JsonConverter with the value's schema) running one connector of the given
// properties, writing to the brokers of Kafka(t). It returns once the connector and its task run (30 to 60 s on a
// busy machine, more the first time, when its jars are resolved from Maven Central) and removes the worker and its
// source offsets when the test ends. A worker that cannot start fails the test.
func StartConnect(t testing.TB, connector map[string]string) {
	t.Helper()
	brokers := Kafka(t)
	port, err := freePort()
	if err != nil {
		t.Fatalf("finding a free port for Kafka Connect: %v", err)
	}
	name := stackName(t, "connect")
	var props strings.Builder
	for _, k := range slices.Sorted(maps.Keys(connector)) {
		fmt.Fprintf(&props, "%s=%s\n", k, connector[k])
	}
	path := filepath.Join(t.TempDir(), "connector.properties")
	if err := os.WriteFile(path, []byte(props.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stackCommand(nil, "connect", "remove", name); err != nil {
			t.Errorf("removing Kafka Connect %s: %v", name, err)
		}
	})
	env := []string{"SINK_STACK_CONNECT_BOOTSTRAP=" + strings.Join(brokers, ",")}
	if err := stackCommand(env, "connect", "start", name, strconv.Itoa(port), path); err != nil {
		t.Fatalf("starting Kafka Connect %s: %v", name, err)
	}
}

// stackName is a name for a server of a test's own: Name's, with the dashes scripts/stack wants.
func stackName(t testing.TB, prefix string) string {
	return strings.ReplaceAll(Name(t, prefix), "_", "-")
}

// stackCommand runs scripts/stack with args, env added to this process's environment.
func stackCommand(env []string, args ...string) error {
	cmd := exec.Command(repoScript("stack"), args...)
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("scripts/stack %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}
