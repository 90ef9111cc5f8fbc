package registry

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"
	"go.uber.org/goleak"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/codec/avro"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/internal/testenv"
	"github.com/bucketsink/sink/packed"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const siteAvro = `{"type": "record", "name": "Site", "namespace": "it.reg", "fields": [{"name": "id", "type": "string"}]}`

const readingAvro = `{"type": "record", "name": "Reading", "namespace": "it.reg", "fields": [
	{"name": "device_id", "type": "string"}, {"name": "site", "type": "it.reg.Site"}]}`

// TestIntegrationSchemaByIDWithReferencesIsFetchedOnce: against the real registry, a schema comes back with
// the schema it references (by subject and version), the same *codec.Schema on the next call (cached: ids
// are immutable), an unknown id wraps ErrUnknownSchema, and a registry that does not answer is an
// UnavailableError, not bad input.
func TestIntegrationSchemaByIDWithReferencesIsFetchedOnce(t *testing.T) {
	url := testenv.Registry(t)
	c, err := New(config.SchemaRegistry{URLs: []string{url}, Timeout: config.Duration(10 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	subject := testenv.Name(t, "reg")
	site, err := c.SR().CreateSchema(ctx, subject+"-site", sr.Schema{Schema: siteAvro})
	if err != nil {
		t.Fatal(err)
	}
	reading, err := c.SR().CreateSchema(ctx, subject+"-value", sr.Schema{Schema: readingAvro, References: []sr.SchemaReference{
		{Name: "it.reg.Site", Subject: subject + "-site", Version: site.Version},
	}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Schema(ctx, reading.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != reading.ID || got.Type != "AVRO" || got.Text == "" || len(got.References) != 1 ||
		got.References[0].Name != "it.reg.Site" || got.References[0].Schema == nil || got.References[0].Schema.ID != site.ID {
		t.Fatalf("schema %+v, want id %d with its reference to site %d", got, reading.ID, site.ID)
	}
	// The Avro codec finds the referenced named type through it.
	if _, err := (avro.Codec{}).Compile(got, []codec.Field{{Path: []string{"site", "id"}, Column: "site", Type: packed.Scalar(packed.KText)}}); err != nil {
		t.Errorf("compiling the schema with its reference: %v", err)
	}
	again, err := c.Schema(ctx, reading.ID)
	if err != nil || again != got {
		t.Errorf("second fetch: %p %v, want the cached %p", again, err, got)
	}

	if _, err := c.Schema(ctx, 1<<30); !errors.Is(err, codec.ErrUnknownSchema) {
		t.Errorf("unknown id: %v, want ErrUnknownSchema", err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	down, err := New(config.SchemaRegistry{URLs: []string{"http://" + addr}, Timeout: config.Duration(2 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	var ue *codec.UnavailableError
	if _, err := down.Schema(ctx, reading.ID); !errors.As(err, &ue) || errors.Is(err, codec.ErrUnknownSchema) {
		t.Errorf("registry down: %v, want an UnavailableError", err)
	}
}
