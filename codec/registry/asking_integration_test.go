package registry

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/internal/testenv"
)

// holdingTransport holds the first request for a schema by id until want requests by id have arrived
// or a second has passed, so lookups that do not share a fetch all reach the registry while the first
// is held; it counts them.
type holdingTransport struct {
	next    http.RoundTripper
	want    int64
	byID    atomic.Int64
	arrived chan struct{} // closed when the first request by id arrives
	once    sync.Once
}

func (t *holdingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.Contains(r.URL.Path, "/schemas/ids/") {
		if t.byID.Add(1) == 1 {
			t.once.Do(func() { close(t.arrived) })
			for deadline := time.Now().Add(time.Second); t.byID.Load() < t.want && time.Now().Before(deadline); {
				time.Sleep(5 * time.Millisecond)
			}
		}
	}
	return t.next.RoundTrip(r)
}

// TestIntegrationConcurrentLookupsOfANewIDAskTheRegistryOnce: when every partition worker meets a new
// schema id at once (a producer rolled out a new version), the registry is asked once, for a known id
// and for an unknown one alike; a caller whose fetch ends with its own context does not hand that end
// to the others, who get the schema.
func TestIntegrationConcurrentLookupsOfANewIDAskTheRegistryOnce(t *testing.T) {
	url := testenv.Registry(t)
	cfg := config.SchemaRegistry{URLs: []string{url}, Timeout: config.Duration(10 * time.Second)}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	register := registrar(ctx, t, cfg, "Asking")
	const workers = 16
	client := func() (*Client, *holdingTransport) {
		ht := &holdingTransport{want: workers, arrived: make(chan struct{})}
		c, err := newClient(cfg, func(next http.RoundTripper) http.RoundTripper { ht.next = next; return ht })
		if err != nil {
			t.Fatal(err)
		}
		return c, ht
	}
	lookAll := func(c *Client, id int) []error {
		errs := make([]error, workers)
		var wg sync.WaitGroup
		for i := range workers {
			wg.Go(func() { _, errs[i] = c.Schema(ctx, id) })
		}
		wg.Wait()
		return errs
	}

	known := register(0)
	c, ht := client()
	for i, err := range lookAll(c, known) {
		if err != nil {
			t.Fatalf("worker %d: known id %d: %v", i, known, err)
		}
	}
	if n := ht.byID.Load(); n != 1 {
		t.Errorf("%d workers looking up new id %d at once asked the registry %d times, want 1", workers, known, n)
	}

	// An id past the newest registration is unknown (another test may take it meanwhile: then it is
	// known, and the count holds all the same).
	unknown := register(1) + 1
	c, ht = client()
	for i, err := range lookAll(c, unknown) {
		if err != nil && !errors.Is(err, codec.ErrUnknownSchema) {
			t.Fatalf("worker %d: unknown id %d: %v", i, unknown, err)
		}
	}
	if n := ht.byID.Load(); n != 1 {
		t.Errorf("%d workers looking up unknown id %d at once asked the registry %d times, want 1", workers, unknown, n)
	}

	// The first caller's context ends while its fetch is held: the others still get the schema.
	c, ht = client()
	ht.want = 2 // hold the first fetch only until the retry arrives, or a second
	first, cancelFirst := context.WithCancel(ctx)
	firstDone := make(chan error, 1)
	go func() { _, err := c.Schema(first, known); firstDone <- err }()
	<-ht.arrived
	var others sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		others.Go(func() { _, errs[i] = c.Schema(ctx, known) })
	}
	cancelFirst()
	if err := <-firstDone; !errors.Is(err, context.Canceled) {
		t.Errorf("the cancelled caller: %v, want context.Canceled", err)
	}
	others.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("caller %d waiting on a cancelled caller's fetch: %v, want the schema", i, err)
		}
	}
	if n := ht.byID.Load(); n > 2 {
		t.Errorf("%d requests by id, want at most 2 (the cancelled fetch and one more)", n)
	}
}

// panickingTransport panics on the first request for a schema by id, then passes requests on.
type panickingTransport struct {
	next     http.RoundTripper
	panicked atomic.Bool
}

func (t *panickingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.Contains(r.URL.Path, "/schemas/ids/") && t.panicked.CompareAndSwap(false, true) {
		panic("a fetch panics")
	}
	return t.next.RoundTrip(r)
}

// TestIntegrationAFetchThatPanicsLeavesTheIDToBeAskedAgain: the pipeline recovers a panic while mapping
// a record and goes on; the id being fetched must not stay marked as asked for, or every later lookup
// of it, in every partition, would wait for an answer that never comes.
func TestIntegrationAFetchThatPanicsLeavesTheIDToBeAskedAgain(t *testing.T) {
	url := testenv.Registry(t)
	cfg := config.SchemaRegistry{URLs: []string{url}, Timeout: config.Duration(10 * time.Second)}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id := registrar(ctx, t, cfg, "Panicking")(0)
	// The HTTP client's timer of the request that panicked is never stopped: it ends at the client's
	// timeout, which the test waits out at its end (the package checks for leaked goroutines).
	cfg.Timeout = config.Duration(3 * time.Second)
	defer func(start time.Time) { time.Sleep(time.Duration(cfg.Timeout) - time.Since(start)) }(time.Now())
	pt := &panickingTransport{}
	c, err := newClient(cfg, func(next http.RoundTripper) http.RoundTripper { pt.next = next; return pt })
	if err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the first fetch did not panic")
			}
		}()
		c.Schema(ctx, id)
	}()
	again, stop := context.WithTimeout(ctx, 20*time.Second)
	defer stop()
	if s, err := c.Schema(again, id); err != nil || s.ID != id {
		t.Errorf("the id after a fetch of it panicked: %v, %v; want its schema", s, err)
	}
}
