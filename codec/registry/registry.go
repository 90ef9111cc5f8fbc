// Package registry is the schema registry client of the codecs: writer schemas fetched by id from a
// Confluent-compatible registry (Confluent's REST API, Apicurio's /apis/ccompat/v7) through
// franz-go's pkg/sr, with their references resolved, and cached for the life of the process.
//
// A schema id names one schema forever, so a fetched schema is never fetched again. A registry that
// answers 404 with its "not found" error code (4040x) for an id makes the error wrap
// codec.ErrUnknownSchema; every other failure (a bare 404, no answer, a timeout, a 5xx, refused
// credentials) is a *codec.UnavailableError, which is not the record's fault: the pipeline waits and
// retries.
//
// A 404 is not final at once: the followers of a registry cluster learn a registration from its leader
// a moment later, so a producer can write a record naming an id that a follower does not know yet. For
// schema_registry.unknown_schema_retry after the first 404 for an id, its lookups are a
// *codec.UnavailableError (the record waits, asked again with the pipeline's backoff); the first 404
// after that is final.
//
// An id the registry does not have (or whose references it lacks), once final, is remembered for
// UnknownTTL, so a flood of records naming it costs one request per UnknownTTL rather than one per
// record, and is asked again after it: a schema registered later is found without a restart.
//
// Concurrent lookups of an id not yet answered share one request: when a producer rolls out a new
// schema, every partition worker meets its id at once, and the registry is asked once, not once per
// worker.
package registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/config"
)

// Client fetches and caches writer schemas. It is safe for concurrent use.
type Client struct {
	cl  *sr.Client
	now func() time.Time // time.Now; tests move it past UnknownTTL
	// unknownRetry is schema_registry.unknown_schema_retry: how long after an id's first 404 a 404
	// for it is still taken as a follower that lags, not as final.
	unknownRetry time.Duration

	mu      sync.Mutex
	byID    map[int]*codec.Schema
	byRef   map[refKey]*codec.Schema
	unknown map[int]unknownID
	asking  map[int]*lookup // ids being fetched; later callers wait for the same answer
}

// lookup is one fetch of an id that concurrent callers share: done is closed once s, err and callerGone
// are set. callerGone says the fetch failed because its caller's context ended (not the registry's
// answer, nor the HTTP client's own timeout): the callers waiting for it ask again.
type lookup struct {
	done       chan struct{}
	s          *codec.Schema
	err        error
	callerGone bool
	first      time.Time // when the registry first answered 404 for the id; zero unless it did
}

// unknownID is what is kept of an id the registry answered 404 for: when it first did, and once the
// answer is final (first is unknownRetry old), the error (wrapping codec.ErrUnknownSchema) and until
// when it stands without asking again. Before that until is zero: every lookup asks.
type unknownID struct {
	first time.Time
	err   error
	until time.Time
}

// UnknownTTL is how long an id the registry answered 404 for is taken as unknown without asking
// again. A producer registers its schema before it writes the first record naming it, so an unknown
// id is a record written against another registry or a deleted schema, which tends to come in
// floods (every record of a producer); a few seconds keep such a flood at one request per
// UnknownTTL, and a schema registered meanwhile is found at most this late.
const UnknownTTL = 5 * time.Second

// maxUnknown bounds the ids kept as unknown: records with random bytes after the magic byte name a
// new id each, and each would otherwise stay in memory for UnknownTTL.
const maxUnknown = 4096

type refKey struct {
	subject string
	version int
}

var _ codec.Registry = (*Client)(nil)

// New builds the client of the schema_registry block c (validated: config.Validate). It does not
// connect; the first Schema call does.
func New(c config.SchemaRegistry) (*Client, error) {
	return newClient(c, nil)
}

