package bench

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"regexp"
	"runtime/debug"
	"strings"
	"time"
)

// gitCommit names the commit being measured and whether the work tree had uncommitted changes.
// It asks git first (the harness usually runs from the work tree via `go run`, which does not stamp
// VCS information), then the build information of the binary.
func gitCommit() (string, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "git", "rev-parse", "HEAD").Output(); err == nil {
		dirty := false
		if st, err := exec.CommandContext(ctx, "git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil {
			dirty = len(strings.TrimSpace(string(st))) > 0
		}
		return strings.TrimSpace(string(out)), dirty
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		var rev string
		var dirty bool
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if rev != "" {
			return rev, dirty
		}
	}
	return "unknown", false
}

var javaVersionRE = regexp.MustCompile(`version "([^"]+)"`)

// javaVersion is the version of the java on PATH, which the local stack runs Kafka and Cassandra
// with.
func javaVersion(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "java", "-version").CombinedOutput()
	if err != nil {
		return "unknown"
	}
	if m := javaVersionRE.FindSubmatch(out); m != nil {
		return string(m[1])
	}
	return "unknown"
}

// cpuModel is the "model name" of the first CPU in /proc/cpuinfo, or "" when there is none.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
