package testenv

import (
	"context"
	"fmt"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

// newCluster is the one place sessions of this package are configured: short timeouts so a dead node fails a test
// in seconds, consistency ONE for a single node, and the address translation a container needs (see docker.go).
func newCluster(hosts []string, keyspace string) *gocql.ClusterConfig {
	c := gocql.NewCluster(hosts...)
	c.Keyspace = keyspace
	c.Consistency = gocql.One
	c.Timeout = 10 * time.Second
	c.ConnectTimeout = 5 * time.Second
	// Schema changes on one node agree at once; a long wait would only hide a broken node.
	c.MaxWaitSchemaAgreement = 30 * time.Second
	// The tests' own sessions read no schema metadata, and a schema change another test makes while one
	// is created starts the driver's debounced metadata refresh during its init, which reads a field the
	// init is still writing (gocql v2.1.2: Session.init's useSystemSchema against getAllKeyspaceMetadata):
	// a data race the race detector fails the test on. Ignoring schema events keeps them out of it.
	c.Events.DisableSchemaEvents = true
	if tr := containerTranslator(hosts); tr != nil {
		c.AddressTranslator = tr
	}
	return c
}

func checkCassandra(ctx context.Context, hosts []string) error {
	c := newCluster(hosts, "")
	c.NumConns = 1
	s, err := c.CreateSession()
	if err != nil {
		return fmt.Errorf("connecting: %w", err)
	}
	defer s.Close()
	var release string
	if err := s.Query("SELECT release_version FROM system.local").ScanContext(ctx, &release); err != nil {
		return fmt.Errorf("querying system.local: %w", err)
	}
	return nil
}

// Session opens a session to hosts with keyspace as its default ("" for none) and closes it when the test ends.
func Session(t testing.TB, hosts []string, keyspace string) *gocql.Session {
	t.Helper()
	s, err := newCluster(hosts, keyspace).CreateSession()
	if err != nil {
		t.Fatalf("connecting to Cassandra at %v (keyspace %q): %v", hosts, keyspace, err)
	}
	t.Cleanup(s.Close)
	return s
}

// Keyspace creates a keyspace with a unique name (SimpleStrategy, replication factor 1), drops it when the test
// ends, and returns its name.
func Keyspace(t testing.TB, hosts []string) string {
	t.Helper()
	name := Name(t, "ks")
	s, err := newCluster(hosts, "").CreateSession()
	if err != nil {
		t.Fatalf("connecting to Cassandra at %v: %v", hosts, err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stmt := "CREATE KEYSPACE " + name + " WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"
	if err := s.Query(stmt).ExecContext(ctx); err != nil {
		t.Fatalf("creating keyspace %s on %v: %v", name, hosts, err)
	}
	t.Cleanup(func() {
		s, err := newCluster(hosts, "").CreateSession()
		if err != nil {
			t.Logf("dropping keyspace %s: %v", name, err)
			return
		}
		defer s.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := s.Query("DROP KEYSPACE IF EXISTS " + name).ExecContext(ctx); err != nil {
			t.Logf("dropping keyspace %s: %v", name, err)
		}
	})
	return name
}
