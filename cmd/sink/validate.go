package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/bucketsink/sink/config"
)

// runValidate loads and validates a config file and reports every problem at once.
func runValidate(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: sink validate --config FILE")
		fmt.Fprintln(stderr, "\nLoads FILE with the SINK_ environment overrides applied and checks it. Prints")
		fmt.Fprintln(stderr, "\"config OK\" and exits 0, or prints every problem, one per line as key.path: problem,")
		fmt.Fprintln(stderr, "on stderr and exits 3. Exits 2 on a usage error. A valid config may still print")
		fmt.Fprintln(stderr, "warnings after \"config OK\" (\"warning: key.path: ...\"; credentials in clear, certificates")
		fmt.Fprintln(stderr, "not verified, a key that lets rows overwrite each other); they do not change the exit code.")
		fmt.Fprintln(stderr, "\nFlags:")
		fs.PrintDefaults()
	}
	path := fs.String("config", "", "the YAML config file (required)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "sink validate: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	if *path == "" {
		fmt.Fprintln(stderr, "sink validate: --config is required")
		return exitUsage
	}
	cfg, code := loadConfig(*path, stderr)
	if cfg == nil {
		return code
	}
	names := cfg.TopicNames()
	fmt.Fprintf(stdout, "config OK: %d %s (%s)\n", len(names), plural(len(names), "topic", "topics"), strings.Join(names, ", "))
	for _, w := range cfg.Warnings() {
		fmt.Fprintf(stdout, "warning: %s\n", w.Error())
	}
	return exitOK
}

// loadConfig loads and validates path with the process environment. On failure it prints every
// problem, one per line, to stderr and returns nil with exitConfig.
func loadConfig(path string, stderr io.Writer) (*config.Config, int) {
	cfg, err := config.Load(path, os.Environ())
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		problems := config.Problems(err)
		for _, p := range problems {
			fmt.Fprintln(stderr, p)
		}
		fmt.Fprintf(stderr, "%s: %d %s\n", path, len(problems), plural(len(problems), "problem", "problems"))
		return nil, exitConfig
	}
	return cfg, exitOK
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
