package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestCreateTopic checks the helper against the real broker: the topic exists with its partitions and leaders
// when CreateTopic returns, and is gone after the cleanup.
func TestCreateTopic(t *testing.T) {
	brokers := Kafka(t)
	name := Name(t, "topic")
	sub := &cleanupRecorder{TB: t}
	CreateTopic(sub, brokers, name, 3)

	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	md, err := adm.Metadata(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if !topicReady(md, name, 3) {
		t.Fatalf("topic %s not ready right after CreateTopic: %+v", name, md.Topics[name])
	}

	// Deletion is committed by the controller before the broker's metadata drops the topic, so wait for that.
	sub.run()
	for {
		topics, err := adm.ListTopics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !topics.Has(name) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("topic %s still listed 30 s after cleanup", name)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// TestKeyspaceAndSession checks that the keyspace exists and is usable through Session, and is dropped by the
// cleanup.
func TestKeyspaceAndSession(t *testing.T) {
	hosts := Cassandra(t)
	sub := &cleanupRecorder{TB: t}
	ks := Keyspace(sub, hosts)
	s := Session(t, hosts, ks)
	if err := s.Query("CREATE TABLE kv (k int PRIMARY KEY, v text)").Exec(); err != nil {
		t.Fatal(err)
	}
	if err := s.Query("INSERT INTO kv (k, v) VALUES (?, ?)", 1, "one").Exec(); err != nil {
		t.Fatal(err)
	}
	var v string
	if err := s.Query("SELECT v FROM kv WHERE k = ?", 1).Scan(&v); err != nil || v != "one" {
		t.Fatalf("read back v = %q, err %v; want \"one\"", v, err)
	}

	sub.run()
	var n int
	if err := Session(t, hosts, "").Query("SELECT count(*) FROM system_schema.keyspaces WHERE keyspace_name = ?", ks).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("keyspace %s still exists after cleanup", ks)
	}
}

// cleanupRecorder holds the cleanups registered through it so a test can run them early and check their effect.
type cleanupRecorder struct {
	testing.TB
	fns []func()
}

func (c *cleanupRecorder) Cleanup(f func()) { c.fns = append(c.fns, f) }

func (c *cleanupRecorder) run() {
	for i := len(c.fns) - 1; i >= 0; i-- {
		c.fns[i]()
	}
	c.fns = nil
}

// TestPrivateRegistryKeepsSchemasAcrossStopAndStart checks what the registry outage tests rest on: a private
// registry is down after Stop (requests fail) and serves again after Start with the schemas registered before.
func TestPrivateRegistryKeepsSchemasAcrossStopAndStart(t *testing.T) {
	r := StartPrivateRegistry(t)
	subject := Name(t, "subject")
	resp, err := http.Post(r.URL+"/subjects/"+subject+"/versions", "application/vnd.schemaregistry.v1+json",
		strings.NewReader(`{"schema":"{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"a\",\"type\":\"long\"}]}"}`))
	if err != nil {
		t.Fatal(err)
	}
	var created struct{ ID int }
	err = json.NewDecoder(resp.Body).Decode(&created)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || created.ID <= 0 {
		t.Fatalf("registering a schema: HTTP %d, id %d, %v", resp.StatusCode, created.ID, err)
	}
	byID := fmt.Sprintf("%s/schemas/ids/%d", r.URL, created.ID)

	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	if resp, err := http.Get(byID); err == nil {
		resp.Body.Close()
		t.Fatalf("the stopped private registry answered HTTP %d", resp.StatusCode)
	}
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	resp, err = http.Get(byID)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `\"name\":\"a\"`) {
		t.Fatalf("schema %d after a restart: HTTP %d %s", created.ID, resp.StatusCode, body)
	}
}