// ForConfig is the registry client a configuration's mappers read writer schemas from (pass it to
// mapper.WithRegistry): New of its schema_registry block, or nil when the block names no URL (then no
// topic reads a registry codec: config.Validate). It does not connect.
func ForConfig(cfg *config.Config) (codec.Registry, error) {
	if len(cfg.SchemaRegistry.URLs) == 0 {
		return nil, nil
	}
	c, err := New(cfg.SchemaRegistry)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// newClient is New with the HTTP transport wrapped by wrap when it is not nil (tests count requests).
func newClient(c config.SchemaRegistry, wrap func(http.RoundTripper) http.RoundTripper) (*Client, error) {
	if len(c.URLs) == 0 {
		return nil, errors.New("schema_registry.urls: empty; a schema-registry codec needs the registry's URL")
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	// A schema is fetched once per id for the life of the process: a connection kept open between
	// fetches would idle for hours.
	tr.DisableKeepAlives = true
	if c.TLS.Enabled {
		tc, err := c.TLS.ClientConfig("schema_registry.tls")
		if err != nil {
			return nil, err
		}
		tr.TLSClientConfig = tc
	}
	timeout := time.Duration(c.Timeout)
	if timeout <= 0 {
		timeout = time.Duration(config.DefaultRegistryTimeout)
	}
	var rt http.RoundTripper = tr
	if wrap != nil {
		rt = wrap(tr)
	}
	opts := []sr.ClientOpt{
		sr.URLs(c.URLs...),
		sr.HTTPClient(&http.Client{Timeout: timeout, Transport: rt}),
		sr.UserAgent("bucketsink"),
	}
	if c.Auth.Username != "" {
		opts = append(opts, sr.BasicAuth(c.Auth.Username, c.Auth.Password.Reveal()))
	}
	cl, err := sr.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("schema_registry: %w", err)
	}
	return &Client{cl: cl, now: time.Now, unknownRetry: time.Duration(c.UnknownSchemaRetry), byID: map[int]*codec.Schema{}, byRef: map[refKey]*codec.Schema{},
		unknown: map[int]unknownID{}, asking: map[int]*lookup{}}, nil
}

// SR is the underlying pkg/sr client, for tools and tests that register schemas.
func (c *Client) SR() *sr.Client { return c.cl }

// maxRefDepth bounds how deep references may nest, so a cycle in the registry cannot recurse forever.
const maxRefDepth = 32

// Schema returns the writer schema of id with its references, fetching it on first use. An id the
// registry answered 404 for (itself or a reference) gets the same error without a request for
// UnknownTTL. Callers asking for an id while it is fetched wait for that fetch's answer; when the fetch
// ended only because its own caller's context did, the others ask again. A caller whose context ends
// while it waits gets a *codec.UnavailableError, as one whose own fetch ends so: the record is not at
// fault.
func (c *Client) Schema(ctx context.Context, id int) (*codec.Schema, error) {
	for {
		now := c.now()
		c.mu.Lock()
		if s := c.byID[id]; s != nil {
			c.mu.Unlock()
			return s, nil
		}
		if u, ok := c.unknown[id]; ok && now.Before(u.until) {
			c.mu.Unlock()
			return nil, u.err
		}
		l, waiting := c.asking[id]
		if !waiting {
			l = &lookup{done: make(chan struct{})}
			c.asking[id] = l
		}
		c.mu.Unlock()
		if !waiting {
			return c.ask(ctx, id, l, now)
		}
		select {
		case <-l.done:
		case <-ctx.Done():
			return nil, &codec.UnavailableError{Err: fmt.Errorf("schema id %d: %w", id, ctx.Err())}
		}
		if !l.callerGone {
			return l.s, l.err
		}
	}
}

// ask fetches id for the callers of l, keeps the answer and hands it to them, also when the fetch
// panics (the waiters then get an unavailable error, and the next lookup asks again).
func (c *Client) ask(ctx context.Context, id int, l *lookup, now time.Time) (*codec.Schema, error) {
	l.err = &codec.UnavailableError{Err: fmt.Errorf("schema id %d: the lookup did not finish", id)}
	defer func() {
		c.mu.Lock()
		switch {
		case l.err == nil:
			c.byID[id] = l.s
			delete(c.unknown, id)
		case errors.Is(l.err, codec.ErrUnknownSchema):
			c.rememberUnknown(id, unknownID{first: l.first, err: l.err, until: now.Add(UnknownTTL)}, now)
		case !l.first.IsZero(): // a 404 within unknownRetry of the first
			c.rememberUnknown(id, unknownID{first: l.first}, now)
		}
		delete(c.asking, id)
		c.mu.Unlock()
		close(l.done)
	}()
	l.s, l.err = c.fetch(ctx, id)
	if errors.Is(l.err, codec.ErrUnknownSchema) {
		l.err = c.notFoundYet(id, l, now)
	}
	l.callerGone = l.err != nil && ctx.Err() != nil && !errors.Is(l.err, codec.ErrUnknownSchema)
	return l.s, l.err
}

// notFoundYet takes the 404 of l (l.err) for id at now: final (l.err as it is) once unknownRetry has
// passed since the first 404 for id, else a *codec.UnavailableError that makes the record wait. It
// sets l.first, the first 404's time, which ask keeps.
func (c *Client) notFoundYet(id int, l *lookup, now time.Time) error {
	c.mu.Lock()
	l.first = now
	if u, ok := c.unknown[id]; ok && !u.first.IsZero() {
		l.first = u.first
	}
	c.mu.Unlock()
	if now.Sub(l.first) >= c.unknownRetry {
		return l.err
	}
	// Not wrapped: the error must not match codec.ErrUnknownSchema, which makes the record bad input.
	return &codec.UnavailableError{Err: fmt.Errorf("%v (HTTP 404), asked again until %s after the first such answer "+
		"(schema_registry.unknown_schema_retry): a registry's followers may not know yet an id their leader has just given a producer",
		l.err, c.unknownRetry)}
}

// fetch asks the registry for the schema of id and its references.
func (c *Client) fetch(ctx context.Context, id int) (*codec.Schema, error) {
	got, err := c.cl.SchemaByID(ctx, id)
	if err != nil {
		return nil, classify(err, fmt.Sprintf("schema id %d", id), codec.ErrUnknownSchema)
	}
	s := &codec.Schema{ID: id, Type: typeName(got.Type), Text: got.Schema}
	if s.References, err = c.references(ctx, got.References, 0); err != nil {
		return nil, fmt.Errorf("schema id %d: %w", id, err)
	}
	return s, nil
}

// rememberUnknown keeps u for id, first dropping the expired answers when maxUnknown are kept; when
// none has expired, id is not kept (it is asked again next time). c.mu is held.
func (c *Client) rememberUnknown(id int, u unknownID, now time.Time) {
	if _, ok := c.unknown[id]; !ok && len(c.unknown) >= maxUnknown {
		for k, v := range c.unknown {
			if !now.Before(v.until) {
				delete(c.unknown, k)
			}
		}
		if len(c.unknown) >= maxUnknown {
			return
		}
	}
	c.unknown[id] = u
}

// errMissingReference wraps a 404 on a referenced subject version: the writer schema cannot be built.
var errMissingReference = errors.New("a referenced schema is not in the registry")

func (c *Client) references(ctx context.Context, refs []sr.SchemaReference, depth int) ([]codec.Reference, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	if depth >= maxRefDepth {
		return nil, fmt.Errorf("%w: references nest deeper than %d", codec.ErrUnknownSchema, maxRefDepth)
	}
	out := make([]codec.Reference, 0, len(refs))
	for _, r := range refs {
		k := refKey{r.Subject, r.Version}
		c.mu.Lock()
		s := c.byRef[k]
		c.mu.Unlock()
		if s == nil {
			got, err := c.cl.SchemaByVersion(ctx, r.Subject, r.Version)
			if err != nil {
				return nil, classify(err, fmt.Sprintf("reference %q (subject %s version %d)", r.Name, r.Subject, r.Version), errMissingReference)
			}
			s = &codec.Schema{ID: got.ID, Type: typeName(got.Type), Text: got.Schema.Schema}
			if s.References, err = c.references(ctx, got.References, depth+1); err != nil {
				return nil, err
			}
			c.mu.Lock()
			c.byRef[k] = s
			c.mu.Unlock()
		}
		out = append(out, codec.Reference{Name: r.Name, Subject: r.Subject, Version: r.Version, Schema: s})
	}
	return out, nil
}

// classify turns a pkg/sr error into notFound (wrapped, with ErrUnknownSchema so the record's reason
// is schema) for the registry's own "not found" (HTTP 404 with an error code 40401 to 40409: no such
// schema, subject or version), and a *codec.UnavailableError for everything else. A 404 without the
// registry's code is not the registry's answer (an ingress's default backend while the registry is
// rolled out, a wrong path): it is retried like an outage, never taken (and cached) as an unknown id.
func classify(err error, what string, notFound error) error {
	var re *sr.ResponseError
	if errors.As(err, &re) && re.StatusCode == http.StatusNotFound && sr.IsNotFoundError(re.ErrorCode) {
		if notFound == codec.ErrUnknownSchema {
			return fmt.Errorf("%s: %w", what, notFound)
		}
		return fmt.Errorf("%s: %w (%w)", what, notFound, codec.ErrUnknownSchema)
	}
	if re != nil {
		err = responseError{re}
	}
	return &codec.UnavailableError{Err: fmt.Errorf("%s: %w", what, err)}
}

// typeName is the registry's name of a schema type: AVRO (the default when it names none),
// PROTOBUF or JSON.
func typeName(t sr.SchemaType) string {
	return t.String()
}

// Latest returns the latest version of subject's schema with its references, and that version. A
// subject the registry does not have is an error wrapping ErrUnknownSubject.
func (c *Client) Latest(ctx context.Context, subject string) (*codec.Schema, int, error) {
	got, err := c.cl.SchemaByVersion(ctx, subject, -1)
	if err != nil {
		if err = classify(err, "subject "+subject, codec.ErrUnknownSchema); errors.Is(err, codec.ErrUnknownSchema) {
			return nil, 0, fmt.Errorf("subject %q: %w", subject, ErrUnknownSubject)
		}
		return nil, 0, err
	}
	s := &codec.Schema{ID: got.ID, Type: typeName(got.Type), Text: got.Schema.Schema}
	if s.References, err = c.references(ctx, got.References, 0); err != nil {
		return nil, 0, fmt.Errorf("subject %q version %d: %w", subject, got.Version, err)
	}
	return s, got.Version, nil
}

// ErrUnknownSubject: the registry has no such subject (or it has no version).
var ErrUnknownSubject = errors.New("the schema registry has no such subject")
