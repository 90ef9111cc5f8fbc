package testenv

import (
	"crypto/rand"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// MaxNameLen is the longest name Name returns: Cassandra's limit for keyspace and table names.
const MaxNameLen = 48

var (
	runIDOnce sync.Once
	runID     string
	nameSeq   atomic.Uint64
)

// processRunID is six random base-36 characters drawn once per test binary, so two runs (or two packages running
// at the same time) never produce the same name.
func processRunID() string {
	runIDOnce.Do(func() {
		const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
		var b [6]byte
		_, _ = rand.Read(b[:]) // crypto/rand.Read never returns an error since Go 1.24
		for i := range b {
			b[i] = alphabet[int(b[i])%len(alphabet)]
		}
		runID = string(b[:])
	})
	return runID
}

// Name returns a name unique to this call, this test and this run, valid unquoted as a Kafka topic and as a CQL
// identifier: lower-case [a-z0-9_], starting with a letter, at most MaxNameLen characters. It reads
// <prefix>_<test>_<run><n>, so a leftover topic or keyspace tells which test made it.
func Name(t testing.TB, prefix string) string {
	t.Helper()
	return makeName(prefix, t.Name(), processRunID(), nameSeq.Add(1))
}

func makeName(prefix, testName, run string, seq uint64) string {
	p := sanitize(prefix, 16)
	if p == "" || p[0] < 'a' || p[0] > 'z' {
		p = sanitize("t_"+p, 16)
	}
	// The last path element of a subtest is the most telling part of its name.
	if i := strings.LastIndexByte(testName, '/'); i >= 0 && i+1 < len(testName) {
		testName = testName[i+1:]
	}
	testName = strings.TrimPrefix(testName, "Test")
	parts := []string{p}
	if s := sanitize(testName, 12); s != "" {
		parts = append(parts, s)
	}
	parts = append(parts, run+strconv.FormatUint(seq, 10))
	name := strings.Join(parts, "_")
	if len(name) > MaxNameLen { // only reachable with an absurd sequence number; keep the unique tail
		name = name[len(name)-MaxNameLen:]
		name = "n" + strings.TrimLeft(name[1:], "_")
	}
	return name
}

// sanitize lower-cases s, maps every other character to '_', squeezes runs of '_', trims them at both ends and
// cuts the result to max bytes.
func sanitize(s string, max int) string {
	var b strings.Builder
	lastUnderscore := true // drops leading underscores
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
			lastUnderscore = false
		case !lastUnderscore:
			b.WriteByte('_')
			lastUnderscore = true
		}
		if b.Len() >= max {
			break
		}
	}
	out := b.String()
	if len(out) > max {
		out = out[:max]
	}
	return strings.TrimRight(out, "_")
}
