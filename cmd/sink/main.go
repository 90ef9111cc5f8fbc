// Command sink streams Kafka topics into time-bucketed Cassandra tables.
//
// Usage: sink <command> [flags]. Run `sink help` for the list of commands.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"

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
		"validate": {"check a config file and print every problem", runValidate},
		"config":   {"print the effective configuration: every key, its value and where it came from", runConfig},
		"schema":   {"print (and --apply) the CQL tables each topic's policy needs", runSchema},
		"explain":  {"show the partition, table and INSERT one record maps to", runExplain},
		"plan":     {"size partitions per bucket width for a write rate; judge a topic's policy", runPlan},
		"generate": {"produce sample sensor events to Kafka (demos, benchmarks)", runGenerate},
		"gen":      {"short for generate", runGenerate},
		"bench":    {"measure the sink end to end against the raw Cassandra ceiling", runBench},
		"query":    {"read one entity's rows back across buckets, a page at a time", runQuery},
	}
}

func main() {
	os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
}

func dispatch(args []string, stdout, stderr io.Writer) int {
	cmds := commands()
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout, cmds)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	c, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "sink: unknown command %q\n\n", args[0])
		usage(stderr, cmds)
		return exitUsage
	}
	// The first SIGINT/SIGTERM cancels ctx; commands that need a second-signal hard stop (run)
	// install their own handling on top.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return c.run(ctx, args[1:], stdout, stderr)
}

func usage(w io.Writer, cmds map[string]command) {
	fmt.Fprintln(w, "sink streams Kafka topics into time-bucketed Cassandra tables.")
	fmt.Fprintln(w, "\nUsage: sink <command> [flags]\n\nCommands:")
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintln(w, "\nRun `sink <command> -h` for a command's flags.")
}

// parseFlags parses args into fs. ok is false when the command must return code at once: exitOK
// after -h (the usage was printed), exitUsage for a bad flag (the flag package printed why).
func parseFlags(fs *flag.FlagSet, args []string) (code int, ok bool) {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return exitOK, true
	case errors.Is(err, flag.ErrHelp):
		return exitOK, false
	}
	return exitUsage, false
}
