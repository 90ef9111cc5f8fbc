package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/bucketsink/sink/config"
)

// validateUsage is the help of `sink validate` above its flags.
const validateUsage = "Usage: sink validate --config FILE [--format text|json]\n" +
	"\n" +
	"Loads FILE with the SINK_ environment overrides applied and checks it. Prints\n" +
	"\"config OK\" and exits 0, or prints every problem, one per line as key.path: problem,\n" +
	"on stderr and exits 3. Exits 2 on a usage error. A valid config may still print\n" +
	"warnings after \"config OK\" (\"warning: key.path: ...\"; credentials in clear, certificates\n" +
	"not verified, a key that lets rows overwrite each other); they do not change the exit code.\n" +
	"With --format json it prints one JSON object on stdout instead, valid or not (see docs/CONFIG.md).\n"

// runValidate loads and validates a config file and reports every problem at once.
func runValidate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("validate", validateUsage, stdout, stderr)
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
	if *format == "json" {
		return validateJSON(ctx, *path, stdout)
	}
	cfg, code := loadConfig(ctx, *path, stderr)
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

// validateReport is what `sink validate --format json` prints: one object, whatever the outcome.
type validateReport struct {
	File     string          `json:"file"`
	Valid    bool            `json:"valid"`
	Topics   []string        `json:"topics"`
	Problems []reportProblem `json:"problems"`
	Warnings []reportProblem `json:"warnings"`
}

// reportProblem is one problem or warning: the key path, the SINK_ variable that set it (when one
// did) and what is wrong. A problem of the whole file (unreadable, not YAML) has no key.
type reportProblem struct {
	Key     string `json:"key,omitempty"`
	Env     string `json:"env,omitempty"`
	Problem string `json:"problem"`
}

func validateJSON(ctx context.Context, path string, stdout io.Writer) int {
	r := validateReport{File: path, Topics: []string{}, Problems: []reportProblem{}, Warnings: []reportProblem{}}
	cfg, err := config.Check(ctx, path, os.Environ())
	for _, p := range config.Problems(err) {
		r.Problems = append(r.Problems, splitProblem(p))
	}
	code := exitConfig
	if cfg != nil {
		r.Valid, code = true, exitOK
		r.Topics = cfg.TopicNames()
		for _, w := range cfg.Warnings() {
			r.Warnings = append(r.Warnings, reportProblem{Key: w.Path, Problem: w.Problem})
		}
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return exitFailure
	}
	return code
}

// splitProblem takes "key.path (from SINK_X): problem" apart.
func splitProblem(line string) reportProblem {
	key, problem, ok := strings.Cut(line, ": ")
	if !ok || strings.HasPrefix(line, "reading config ") {
		return reportProblem{Problem: line}
	}
	if k, env, ok := strings.Cut(key, " (from "); ok && strings.HasSuffix(env, ")") {
		return reportProblem{Key: k, Env: strings.TrimSuffix(env, ")"), Problem: problem}
	}
	if strings.Contains(key, " ") {
		return reportProblem{Problem: line}
	}
	return reportProblem{Key: key, Problem: problem}
}

// loadConfig loads and validates path with the process environment. On failure it prints every
// problem, one per line, to stderr and returns nil with exitConfig. ctx interrupts the loading.
func loadConfig(ctx context.Context, path string, stderr io.Writer) (*config.Config, int) {
	cfg, err := config.Check(ctx, path, os.Environ())
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
