package testenv

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

// Secured is the secured pair of `scripts/stack up --secure`: a Kafka broker with SASL_SSL and mTLS listeners
// beside a plaintext one, and a Cassandra node with client TLS and password authentication. Secrets are files,
// never values, so a test can hand the same paths to the sink's config.
type Secured struct {
	Kafka     string // plaintext listener, for setting up topics and producing test records
	KafkaSASL string // SASL_SSL listener (SCRAM-SHA-256, SCRAM-SHA-512, PLAIN)
	KafkaMTLS string // SSL listener that requires a client certificate
	KafkaUser string
	KafkaPass string // path of the file holding KafkaUser's password
	Cassandra string // TLS-only native transport
	CassUser  string // the sink's non-superuser role
	CassPass  string // path of its password file
	AdminUser string // a superuser, for keyspaces and grants
	AdminPass string // path of its password file
	TLSDir    string // ca.pem, client.pem, client-key.pem, other-ca.pem (a CA that signed nothing in use)
}

// Environment variables of the secured pair, as `scripts/stack env` prints them.
const (
	EnvSecureKafka         = "SINK_TEST_SECURE_KAFKA"
	EnvSecureKafkaSASL     = "SINK_TEST_SECURE_KAFKA_SASL_SSL"
	EnvSecureKafkaMTLS     = "SINK_TEST_SECURE_KAFKA_MTLS"
	EnvSecureKafkaUser     = "SINK_TEST_SECURE_KAFKA_USER"
	EnvSecureKafkaPass     = "SINK_TEST_SECURE_KAFKA_PASSWORD_FILE"
	EnvSecureCassandra     = "SINK_TEST_SECURE_CASSANDRA"
	EnvSecureCassUser      = "SINK_TEST_SECURE_CASSANDRA_USER"
	EnvSecureCassPass      = "SINK_TEST_SECURE_CASSANDRA_PASSWORD_FILE"
	EnvSecureCassAdmin     = "SINK_TEST_SECURE_CASSANDRA_ADMIN_USER"
	EnvSecureCassAdminPass = "SINK_TEST_SECURE_CASSANDRA_ADMIN_PASSWORD_FILE"
	EnvSecureTLSDir        = "SINK_TEST_SECURE_TLS_DIR"
)

// Secure returns the secured pair from the environment. Without it the test is skipped, except under CI=true,
// where it fails: `make test` starts the pair, so CI must never pass on a skipped security test.
func Secure(t testing.TB) *Secured {
	t.Helper()
	get := os.Getenv
	s := &Secured{
		Kafka: get(EnvSecureKafka), KafkaSASL: get(EnvSecureKafkaSASL), KafkaMTLS: get(EnvSecureKafkaMTLS),
		KafkaUser: get(EnvSecureKafkaUser), KafkaPass: get(EnvSecureKafkaPass),
		Cassandra: get(EnvSecureCassandra), CassUser: get(EnvSecureCassUser), CassPass: get(EnvSecureCassPass),
		AdminUser: get(EnvSecureCassAdmin), AdminPass: get(EnvSecureCassAdminPass), TLSDir: get(EnvSecureTLSDir),
	}
	var missing []string
	for env, v := range map[string]string{
		EnvSecureKafka: s.Kafka, EnvSecureKafkaSASL: s.KafkaSASL, EnvSecureKafkaMTLS: s.KafkaMTLS,
		EnvSecureKafkaUser: s.KafkaUser, EnvSecureKafkaPass: s.KafkaPass, EnvSecureCassandra: s.Cassandra,
		EnvSecureCassUser: s.CassUser, EnvSecureCassPass: s.CassPass, EnvSecureCassAdmin: s.AdminUser,
		EnvSecureCassAdminPass: s.AdminPass, EnvSecureTLSDir: s.TLSDir,
	} {
		if v == "" {
			missing = append(missing, env)
		}
	}
	if len(missing) > 0 {
		msg := "no secured Kafka and Cassandra for this test (" + strings.Join(missing, ", ") + " unset): run " +
			"`scripts/stack up --secure` and export $(scripts/stack env), or `make test`"
		if isTrue(os.Getenv(EnvCI)) {
			t.Fatal(msg + "; CI=true, so this is a failure, not a skip")
		}
		t.Skip(msg)
	}
	return s
}

// TLSFile returns the path of a file in the certificate directory (ca.pem, client.pem, ...).
func (s *Secured) TLSFile(name string) string { return filepath.Join(s.TLSDir, name) }

// Secret reads a password file.
func (s *Secured) Secret(t testing.TB, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("reading the password file: %v", err)
	}
	return strings.TrimSpace(string(b))
}

// AdminSession opens a superuser session over TLS to the secured node, closed when the test ends.
func (s *Secured) AdminSession(t testing.TB) *gocql.Session {
	t.Helper()
	ca, err := os.ReadFile(s.TLSFile("ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		t.Fatalf("%s holds no certificate", s.TLSFile("ca.pem"))
	}
	c := newCluster([]string{s.Cassandra}, "")
	c.SslOpts = &gocql.SslOptions{Config: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, EnableHostVerification: true}
	c.Authenticator = gocql.PasswordAuthenticator{Username: s.AdminUser, Password: s.Secret(t, s.AdminPass)}
	session, err := c.CreateSession()
	if err != nil {
		t.Fatalf("connecting to the secured Cassandra at %s as %s: %v", s.Cassandra, s.AdminUser, err)
	}
	t.Cleanup(session.Close)
	return session
}

// Keyspace creates a keyspace with a unique name on the secured node, grants the sink's role exactly the
// permissions in grants (e.g. "MODIFY") on it, drops it when the test ends, and returns its name.
func (s *Secured) Keyspace(t testing.TB, grants ...string) string {
	t.Helper()
	name := Name(t, "ks")
	admin := s.AdminSession(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stmts := []string{"CREATE KEYSPACE " + name + " WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"}
	for _, g := range grants {
		stmts = append(stmts, "GRANT "+g+" ON KEYSPACE "+name+" TO "+s.CassUser)
	}
	for _, stmt := range stmts {
		if err := admin.Query(stmt).ExecContext(ctx); err != nil {
			t.Fatalf("%s on the secured Cassandra at %s: %v", stmt, s.Cassandra, err)
		}
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := admin.Query("DROP KEYSPACE IF EXISTS " + name).ExecContext(ctx); err != nil {
			t.Logf("dropping keyspace %s: %v", name, err)
		}
	})
	return name
}
