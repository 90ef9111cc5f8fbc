package main

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestCertificatesChainToTheCAAndNameLoopback checks what the secured servers and the tests rely on: the server
// certificate verifies against ca.pem for 127.0.0.1 and localhost and for no other name, not against
// other-ca.pem; the client certificate verifies for client authentication; each key pairs with its certificate.
func TestCertificatesChainToTheCAAndNameLoopback(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	if err := run(dir, now); err != nil {
		t.Fatal(err)
	}
	pool := func(name string) *x509.CertPool {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		p := x509.NewCertPool()
		if !p.AppendCertsFromPEM(b) {
			t.Fatalf("%s holds no certificate", name)
		}
		return p
	}
	pair := func(cert, key string) *x509.Certificate {
		kp, err := tls.LoadX509KeyPair(filepath.Join(dir, cert), filepath.Join(dir, key))
		if err != nil {
			t.Fatalf("%s with %s: %v", cert, key, err)
		}
		c, err := x509.ParseCertificate(kp.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	server := pair("server.pem", "server-key.pem")
	client := pair("client.pem", "client-key.pem")
	ca, other := pool("ca.pem"), pool("other-ca.pem")

	for _, name := range []string{"127.0.0.1", "localhost"} {
		if _, err := server.Verify(x509.VerifyOptions{Roots: ca, DNSName: name, CurrentTime: now}); err != nil {
			t.Errorf("the server certificate does not verify for %s: %v", name, err)
		}
	}
	if _, err := server.Verify(x509.VerifyOptions{Roots: ca, DNSName: "wrong.example", CurrentTime: now}); err == nil {
		t.Error("the server certificate verifies for wrong.example")
	}
	if _, err := server.Verify(x509.VerifyOptions{Roots: other, CurrentTime: now}); err == nil {
		t.Error("the server certificate verifies against other-ca.pem")
	}
	if _, err := client.Verify(x509.VerifyOptions{Roots: ca, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, CurrentTime: now}); err != nil {
		t.Errorf("the client certificate does not verify for client authentication: %v", err)
	}
	info, err := os.Stat(filepath.Join(dir, "client-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("client-key.pem has mode %v, want 0600", info.Mode().Perm())
	}
}
