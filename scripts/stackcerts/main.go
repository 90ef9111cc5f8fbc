// Command stackcerts makes the throwaway certificates of the secured servers of scripts/stack: a CA, a server
// certificate for 127.0.0.1 and localhost, a client certificate, and a second CA that signs nothing in use (for
// "untrusted certificate" tests). Every file is PEM, every key unencrypted PKCS#8, the form both servers' PEM
// loaders and Go read.
//
// Usage:
//
//	stackcerts DIR
//
// writes DIR/ca.pem, DIR/other-ca.pem, DIR/server.pem (the server's key followed by its certificate),
// DIR/server-key.pem, DIR/client.pem and DIR/client-key.pem. The CA's key is not kept. Exit 1 on failure.
package main

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: stackcerts DIR")
		os.Exit(2)
	}
	if err := run(os.Args[1], time.Now()); err != nil {
		fmt.Fprintln(os.Stderr, "stackcerts:", err)
		os.Exit(1)
	}
}

// lifetime is long enough for any test run and short enough that a leaked file is soon worthless.
const lifetime = 30 * 24 * time.Hour

type issued struct {
	cert *x509.Certificate
	der  []byte
	key  *rsa.PrivateKey
}

// newKey makes an RSA key: the one algorithm every PEM loader on the path (Kafka's, Cassandra's, Go's) reads.
func newKey() (*rsa.PrivateKey, error) { return rsa.GenerateKey(rand.Reader, 2048) }

func serial() (*big.Int, error) { return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120)) }

// issue signs tmpl with parent (nil: self-signed).
func issue(tmpl *x509.Certificate, parent *issued) (*issued, error) {
	key, err := newKey()
	if err != nil {
		return nil, err
	}
	if tmpl.SerialNumber, err = serial(); err != nil {
		return nil, err
	}
	signer, signerCert := key, tmpl
	if parent != nil {
		signer, signerCert = parent.key, parent.cert
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signerCert, &key.PublicKey, signer)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &issued{cert: cert, der: der, key: key}, nil
}

func ca(name string, now time.Time) (*issued, error) {
	return issue(&x509.Certificate{
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(lifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}, nil)
}

func leaf(parent *issued, name string, usage []x509.ExtKeyUsage, ips []net.IP, dns []string, now time.Time) (*issued, error) {
	return issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: name},
		NotBefore:   now.Add(-time.Hour),
		NotAfter:    now.Add(lifetime),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: usage,
		IPAddresses: ips,
		DNSNames:    dns,
	}, parent)
}

func writePEM(path string, mode os.FileMode, blocks ...*pem.Block) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	for _, b := range blocks {
		if err := pem.Encode(f, b); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

func keyBlock(k *rsa.PrivateKey) (*pem.Block, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, err
	}
	return &pem.Block{Type: "PRIVATE KEY", Bytes: der}, nil
}

func certBlock(c *issued) *pem.Block { return &pem.Block{Type: "CERTIFICATE", Bytes: c.der} }

func run(dir string, now time.Time) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	root, err := ca("sink-stack test CA", now)
	if err != nil {
		return err
	}
	other, err := ca("sink-stack untrusted CA", now)
	if err != nil {
		return err
	}
	both := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	server, err := leaf(root, "127.0.0.1", both, []net.IP{net.IPv4(127, 0, 0, 1)}, []string{"localhost"}, now)
	if err != nil {
		return err
	}
	client, err := leaf(root, "sink", []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, nil, nil, now)
	if err != nil {
		return err
	}
	serverKey, err := keyBlock(server.key)
	if err != nil {
		return err
	}
	clientKey, err := keyBlock(client.key)
	if err != nil {
		return err
	}
	for _, f := range []struct {
		name   string
		mode   os.FileMode
		blocks []*pem.Block
	}{
		{"ca.pem", 0o644, []*pem.Block{certBlock(root)}},
		{"other-ca.pem", 0o644, []*pem.Block{certBlock(other)}},
		{"server.pem", 0o600, []*pem.Block{serverKey, certBlock(server)}},
		{"server-key.pem", 0o600, []*pem.Block{serverKey}},
		{"client.pem", 0o644, []*pem.Block{certBlock(client)}},
		{"client-key.pem", 0o600, []*pem.Block{clientKey}},
	} {
		if err := writePEM(filepath.Join(dir, f.name), f.mode, f.blocks...); err != nil {
			return err
		}
	}
	return nil
}
