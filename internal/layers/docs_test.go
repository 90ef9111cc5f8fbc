package layers

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocsNameNoCommitsNorIssues keeps the README and docs/ true on their own: a figure says its command and
// date, not the commit it was measured at, and a rule says why it holds, not which issue asked for it. The
// history of the figures, which does name commits, lives in bench/results/HISTORY.md.
func TestDocsNameNoCommitsNorIssues(t *testing.T) {
	root := filepath.Join("..", "..")
	files := []string{filepath.Join(root, "README.md")}
	more, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, more...)
	issue := regexp.MustCompile(`(?i)\bissues? #?[0-9]+`)
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for n, line := range strings.Split(string(text), "\n") {
			name, _ := filepath.Rel(root, f)
			if m := issue.FindString(line); m != "" {
				t.Errorf("%s:%d names %q: say what the rule is, not which issue asked for it", name, n+1, m)
			}
			for _, word := range strings.FieldsFunc(line, func(r rune) bool {
				return !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '-' || r == '_')
			}) {
				if looksLikeCommit(word) {
					t.Errorf("%s:%d names %q, which looks like a commit: give the command and date instead", name, n+1, word)
				}
			}
		}
	}
}

// looksLikeCommit: 7 to 12 lower-case hex digits with at least one letter and one digit (shorter is a number or
// a word, longer a value in an example: trace ids, keys), other than digits with a unit.
func looksLikeCommit(word string) bool {
	if len(word) < 7 || len(word) > 12 {
		return false
	}
	if strings.Trim(word[:len(word)-1], "0123456789") == "" {
		return false // a number with a unit: 106751d
	}
	letter, digit := false, false
	for _, r := range word {
		switch {
		case r >= '0' && r <= '9':
			digit = true
		case r >= 'a' && r <= 'f':
			letter = true
		default:
			return false
		}
	}
	return letter && digit
}
