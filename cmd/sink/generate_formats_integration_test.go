package main

import (
	"bytes"
	"context"
	"encoding/pem"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/codec/registry"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/gen"
	"github.com/bucketsink/sink/internal/testenv"
	"github.com/bucketsink/sink/mapper"
)

// TestIntegrationGenerateRegistersItsSchemaAndProducesEachFormat: `sink gen --codec C` registers the sample
// schema of C under <topic>-value in the real registry and produces records framed with the id it got, which a
// topic of codec C maps (their writer schema fetched from the registry) to the rows of the same events as JSON.
func TestIntegrationGenerateRegistersItsSchemaAndProducesEachFormat(t *testing.T) {
	url, brokers := testenv.Registry(t), testenv.Kafka(t)
	reg, err := registry.New(config.SchemaRegistry{URLs: []string{url}, Timeout: config.Duration(10 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	const count = 40
	for _, name := range []string{config.CodecJSON, config.CodecAvro, config.CodecProtobuf, config.CodecJSONSchema} {
		t.Run(name, func(t *testing.T) {
			topic := testenv.Name(t, "gen")
			testenv.CreateTopic(t, brokers, topic, 1)
			var stdout, stderr bytes.Buffer
			args := []string{"--brokers", strings.Join(brokers, ","), "--topic", topic, "--count", strconv.Itoa(count), "--seed", "7",
				"--start", "2024-01-15T14:00:00Z", "--codec", name, "--registry", url, "--quiet"}
			if code := runGenerate(context.Background(), args, &stdout, &stderr); code != exitOK {
				t.Fatalf("sink gen %s: exit %d\n%s", strings.Join(args, " "), code, stderr.String())
			}
			values := consume(t, brokers, topic, count)

			jm, m := genMapper(t, config.CodecJSON, nil), genMapper(t, name, reg)
			g, err := gen.New(gen.Config{Seed: 7, Start: time.Date(2024, 1, 15, 14, 0, 0, 0, time.UTC)})
			if err != nil {
				t.Fatal(err)
			}
			var id int
			if name != config.CodecJSON {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				ss, err := reg.SR().SchemaByVersion(ctx, topic+"-value", -1)
				if err != nil {
					t.Fatalf("the subject %s-value: %v", topic, err)
				}
				if want, _ := gen.Schema(name); ss.Schema.Schema != want.Schema {
					t.Fatalf("the registered schema is not gen's sample %s schema", name)
				}
				id = ss.ID
			}
			for i, v := range values {
				ev := g.Next()
				if id != 0 {
					if got, _, err := codec.Frame(v); err != nil || got != id {
						t.Fatalf("record %d: schema id %d (%v), want %d", i, got, err, id)
					}
				}
				rec := func(v []byte) mapper.Record {
					return mapper.Record{Topic: "readings", Offset: int64(i), Key: ev.Key, Value: v, Timestamp: ev.Time}
				}
				want, err := jm.Map(rec(ev.Value))
				if err != nil {
					t.Fatal(err)
				}
				got, err := m.MapContext(context.Background(), rec(v))
				if err != nil {
					t.Fatalf("record %d: %v", i, err)
				}
				if string(got.Packed) != string(want.Packed) || got.Key != want.Key {
					t.Fatalf("record %d: row %+v, want the JSON event's %+v", i, got, want)
				}
			}
		})
	}
}

// consume reads n record values of the one partition of topic from its start.
func consume(t *testing.T, brokers []string, topic string, n int) [][]byte {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out [][]byte
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("%d of %d records of %s after a minute", len(out), n, topic)
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r.Value) })
	}
	return out
}

