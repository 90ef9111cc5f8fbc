package config

import (
	"reflect"
	"strings"
)

// Where a key's value came from, as Settings reports it.
const (
	FromDefault     = "default"     // the key was given nowhere: its default, or empty when it has none
	FromFile        = "file"        // the YAML file
	FromEnvironment = "environment" // a SINK_ variable, named in Setting.Env
)

// sources records, for a loaded Config, which keys the file and the environment gave.
type sources struct {
	env   map[string]string // key path → the SINK_ variable that set it
	given map[string]bool   // key paths given a value in the file or the environment
}

// Setting is one key of a loaded configuration: the value the daemon runs with and where it came
// from.
type Setting struct {
	Key    string `json:"key"`           // e.g. "kafka.group", "topics.readings.columns[0].name"
	Value  string `json:"value"`         // as a file would spell it; a set secret is "[redacted]"
	Source string `json:"source"`        // FromDefault, FromFile or FromEnvironment
	Env    string `json:"env,omitempty"` // the variable, when Source is FromEnvironment
}

// Settings lists every key of c with its value after defaults and SINK_ overrides and where it came
// from, in the order of the Config types (topics by name, list elements by index). Secrets show as
// "[redacted]". A password read from a password_file has that key's source. For a Config built in
// Go rather than loaded, every source is FromDefault.
func (c *Config) Settings() []Setting {
	src := c.sources
	if src == nil {
		src = &sources{}
	}
	var out []Setting
	walkKeys("", reflect.ValueOf(*c), true, func(path string, v reflect.Value) {
		s := Setting{Key: path, Value: formatValue(v), Source: FromDefault}
		from := path
		if strings.HasSuffix(path, ".password") && !src.given[path] && src.given[path+"_file"] {
			from = path + "_file"
		}
		if env, ok := src.env[from]; ok {
			s.Source, s.Env = FromEnvironment, env
		} else if src.given[from] {
			s.Source = FromFile
		}
		out = append(out, s)
	})
	return out
}
