package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeShowsExplainGoldens keeps the README's "Where records land" section identical to the
// explain golden files, so the documented output is the tested output.
func TestReadmeShowsExplainGoldens(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	goldens, err := filepath.Glob(filepath.Join("testdata", "explain", "*.golden"))
	if err != nil || len(goldens) == 0 {
		t.Fatalf("no explain goldens found: %v", err)
	}
	for _, g := range goldens {
		b, err := os.ReadFile(g)
		if err != nil {
			t.Fatal(err)
		}
		// The first line of a golden is the exit code; the rest is what the command printed.
		_, out, _ := strings.Cut(string(b), "\n")
		if !strings.Contains(string(readme), strings.TrimRight(out, "\n")) {
			t.Errorf("README.md does not show the output of %s; paste it into the section \"Where records land\"", g)
		}
	}
}
