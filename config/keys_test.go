package config

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"strings"
	"testing"
)

// docSections are the headings of docs/CONFIG.md whose first table lists keys, and the path
// prefix of the keys in it.
var docSections = []struct{ heading, prefix string }{
	{"### kafka", "kafka."},
	{"### cassandra", "cassandra."},
	{"### writer", "writer."},
	{"### metrics, log", ""},
	{"### schema_registry", "schema_registry."},
	{`### topics.\<name\>`, "topics." + TopicPlaceholder + "."},
}

// docRow is one row of a key table: the keys it names, its default cell and the whole row.
type docRow struct {
	keys    []string
	dflt    string
	text    string
	section string
}

// docRows reads the key tables of docs/CONFIG.md.
func docRows(t *testing.T) []docRow {
	t.Helper()
	b, err := os.ReadFile("../docs/CONFIG.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	var rows []docRow
	for _, sec := range docSections {
		start := -1
		for i, l := range lines {
			if l == sec.heading {
				start = i
				break
			}
		}
		if start < 0 {
			t.Fatalf("docs/CONFIG.md has no heading %q", sec.heading)
		}
		i := start + 1
		for i < len(lines) && !strings.HasPrefix(lines[i], "| key | default |") {
			i++
		}
		if i == len(lines) {
			t.Fatalf("no key table under %q", sec.heading)
		}
		for i += 2; i < len(lines) && strings.HasPrefix(lines[i], "|"); i++ {
			cells := tableCells(lines[i])
			if len(cells) < 2 {
				t.Fatalf("docs/CONFIG.md: a row of %q without a default cell: %s", sec.heading, lines[i])
			}
			var keys []string
			for _, k := range backquoted(cells[0]) {
				keys = append(keys, sec.prefix+k)
			}
			rows = append(rows, docRow{keys: keys, dflt: cells[1], text: lines[i], section: sec.heading})
		}
	}
	return rows
}

// tableCells splits a Markdown table row at the bars outside backquotes.
func tableCells(line string) []string {
	var cells []string
	var cur strings.Builder
	quoted := false
	for i, r := range strings.Trim(strings.TrimSpace(line), "|") {
		switch {
		case r == '`':
			quoted = !quoted
		case r == '|' && !quoted && (i == 0 || line[i] != '\\'):
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
			continue
		}
		cur.WriteRune(r)
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

var backquoteRE = regexp.MustCompile("`([^`]*)`")

func backquoted(s string) []string {
	var out []string
	for _, m := range backquoteRE.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

// sameDefault reports whether the default docs/CONFIG.md writes (doc, a backquoted value, or ""
// when the cell names none) is the code's (code, as Keys spells it) for a key of kind.
func sameDefault(kind, doc, code string) bool {
	if doc == code {
		return true
	}
	if code == "" {
		return doc == "" || doc == "0" || doc == "false" || doc == "0s"
	}
	switch kind {
	case "duration":
		a, err1 := ParseDuration(doc)
		b, err2 := ParseDuration(code)
		return err1 == nil && err2 == nil && a == b
	case "size":
		a, err1 := ParseBytes(doc)
		b, err2 := ParseBytes(code)
		return err1 == nil && err2 == nil && a == b
	}
	return false
}

// TestDocsListEveryKeyWithItsDefault holds docs/CONFIG.md to the code: every key the loader knows
// is in its tables (a key of a tls block or of a list's elements may be named in its parent's row),
// no table names a key the loader does not know, and every documented default is the one Load
// applies. A key added without its row, a row left behind by a removed key, or a default changed on
// one side only fails here.
func TestDocsListEveryKeyWithItsDefault(t *testing.T) {
	keys := map[string]Key{}
	for _, k := range Keys() {
		keys[k.Path] = k
	}
	rows := docRows(t)
	documented := map[string]docRow{}
	for _, r := range rows {
		if len(r.keys) == 0 {
			t.Errorf("%s: a row that names no key: %s", r.section, r.text)
		}
		defaults := backquoted(r.dflt)
		if strings.HasPrefix(r.dflt, "(") {
			defaults = nil // "(required for `field`)": a condition, not a value
		}
		for i, path := range r.keys {
			documented[path] = r
			k, leaf := keys[path]
			if !leaf {
				if !isParent(path, keys) {
					t.Errorf("docs/CONFIG.md documents %s, which is not a key (%s)", path, r.section)
				}
				continue
			}
			doc := ""
			switch {
			case len(defaults) == len(r.keys):
				doc = defaults[i]
			case len(defaults) > 0:
				doc = defaults[0]
			case strings.TrimSpace(r.dflt) == "the name" && path == "topics."+TopicPlaceholder+".topic":
				doc = TopicPlaceholder
			}
			if ref, isKey := keys[doc]; isKey {
				doc = ref.Default // "cassandra.keyspace": the default is that key's
			} else if ref, isKey := keys["topics."+TopicPlaceholder+"."+doc]; isKey && doc != "" && strings.Contains(doc, ".") {
				doc = ref.Default
			}
			if !sameDefault(k.Kind, doc, k.Default) {
				t.Errorf("%s: docs/CONFIG.md says the default is %q (%s), the code applies %q", path, r.dflt, r.section, k.Default)
			}
		}
	}
	for _, k := range Keys() {
		if _, ok := documented[k.Path]; ok {
			continue
		}
		if parent, row, ok := documentedParent(k.Path, documented); ok {
			name := k.Path[len(parent):]
			name = strings.TrimPrefix(strings.TrimPrefix(name, "[]"), ".")
			if !strings.Contains(row.text, "`"+name+"`") && !strings.Contains(row.text, "`"+name+":") {
				t.Errorf("%s: the row of %s does not name `%s`", k.Path, parent, name)
			}
			continue
		}
		t.Errorf("%s (default %q) is not in docs/CONFIG.md's key tables", k.Path, k.Default)
	}
}

func isParent(path string, keys map[string]Key) bool {
	for p := range keys {
		if strings.HasPrefix(p, path+".") || strings.HasPrefix(p, path+"[]") {
			return true
		}
	}
	return false
}

// documentedParent finds the documented key that path lies below.
func documentedParent(path string, documented map[string]docRow) (string, docRow, bool) {
	for p := path; ; {
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			return "", docRow{}, false
		}
		p = p[:i]
		if r, ok := documented[p]; ok {
			return p, r, true
		}
	}
}

// defaultInCommentRE finds a default a field's comment states: "Default 48 MiB", "default 45s",
// "default \"sink\"", "Default true".
var defaultInCommentRE = regexp.MustCompile(`\b[Dd]efault:?\s+("[^"]*"|true\b|false\b|\d+(?:\.\d+)?(?:\s?(?:ns|us|ms|s|m|h|d|w|B|KB|MB|GB|KiB|MiB|GiB)\b)?)`)

// TestFieldCommentsStateTheDefaults guards against a default stated in a comment of the Config types
// that the code does not apply (writer.max_buffered_bytes said 32 MiB when it was 48 MiB).
func TestFieldCommentsStateTheDefaults(t *testing.T) {
	keys := map[string]Key{}
	for _, k := range Keys() {
		keys[k.Path] = k
	}
	fset := token.NewFileSet()
	fields := map[string]map[string]*ast.Field{}
	for _, file := range []string{"types.go", "split.go", "accept.go"} {
		f, err := parser.ParseFile(fset, file, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return false
			}
			fields[ts.Name.Name] = map[string]*ast.Field{}
			for _, fl := range st.Fields.List {
				if fl.Tag == nil || len(fl.Names) == 0 {
					continue
				}
				m := regexp.MustCompile(`koanf:"([^",]+)`).FindStringSubmatch(fl.Tag.Value)
				if m == nil {
					continue
				}
				fields[ts.Name.Name][m[1]] = fl
			}
			return false
		})
	}
	// Where each type sits in the key tree.
	prefixes := map[string][]string{
		"Kafka": {"kafka."}, "Cassandra": {"cassandra."}, "Writer": {"writer."}, "Metrics": {"metrics."},
		"Log": {"log."}, "SchemaRegistry": {"schema_registry."}, "Topic": {"topics.<name>."},
		"EventTime": {"topics.<name>.time."}, "Bucket": {"topics.<name>.bucket."},
		"Split": {"topics.<name>.split."}, "Accept": {"topics.<name>.accept."},
		"Clustering": {"topics.<name>.clustering[]."},
	}
	checked := 0
	for typ, byKey := range fields {
		for name, fl := range byKey {
			var text string
			if fl.Doc != nil {
				text += fl.Doc.Text()
			}
			if fl.Comment != nil {
				text += fl.Comment.Text()
			}
			m := defaultInCommentRE.FindStringSubmatch(text)
			if m == nil {
				continue
			}
			for _, prefix := range prefixes[typ] {
				k, ok := keys[prefix+name]
				if !ok {
					t.Errorf("%s.%s: no key %s%s", typ, name, prefix, name)
					continue
				}
				said := strings.Trim(strings.ReplaceAll(m[1], " ", ""), `"`)
				checked++
				if !sameDefault(k.Kind, said, k.Default) {
					t.Errorf("%s: the comment of %s.%s says the default is %s, the code applies %q", k.Path, typ, name, m[1], k.Default)
				}
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d comments checked; the pattern no longer finds them", checked)
	}
}
