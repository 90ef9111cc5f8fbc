package layers

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDesignPackageTableIsGoList holds docs/DESIGN.md's package table against `go list`: every package of the
// module has its row and every row names a package; a row's "imports" are the package's production imports of
// the module, and its "tests also import" what only its tests add. A package that moves, or an import that comes
// or goes, fails here until the table says so.
func TestDesignPackageTableIsGoList(t *testing.T) {
	rows := designRows(t)
	listed := listWithTests(t)

	for name := range listed {
		if _, ok := rows[name]; !ok {
			t.Errorf("docs/DESIGN.md has no row for package %s", name)
		}
	}
	for name, row := range rows {
		got, ok := listed[name]
		if !ok {
			t.Errorf("docs/DESIGN.md has a row for %s, which go list does not know", name)
			continue
		}
		if !slices.Equal(row.imports, got.imports) {
			t.Errorf("%s: the table says it imports %v; go list says %v", name, row.imports, got.imports)
		}
		if !slices.Equal(row.testImports, got.testImports) {
			t.Errorf("%s: the table says its tests also import %v; go list says %v", name, row.testImports, got.testImports)
		}
	}
}

type tableRow struct{ imports, testImports []string }

var parenthesis = regexp.MustCompile(`\([^)]*\)`)

// designRows reads the table under "## Packages": the first cell names one or more packages in backquotes, the
// third their imports and the fourth what their tests add; "none", an empty cell and text in parentheses name
// nothing.
func designRows(t *testing.T) map[string]tableRow {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "DESIGN.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	start := strings.Index(text, "## Packages")
	if start < 0 {
		t.Fatal(`docs/DESIGN.md has no "## Packages" section`)
	}
	text = text[start:]
	if end := strings.Index(text[3:], "\n## "); end >= 0 {
		text = text[:end+3]
	}
	rows := make(map[string]tableRow)
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		if len(cells) != 4 {
			t.Fatalf("a package row of docs/DESIGN.md has %d cells, want 4: %s", len(cells), line)
		}
		row := tableRow{imports: names(cells[2]), testImports: names(cells[3])}
		for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(cells[0], -1) {
			rows[m[1]] = row
		}
	}
	if len(rows) == 0 {
		t.Fatal("docs/DESIGN.md's package table has no rows")
	}
	return rows
}

func names(cell string) []string {
	cell = parenthesis.ReplaceAllString(cell, "")
	var out []string
	for _, part := range strings.Split(cell, ",") {
		part = strings.TrimSpace(part)
		if part == "" || part == "none" {
			continue
		}
		out = append(out, part)
	}
	slices.Sort(out)
	return out
}

// listWithTests is go list's view: each package's imports of the module, and what its tests add to them.
func listWithTests(t *testing.T) map[string]tableRow {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(goTool, "list", "-e", "-json", module+"/...")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v: %s", err, stderr.String())
	}
	type listed struct {
		ImportPath                         string
		Imports, TestImports, XTestImports []string
	}
	own := func(paths []string, self string) []string {
		var rel []string
		for _, p := range paths {
			if r, ok := relative(p); ok && r != self {
				rel = append(rel, r)
			}
		}
		return rel
	}
	got := make(map[string]tableRow)
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		name, ok := relative(p.ImportPath)
		if !ok {
			continue
		}
		imports := own(p.Imports, name)
		var extra []string
		for _, imp := range own(append(p.TestImports, p.XTestImports...), name) {
			if !slices.Contains(imports, imp) && !slices.Contains(extra, imp) {
				extra = append(extra, imp)
			}
		}
		slices.Sort(imports)
		slices.Sort(extra)
		got[name] = tableRow{imports: imports, testImports: extra}
	}
	return got
}
