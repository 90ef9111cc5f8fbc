package pipeline

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/internal/testenv"
)

// laggingFollower stands in front of the real registry as a follower of a registry cluster that has
// not yet read its leader's newest registration: a lookup of the hidden id is passed on as a lookup of
// an id nobody has, so the real registry answers its own 404 (code 40403), until the test catches the
// follower up.
type laggingFollower struct {
	hidden   atomic.Int64 // the id the follower does not know yet; 0 once it has caught up
	answered atomic.Int64 // 404s served for the hidden id
}

func (f *laggingFollower) serve(t *testing.T, registryURL string) string {
	target, err := url.Parse(registryURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: target.Scheme, Host: target.Host})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := f.hidden.Load(); id != 0 && strings.HasSuffix(r.URL.Path, fmt.Sprintf("/schemas/ids/%d", id)) {
			r.URL.Path = strings.TrimSuffix(r.URL.Path, fmt.Sprint(id)) + "2147480000"
			r.URL.RawPath = ""
			f.answered.Add(1)
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + target.Path
}

// TestIntegrationRecordOfAnIDTheRegistryLearnsLateIsWritten guards against a registry follower's lag
// costing records: a producer's first records name an id its leader has just handed out, and a follower
// that has not read it yet answers 404. That answer was final at once: every such record was
// dead-lettered with reason schema. Now the record waits (its partition with it, counted as a registry
// retry) for schema_registry.unknown_schema_retry after the first 404, and is written once the registry
// knows the id. Real registry, Kafka and Cassandra; the follower's lag is a proxy's.
func TestIntegrationRecordOfAnIDTheRegistryLearnsLateIsWritten(t *testing.T) {
	real := testenv.Registry(t)
	var follower laggingFollower
	s := newFormatsStack(t, follower.serve(t, real), config.CodecAvro, func(c *config.Config) {
		c.SchemaRegistry.UnknownSchemaRetry = config.Duration(time.Minute)
	})
	reg := newRegistry(t, real)
	id := register(t, reg, testenv.Name(t, "lag")+"-value", sr.TypeAvro, readingV1)
	follower.hidden.Store(int64(id))

	m := s.start(nil)
	evs := formatsEvents(0, 6)
	recs := s.produceEvents(s.topic, evs, func(e event) []byte { return e.avro(t, readingV1, id) }, nil)
	s.waitFor(time.Minute, "the follower to answer 404 for the new id three times, or a dead letter", func() bool {
		return follower.answered.Load() >= 3 || testutil.ToFloat64(m.metrics.RecordsDeadLettered.WithLabelValues(s.topic, "schema")) > 0
	})
	if s.allCommitted() {
		t.Error("every offset committed while the registry answered 404 for the records' schema id")
	}
	follower.hidden.Store(0) // caught up
	s.waitFor(2*time.Minute, "every record once the follower knows the id", s.allCommitted)
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	if dls := s.dlqRecords(); len(dls) != 0 {
		t.Errorf("%d dead letters, want none: an id the registry learns a moment late is not bad input", len(dls))
	}
	if got, want := s.tableRows("readings"), s.wantRows(evs, recs); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := testutil.ToFloat64(m.metrics.RegistryRetries.WithLabelValues(s.topic)); n == 0 {
		t.Error("sink_schema_registry_retries_total is 0: the waits for the id were not counted")
	}
}
