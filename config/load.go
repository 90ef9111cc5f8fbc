package config

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"

	"github.com/knadh/koanf/v2"
)

// EnvPrefix starts every environment variable that overrides a config key.
const EnvPrefix = "SINK_"

// envSeparator separates nesting levels in a variable name. Keys themselves contain single
// underscores (batch_max_rows), so a single underscore cannot be the separator.
const envSeparator = "__"

// FieldError is one problem with one configuration key.
type FieldError struct {
	Path    string // the key path, e.g. "topics.readings.bucket.width"
	Problem string // what is wrong and how to fix it
}

func (e *FieldError) Error() string { return e.Path + ": " + e.Problem }

// Load reads the YAML file at path, applies the SINK_ overrides found in environ (normally
// os.Environ()), reads password files and fills defaults. It reports every unknown key, every value
// of the wrong type, every key given twice and every unreadable password file at once, joined. It
// does not check the values against each other: call Validate for that, or Check for both.
func Load(path string, environ []string) (*Config, error) {
	return LoadContext(context.Background(), path, environ)
}

// LoadContext is Load that ctx interrupts: a read waiting on a pipe, or the parse of a large file.
func LoadContext(ctx context.Context, path string, environ []string) (*Config, error) {
	l, err := load(ctx, path, environ)
	if err != nil {
		return nil, err
	}
	if len(l.problems) > 0 {
		return nil, errors.Join(l.problems...)
	}
	return l.cfg, nil
}

// Check loads the config at path as LoadContext does and validates it, reporting every problem of
// both in one error: a key of the wrong type, an unknown key or a missing password file does not
// hide the problems of the other keys. A problem about a key set from the environment names the
// variable. Validate's findings about a key that could not be loaded are left out: they would only
// repeat, less clearly, that its value is missing.
func Check(ctx context.Context, path string, environ []string) (*Config, error) {
	l, err := load(ctx, path, environ)
	if err != nil {
		return nil, err
	}
	problems := l.problems
	var found []error
	if j, ok := l.cfg.Validate().(interface{ Unwrap() []error }); ok {
		found = j.Unwrap()
	}
	for _, e := range found {
		fe, ok := e.(*FieldError)
		if !ok {
			problems = append(problems, e)
			continue
		}
		if l.coveredByLoadProblem(fe.Path) {
			continue
		}
		if env := l.envOf(fe.Path); env != "" {
			fe = &FieldError{Path: fe.Path + " (from " + env + ")", Problem: fe.Problem}
		}
		problems = append(problems, fe)
	}
	if len(problems) > 0 {
		return nil, errors.Join(problems...)
	}
	return l.cfg, nil
}

// loaded is a config as read, with what is known of where each key came from.
type loaded struct {
	cfg *Config
	// origin maps a key path set from the environment to the variable that set it.
	origin map[string]string
	// set holds every key path given a value in the file or the environment.
	set map[string]bool
	// problems are those found while loading; bad are their key paths.
	problems []error
	bad      []string
}

// load reads, decodes and defaults the config, collecting every problem of a key instead of
// stopping at the first. Its error is for a config that cannot be read at all: an unreadable or
// oversized file, a document that is not YAML, an interruption.
func load(ctx context.Context, path string, environ []string) (*loaded, error) {
	b, err := readFile(ctx, path)
	if err != nil {
		return nil, err
	}
	raw, dups, err := parseYAML(ctx, b)
	if err != nil {
		return nil, fmt.Errorf("reading config %s: %w", path, err)
	}
	k := koanf.New(".")
	if err := k.Load(mapProvider(raw), nil); err != nil {
		return nil, fmt.Errorf("reading config %s: %w", path, err)
	}
	overrides, origin, problems := envOverrides(environ, raw)
	if len(overrides) > 0 {
		if err := k.Load(mapProvider(overrides), nil); err != nil {
			return nil, fmt.Errorf("applying environment overrides: %w", err)
		}
	}
	d := &decoder{ctx: ctx, origin: origin, set: make(map[string]bool)}
	d.problems = append(dups, problems...)
	for _, e := range dups {
		if fe, ok := e.(*FieldError); ok {
			d.bad = append(d.bad, fe.Path)
		}
	}
	var c Config
	d.decode("", k.Raw(), reflect.ValueOf(&c).Elem())
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("reading config %s: %w", path, context.Cause(ctx))
	}
	for _, e := range c.readPasswordFiles() {
		d.problems = append(d.problems, e)
		d.bad = append(d.bad, strings.TrimSuffix(e.Path, "_file"), e.Path)
	}
	c.applyDefaults(func(path string, zero bool) bool { return !d.set[path] })
	c.sources = &sources{env: origin, given: d.set}
	return &loaded{cfg: &c, origin: origin, set: d.set, problems: d.problems, bad: d.bad}, nil
}

