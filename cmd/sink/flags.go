package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/bucketsink/sink/config"
)

// cmdFlags is a subcommand's flag set with what every subcommand shares, declared here once: its
// help on standard output (-h, --help, `sink help CMD`), a bad flag reported on standard error in
// one line with the flag probably meant, no positional arguments, and the --config flag.
type cmdFlags struct {
	*flag.FlagSet
	name           string // as `sink help` lists it
	usage          string // the lines above the flags: "Usage: ..." and what the command does
	stdout, stderr io.Writer
}

// newFlags starts the flags of subcommand name. usage is its help text above the list of flags: the
// "Usage:" line(s), then what the command does.
func newFlags(name, usage string, stdout, stderr io.Writer) *cmdFlags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // parse reports errors itself, in one line
	return &cmdFlags{FlagSet: fs, name: name, usage: strings.TrimSpace(usage), stdout: stdout, stderr: stderr}
}

// configFlag declares --config FILE; help says what this command reads from it.
func (f *cmdFlags) configFlag(help string) *string {
	return f.String("config", "", help)
}

// printHelp writes the command's summary, its usage text and its flags to w.
func (f *cmdFlags) printHelp(w io.Writer) {
	if c, ok := commands()[f.name]; ok {
		fmt.Fprintf(w, "sink %s: %s\n\n", f.name, c.summary)
	}
	fmt.Fprintln(w, f.usage)
	fmt.Fprintln(w, "\nFlags:")
	f.SetOutput(w)
	f.PrintDefaults()
	f.SetOutput(io.Discard)
}

// parse parses args. ok is false when the command must return code at once: exitOK after the help
// was printed, exitUsage after a bad flag or an argument (said on stderr, with the flag probably
// meant).
func (f *cmdFlags) parse(args []string) (code int, ok bool) {
	err := f.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		f.printHelp(f.stdout)
		return exitOK, false
	case err != nil:
		return f.flagError("%s", f.explain(err)), false
	case f.NArg() > 0:
		return f.flagError("unexpected argument %q (every value is given with its flag)", f.Arg(0)), false
	}
	return exitOK, true
}

// flagError is usageError for a flag the command does not take, adding where its flags are listed.
func (f *cmdFlags) flagError(format string, args ...any) int {
	f.usageError(format, args...)
	fmt.Fprintf(f.stderr, "Run `sink help %s` for its flags.\n", f.name)
	return exitUsage
}

// explain rewrites the flag package's error for a flag it does not know, naming the one probably
// meant as config keys do.
func (f *cmdFlags) explain(err error) string {
	const unknown = "flag provided but not defined: -"
	name, isUnknown := strings.CutPrefix(err.Error(), unknown)
	if !isUnknown {
		return strings.Replace(err.Error(), " for flag -", " for flag --", 1)
	}
	var names []string
	f.VisitAll(func(fl *flag.Flag) { names = append(names, fl.Name) })
	msg := fmt.Sprintf("unknown flag --%s", name)
	if meant := config.Closest(name, names); meant != "" {
		msg += fmt.Sprintf("; did you mean --%s?", meant)
	}
	return msg
}

// usageError reports a usage error of the command on stderr, in one line, and returns exitUsage.
func (f *cmdFlags) usageError(format string, args ...any) int {
	fmt.Fprintf(f.stderr, "sink %s: %s\n", f.name, fmt.Sprintf(format, args...))
	return exitUsage
}

// require reports a usage error naming every flag of names that was not given ("" value).
func (f *cmdFlags) require(flags ...requiredFlag) (int, bool) {
	for _, r := range flags {
		if r.value == "" {
			return f.usageError("--%s is required", r.name), false
		}
	}
	return exitOK, true
}

// formatFlag declares --format: text, or json for machines.
func (f *cmdFlags) formatFlag() *string {
	return f.String("format", "text", "text, or json for machines")
}

// oneOf reports a usage error when flag name's value is none of allowed.
func (f *cmdFlags) oneOf(name, value string, allowed ...string) (int, bool) {
	for _, a := range allowed {
		if value == a {
			return exitOK, true
		}
	}
	return f.usageError("--%s %q: use %s", name, value, strings.Join(allowed, " or ")), false
}

// requiredFlag is a flag that must be given, and its value.
type requiredFlag struct{ name, value string }
