package main

import (
	"bytes"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// sink runs the command line args as main does.
func sink(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := dispatch(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestVersionFlag guards against `sink --version` being an unknown command (exit 2).
func TestVersionFlag(t *testing.T) {
	want := "sink " + buildVersion() + " (" + runtime.Version() + ")\n"
	for _, args := range [][]string{{"--version"}, {"-version"}, {"version"}} {
		if code, out, errOut := sink(args...); code != exitOK || out != want || errOut != "" {
			t.Errorf("sink %v: exit %d, stdout %q, stderr %q; want 0 and %q", args, code, out, errOut, want)
		}
	}
}

// flagLineRE is a flag's line in a command's help: "  -name placeholder".
var flagLineRE = regexp.MustCompile(`(?m)^  -(\S+)(?: (.*))?$`)

// TestEveryCommandsHelpGoesToStdout guards against `sink help CMD` printing the list of commands
// instead of CMD's help, and against -h and --help printing it on stderr: each of the three prints
// the command's help on stdout and exits 0. The help opens with what the command does, then its
// usage; every flag's placeholder is one word (a backquoted phrase in a flag's text used to become
// it: "-read-format sink query").
func TestEveryCommandsHelpGoesToStdout(t *testing.T) {
	for name, c := range commands() {
		var first string
		for _, args := range [][]string{{"help", name}, {name, "--help"}, {name, "-h"}} {
			code, out, errOut := sink(args...)
			if code != exitOK || errOut != "" || out == "" {
				t.Errorf("sink %v: exit %d, %d bytes on stderr, %d on stdout; want 0, the help on stdout", args, code, len(errOut), len(out))
				continue
			}
			if first == "" {
				first = out
			} else if out != first {
				t.Errorf("sink %v prints another help than sink help %s", args, name)
			}
		}
		summary := c.summary
		if name == "gen" {
			summary = commands()["generate"].summary
			name = "generate"
		}
		if !strings.HasPrefix(first, "sink "+name+": "+summary+"\n\nUsage: sink "+name) {
			t.Errorf("sink help %s opens with %q; want the summary, then the usage", name, strings.SplitN(first, "\n", 4))
		}
		for _, m := range flagLineRE.FindAllStringSubmatch(first, -1) {
			if strings.Contains(m[2], " ") {
				t.Errorf("sink help %s: flag -%s shows the placeholder %q", name, m[1], m[2])
			}
		}
	}
	if code, out, _ := sink("help"); code != exitOK || !strings.Contains(out, "Commands:") {
		t.Errorf("sink help: exit %d, stdout %q", code, out)
	}
	if code, out, errOut := sink(); code != exitUsage || out != "" || !strings.Contains(errOut, "Commands:") {
		t.Errorf("sink without a command: exit %d, stdout %q, stderr %q; want 2 and the list on stderr", code, out, errOut)
	}
}

// TestUnknownFlagSuggestsTheOneMeant guards against a misspelt flag answered with the flag
// package's bare "flag provided but not defined" and the whole help on stderr: one line names the
// flag meant, as a misspelt config key does, and the next says where the flags are listed.
func TestUnknownFlagSuggestsTheOneMeant(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"validate", "--confg", "x.yaml"}, "sink validate: unknown flag --confg; did you mean --config?\nRun `sink help validate` for its flags.\n"},
		{[]string{"query", "--page-sise", "3"}, "sink query: unknown flag --page-sise; did you mean --page-size?\nRun `sink help query` for its flags.\n"},
		{[]string{"run", "--zzz"}, "sink run: unknown flag --zzz\nRun `sink help run` for its flags.\n"},
		{[]string{"plan", "--entities", "many"}, "sink plan: invalid value \"many\" for flag --entities: parse error\nRun `sink help plan` for its flags.\n"},
		{[]string{"schema", "--config", "a.yaml", "extra"}, "sink schema: unexpected argument \"extra\" (every value is given with its flag)\nRun `sink help schema` for its flags.\n"},
		{[]string{"valdiate"}, "sink: unknown command \"valdiate\"; did you mean \"validate\"?\nRun `sink help` for the list of commands.\n"},
		{[]string{"--config", "a.yaml"}, "sink: unknown flag --config; a command comes first, its flags after it: sink <command> [flags]\nRun `sink help` for the list of commands.\n"},
	} {
		code, out, errOut := sink(tc.args...)
		if code != exitUsage || out != "" || errOut != tc.want {
			t.Errorf("sink %q: exit %d, stdout %q, stderr %q; want 2 and %q", tc.args, code, out, errOut, tc.want)
		}
	}
}

// TestHelpSaysWhatExplainGenAndBenchDo: their usage lines no longer show flags with defaults as
// required (generate's --brokers and --topic), explain's --topic says --from-kafka supplies it, and
// bench's help says what it runs and on what.
func TestHelpSaysWhatExplainGenAndBenchDo(t *testing.T) {
	_, gen, _ := sink("help", "gen")
	usage := strings.SplitN(strings.SplitN(gen, "Usage: ", 2)[1], "\n", 2)[0]
	if !strings.Contains(usage, "[--brokers HOST:PORT]") || !strings.Contains(usage, "[--topic NAME]") {
		t.Errorf("generate's usage line shows flags with defaults as required: %q", usage)
	}
	if !strings.Contains(gen, "--topic (default sensor-readings)") || !strings.Contains(gen, "(default 127.0.0.1:9092)") {
		t.Errorf("generate's help does not say its defaults:\n%s", gen)
	}
	_, explain, _ := sink("help", "explain")
	if !strings.Contains(explain, "required but with --from-kafka") {
		t.Errorf("explain's --topic does not say --from-kafka supplies it:\n%s", explain)
	}
	_, bench, _ := sink("help", "bench")
	if !strings.Contains(bench, "Runs the benchmark of the sink on a running Kafka and Cassandra") ||
		!strings.Contains(bench, "-read-format string") {
		t.Errorf("bench's help:\n%s", bench)
	}
}