// coveredByLoadProblem reports whether path is, or lies above or below, a key whose loading
// failed.
func (l *loaded) coveredByLoadProblem(path string) bool {
	for _, b := range l.bad {
		if path == b || strings.HasPrefix(path, b+".") || strings.HasPrefix(path, b+"[") ||
			strings.HasPrefix(b, path+".") || strings.HasPrefix(b, path+"[") {
			return true
		}
	}
	return false
}

// envOf names the variable that set path, or the list path is an element of.
func (l *loaded) envOf(path string) string {
	if env, ok := l.origin[path]; ok {
		return env
	}
	if i := strings.LastIndexByte(path, '['); i > 0 && strings.HasSuffix(path, "]") {
		return l.origin[path[:i]]
	}
	return ""
}

// readPasswordFiles replaces each password with the content of its password_file, so secrets
// can live in a mounted file rather than in the YAML or the process environment.
func (c *Config) readPasswordFiles() []*FieldError {
	var errs []*FieldError
	read := func(path, file string, dst *Secret) {
		if file == "" {
			return
		}
		b, err := os.ReadFile(file)
		if err != nil {
			errs = append(errs, &FieldError{path, fmt.Sprintf("cannot read the password file: %v", err)})
			return
		}
		// Secret files written by editors and by `kubectl create secret --from-file` often end
		// in a newline that is not part of the password.
		s := strings.TrimRight(string(b), "\r\n")
		if s == "" {
			errs = append(errs, &FieldError{path, fmt.Sprintf("the password file %s is empty", file)})
			return
		}
		*dst = Secret(s)
	}
	read("kafka.sasl.password_file", c.Kafka.SASL.PasswordFile, &c.Kafka.SASL.Password)
	read("cassandra.auth.password_file", c.Cassandra.Auth.PasswordFile, &c.Cassandra.Auth.Password)
	read("schema_registry.auth.password_file", c.SchemaRegistry.Auth.PasswordFile, &c.SchemaRegistry.Auth.Password)
	return errs
}

// mapProvider hands an already nested map to koanf.
type mapProvider map[string]any

func (m mapProvider) ReadBytes() ([]byte, error) {
	return nil, errors.New("config: the environment provider has no bytes")
}
func (m mapProvider) Read() (map[string]any, error) { return m, nil }

// envOverrides turns SINK_ variables into a nested map to merge over the file. A variable names
// a key path with "__" between levels: SINK_WRITER__MAX_IN_FLIGHT is writer.max_in_flight and
// SINK_TOPICS__READINGS__BUCKET__WIDTH is topics.readings.bucket.width. Each level matches an
// existing key of the file case-insensitively with "-" and "." read as "_", so
// SINK_TOPICS__SENSOR_READINGS__TTL reaches a topic named sensor-readings.
//
// Only variables whose first level is a section of Config are configuration; other SINK_
// variables (SINK_TEST_KAFKA used by tests, for instance) are left alone, except one that looks
// like a section with a single underscore (SINK_KAFKA_BROKERS), which is reported because it is
// almost certainly a misspelt override.
func envOverrides(environ []string, file map[string]any) (map[string]any, map[string]string, []error) {
	sections := structKeys(reflect.TypeFor[Config]())
	out := map[string]any{}
	origin := map[string]string{}
	var problems []error
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(name, EnvPrefix) {
			continue
		}
		parts := strings.Split(strings.ToLower(name[len(EnvPrefix):]), envSeparator)
		if _, ok := sections[parts[0]]; !ok {
			for s := range sections {
				if strings.HasPrefix(parts[0], s+"_") {
					problems = append(problems, &FieldError{name, fmt.Sprintf(
						"not a config key: levels are separated by a double underscore, e.g. %s%s%s%s",
						EnvPrefix, strings.ToUpper(s), envSeparator, strings.ToUpper(parts[0][len(s)+1:]))})
					break
				}
			}
			continue
		}
		if len(parts) == 1 || slices.Contains(parts, "") {
			problems = append(problems, &FieldError{name, fmt.Sprintf(
				"not a config key: name a key inside the section, levels separated by a double underscore, e.g. %sKAFKA%sBROKERS",
				EnvPrefix, envSeparator)})
			continue
		}
		// Resolve each level against the file so the override lands on the key it means.
		level := file
		for i, p := range parts {
			if level == nil {
				break
			}
			for existing := range level {
				if envName(existing) == p {
					parts[i] = existing
					break
				}
			}
			next, _ := level[parts[i]].(map[string]any)
			level = next
		}
		m := out
		for _, p := range parts[:len(parts)-1] {
			next, ok := m[p].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[p] = next
			}
			m = next
		}
		m[parts[len(parts)-1]] = value
		origin[strings.Join(parts, ".")] = name
	}
	return out, origin, problems
}

// envName is how a key of the file is spelt in a variable name.
func envName(key string) string {
	return strings.NewReplacer("-", "_", ".", "_").Replace(strings.ToLower(key))
}
