package registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/internal/testenv"
)

// countingTransport counts the requests for a schema by id that reach the registry.
type countingTransport struct {
	next http.RoundTripper
	byID atomic.Int64
}

func (t *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.Contains(r.URL.Path, "/schemas/ids/") {
		t.byID.Add(1)
	}
	return t.next.RoundTrip(r)
}

// TestIntegrationUnknownSchemaIDIsAskedOncePerTTLAndFoundOnceRegistered: against the real registry, a
// flood of lookups of an id it does not have costs one request, not one per record, and once the id is
// registered it is found after UnknownTTL, without a restart (the client's clock is moved, not waited
// for).
func TestIntegrationUnknownSchemaIDIsAskedOncePerTTLAndFoundOnceRegistered(t *testing.T) {
	url := testenv.Registry(t)
	cfg := config.SchemaRegistry{URLs: []string{url}, Timeout: config.Duration(10 * time.Second)}
	var ct countingTransport
	c, err := newClient(cfg, func(next http.RoundTripper) http.RoundTripper { ct.next = next; return &ct })
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	c.now = func() time.Time { return clock }
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	register := registrar(ctx, t, cfg, "Unknown")

	// The id after the newest one is unknown until the next registration takes it. Other tests share
	// the registry: if one registered it meanwhile, try the next.
	var id int
	for attempt := 0; ; attempt++ {
		id = register(attempt) + 1
		if _, err := c.Schema(ctx, id); errors.Is(err, codec.ErrUnknownSchema) {
			break
		} else if attempt == 4 {
			t.Fatalf("id %d after a registration: %v, want ErrUnknownSchema", id, err)
		}
	}
	asked := ct.byID.Load()
	if asked == 0 {
		t.Fatal("the registry was never asked by id: the counting transport is not in the client's path")
	}
	for range 1000 {
		if _, err := c.Schema(ctx, id); !errors.Is(err, codec.ErrUnknownSchema) {
			t.Fatalf("unknown id %d again: %v, want ErrUnknownSchema", id, err)
		}
	}
	if n := ct.byID.Load() - asked; n != 0 {
		t.Errorf("1000 lookups of unknown id %d within UnknownTTL asked the registry %d times, want 0", id, n)
	}

	// Registered now (by this test, or by another one if it came first: ids are handed out in order).
	ours := register(100)
	if ours < id {
		t.Fatalf("the registration got id %d, below %d: the registry does not hand out ids in order", ours, id)
	}
	clock = clock.Add(UnknownTTL - time.Millisecond)
	if _, err := c.Schema(ctx, id); !errors.Is(err, codec.ErrUnknownSchema) {
		t.Errorf("id %d just within UnknownTTL: %v, want the remembered ErrUnknownSchema", id, err)
	}
	if n := ct.byID.Load() - asked; n != 0 {
		t.Errorf("a lookup within UnknownTTL asked the registry %d times, want 0", n)
	}
	clock = clock.Add(time.Millisecond)
	got, err := c.Schema(ctx, id)
	if err != nil {
		t.Fatalf("id %d registered meanwhile, after UnknownTTL: %v, want its schema", id, err)
	}
	if got.ID != id {
		t.Errorf("schema %+v, want id %d", got, id)
	}
	if ours == id && !strings.Contains(got.Text, "Unknown100") {
		t.Errorf("schema text %q, want the one this test registered", got.Text)
	}
	if n := ct.byID.Load() - asked; n != 1 {
		t.Errorf("after UnknownTTL the registry was asked %d times by id, want 1", n)
	}
	// Known from now on: cached for good.
	clock = clock.Add(time.Hour)
	if again, err := c.Schema(ctx, id); err != nil || again != got {
		t.Errorf("the known id again: %p %v, want the cached %p", again, err, got)
	}
	if n := ct.byID.Load() - asked; n != 1 {
		t.Errorf("a known id was asked again: %d requests by id, want 1", n)
	}
}

// registrar returns a function registering a new Avro schema (record <name><n>) under a subject of the
// test's own and answering its id. Registrations go through a client of their own: pkg/sr reads a
// created schema back by id, which is not a lookup of the client under test.
func registrar(ctx context.Context, t *testing.T, cfg config.SchemaRegistry, name string) func(n int) int {
	admin, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	subject := testenv.Name(t, strings.ToLower(name))
	return func(n int) int {
		t.Helper()
		s, err := admin.SR().CreateSchema(ctx, fmt.Sprintf("%s-%d-value", subject, n), sr.Schema{
			Schema: fmt.Sprintf(`{"type": "record", "name": "%s%d", "namespace": "it.%s", "fields": [{"name": "n", "type": "int"}]}`, name, n, subject)})
		if err != nil {
			t.Fatal(err)
		}
		return s.ID
	}
}
