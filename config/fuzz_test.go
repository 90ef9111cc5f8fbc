package config

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzLoadValidate feeds arbitrary YAML through the path `sink validate` takes: Load, then
// Validate, then the bucket policies and the warnings of a valid config. None may panic or hang;
// every failure must be a list of problems that each name a key path (or the file), never an
// empty message; and a config that validates must build a policy for each of its topics.
func FuzzLoadValidate(f *testing.F) {
	for _, pattern := range []string{"testdata/good/*.yaml", "testdata/bad/*.yaml", "../examples/*.yaml"} {
		files, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		for _, name := range files {
			b, err := os.ReadFile(name)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	f.Add([]byte("topics: {a: {bucket: {width: 1d}, bucket: {width: 1h}}}"))
	f.Add([]byte("kafka: &a {brokers: [x]}\ncassandra: *a\n"))
	f.Add([]byte("topics:\n  t:\n    ttl: 9223372036854775807ns\n    accept: {past: 300y}\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, yaml []byte) {
		// Files named by the config are read or checked by Load and Validate: keep the fuzzer
		// away from the machine's own files (a device file would block the read).
		if bytes.Contains(yaml, []byte("_file")) {
			t.Skip()
		}
		path := filepath.Join(dir, "c.yaml")
		if err := os.WriteFile(path, yaml, 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := Load(path, nil)
		if err == nil {
			err = c.Validate()
		}
		if err != nil {
			for _, p := range Problems(err) {
				if strings.TrimSpace(p) == "" {
					t.Fatalf("an empty problem in %q", Problems(err))
				}
			}
			var fe *FieldError
			if errors.As(err, &fe) && fe.Path == "" {
				t.Fatalf("a problem without a key path: %v", fe)
			}
			return
		}
		policies, err := c.Policies()
		if err != nil {
			t.Fatalf("a valid config builds no policies: %v", err)
		}
		for _, name := range c.TopicNames() {
			if policies[name] == nil && !c.Topics[name].Latest() {
				t.Fatalf("no policy for topic %s of a valid config", name)
			}
		}
		for _, w := range c.Warnings() {
			if w.Path == "" || w.Problem == "" {
				t.Fatalf("a warning without a key path or a text: %+v", w)
			}
		}
	})
}
