package cassandra

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/bucketsink/sink/batcher"
)

// Retry reasons, the values of the reason label of sink_write_retries_total.
const (
	ReasonTimeout     = "timeout"
	ReasonUnavailable = "unavailable"
	ReasonOverloaded  = "overloaded"
	ReasonOther       = "other"
)

// class says what the write path does with an error.
type class int

const (
	// classTransient: the outcome is unknown or nothing was written; the same request may succeed
	// later. Retried with backoff until the attempts or the context run out. Replica-side write
	// failures are here too: they are typical while a schema change settles (right after ALTER
	// TABLE ... ADD) and go away by themselves.
	classTransient class = iota + 1
	// classMissing: the table or keyspace does not exist (at PREPARE, or at EXECUTE of a statement
	// prepared before the table was dropped). The statement's fault, never the rows': no row is
	// isolated or dead-lettered; the caller creates the table or waits for it.
	classMissing
	// classRejected: the server or the driver refused these values (invalid request, marshaling).
	// Retrying cannot help; the rows are isolated and the ones still refused are dead-lettered.
	classRejected
	// classFatal: neither transient nor the rows' fault (syntax, authorization, configuration, a
	// closed session, a cancelled context, anything unknown). The Writer gives the batch back
	// unwritten; the pipeline retries it on its own backoff while the partition is stuck.
	classFatal
)

func (c class) String() string {
	switch c {
	case classTransient:
		return "transient"
	case classMissing:
		return "missing"
	case classRejected:
		return "rejected"
	case classFatal:
		return "fatal"
	}
	return "unknown"
}

// classify sorts a write error and names its retry reason. It looks at gocql's typed errors with
// errors.As first, then at the protocol error code for the frames gocql leaves untyped, then at
// the driver's sentinel and network errors. Unknown errors are fatal: the Writer gives the batch back
// and the pipeline retries it on its slower, stuck-partition schedule; guessing "transient" would hide
// it in the writer's retries, and guessing "rejected" could dead-letter good data.
func classify(err error) (class, string) {
	var (
		writeTimeout *gocql.RequestErrWriteTimeout
		readTimeout  *gocql.RequestErrReadTimeout
		unavailable  *gocql.RequestErrUnavailable
		overloaded   *gocql.RequestErrOverloaded
		bootstrap    *gocql.RequestErrBootstrapping
		truncate     *gocql.RequestErrTruncate
		casUnknown   *gocql.RequestErrCASWriteUnknown
		writeFailure *gocql.RequestErrWriteFailure
		cdcFailure   *gocql.RequestErrCDCWriteFailure
		invalid      *gocql.RequestErrInvalid
		funcFailure  *gocql.RequestErrFunctionFailure
		marshal      gocql.MarshalError
		syntax       *gocql.RequestErrSyntax
		unauthorized *gocql.RequestErrUnauthorized
		configErr    *gocql.RequestErrConfig
		credentials  *gocql.RequestErrCredentials
		exists       *gocql.RequestErrAlreadyExists
		reqErr       gocql.RequestError
		netErr       net.Error
	)
	switch {
	case err == nil:
		return 0, ""

	// A write timeout means some replicas may hold the write and the consistency level was not
	// met: never success. Our writes are idempotent upserts, so sending them again is safe.
	case errors.As(err, &writeTimeout), errors.As(err, &readTimeout):
		return classTransient, ReasonTimeout
	case errors.As(err, &unavailable), errors.As(err, &bootstrap):
		return classTransient, ReasonUnavailable
	case errors.As(err, &overloaded):
		return classTransient, ReasonOverloaded
	case errors.As(err, &truncate), errors.As(err, &casUnknown):
		return classTransient, ReasonOther
	case errors.As(err, &writeFailure), errors.As(err, &cdcFailure):
		return classTransient, ReasonOther

	// Before the typed invalid request below: a missing table is one too, told apart by its message.
	case errors.As(err, &reqErr) && reqErr.Code() == gocql.ErrCodeInvalid && missingTable(reqErr.Message()):
		return classMissing, ""
	case errors.As(err, &invalid), errors.As(err, &marshal), errors.As(err, &funcFailure),
		errors.Is(err, gocql.ErrFrameTooBig):
		return classRejected, ""

	case errors.As(err, &syntax), errors.As(err, &unauthorized), errors.As(err, &configErr),
		errors.As(err, &credentials), errors.As(err, &exists):
		return classFatal, ""

	// Frames gocql does not give a type of their own.
	case errors.As(err, &reqErr):
		switch reqErr.Code() {
		case gocql.ErrCodeServer:
			return classTransient, ReasonOther
		case gocql.ErrCodeInvalid:
			return classRejected, ""
		case gocql.ErrCodeUnavailable, gocql.ErrCodeBootstrapping:
			return classTransient, ReasonUnavailable
		case gocql.ErrCodeOverloaded:
			return classTransient, ReasonOverloaded
		case gocql.ErrCodeWriteTimeout, gocql.ErrCodeReadTimeout:
			return classTransient, ReasonTimeout
		}
		return classFatal, ""

	// Client side: no answer in time, or no usable connection. The outcome is unknown.
	case errors.Is(err, context.Canceled), errors.Is(err, gocql.ErrSessionClosed):
		return classFatal, ""
	case errors.Is(err, gocql.ErrTimeoutNoResponse), errors.Is(err, context.DeadlineExceeded):
		return classTransient, ReasonTimeout
	case errors.Is(err, gocql.ErrNoConnections), errors.Is(err, gocql.ErrConnectionClosed),
		errors.Is(err, gocql.ErrNoStreams), errors.Is(err, gocql.ErrNoConnectionsStarted),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNABORTED):
		return classTransient, ReasonUnavailable
	case errors.As(err, &netErr):
		if netErr.Timeout() {
			return classTransient, ReasonTimeout
		}
		return classTransient, ReasonUnavailable
	}
	return classFatal, ""
}

