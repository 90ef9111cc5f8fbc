package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// daemon is a sink process started by the harness: `sink run` or the discard daemon.
type daemon struct {
	name    string
	cmd     *exec.Cmd
	metrics string // host:port of its metrics server
	logPath string
	started time.Time
	exited  chan struct{}
	waitErr error
}

// freeAddr returns a loopback address with a port nobody listens on right now.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("finding a free port for the daemon's metrics: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// startDaemon runs bin with args, its output going to a log file in dir.
func startDaemon(name, bin string, args []string, metrics, dir string, env []string) (*daemon, error) {
	logPath := filepath.Join(dir, name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("creating the %s log: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), env...)
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("starting %s %s: %w", bin, strings.Join(args, " "), err)
	}
	d := &daemon{name: name, cmd: cmd, metrics: metrics, logPath: logPath, started: time.Now(), exited: make(chan struct{})}
	go func() {
		d.waitErr = cmd.Wait()
		logf.Close()
		close(d.exited)
	}()
	return d, nil
}

func (d *daemon) pid() int { return d.cmd.Process.Pid }

// failure describes an early exit with the end of the daemon's log, which says why.
func (d *daemon) failure() error {
	return fmt.Errorf("%s exited early (%v); last lines of %s:\n%s", d.name, d.waitErr, d.logPath, tail(d.logPath, 20))
}

// waitReady polls /readyz until the daemon answers 200 (group joined and Cassandra reachable).
func (d *daemon) waitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-d.exited:
			return d.failure()
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s to be ready on http://%s/readyz: %w; last lines of %s:\n%s",
				d.name, d.metrics, ctx.Err(), d.logPath, tail(d.logPath, 20))
		case <-tick.C:
		}
		resp, err := client.Get("http://" + d.metrics + "/readyz")
		if err != nil {
			continue
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return nil
		}
	}
}

// stop sends SIGTERM and waits for a clean exit; after grace it kills the process.
func (d *daemon) stop(grace time.Duration) error {
	select {
	case <-d.exited:
		return d.exitError()
	default:
	}
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stopping %s: %w", d.name, err)
	}
	select {
	case <-d.exited:
		return d.exitError()
	case <-time.After(grace):
		d.cmd.Process.Kill()
		<-d.exited
		return fmt.Errorf("%s did not stop within %v of SIGTERM and was killed; log %s", d.name, grace, d.logPath)
	}
}

func (d *daemon) exitError() error {
	if d.waitErr != nil {
		return fmt.Errorf("%s exited with %v; last lines of %s:\n%s", d.name, d.waitErr, d.logPath, tail(d.logPath, 20))
	}
	return nil
}

// metricSum scrapes /metrics and returns the sum of every sample of the named metric across its
// label sets, and whether the metric was present.
func (d *daemon) metricSum(ctx context.Context, name string) (float64, bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+d.metrics+"/metrics", nil)
	if err != nil {
		return 0, false, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, false, fmt.Errorf("scraping %s metrics: %w", d.name, err)
	}
	defer resp.Body.Close()
	sum, found := sumSamples(resp.Body, name)
	return sum, found, nil
}

// gaugeMeans samples gauges of a daemon while a phase runs and averages them, to show where its rows
// were while it ran (open batches, bytes held against the budget, writes in flight).
type gaugeMeans struct {
	names []string
	sums  []float64
	n     int
}

func newGaugeMeans(names ...string) *gaugeMeans {
	return &gaugeMeans{names: names, sums: make([]float64, len(names))}
}

// sample scrapes the daemon once and adds every gauge's current value. A failed scrape is skipped:
// the figures are diagnostics, not the measurement.
func (g *gaugeMeans) sample(ctx context.Context, d *daemon) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+d.metrics+"/metrics", nil)
	if err != nil {
		return
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return
	}
	for i, name := range g.names {
		v, _ := sumSamples(bytes.NewReader(body), name)
		g.sums[i] += v
	}
	g.n++
}

// mean returns the average of the i-th gauge, or 0 without samples.
func (g *gaugeMeans) mean(i int) float64 {
	if g.n == 0 {
		return 0
	}
	return g.sums[i] / float64(g.n)
}

// sumSamples adds up the samples of one metric in the Prometheus text format.
func sumSamples(r io.Reader, name string) (float64, bool) {
	var sum float64
	found := false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, name)
		if !ok || (rest != "" && rest[0] != '{' && rest[0] != ' ') {
			continue
		}
		if i := strings.LastIndexByte(rest, '}'); i >= 0 {
			rest = rest[i+1:]
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		sum += v
		found = true
	}
	return sum, found
}

// tail returns the last n lines of a file, for error messages.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
