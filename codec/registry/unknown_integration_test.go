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
	c, ct, clock := clockedClient(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	register := registrar(ctx, t, cfg, "Unknown")
	id := unregisteredID(ctx, t, c, register, "ErrUnknownSchema", func(err error) bool { return errors.Is(err, codec.ErrUnknownSchema) })
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
	*clock = clock.Add(UnknownTTL - time.Millisecond)
	if _, err := c.Schema(ctx, id); !errors.Is(err, codec.ErrUnknownSchema) {
		t.Errorf("id %d just within UnknownTTL: %v, want the remembered ErrUnknownSchema", id, err)
	}
	if n := ct.byID.Load() - asked; n != 0 {
		t.Errorf("a lookup within UnknownTTL asked the registry %d times, want 0", n)
	}
	*clock = clock.Add(time.Millisecond)
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
	*clock = clock.Add(time.Hour)
	if again, err := c.Schema(ctx, id); err != nil || again != got {
		t.Errorf("the known id again: %p %v, want the cached %p", again, err, got)
	}
	if n := ct.byID.Load() - asked; n != 1 {
		t.Errorf("a known id was asked again: %d requests by id, want 1", n)
	}
}

// clockedClient is a client of cfg whose lookups by id ct counts and whose clock is *clock, moved by
// the test.
func clockedClient(t *testing.T, cfg config.SchemaRegistry) (c *Client, ct *countingTransport, clock *time.Time) {
	t.Helper()
	ct = &countingTransport{}
	c, err := newClient(cfg, func(next http.RoundTripper) http.RoundTripper { ct.next = next; return ct })
	if err != nil {
		t.Fatal(err)
	}
	clock = new(time.Time)
	*clock = time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	c.now = func() time.Time { return *clock }
	return c, ct, clock
}

// unregisteredID is the id after the newest registration, which the registry does not have until the
// next registration takes it, looked up once by c: first says whether that lookup's error is what the
// test wants (want names it). Other tests share the registry: if one registered the id meanwhile, it
// tries the next.
func unregisteredID(ctx context.Context, t *testing.T, c *Client, register func(n int) int, want string, first func(error) bool) int {
	t.Helper()
	for attempt := 0; ; attempt++ {
		id := register(attempt) + 1
		_, err := c.Schema(ctx, id)
		if first(err) {
			return id
		}
		if attempt == 4 {
			t.Fatalf("id %d after a registration: %v, want %s", id, err, want)
		}
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

// TestIntegrationIDRegisteredShortlyAfterItsFirst404IsFound guards against taking a follower's lag for
// an unknown id: a registry cluster's followers learn a registration a moment after their leader hands
// the id to a producer, and a 404 that was final at once dead-lettered the producer's first records.
// Against the real registry: within schema_registry.unknown_schema_retry of the first 404 for an id,
// every lookup asks again and is a *codec.UnavailableError (the record waits); the id registered
// meanwhile is found. Past the window a 404 is final (ErrUnknownSchema), and with the window 0 it is
// final at once, as before. The client's clock is moved, not waited for.
func TestIntegrationIDRegisteredShortlyAfterItsFirst404IsFound(t *testing.T) {
	url := testenv.Registry(t)
	cfg := config.SchemaRegistry{URLs: []string{url}, Timeout: config.Duration(10 * time.Second), UnknownSchemaRetry: config.Duration(5 * time.Second)}
	c, ct, clock := clockedClient(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	register := registrar(ctx, t, cfg, "Lagging")
	id := unregisteredID(ctx, t, c, register, "a *codec.UnavailableError saying it is asked again", func(err error) bool {
		var ue *codec.UnavailableError
		return errors.As(err, &ue) && !errors.Is(err, codec.ErrUnknownSchema) && strings.Contains(err.Error(), "unknown_schema_retry")
	})
	asked := ct.byID.Load()
	*clock = clock.Add(5*time.Second - time.Millisecond)
	if _, err := c.Schema(ctx, id); errors.Is(err, codec.ErrUnknownSchema) {
		t.Fatalf("id %d within the window: %v, want it still waiting", id, err)
	}
	if n := ct.byID.Load() - asked; n != 1 {
		t.Errorf("a lookup within the window asked the registry %d times, want 1: a lagging follower's answer is not kept", n)
	}
	ours := register(100) // ids are handed out in order: id is taken now, by this test or another
	if ours < id {
		t.Fatalf("the registration got id %d, below %d: the registry does not hand out ids in order", ours, id)
	}
	got, err := c.Schema(ctx, id)
	if err != nil || got.ID != id {
		t.Fatalf("id %d registered after its first 404: %+v %v, want its schema", id, got, err)
	}

	// An id that stays unknown: final once the window has passed since its first 404, then kept.
	missing := ours + 1_000_000
	if _, err := c.Schema(ctx, missing); errors.Is(err, codec.ErrUnknownSchema) {
		t.Fatalf("id %d at its first 404: %v, want it waiting", missing, err)
	}
	*clock = clock.Add(5 * time.Second)
	if _, err := c.Schema(ctx, missing); !errors.Is(err, codec.ErrUnknownSchema) {
		t.Fatalf("id %d past the window: %v, want ErrUnknownSchema", missing, err)
	}
	before := ct.byID.Load()
	if _, err := c.Schema(ctx, missing); !errors.Is(err, codec.ErrUnknownSchema) || ct.byID.Load() != before {
		t.Errorf("id %d once final: %v after %d requests, want the kept ErrUnknownSchema without one", missing, err, ct.byID.Load()-before)
	}
	*clock = clock.Add(UnknownTTL)
	if _, err := c.Schema(ctx, missing); !errors.Is(err, codec.ErrUnknownSchema) {
		t.Errorf("id %d asked again after UnknownTTL: %v, want ErrUnknownSchema at once (its window is long past)", missing, err)
	}

	// unknown_schema_retry 0: a 404 is final at once.
	cfg.UnknownSchemaRetry = 0
	now, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := now.Schema(ctx, missing+1); !errors.Is(err, codec.ErrUnknownSchema) {
		t.Errorf("with unknown_schema_retry 0, a 404: %v, want ErrUnknownSchema", err)
	}
}
