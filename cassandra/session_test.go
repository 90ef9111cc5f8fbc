package cassandra

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/bucketsink/sink/config"
)

func TestNewCluster(t *testing.T) {
	cluster, cons, err := newCluster(config.Cassandra{
		Hosts: []string{"10.0.0.1:9142", "10.0.0.2"}, LocalDC: "dc1", Consistency: "local_one",
		Timeout: config.Duration(3 * time.Second), NumConns: 4, ProtocolVersion: 5,
		Auth: config.Auth{Username: "sink", Password: "s3cret"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if cons != gocql.LocalOne || cluster.Consistency != gocql.LocalOne {
		t.Errorf("consistency %v/%v, want LOCAL_ONE", cons, cluster.Consistency)
	}
	if cluster.Timeout != 3*time.Second || cluster.ConnectTimeout != defaultConnectTimeout || cluster.NumConns != 4 || cluster.ProtoVersion != 5 {
		t.Errorf("timeout %v connect %v conns %d proto %d", cluster.Timeout, cluster.ConnectTimeout, cluster.NumConns, cluster.ProtoVersion)
	}
	// Guards against a driver retry policy sneaking in: ours is the only retry loop.
	if cluster.RetryPolicy != nil {
		t.Errorf("RetryPolicy %T set; the writer retries itself", cluster.RetryPolicy)
	}
	if cluster.Keyspace != "" {
		t.Errorf("session keyspace %q set; batches carry their own", cluster.Keyspace)
	}
	if a, ok := cluster.Authenticator.(gocql.PasswordAuthenticator); !ok || a.Username != "sink" || a.Password != "s3cret" {
		t.Errorf("authenticator %#v", cluster.Authenticator)
	}
	if cluster.PoolConfig.HostSelectionPolicy == nil || cluster.SslOpts != nil {
		t.Errorf("policy %v, TLS %v", cluster.PoolConfig.HostSelectionPolicy, cluster.SslOpts)
	}

	def, cons, err := newCluster(config.Cassandra{Hosts: []string{"h"}})
	if err != nil || cons != gocql.LocalQuorum || def.Timeout != defaultTimeout || def.NumConns != defaultNumConns || def.Authenticator != nil {
		t.Errorf("defaults: %v %v timeout %v conns %d auth %v", err, cons, def.Timeout, def.NumConns, def.Authenticator)
	}
}

func TestNewClusterErrors(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		c    config.Cassandra
		want string
	}{
		{"no hosts", config.Cassandra{}, "cassandra.hosts"},
		{"unknown consistency", config.Cassandra{Hosts: []string{"h"}, Consistency: "MOST"}, "cassandra.consistency"},
		{"serial consistency", config.Cassandra{Hosts: []string{"h"}, Consistency: "SERIAL"}, "cassandra.consistency"},
		{"missing CA file", config.Cassandra{Hosts: []string{"h"}, TLS: config.TLS{Enabled: true, CAFile: filepath.Join(dir, "none.pem")}}, "cassandra.tls.ca_file"},
		{"CA file without PEM", config.Cassandra{Hosts: []string{"h"}, TLS: config.TLS{Enabled: true, CAFile: notPEM}}, "cassandra.tls.ca_file"},
		{"cert without key", config.Cassandra{Hosts: []string{"h"}, TLS: config.TLS{Enabled: true, CertFile: notPEM}}, "cassandra.tls"},
		{"bad key pair", config.Cassandra{Hosts: []string{"h"}, TLS: config.TLS{Enabled: true, CertFile: notPEM, KeyFile: notPEM}}, "cassandra.tls.cert_file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := newCluster(tt.c)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one naming %s", err, tt.want)
			}
		})
	}
}

func TestNewClusterTLS(t *testing.T) {
	cluster, _, err := newCluster(config.Cassandra{Hosts: []string{"h"}, TLS: config.TLS{Enabled: true, ServerName: "cass.example"}})
	if err != nil {
		t.Fatal(err)
	}
	if cluster.SslOpts == nil || !cluster.SslOpts.EnableHostVerification || cluster.SslOpts.Config.ServerName != "cass.example" ||
		cluster.SslOpts.Config.InsecureSkipVerify {
		t.Fatalf("TLS options %+v", cluster.SslOpts)
	}
}

// TestServerWriteTimestampIsNotStampedByTheClient: gocql sends a client-side default timestamp with
// every request unless told not to, and Cassandra takes it as the write timestamp of a statement without
// USING TIMESTAMP, so write_timestamp server would be this machine's clock. The session sends none.
func TestServerWriteTimestampIsNotStampedByTheClient(t *testing.T) {
	cluster, _, err := newCluster(config.Cassandra{Hosts: []string{"h"}})
	if err != nil {
		t.Fatal(err)
	}
	if cluster.DefaultTimestamp {
		t.Error("the session sends a client timestamp with every request; write_timestamp server must be the coordinator's")
	}
}

// TestRefusalCauseNamesLoginAndTLSFailures classifies the connection errors gocql returns from a secured
// node (their text, as recorded against Cassandra 5.0): each configuration cause is named, a node that is
// simply down is not a refusal.
func TestRefusalCauseNamesLoginAndTLSFailures(t *testing.T) {
	const prefix = "connecting to cassandra.hosts [h:9142]: gocql: unable to create session: unable to discover protocol version: "
	cases := []struct {
		name string
		msg  string
		tls  bool
		want string
	}{
		{"wrong password", "Provided username sink and/or password are incorrect", true, "authentication failed"},
		{"no login configured", `authentication required (using "org.apache.cassandra.auth.PasswordAuthenticator")`, true, "requires a login"},
		{"untrusted", "tls: failed to verify certificate: x509: certificate signed by unknown authority", true, "untrusted certificate"},
		{"name mismatch", "tls: failed to verify certificate: x509: certificate is valid for localhost, not c.invalid", true, "server name mismatch"},
		{"plaintext on a TLS port", "read tcp 127.0.0.1:5->127.0.0.1:9142: read: connection reset by peer", false, "TLS-only port"},
		{"reset with TLS on", "read tcp 127.0.0.1:5->127.0.0.1:9142: read: connection reset by peer", true, ""},
		{"down", "dial tcp 127.0.0.1:9142: connect: connection refused", false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := refusalCause(errors.New(prefix+tc.msg), tc.tls)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Fatalf("refusalCause = %q, want %q", got, tc.want)
			}
		})
	}
}
