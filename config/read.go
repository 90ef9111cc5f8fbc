package config

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"go.yaml.in/yaml/v3"
)

// MaxFileBytes is the largest config file Load reads: 4 MiB, some thousands of topics. A larger
// file is refused before it is parsed, so a file that is not a config (a log, a dump) fails at
// once instead of holding the start-up.
const MaxFileBytes = 4 << 20

// maxValues bounds the values a document may expand to through YAML aliases (an alias repeats
// what its anchor names, so a small file can name a very large tree).
const maxValues = 1 << 20

// readFile reads the config at path once, whatever it is: a regular file, a pipe (`--config
// /dev/stdin`, `--config <(envsubst < tmpl)`), a FIFO. A pipe cannot be read a second time, so
// everything after this works on the bytes. ctx interrupts a read that waits on a writer.
func readFile(ctx context.Context, path string) ([]byte, error) {
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	files := make(chan *os.File, 1)
	go func() {
		// Opening a FIFO waits for its writer, so the open is in here too.
		f, err := os.Open(path)
		if err != nil {
			done <- result{nil, err}
			return
		}
		defer f.Close()
		files <- f
		b, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
		done <- result{b, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		// A pending read of a pipe returns once its file is closed; an open waiting for a FIFO's
		// writer cannot be cut short, and its goroutine ends when one comes (or with the process).
		select {
		case f := <-files:
			f.Close()
		default:
		}
		return nil, fmt.Errorf("reading config %s: %w", path, context.Cause(ctx))
	}
	if r.err != nil {
		return nil, fmt.Errorf("reading config %s: %w", path, r.err)
	}
	if len(r.b) > MaxFileBytes {
		return nil, fmt.Errorf("reading config %s: larger than %s, the most a config file may hold; is it the config?", path, Bytes(MaxFileBytes))
	}
	return r.b, nil
}

// parseYAML turns the document b into nested maps, the form the decoder walks. It refuses a second
// document (`---`), which the YAML parser would otherwise drop without a word, and reports every key
// given twice in one mapping by its key path (topics.readings.ttl) and both lines; the value given
// last is kept so the rest can still be checked. The walk is linear in the size of the document,
// where the parser's own decoding into maps compares every key of a mapping with every other.
func parseYAML(ctx context.Context, b []byte) (map[string]any, []error, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return map[string]any{}, nil, nil // an empty file: every key from the environment or its default
		}
		return nil, nil, err
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, nil, err
	default:
		line := next.Line
		if len(next.Content) > 0 {
			line = next.Content[0].Line
		}
		return nil, nil, fmt.Errorf("a second YAML document (after a \"---\" line) holds line %d; the config is one document and the parser would drop the second: merge the two, or split them into two files", line)
	}
	w := &yamlWalk{ctx: ctx}
	root := &doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return map[string]any{}, nil, nil
		}
		root = root.Content[0]
	}
	v, err := w.value("", root)
	if err != nil {
		return nil, nil, err
	}
	if v == nil {
		return map[string]any{}, w.dups, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, nil, fmt.Errorf("the document is %s, not a mapping of keys (kafka:, cassandra:, topics:, ...)", describe(v))
	}
	return m, w.dups, nil
}

type yamlWalk struct {
	ctx    context.Context
	values int
	dups   []error
}

func (w *yamlWalk) value(path string, n *yaml.Node) (any, error) {
	if w.values++; w.values%4096 == 0 {
		if err := w.ctx.Err(); err != nil {
			return nil, context.Cause(w.ctx)
		}
	}
	if w.values > maxValues {
		return nil, fmt.Errorf("the document holds more than %d values (through aliases, perhaps); is it the config?", maxValues)
	}
	switch n.Kind {
	case yaml.AliasNode:
		return w.value(path, n.Alias)
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, fmt.Errorf("line %d: %w", n.Line, err)
		}
		return v, nil
	case yaml.SequenceNode:
		out := make([]any, len(n.Content))
		for i, c := range n.Content {
			v, err := w.value(fmt.Sprintf("%s[%d]", path, i), c)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	case yaml.MappingNode:
		out := make(map[string]any, len(n.Content)/2)
		lines := make(map[string]int, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			if k.Tag == "!!merge" {
				// `<<: *base` takes the keys of base that this mapping does not give itself.
				if err := w.merge(path, out, val); err != nil {
					return nil, err
				}
				continue
			}
			p := joinPath(path, k.Value)
			if line, seen := lines[k.Value]; seen {
				where := fmt.Sprintf("lines %d and %d", line, k.Line)
				if line == k.Line {
					where = fmt.Sprintf("both on line %d", line)
				}
				w.dups = append(w.dups, &FieldError{p, "given twice in one mapping (" + where + "); keep one"})
			}
			lines[k.Value] = k.Line
			v, err := w.value(p, val)
			if err != nil {
				return nil, err
			}
			out[k.Value] = v
		}
		return out, nil
	}
	return nil, fmt.Errorf("line %d: unexpected YAML node", n.Line)
}

func (w *yamlWalk) merge(path string, out map[string]any, n *yaml.Node) error {
	v, err := w.value(path, n)
	if err != nil {
		return err
	}
	var from []any
	switch x := v.(type) {
	case map[string]any:
		from = []any{x}
	case []any:
		from = x
	default:
		return fmt.Errorf("line %d: a merge key (<<) takes a mapping or a list of mappings", n.Line)
	}
	for _, f := range from {
		m, ok := f.(map[string]any)
		if !ok {
			return fmt.Errorf("line %d: a merge key (<<) takes a mapping or a list of mappings", n.Line)
		}
		for k, v := range m {
			if _, given := out[k]; !given {
				out[k] = v
			}
		}
	}
	return nil
}
