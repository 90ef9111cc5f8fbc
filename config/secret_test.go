package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// A secret must not leak through any printing path an engineer might reach for while debugging.
func TestSecretsNeverPrint(t *testing.T) {
	const pw = "hunter2-very-secret"
	c, err := Load("../examples/local.yaml", []string{
		"SINK_CASSANDRA__AUTH__USERNAME=sink",
		"SINK_CASSANDRA__AUTH__PASSWORD=" + pw,
		"SINK_KAFKA__SASL__MECHANISM=SCRAM-SHA-256",
		"SINK_KAFKA__SASL__USERNAME=sink",
		"SINK_KAFKA__SASL__PASSWORD=" + pw,
	})
	if err != nil {
		t.Fatal(err)
	}
	if c.Cassandra.Auth.Password.Reveal() != pw {
		t.Fatal("the password did not load")
	}
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("config", "cfg", c, "pw", c.Kafka.SASL.Password)
	slog.New(slog.NewTextHandler(&logs, nil)).Info("config", "auth", c.Cassandra.Auth, "pw", c.Cassandra.Auth.Password)
	js, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	outputs := map[string]string{
		"%v":    fmt.Sprintf("%v", c),
		"%+v":   fmt.Sprintf("%+v", *c),
		"%#v":   fmt.Sprintf("%#v", *c),
		"%s":    fmt.Sprintf("%s", c.Kafka.SASL.Password),
		"%q":    fmt.Sprintf("%q", c.Kafka.SASL.Password),
		"%x":    fmt.Sprintf("%x", c.Kafka.SASL.Password),
		"%d":    fmt.Sprintf("%d", c.Kafka.SASL.Password),
		"Print": fmt.Sprint(c.Cassandra.Auth),
		"json":  string(js),
		"slog":  logs.String(),
	}
	for how, out := range outputs {
		if strings.Contains(out, pw) || strings.Contains(out, fmt.Sprintf("%x", pw)) {
			t.Errorf("%s leaks the secret: %s", how, out)
		}
		if !strings.Contains(out, "redacted") {
			t.Errorf("%s shows no redaction marker: %s", how, out)
		}
	}
}
