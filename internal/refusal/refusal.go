// Package refusal names the connection failures that retrying cannot cure: a server that rejects the
// credentials, a certificate the client does not trust or that names another host, and TLS spoken on
// one side only. The sink reports them at start with the server, its address and the cause, and
// `sink run` exits with its own code for them, instead of retrying a configuration that can never
// connect.
package refusal

import (
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
)

// Error is a connection refused for a cause that only a configuration change cures.
type Error struct {
	Server string // "kafka" or "cassandra"
	Addrs  []string
	Cause  string // what went wrong, in words that say what to check
	Err    error  // the driver's error
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s at %s refused the connection: %s: %v", e.Server, strings.Join(e.Addrs, ","), e.Cause, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Cause names the TLS cause of err, which may have been flattened into text by a driver (gocql does),
// or returns "". key is the YAML path of the TLS settings ("kafka.tls"), for the advice.
func Cause(err error, key string) string {
	msg := err.Error()
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	switch {
	case errors.As(err, &unknown) || strings.Contains(msg, "certificate signed by unknown authority"):
		return "untrusted certificate: the server's certificate is not signed by a CA in " + key + ".ca_file (or the system pool when it is empty)"
	case errors.As(err, &host) || strings.Contains(msg, "x509: certificate is valid for") ||
		strings.Contains(msg, "x509: certificate is not valid for any names"):
		return "server name mismatch: the server's certificate does not name the host dialed, nor " + key + ".server_name when set"
	case errors.As(err, &invalid) || strings.Contains(msg, "x509: certificate has expired") ||
		strings.Contains(msg, "x509: certificate is not yet valid"):
		return "invalid certificate (expired, not yet valid, or not for server use)"
	case strings.Contains(msg, "first record does not look like a TLS handshake"):
		return "the server does not speak TLS on this port: set " + key + ".enabled: false or dial its TLS port"
	case strings.Contains(msg, "remote error: tls:"):
		return "the server rejected the TLS handshake (a listener that requires a client certificate needs " +
			key + ".cert_file and key_file, signed by a CA it trusts)"
	}
	return ""
}
