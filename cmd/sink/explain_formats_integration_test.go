package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/linkedin/goavro/v2"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/codec/registry"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/internal/testenv"
)

// exampleWriterSchema is the writer schema examples/avro-sensors.yaml documents in its header.
func exampleWriterSchema(t *testing.T, yaml string) string {
	t.Helper()
	var b strings.Builder
	in := false
	for _, line := range strings.Split(yaml, "\n") {
		switch {
		case strings.HasPrefix(line, "# The writer schema"):
			in = true
		case in && strings.HasPrefix(line, "#   "):
			b.WriteString(strings.TrimPrefix(line, "#   "))
		case in:
			return b.String()
		}
	}
	t.Fatal("examples/avro-sensors.yaml documents no writer schema")
	return ""
}

// exampleOnStack writes the example config text, its brokers and registry replaced by the stack's and its
// Kafka topic exampleTopic by topic, to a file, and returns its path and a client of the registry.
func exampleOnStack(t *testing.T, example, exampleTopic, topic, url string, brokers []string) (string, *registry.Client) {
	t.Helper()
	yaml := strings.NewReplacer(
		`brokers: ["kafka-0.kafka:9092", "kafka-1.kafka:9092", "kafka-2.kafka:9092"]`, `brokers: ["`+strings.Join(brokers, `", "`)+`"]`,
		`urls: ["http://schema-registry:8081"]`, `urls: ["`+url+`"]`,
		`topic: `+exampleTopic, `topic: `+topic,
	).Replace(example)
	path := filepath.Join(t.TempDir(), "example.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	reg, err := registry.New(config.SchemaRegistry{URLs: []string{url}})
	if err != nil {
		t.Fatal(err)
	}
	return path, reg
}

// stackTopic creates topic (one partition, deleted when the test ends) on the stack's Kafka, and returns a
// client of it, closed when the test ends.
func stackTopic(t *testing.T, ctx context.Context, brokers []string, topic string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = adm.DeleteTopics(context.Background(), topic) })
	return cl
}

