package refusal

import (
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestCauseNamesCertificateAndProtocolMismatches feeds Cause the errors Go's TLS stack returns, typed and as
// flattened text (gocql's form), and checks each is named, while an unrelated failure is not a refusal.
func TestCauseNamesCertificateAndProtocolMismatches(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want string // "" = not a refusal
	}{
		{"typed unknown authority", fmt.Errorf("unable to dial: %w", x509.UnknownAuthorityError{}), "untrusted certificate"},
		{"flattened unknown authority", errors.New("gocql: unable to create session: tls: failed to verify certificate: x509: certificate signed by unknown authority"), "untrusted certificate"},
		{"typed host mismatch", fmt.Errorf("unable to dial: %w", x509.HostnameError{Certificate: &x509.Certificate{}, Host: "h"}), "server name mismatch"},
		{"flattened host mismatch", errors.New("x509: certificate is valid for localhost, not wrong.example"), "server name mismatch"},
		{"expired", errors.New("x509: certificate has expired or is not yet valid"), "invalid certificate"},
		{"TLS client on plaintext port", errors.New("tls: first record does not look like a TLS handshake"), "does not speak TLS"},
		{"client certificate refused", errors.New("remote error: tls: bad certificate"), "rejected the TLS handshake"},
		{"connection refused", errors.New("dial tcp 127.0.0.1:9: connect: connection refused"), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Cause(tc.err, "kafka.tls")
			if tc.want == "" {
				if got != "" {
					t.Fatalf("Cause = %q, want no refusal", got)
				}
				return
			}
			if !strings.Contains(got, tc.want) {
				t.Fatalf("Cause = %q, want it to say %q", got, tc.want)
			}
		})
	}
}

// TestErrorNamesServerAddressAndCause checks the message an operator reads.
func TestErrorNamesServerAddressAndCause(t *testing.T) {
	inner := errors.New("driver detail")
	err := &Error{Server: "kafka", Addrs: []string{"b1:9094", "b2:9094"}, Cause: "authentication failed", Err: inner}
	want := "kafka at b1:9094,b2:9094 refused the connection: authentication failed: driver detail"
	if err.Error() != want {
		t.Fatalf("Error() = %q, want %q", err.Error(), want)
	}
	if !errors.Is(err, inner) {
		t.Fatal("the driver's error does not unwrap")
	}
}
