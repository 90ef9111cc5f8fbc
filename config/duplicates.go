package config

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// duplicateKeys reports every key given twice in one mapping of the YAML document b, each by its key
// path (topics.readings.ttl). The YAML parser refuses such a document too, but names only the lines,
// which in a file of several topics leaves the reader counting. A document that does not parse is not
// reported here: the parser's own error says why.
func duplicateKeys(b []byte) []error {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil
	}
	var errs []error
	var walk func(path string, n *yaml.Node)
	walk = func(path string, n *yaml.Node) {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				walk(path, c)
			}
		case yaml.MappingNode:
			first := make(map[string]int, len(n.Content)/2)
			for i := 0; i+1 < len(n.Content); i += 2 {
				key, p := n.Content[i].Value, n.Content[i].Value
				if path != "" {
					p = path + "." + key
				}
				if line, seen := first[key]; seen {
					where := fmt.Sprintf("lines %d and %d", line, n.Content[i].Line)
					if line == n.Content[i].Line {
						where = fmt.Sprintf("both on line %d", line)
					}
					errs = append(errs, &FieldError{p, "given twice in one mapping (" + where + "); keep one"})
				} else {
					first[key] = n.Content[i].Line
				}
				walk(p, n.Content[i+1])
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				walk(fmt.Sprintf("%s[%d]", path, i), c)
			}
		}
	}
	walk("", &doc)
	return errs
}
