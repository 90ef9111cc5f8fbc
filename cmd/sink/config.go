package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"text/tabwriter"

	"github.com/bucketsink/sink/config"
)

// configUsage is the help of `sink config` above its flags.
const configUsage = "Usage: sink config --config FILE [--format text|json]\n" +
	"\n" +
	"Prints the configuration `sink run --config FILE` would run with: every key, its value after\n" +
	"the defaults and the SINK_ overrides, and where it came from (default, file, or environment with\n" +
	"the variable). Secrets show as [redacted]. A config that does not validate prints its problems\n" +
	"as `sink validate` does and exits 3. The same JSON is served at /debug/config on metrics.address.\n"

// runConfig prints the effective configuration: every key, its value and where it came from.
func runConfig(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("config", configUsage, stdout, stderr)
	path := fs.configFlag("the YAML config file (required)")
	format := fs.formatFlag()
	if code, ok := fs.parse(args); !ok {
		return code
	}
	if code, ok := fs.require(requiredFlag{"config", *path}); !ok {
		return code
	}
	if code, ok := fs.oneOf("format", *format, "text", "json"); !ok {
		return code
	}
	cfg, code := loadConfig(ctx, *path, stderr)
	if cfg == nil {
		return code
	}
	if *format == "json" {
		if err := writeSettingsJSON(stdout, *path, cfg); err != nil {
			fmt.Fprintf(stderr, "sink config: %v\n", err)
			return exitFailure
		}
		return exitOK
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tVALUE\tSOURCE")
	for _, s := range cfg.Settings() {
		value := s.Value
		if value == "" {
			value = `""`
		}
		source := s.Source
		if s.Env != "" {
			source += " (" + s.Env + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Key, value, source)
	}
	if err := tw.Flush(); err != nil {
		return exitFailure
	}
	return exitOK
}

// settingsReport is the JSON of `sink config --format json` and of /debug/config.
type settingsReport struct {
	File     string           `json:"file,omitempty"`
	Settings []config.Setting `json:"settings"`
}

func writeSettingsJSON(w io.Writer, path string, cfg *config.Config) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(settingsReport{File: path, Settings: cfg.Settings()})
}

// configHandler serves /debug/config: the configuration the daemon runs with, as `sink config
// --format json` prints it.
func configHandler(cfg *config.Config) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = writeSettingsJSON(w, "", cfg)
	})
}