// TestIntegrationExplainReadsAnAvroRecordFromKafkaAndFromHex: the example Avro config explains a record
// fetched from Kafka (--from-kafka) and the same bytes given as hex (--record-hex), its writer schema
// fetched from the real registry: the decimal, uuid, enum and nested field show as their values.
func TestIntegrationExplainReadsAnAvroRecordFromKafkaAndFromHex(t *testing.T) {
	url, brokers := testenv.Registry(t), testenv.Kafka(t)
	example, err := os.ReadFile("../../examples/avro-sensors.yaml")
	if err != nil {
		t.Fatal(err)
	}
	schema := exampleWriterSchema(t, string(example))
	topic := testenv.Name(t, "avro")
	path, reg := exampleOnStack(t, string(example), "sensor-readings-avro", topic, url, brokers)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ss, err := reg.SR().CreateSchema(ctx, topic+"-value", sr.Schema{Schema: schema, Type: sr.TypeAvro})
	if err != nil {
		t.Fatal(err)
	}
	c, err := goavro.NewCodec(schema)
	if err != nil {
		t.Fatal(err)
	}
	value, err := c.BinaryFromNative(codec.AppendFrame(nil, ss.ID, nil), map[string]any{
		"device_id": "dev-0042", "ts": time.Date(2024, 1, 15, 14, 37, 22, 123456e3, time.UTC), "temperature": 21.5,
		"humidity": nil, "calibration": big.NewRat(12345, 10000), "reading_id": "0b6a1f6e-3f0c-4a53-9b8f-1f2a3b4c5d6e",
		"status": "DEGRADED", "site": map[string]any{"id": "plant-1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	cl := stackTopic(t, ctx, brokers, topic)
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte("dev-0042"), Value: value,
		Timestamp: time.Date(2024, 1, 15, 14, 37, 23, 0, time.UTC)}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	wants := []string{"dev-0042", "2024-01-15", "1.2345", "0b6a1f6e-3f0c-4a53-9b8f-1f2a3b4c5d6e", "'DEGRADED'", "'plant-1'", "humidity", "unset"}
	for _, args := range [][]string{
		{"--from-kafka", topic + "/0/0"},
		{"--topic", "readings", "--timestamp", "2024-01-15T14:37:23Z", "--record-hex", hex.EncodeToString(value)},
	} {
		code, out, errOut := runCmd(t, runExplain, append([]string{"--config", path}, args...)...)
		if code != exitOK {
			t.Errorf("%v: exit %d\n%s%s", args[0], code, out, errOut)
			continue
		}
		// The README's worked Avro example shows this output (TestReadmeShowsExplainGoldens).
		golden := filepath.Join("testdata", "explain", "avro-sensors.golden")
		got := "exit 0\n" + strings.ReplaceAll(out, topic, "sensor-readings-avro")
		if *updateExplain && args[0] == "--from-kafka" {
			if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if want, err := os.ReadFile(golden); err != nil || string(want) != got {
			t.Errorf("%v: the output differs from %s (-update-explain rewrites it): %v\n%s", args[0], golden, err, got)
		}
		for _, w := range wants {
			if !strings.Contains(out, w) {
				t.Errorf("%v: the explanation does not show %q\n%s", args[0], w, out)
			}
		}
	}
}

// exampleKeySchema is the key's writer schema examples/device-latest-avro.yaml documents in its header.
const exampleKeySchema = `{"type": "record", "name": "DeviceKey", "namespace": "sensors", "fields": [{"name": "device_id", "type": "string"}]}`

// TestIntegrationExplainDecodesAnAvroTombstoneKey: `sink explain --tombstone` on the example of an
// Avro-keyed latest-value topic decodes the key by its writer schema from the real registry and shows
// the DELETE of the device it names, with the key's codec and schema id, from --key-hex and from a
// tombstone fetched from Kafka; a key of a schema id the registry does not have is a dead letter with
// reason key.
func TestIntegrationExplainDecodesAnAvroTombstoneKey(t *testing.T) {
	url, brokers := testenv.Registry(t), testenv.Kafka(t)
	example, err := os.ReadFile("../../examples/device-latest-avro.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(example), "#   "+exampleKeySchema+"\n") {
		t.Fatal("examples/device-latest-avro.yaml no longer documents the key schema this test registers")
	}
	topic := testenv.Name(t, "state")
	path, reg := exampleOnStack(t, string(example), "device-state", topic, url, brokers)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ss, err := reg.SR().CreateSchema(ctx, topic+"-key", sr.Schema{Schema: exampleKeySchema, Type: sr.TypeAvro})
	if err != nil {
		t.Fatal(err)
	}
	c, err := goavro.NewCodec(exampleKeySchema)
	if err != nil {
		t.Fatal(err)
	}
	key := func(id int) []byte {
		b, err := c.BinaryFromNative(codec.AppendFrame(nil, id, nil), map[string]any{"device_id": "dev-0042"})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cl := stackTopic(t, ctx, brokers, topic)
	at := time.Date(2024, 1, 15, 14, 40, 0, 0, time.UTC)
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: key(ss.ID), Timestamp: at}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	wants := []string{
		"DELETE FROM telemetry.device_state USING TIMESTAMP ? WHERE device_id = ?",
		fmt.Sprintf("(device_id), from the Kafka key (key_codec avro, writer schema id %d)", ss.ID),
		"device_id      = 'dev-0042'", "1705329600000000 µs (the tombstone's Kafka timestamp",
	}
	for _, args := range [][]string{
		{"--from-kafka", topic + "/0/0"},
		{"--topic", "state", "--tombstone", "--timestamp", at.Format(time.RFC3339), "--key-hex", hex.EncodeToString(key(ss.ID))},
	} {
		code, out, errOut := runCmd(t, runExplain, append([]string{"--config", path}, args...)...)
		if code != exitOK {
			t.Errorf("%v: exit %d\n%s%s", args[0], code, out, errOut)
			continue
		}
		for _, w := range wants {
			if !strings.Contains(out, w) {
				t.Errorf("%v: the explanation does not show %q\n%s", args[0], w, out)
			}
		}
	}
	const unknownID = 1<<31 - 7 // an id no registry of the stack hands out
	code, out, errOut := runCmd(t, runExplain, "--config", path, "--topic", "state", "--tombstone", "--key-hex", hex.EncodeToString(key(unknownID)))
	if code != exitBadData || !strings.Contains(out, "dead letter (reason key)") || !strings.Contains(out, "no schema with this id") {
		t.Errorf("a key of an unknown schema id: exit %d\n%s%s; want a dead letter with reason key", code, out, errOut)
	}
}
