package config

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the .err golden files of testdata/bad from the current output")

// problemsOf loads and validates path the way `sink validate` does and returns each problem.
func problemsOf(t *testing.T, path string) []string {
	t.Helper()
	_, err := Check(context.Background(), path, nil)
	return Problems(err)
}

// TestBadConfigs pairs every config in testdata/bad with the exact problems it must produce,
// one per line, in <name>.err. Regenerate with `go test ./config -run TestBadConfigs -update`
// and review the diff: the messages are part of the operator interface.
func TestBadConfigs(t *testing.T) {
	files, err := filepath.Glob("testdata/bad/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 15 {
		t.Fatalf("only %d bad configs; the suite promises at least 15", len(files))
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(name, func(t *testing.T) {
			got := problemsOf(t, f)
			if len(got) == 0 {
				t.Fatalf("%s loads and validates; it must fail", f)
			}
			golden := strings.TrimSuffix(f, ".yaml") + ".err"
			if *update {
				if err := os.WriteFile(golden, []byte(strings.Join(got, "\n")+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			b, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("reading the expected problems: %v", err)
			}
			want := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("problems of %s:\n  got:\n    %s\n  want:\n    %s", f,
					strings.Join(got, "\n    "), strings.Join(want, "\n    "))
			}
		})
	}
}

func TestGoodConfigs(t *testing.T) {
	files, err := filepath.Glob("testdata/good/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	examples, err := filepath.Glob("../examples/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, examples...)
	if len(examples) < 5 {
		t.Fatalf("found %d example configs, want at least 5", len(examples))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			c := loadValid(t, f, nil)
			policies, err := c.Policies()
			if err != nil {
				t.Fatalf("Policies: %v", err)
			}
			for _, name := range c.TopicNames() {
				if policies[name] == nil && !c.Topics[name].Latest() {
					t.Errorf("no policy for topic %s", name)
				}
			}
		})
	}
}