// genMapper maps gen's events read with codecName, their writer schemas from reg.
func genMapper(t *testing.T, codecName string, reg codec.Registry) *mapper.Mapper {
	t.Helper()
	c := &config.Config{
		Kafka:     config.Kafka{Brokers: []string{"127.0.0.1:9092"}},
		Cassandra: config.Cassandra{Hosts: []string{"127.0.0.1"}, Keyspace: "telemetry"},
		Topics: map[string]config.Topic{"readings": {
			Codec: codecName, ID: []string{"device_id"},
			Time:   config.EventTime{Source: "field", Field: "ts", Format: "rfc3339"},
			Bucket: config.Bucket{Width: "1h", Key: "text"},
			Table:  "readings",
			Columns: []config.Column{
				{Name: "device_id", Type: "text", Field: "device_id"},
				{Name: "ts", Type: "timestamp", Source: "event_time"},
				{Name: "temperature", Type: "double", Field: "temperature"},
				{Name: "humidity", Type: "double", Field: "humidity"},
				{Name: "battery", Type: "double", Field: "battery"},
				{Name: "site", Type: "text", Field: "site.id"},
			},
			Clustering: []config.Clustering{{Column: "ts", Order: "desc"}},
			Accept:     config.Accept{Before: math.MaxInt64, After: math.MaxInt64},
		}},
	}
	if reg != nil {
		c.SchemaRegistry.URLs = []string{"http://registry.invalid"}
	}
	c.ApplyDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	var opts []mapper.Option
	if reg != nil {
		opts = append(opts, mapper.WithRegistry(reg))
	}
	m, err := mapper.New(c, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestIntegrationGenerateReachesTheRegistryAsTheConfigSays guards `sink gen --config`: a registry behind
// TLS and basic auth, as a config's schema_registry describes it to `sink run`, is reached by gen with the
// same settings (the daemon's registry client), where before gen could name the registry's URL only. The
// real registry stands behind a TLS front that refuses requests without the credentials.
func TestIntegrationGenerateReachesTheRegistryAsTheConfigSays(t *testing.T) {
	url, brokers := testenv.Registry(t), testenv.Kafka(t)
	target, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	const user, password = "gen", "s3cret-gen"
	var allowed, refused atomic.Int32
	proxy := httputil.NewSingleHostReverseProxy(&neturl.URL{Scheme: target.Scheme, Host: target.Host})
	front := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != user || p != password {
			refused.Add(1)
			http.Error(w, `{"error_code":401,"message":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		allowed.Add(1)
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()
	frontURL := front.URL + target.Path

	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: front.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	pw := filepath.Join(dir, "password")
	if err := os.WriteFile(pw, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The example's config, with the registry block a deployment behind TLS and basic auth would add.
	example, err := os.ReadFile("../../examples/iot-sensors.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "sink.yaml")
	writeConfig := func(path, url string) {
		block := fmt.Sprintf("\nschema_registry:\n  urls: [%q]\n  auth: {username: %s, password_file: %q}\n  tls: {enabled: true, ca_file: %q}\n",
			url, user, pw, ca)
		if err := os.WriteFile(path, append(slices.Clip(example), block...), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeConfig(cfg, frontURL)
	// The same registry settings at an address nothing listens on: --registry replaces the urls only.
	elsewhere := filepath.Join(dir, "elsewhere.yaml")
	writeConfig(elsewhere, "https://127.0.0.1:1"+target.Path)

	topic := testenv.Name(t, "gen")
	testenv.CreateTopic(t, brokers, topic, 1)
	gen := func(extra ...string) (int, string) {
		var stdout, stderr bytes.Buffer
		args := append([]string{"--brokers", strings.Join(brokers, ","), "--topic", topic, "--count", "5", "--seed", "7",
			"--start", "2024-01-15T14:00:00Z", "--codec", config.CodecAvro, "--quiet"}, extra...)
		return runGenerate(context.Background(), args, &stdout, &stderr), stderr.String()
	}
	// The URL alone: the front's certificate is not trusted, and no credentials would be sent.
	if code, _ := gen("--registry", frontURL); code == exitOK {
		t.Fatal("gen reached the registry behind TLS and basic auth with its URL alone")
	}
	if code, stderr := gen("--config", cfg); code != exitOK {
		t.Fatalf("sink gen --config: exit %d\n%s", code, stderr)
	}
	if code, stderr := gen("--config", elsewhere, "--registry", frontURL); code != exitOK {
		t.Fatalf("sink gen --config with --registry: exit %d\n%s", code, stderr)
	}
	if allowed.Load() == 0 || refused.Load() != 0 {
		t.Errorf("the registry front allowed %d requests and refused %d; want every request with the config's credentials", allowed.Load(), refused.Load())
	}
	if got := consume(t, brokers, topic, 10); len(got) != 10 {
		t.Errorf("%d records produced, want 10 (5 a run)", len(got))
	}
}
