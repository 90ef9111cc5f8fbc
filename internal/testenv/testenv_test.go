package testenv

import (
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestDecide(t *testing.T) {
	docker := func(ok bool) func() bool { return func() bool { return ok } }
	cases := []struct {
		name      string
		env, ci   string
		docker    bool
		want      action
		wantAddrs []string
	}{
		{name: "env wins over docker", env: "127.0.0.1:9092", docker: true, want: useEnv, wantAddrs: []string{"127.0.0.1:9092"}},
		{name: "env list trimmed", env: " a:1, ,b:2 ", want: useEnv, wantAddrs: []string{"a:1", "b:2"}},
		{name: "env wins under CI", env: "a:1", ci: "true", want: useEnv, wantAddrs: []string{"a:1"}},
		{name: "blank env means unset", env: " , ", docker: true, want: useDocker},
		{name: "docker when env unset", docker: true, ci: "true", want: useDocker},
		{name: "skip locally", want: skipTest},
		{name: "skip when CI=false", ci: "false", want: skipTest},
		{name: "fail under CI=true", ci: "true", want: failTest},
		{name: "fail under CI=1", ci: "1", want: failTest},
		{name: "fail under CI=TRUE", ci: "TRUE", want: failTest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			probed := false
			got, addrs, msg := decide("Kafka", EnvKafka, c.env, c.ci, func() bool { probed = true; return docker(c.docker)() })
			if got != c.want {
				t.Fatalf("action = %d, want %d (msg %q)", got, c.want, msg)
			}
			if strings.Join(addrs, ",") != strings.Join(c.wantAddrs, ",") {
				t.Fatalf("addrs = %q, want %q", addrs, c.wantAddrs)
			}
			if got == useEnv && probed {
				t.Fatal("probed Docker although the environment gave addresses")
			}
			if got == skipTest || got == failTest {
				for _, want := range []string{"scripts/stack up", EnvKafka, "SINK_TEST_CASSANDRA=127.0.0.1:9042"} {
					if !strings.Contains(msg, want) {
						t.Errorf("message %q does not mention %q", msg, want)
					}
				}
			}
			if got == failTest && !strings.Contains(msg, "CI=true") {
				t.Errorf("failure message %q does not say why it is not a skip", msg)
			}
		})
	}
}

var validName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

func TestMakeName(t *testing.T) {
	cases := []struct {
		prefix, test string
		seq          uint64
		want         string
	}{
		{"orders", "TestConsume", 1, "orders_consume_abc1231"},
		{"Orders-Topic.v2", "TestX/sub case #3", 7, "orders_topic_v2_sub_case_3_abc1237"},
		{"", "TestA", 2, "t_a_abc1232"},
		{"9lives", "TestA", 3, "t_9lives_a_abc1233"},
		{"___", "Test", 4, "t_abc1234"},
		// The largest sequence number: only validity and length are checked.
		{"averyveryverylongprefixindeed", "TestAVeryVeryLongTestNameIndeed", 18446744073709551615, ""},
	}
	for _, c := range cases {
		got := makeName(c.prefix, c.test, "abc123", c.seq)
		if !validName.MatchString(got) || len(got) > MaxNameLen {
			t.Errorf("makeName(%q, %q) = %q: not a valid lower-case identifier of at most %d bytes", c.prefix, c.test, got, MaxNameLen)
		}
		if c.seq < 1000 && got != c.want {
			t.Errorf("makeName(%q, %q, %d) = %q, want %q", c.prefix, c.test, c.seq, got, c.want)
		}
	}
}

func TestNameUnique(t *testing.T) {
	seen := make(map[string]bool)
	for range 1000 {
		n := Name(t, "topic")
		if seen[n] {
			t.Fatalf("Name returned %q twice", n)
		}
		seen[n] = true
		if !validName.MatchString(n) || len(n) > MaxNameLen {
			t.Fatalf("Name = %q: not a valid identifier of at most %d bytes", n, MaxNameLen)
		}
	}
	if !strings.Contains(Name(t, "x"), "_"+processRunID()) {
		t.Fatal("names do not carry the run id")
	}
}

func TestDockerEndpoint(t *testing.T) {
	home := t.TempDir()
	cases := []struct{ host, network, addr string }{
		{"unix:///run/user/1000/docker.sock", "unix", "/run/user/1000/docker.sock"},
		{"tcp://10.0.0.5:2375", "tcp", "10.0.0.5:2375"},
		{"ssh://me@box", "", ""},
	}
	for _, c := range cases {
		n, a := dockerEndpoint(c.host, home)
		if n != c.network || a != c.addr {
			t.Errorf("dockerEndpoint(%q) = %q %q, want %q %q", c.host, n, a, c.network, c.addr)
		}
	}
}

func TestPingDocker(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "docker.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/_ping" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte("OK"))
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	if !pingDocker("unix", sock, 2*time.Second) {
		t.Fatal("ping to a serving engine failed")
	}
	if pingDocker("unix", filepath.Join(t.TempDir(), "absent.sock"), 2*time.Second) {
		t.Fatal("ping to a missing socket succeeded")
	}
	if pingDocker("", "", time.Second) {
		t.Fatal("ping without an endpoint succeeded")
	}
}