// missingTable reports whether an invalid-request message says the table or keyspace does not
// exist: "table readings_20240115 does not exist" and "keyspace telemetry does not exist"
// (Cassandra 5, checked on the real server), "unconfigured table readings_20240115" and "Keyspace
// 'telemetry' does not exist" (Cassandra 3 and 4). The protocol has no error code of its own for
// either, so the message is all there is; a message about a column or a value matches neither form.
func missingTable(msg string) bool {
	m := strings.ToLower(msg)
	if strings.HasPrefix(m, "unconfigured table ") {
		return true
	}
	return (strings.HasPrefix(m, "table ") || strings.HasPrefix(m, "keyspace ")) && strings.HasSuffix(m, " does not exist")
}

// IsRetryable reports whether a write that failed with err may succeed when sent again unchanged:
// timeouts (server write/read timeouts, the client-side timeout, a per-attempt deadline),
// unavailable, overloaded, bootstrapping, connection errors, and replica-side write failures.
// Invalid requests, marshaling errors, a missing table, syntax, authorization and configuration
// errors, a cancelled context and a closed session are not retryable as they are.
func IsRetryable(err error) bool {
	c, _ := classify(err)
	return c == classTransient
}

// IsMissingTable reports whether err says the table or keyspace written to does not exist: a
// driver error, or a *WriteError with Reason FailMissingTable.
func IsMissingTable(err error) bool {
	var we *WriteError
	if errors.As(err, &we) && we.Reason == FailMissingTable {
		return true
	}
	c, _ := classify(err)
	return c == classMissing
}

// retryReason names the reason label of a retry: timeout, unavailable, overloaded or other.
func retryReason(err error) string {
	if _, r := classify(err); r != "" {
		return r
	}
	return ReasonOther
}

// RowFailure is a row Cassandra refuses for a reason retrying cannot fix (after isolation from its
// batch). The pipeline dead-letters it.
type RowFailure struct {
	Row batcher.Row
	Err error
}

// Why a batch came back unwritten: the values of WriteError.Reason, and of the reason label of
// sink_write_stage_retries_total.
const (
	FailMissingTable = "missing_table" // the table or keyspace does not exist
	FailExhausted    = "exhausted"     // transient errors outlasted writer.retry_attempts
	FailRefused      = "refused"       // the server refused the statement (prepare, syntax, authorization)
	FailCanceled     = "canceled"      // the caller's context ended (revoke, shutdown)
	FailUnknown      = "unknown"       // an error the writer does not know
)

// WriteError is a batch that was not written: retries ran out, the context ended, or the failure
// is not the rows' fault (for example the table does not exist). No row of it may be acknowledged;
// the pipeline sends the batch again later, unless Reason is FailCanceled.
type WriteError struct {
	Keyspace, Table string
	Rows            int            // rows in the batch
	Attempts        int            // requests sent for the failing batch or row
	Source          batcher.Source // first row's coordinates
	Reason          string         // FailMissingTable, FailExhausted, ...
	Err             error
}

// failReason names why a request that ended with an error of class cls gave up.
func failReason(ctx context.Context, cls class, err error) string {
	var reqErr gocql.RequestError
	switch {
	case ctx.Err() != nil:
		return FailCanceled
	case cls == classMissing:
		return FailMissingTable
	case cls == classTransient:
		return FailExhausted
	case cls == classRejected, errors.As(err, &reqErr):
		return FailRefused
	}
	return FailUnknown
}

func (e *WriteError) Error() string {
	return fmt.Sprintf("writing batch of %d rows to %s.%s (topic %s partition %d from offset %d) after %d attempts: %v",
		e.Rows, e.Keyspace, e.Table, e.Source.Topic, e.Source.Partition, e.Source.Offset, e.Attempts, e.Err)
}

func (e *WriteError) Unwrap() error { return e.Err }
