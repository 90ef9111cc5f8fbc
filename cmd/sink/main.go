// Command sink streams Kafka topics into time-bucketed Cassandra tables.
//
// Usage: sink <command> [flags]. Run `sink help` for the list of commands.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/internal/refusal"
)

// command is one subcommand. It returns the process exit code (see docs/DESIGN.md).
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

// Exit codes shared by every subcommand.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
	exitConfig  = 3
	exitBadData = 4
	exitNoFit   = 5
	// exitRefused: Kafka or Cassandra refused the connection for a cause only a configuration change
	// cures (credentials, certificates, TLS at one end only); see internal/refusal.
	exitRefused = 6
)

// failureCode is the exit code of a runtime failure: exitRefused for a refused connection, else
// exitFailure.
func failureCode(err error) int {
	if _, ok := errors.AsType[*refusal.Error](err); ok {
		return exitRefused
	}
	return exitFailure
}

func commands() map[string]command {
	return map[string]command{
		"version":  {"print the version and exit", runVersion},
		"run":      {"run the sink daemon: consume Kafka, write Cassandra, at least once", runRun},
		"init":     {"draft a topic's config from its registry schema or a sample of its records", runInit},
		"validate": {"check a config file and print every problem", runValidate},
		"config":   {"print the effective configuration: every key, its value and where it came from", runConfig},
		"schema":   {"print (and --apply) the CQL tables each topic's policy needs", runSchema},
		"explain":  {"show the partition, table and INSERT one record maps to", runExplain},
		"plan":     {"size partitions per bucket width for a write rate; judge a topic's policy", runPlan},
		"generate": {"produce sample sensor events to Kafka (demos, benchmarks)", runGenerate},
		"gen":      {"short for generate: produce sample sensor events to Kafka", runGenerate},
		"bench":    {"measure the sink end to end against the raw Cassandra ceiling", runBench},
		"query":    {"read one entity's rows back across buckets, a page at a time", runQuery},
	}
}

func main() {
	os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
}

func dispatch(args []string, stdout, stderr io.Writer) int {
	cmds := commands()
	if len(args) == 0 {
		usage(stderr, cmds)
		return exitUsage
	}
	name, rest := args[0], args[1:]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(rest) == 0 {
			usage(stdout, cmds)
			return exitOK
		}
		// `sink help CMD` is `sink CMD --help`.
		name, rest = rest[0], []string{"--help"}
	case "-version", "--version":
		name = "version"
	}
	c, ok := cmds[name]
	if !ok {
		return unknownCommand(name, cmds, stderr)
	}
	// The first SIGINT/SIGTERM cancels ctx; commands that need a second-signal hard stop (run)
	// install their own handling on top.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return c.run(ctx, rest, stdout, stderr)
}

// unknownCommand reports a name that is no command, with the one probably meant.
func unknownCommand(name string, cmds map[string]command, stderr io.Writer) int {
	if strings.HasPrefix(name, "-") {
		fmt.Fprintf(stderr, "sink: unknown flag %s; a command comes first, its flags after it: sink <command> [flags]\n", name)
	} else {
		names := slices.Sorted(maps.Keys(cmds))
		hint := ""
		if meant := config.Closest(name, names); meant != "" {
			hint = fmt.Sprintf("; did you mean %q?", meant)
		}
		fmt.Fprintf(stderr, "sink: unknown command %q%s\n", name, hint)
	}
	fmt.Fprintln(stderr, "Run `sink help` for the list of commands.")
	return exitUsage
}

func usage(w io.Writer, cmds map[string]command) {
	fmt.Fprintln(w, "sink streams Kafka topics into time-bucketed Cassandra tables.")
	fmt.Fprintln(w, "\nUsage: sink <command> [flags]\n\nCommands:")
	for _, n := range slices.Sorted(maps.Keys(cmds)) {
		fmt.Fprintf(w, "  %-10s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintln(w, "\nRun `sink help <command>` (or `sink <command> --help`) for a command's flags; `sink --version`")
	fmt.Fprintln(w, "prints the version.")
}
