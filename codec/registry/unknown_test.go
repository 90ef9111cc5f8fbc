package registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/bucketsink/sink/codec"
)

// TestUnknownIDsAreBounded: a flood of distinct unknown ids (random bytes after the magic byte) keeps at
// most maxUnknown of them; once full, an expired answer makes room and a live one is never dropped.
func TestUnknownIDsAreBounded(t *testing.T) {
	c := &Client{unknown: map[int]unknownID{}}
	t0 := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	u := func(at time.Time) unknownID { return unknownID{err: codec.ErrUnknownSchema, until: at.Add(UnknownTTL)} }
	for id := range maxUnknown {
		c.rememberUnknown(id, u(t0), t0)
	}
	c.rememberUnknown(maxUnknown, u(t0), t0)
	if len(c.unknown) != maxUnknown {
		t.Fatalf("%d ids kept, want at most %d", len(c.unknown), maxUnknown)
	}
	if _, ok := c.unknown[maxUnknown]; ok {
		t.Error("a new id displaced a live answer")
	}
	// A known id's answer is renewed in place even when full.
	later := t0.Add(UnknownTTL / 2)
	c.rememberUnknown(7, u(later), later)
	if got := c.unknown[7].until; !got.Equal(later.Add(UnknownTTL)) {
		t.Errorf("id 7 kept until %v, want renewed to %v", got, later.Add(UnknownTTL))
	}
	// Past the first answers' TTL they make room; id 7's renewed answer stays.
	after := t0.Add(UnknownTTL)
	c.rememberUnknown(maxUnknown, u(after), after)
	if _, ok := c.unknown[maxUnknown]; !ok || len(c.unknown) != 2 {
		t.Errorf("%d ids kept after expiry (new one kept: %v), want 2: id 7 and the new one", len(c.unknown), ok)
	}
	if !errors.Is(c.unknown[7].err, codec.ErrUnknownSchema) {
		t.Error("id 7's live answer was dropped")
	}
}

// TestOnlyTheRegistrysNotFoundMakesAnIDUnknown: a 404 carrying the registry's error code (40403 for an
// id, 40401/40402 for a reference's subject or version) is bad input; a 404 without one (an ingress's
// default backend while the registry is rolled out) is an outage to retry, never an unknown id to cache
// and dead-letter records by.
func TestOnlyTheRegistrysNotFoundMakesAnIDUnknown(t *testing.T) {
	for _, tc := range []struct {
		name    string
		err     *sr.ResponseError
		unknown bool
	}{
		{"schema not found", &sr.ResponseError{StatusCode: http.StatusNotFound, ErrorCode: 40403}, true},
		{"subject not found", &sr.ResponseError{StatusCode: http.StatusNotFound, ErrorCode: 40401}, true},
		{"version not found", &sr.ResponseError{StatusCode: http.StatusNotFound, ErrorCode: 40402}, true},
		{"ingress 404", &sr.ResponseError{StatusCode: http.StatusNotFound, Raw: []byte("<html>404 Not Found</html>")}, false},
		{"server error", &sr.ResponseError{StatusCode: http.StatusInternalServerError, ErrorCode: 50001}, false},
	} {
		err := classify(tc.err, "schema 7", codec.ErrUnknownSchema)
		var ue *codec.UnavailableError
		if got := errors.Is(err, codec.ErrUnknownSchema); got != tc.unknown {
			t.Errorf("%s: unknown = %v, want %v (%v)", tc.name, got, tc.unknown, err)
		}
		if got := errors.As(err, &ue); got == tc.unknown {
			t.Errorf("%s: unavailable = %v, want %v (%v)", tc.name, got, !tc.unknown, err)
		}
	}
}

// TestWaiterWhoseContextEndsIsUnavailableNotAtFault: a lookup waiting for another caller's fetch of the
// same id, whose own context ends (its partition is revoked, or its retry's deadline passes), gets a
// *codec.UnavailableError as a caller whose own fetch ends so does: a bare context error made the
// record a mapping failure, dead-lettered or halting its partition.
func TestWaiterWhoseContextEndsIsUnavailableNotAtFault(t *testing.T) {
	c := &Client{now: time.Now, byID: map[int]*codec.Schema{}, unknown: map[int]unknownID{},
		asking: map[int]*lookup{7: {done: make(chan struct{})}}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.Schema(ctx, 7)
	var ue *codec.UnavailableError
	if !errors.As(err, &ue) || !errors.Is(err, context.Canceled) {
		t.Errorf("a waiter whose context ended: %v, want a *codec.UnavailableError wrapping context.Canceled", err)
	}
}

// TestWaitersTakeAFetchsTimeoutAsTheirAnswer: a shared fetch that failed on the HTTP client's own
// timeout (an error that matches context.DeadlineExceeded) while its caller's context was alive is the
// registry's answer for every waiter: they do not each ask again, one after the other.
func TestWaitersTakeAFetchsTimeoutAsTheirAnswer(t *testing.T) {
	l := &lookup{done: make(chan struct{})}
	c := &Client{now: time.Now, byID: map[int]*codec.Schema{}, unknown: map[int]unknownID{},
		asking: map[int]*lookup{7: l}}
	got := make(chan error, 1)
	go func() {
		_, err := c.Schema(context.Background(), 7)
		got <- err
	}()
	timeout := &codec.UnavailableError{Err: fmt.Errorf("schema id 7: %w", context.DeadlineExceeded)}
	l.err = timeout
	close(l.done) // left in asking: a waiter that comes after the close finds the same answer

	select {
	case err := <-got:
		if err != timeout {
			t.Errorf("a waiter on a fetch that timed out: %v, want that fetch's error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter did not return: it keeps asking again")
	}
}
