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

// TestReadmeShowsTheInitGolden keeps the README's quick start for an existing Avro topic identical to what
// `sink init` drafts for the schema of examples/avro-sensors.yaml (the avro-sensors golden file).
func TestReadmeShowsTheInitGolden(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	g, err := os.ReadFile(filepath.Join(initDir, "avro-sensors.golden.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	from, to := strings.Index(string(g), "    bucket: "), strings.Index(string(g), "    clustering:")
	if from < 0 || to < from {
		t.Fatalf("the golden has no bucket: and clustering: lines")
	}
	if !strings.Contains(string(readme), "```yaml\n"+string(g[from:to])+"```") {
		t.Errorf("README.md does not show the columns of %s; paste them into the section \"Quick start: an existing Avro topic\"", "avro-sensors.golden.yaml")
	}
}
