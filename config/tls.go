package config

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// ClientConfig loads the CA and client certificate files of t into a TLS client configuration, so a bad
// path fails at start with its key path (key is the YAML path of t, e.g. "kafka.tls") instead of at the
// first dial. ServerName may stay empty: both drivers then check the certificate against the host they
// dial.
func (t TLS) ClientConfig(key string) (*tls.Config, error) {
	tc := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         t.ServerName,
		InsecureSkipVerify: t.InsecureSkipVerify, //nolint:gosec // an explicit, documented opt-out
	}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("%s.ca_file: %w", key, err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s.ca_file %q: no PEM certificate found", key, t.CAFile)
		}
	}
	if t.CertFile != "" || t.KeyFile != "" {
		if t.CertFile == "" || t.KeyFile == "" {
			return nil, fmt.Errorf("%s: cert_file and key_file go together; set both or neither", key)
		}
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("%s.cert_file/key_file: %w", key, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}
