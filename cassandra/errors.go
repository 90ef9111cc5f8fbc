package cassandra

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
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
	// later. Retried with backoff until the attempts or the context run out.
	classTransient class = iota + 1
	// classLimited: a replica-side failure that is usually deterministic (a tombstone threshold, a
	// server bug). Retried a few times (limitedAttempts), then treated as classRejected.
	classLimited
	// classRejected: the server or the driver refused these values (invalid request, marshaling).
	// Retrying cannot help; the rows are isolated and the ones still refused are dead-lettered.
	classRejected
	// classFatal: neither transient nor the rows' fault (syntax, authorization, configuration, a
	// closed session, a cancelled context, anything unknown). The batch is not acknowledged and
	// nothing is dead-lettered: the partition stops where it is and the error is reported.
	classFatal
)

func (c class) String() string {
	switch c {
	case classTransient:
		return "transient"
	case classLimited:
		return "limited"
	case classRejected:
		return "rejected"
	case classFatal:
		return "fatal"
	}
	return "unknown"
}

// limitedAttempts is how many times a classLimited error is tried before the rows are isolated.
const limitedAttempts = 3

// classify sorts a write error and names its retry reason. It looks at gocql's typed errors with
// errors.As first, then at the protocol error code for the frames gocql leaves untyped, then at
// the driver's sentinel and network errors. Unknown errors are fatal: stopping is safe, guessing
// "retry" could spin forever and guessing "rejected" could dead-letter good data.
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
		return classLimited, ReasonOther

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
			return classLimited, ReasonOther
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
	case errors.Is(err, gocql.ErrTimeoutNoResponse), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, gocql.ErrTooManyTimeouts):
		return classTransient, ReasonTimeout
	case errors.Is(err, gocql.ErrNoConnections), errors.Is(err, gocql.ErrConnectionClosed),
		errors.Is(err, gocql.ErrNoStreams), errors.Is(err, gocql.ErrNoConnectionsStarted),
		errors.Is(err, gocql.ErrHostQueryFailed),
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

// IsRetryable reports whether a write that failed with err may succeed when sent again unchanged:
// timeouts (server write/read timeouts, the client-side timeout, a per-attempt deadline),
// unavailable, overloaded, bootstrapping, connection errors, and the replica-side write failures the
// Writer retries a few times. Invalid requests, marshaling errors, syntax, authorization and
// configuration errors, a cancelled context and a closed session are not retryable.
func IsRetryable(err error) bool {
	c, _ := classify(err)
	return c == classTransient || c == classLimited
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

// WriteError is a batch that was not written: retries ran out, the context ended, or the failure
// is not the rows' fault (for example the table does not exist). No row of it may be acknowledged.
type WriteError struct {
	Keyspace, Table string
	Rows            int            // rows in the batch
	Attempts        int            // requests sent for the failing batch or row
	Source          batcher.Source // first row's coordinates
	Err             error
}

func (e *WriteError) Error() string {
	return fmt.Sprintf("writing batch of %d rows to %s.%s (topic %s partition %d from offset %d) after %d attempts: %v",
		e.Rows, e.Keyspace, e.Table, e.Source.Topic, e.Source.Partition, e.Source.Offset, e.Attempts, e.Err)
}

func (e *WriteError) Unwrap() error { return e.Err }
