package cassandra

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

// invalidRequest is an invalid-request frame with a message, as the server sends it; gocql's own
// type cannot be built with a message outside the driver.
type invalidRequest string

func (e invalidRequest) Error() string   { return string(e) }
func (e invalidRequest) Code() int       { return gocql.ErrCodeInvalid }
func (e invalidRequest) Message() string { return string(e) }

func invalid(msg string) error { return invalidRequest(msg) }

func TestClassify(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("writing batch: %w", err) }
	tests := []struct {
		name   string
		err    error
		class  class
		reason string
	}{
		// Never success: some replicas may hold it, the consistency level was not met.
		{"write timeout", &gocql.RequestErrWriteTimeout{WriteType: "SIMPLE", Received: 1, BlockFor: 2}, classTransient, ReasonTimeout},
		{"wrapped write timeout", wrap(&gocql.RequestErrWriteTimeout{}), classTransient, ReasonTimeout},
		{"read timeout", &gocql.RequestErrReadTimeout{}, classTransient, ReasonTimeout},
		{"unavailable", &gocql.RequestErrUnavailable{Required: 2, Alive: 1}, classTransient, ReasonUnavailable},
		{"bootstrapping", &gocql.RequestErrBootstrapping{}, classTransient, ReasonUnavailable},
		{"overloaded", &gocql.RequestErrOverloaded{}, classTransient, ReasonOverloaded},
		{"truncate", &gocql.RequestErrTruncate{}, classTransient, ReasonOther},
		{"client-side timeout", gocql.ErrTimeoutNoResponse, classTransient, ReasonTimeout},
		{"per-attempt deadline", wrap(context.DeadlineExceeded), classTransient, ReasonTimeout},
		{"no connections", gocql.ErrNoConnections, classTransient, ReasonUnavailable},
		{"connection closed", gocql.ErrConnectionClosed, classTransient, ReasonUnavailable},
		{"no streams", gocql.ErrNoStreams, classTransient, ReasonUnavailable},
		{"eof", wrap(io.EOF), classTransient, ReasonUnavailable},
		{"connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, classTransient, ReasonUnavailable},
		{"connection reset", wrap(syscall.ECONNRESET), classTransient, ReasonUnavailable},
		{"net timeout", &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}, classTransient, ReasonTimeout},

		{"write failure", &gocql.RequestErrWriteFailure{NumFailures: 1}, classTransient, ReasonOther},
		{"cdc write failure", &gocql.RequestErrCDCWriteFailure{}, classTransient, ReasonOther},

		{"unconfigured table", wrap(invalid("unconfigured table readings_20240115")), classMissing, ""},
		{"missing keyspace", invalid("Keyspace 'telemetry' does not exist"), classMissing, ""},
		{"missing keyspace, Cassandra 5", invalid("keyspace telemetry does not exist"), classMissing, ""},
		{"missing table, Cassandra 5", invalid("table readings does not exist"), classMissing, ""},
		{"missing column is the rows' fault", invalid("Undefined column name nope in table ks.readings"), classRejected, ""},
		{"invalid", &gocql.RequestErrInvalid{}, classRejected, ""},
		{"invalid value", invalid("Invalid null value in condition for column ts"), classRejected, ""},
		{"marshal", wrap(gocql.MarshalError("can not marshal string into int")), classRejected, ""},
		{"function failure", &gocql.RequestErrFunctionFailure{}, classRejected, ""},
		{"frame too big", gocql.ErrFrameTooBig, classRejected, ""},

		{"syntax", &gocql.RequestErrSyntax{}, classFatal, ""},
		{"unauthorized", &gocql.RequestErrUnauthorized{}, classFatal, ""},
		{"config", &gocql.RequestErrConfig{}, classFatal, ""},
		{"credentials", &gocql.RequestErrCredentials{}, classFatal, ""},
		{"already exists", &gocql.RequestErrAlreadyExists{}, classFatal, ""},
		{"cancelled", wrap(context.Canceled), classFatal, ""},
		{"session closed", gocql.ErrSessionClosed, classFatal, ""},
		{"unknown", errors.New("something else"), classFatal, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, r := classify(tt.err)
			if c != tt.class || r != tt.reason {
				t.Fatalf("classify(%v) = %v %q, want %v %q", tt.err, c, r, tt.class, tt.reason)
			}
			if IsMissingTable(tt.err) != (tt.class == classMissing) {
				t.Fatalf("IsMissingTable(%v) = %v", tt.err, !(tt.class == classMissing))
			}
			wantRetry := tt.class == classTransient
			if IsRetryable(tt.err) != wantRetry {
				t.Fatalf("IsRetryable(%v) = %v, want %v", tt.err, !wantRetry, wantRetry)
			}
			if wantRetry && retryReason(tt.err) != tt.reason {
				t.Fatalf("retryReason(%v) = %q, want %q", tt.err, retryReason(tt.err), tt.reason)
			}
		})
	}
	if IsRetryable(nil) {
		t.Fatal("IsRetryable(nil) = true")
	}
}
