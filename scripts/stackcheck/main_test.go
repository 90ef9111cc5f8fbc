package main

import (
	"bytes"
	"net"
	"strings"
	"testing"
)

func TestRunUsage(t *testing.T) {
	cases := [][]string{
		{},
		{"kafka"},
		{"zookeeper", "127.0.0.1:2181"},
		{"kafka", "no-port"},
		{"-timeout", "soon", "kafka", "127.0.0.1:9092"},
	}
	for _, args := range cases {
		var out, errOut bytes.Buffer
		if code := run(args, &out, &errOut); code != 2 {
			t.Errorf("run(%q) = %d, want 2 (usage); stderr %q", args, code, errOut.String())
		}
	}
}

// A closed port must give exit code 1 and name the address, which scripts/stack shows when a server never serves.
func TestRunNotServing(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	for _, kind := range []string{"kafka", "cassandra", "registry", "connect"} {
		var out, errOut bytes.Buffer
		if code := run([]string{"-timeout", "2s", kind, addr}, &out, &errOut); code != 1 {
			t.Errorf("%s at a closed port: exit %d, want 1", kind, code)
		}
		if !strings.Contains(errOut.String(), addr) {
			t.Errorf("%s: stderr %q does not name %s", kind, errOut.String(), addr)
		}
	}
}
