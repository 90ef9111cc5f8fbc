package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version is stamped at build time: -ldflags "-X main.version=v1.2.3".
var version = "dev"

func buildVersion() string {
	if version != "dev" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return version
}

// versionUsage is the help of `sink version` above its flags.
const versionUsage = "Usage: sink version (or sink --version)\n\nPrints the version of this binary and of the Go it was built with."

func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("version", versionUsage, stdout, stderr)
	if code, ok := fs.parse(args); !ok {
		return code
	}
	fmt.Fprintf(stdout, "sink %s (%s)\n", buildVersion(), runtime.Version())
	return exitOK
}
