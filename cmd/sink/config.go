package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"text/tabwriter"

	"github.com/bucketsink/sink/config"
)

// runConfig prints the effective configuration: every key, its value and where it came from.
func runConfig(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("config", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: sink config --config FILE [--format text|json]")
		fmt.Fprintln(stderr, "\nPrints the configuration `sink run --config FILE` would run with: every key, its value after")
		fmt.Fprintln(stderr, "the defaults and the SINK_ overrides, and where it came from (default, file, or environment with")
		fmt.Fprintln(stderr, "the variable). Secrets show as [redacted]. A config that does not validate prints its problems")
		fmt.Fprintln(stderr, "as `sink validate` does and exits 3. The same JSON is served at /debug/config on metrics.address.")
		fmt.Fprintln(stderr, "\nFlags:")
		fs.PrintDefaults()
	}
	path := fs.String("config", "", "the YAML config file (required)")
	format := fs.String("format", "text", "text, or json for machines")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 || *path == "" {
		fmt.Fprintln(stderr, "sink config: --config FILE is required and takes no arguments")
		return exitUsage
	}
	if *format != "text" && *format != "json" {
		fmt.Fprintf(stderr, "sink config: --format %q: use text or json\n", *format)
		return exitUsage
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
