package config

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"

	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/file"
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
// os.Environ()), reads password files and fills defaults. It reports every unknown key and
// every value of the wrong type at once, joined. It does not check the values against each
// other: call Validate for that.
func Load(path string, environ []string) (*Config, error) {
	if b, err := os.ReadFile(path); err == nil {
		if dups := duplicateKeys(b); len(dups) > 0 {
			return nil, errors.Join(dups...)
		}
	}
	k := koanf.New(".")
	if err := k.Load(file.Provider(path), yaml.Parser()); err != nil {
		return nil, fmt.Errorf("reading config %s: %w", path, err)
	}
	overrides, origin, problems := envOverrides(environ, k.Raw())
	if len(overrides) > 0 {
		if err := k.Load(mapProvider(overrides), nil); err != nil {
			return nil, fmt.Errorf("applying environment overrides: %w", err)
		}
	}
	d := &decoder{origin: origin, set: make(map[string]bool)}
	d.problems = problems
	var c Config
	d.decode("", k.Raw(), reflect.ValueOf(&c).Elem())
	if len(d.problems) > 0 {
		return nil, errors.Join(d.problems...)
	}
	if err := c.readPasswordFiles(); err != nil {
		return nil, err
	}
	c.applyDefaults(func(path string, zero bool) bool { return !d.set[path] })
	return &c, nil
}

// readPasswordFiles replaces each password with the content of its password_file, so secrets
// can live in a mounted file rather than in the YAML or the process environment.
func (c *Config) readPasswordFiles() error {
	var errs []error
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
	return errors.Join(errs...)
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
