package bench

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// procSample is what /proc says about one process at one instant.
type procSample struct {
	At  time.Time
	CPU time.Duration // user + system time since the process started
}

// clockTicks is the kernel's USER_HZ, the unit of utime and stime in /proc/<pid>/stat. It is read
// from the auxiliary vector (AT_CLKTCK) because asking sysconf needs cgo; 100 is what every Linux
// on x86-64 and arm64 reports, and the fallback if auxv cannot be read.
var clockTicks = func() int64 {
	const atClkTck = 17
	b, err := os.ReadFile("/proc/self/auxv")
	if err != nil {
		return 100
	}
	for len(b) >= 16 {
		key := binary.NativeEndian.Uint64(b[:8])
		val := binary.NativeEndian.Uint64(b[8:16])
		if key == atClkTck && val > 0 {
			return int64(val)
		}
		if key == 0 {
			break
		}
		b = b[16:]
	}
	return 100
}()

// readCPU returns the user+system CPU time a process has used so far.
func readCPU(pid int) (procSample, error) {
	now := time.Now()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procSample{}, fmt.Errorf("reading CPU time of process %d: %w", pid, err)
	}
	cpu, err := parseStatCPU(b)
	if err != nil {
		return procSample{}, fmt.Errorf("reading CPU time of process %d: %w", pid, err)
	}
	return procSample{At: now, CPU: cpu}, nil
}

// parseStatCPU extracts utime+stime from the contents of /proc/<pid>/stat. The command name in
// field 2 may contain spaces and parentheses, so fields are counted after the last ')'.
func parseStatCPU(stat []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("no ')' in stat line %q", stat)
	}
	f := strings.Fields(string(stat[i+1:]))
	// f[0] is field 3 (state), so utime (field 14) is f[11] and stime (field 15) is f[12].
	if len(f) < 13 {
		return 0, fmt.Errorf("stat line has %d fields after the command name, want at least 13", len(f))
	}
	utime, err := strconv.ParseInt(f[11], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parsing utime %q: %w", f[11], err)
	}
	stime, err := strconv.ParseInt(f[12], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parsing stime %q: %w", f[12], err)
	}
	return time.Duration(utime+stime) * time.Second / time.Duration(clockTicks), nil
}

// readPeakRSS returns the process's peak resident set size (VmHWM) in bytes.
func readPeakRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("reading peak RSS of process %d: %w", pid, err)
	}
	n, err := parseStatusKB(b, "VmHWM")
	if err != nil {
		return 0, fmt.Errorf("reading peak RSS of process %d: %w", pid, err)
	}
	return n, nil
}

// parseStatusKB returns the value of a "Name:   123 kB" line of /proc/<pid>/status, in bytes.
func parseStatusKB(status []byte, name string) (int64, error) {
	for line := range strings.Lines(string(status)) {
		rest, ok := strings.CutPrefix(line, name+":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("unexpected %s line %q", name, strings.TrimSpace(line))
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parsing %s %q: %w", name, f[0], err)
		}
		return kb * 1024, nil
	}
	return 0, fmt.Errorf("no %s line in /proc status", name)
}

// machineSample is the CPU time the whole machine has spent busy and in total, from /proc/stat.
type machineSample struct {
	At          time.Time
	Busy, Total time.Duration
}

// readMachine reads the aggregate "cpu" line of /proc/stat. Busy is everything but idle and iowait.
func readMachine() (machineSample, error) {
	now := time.Now()
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineSample{}, fmt.Errorf("reading machine CPU time: %w", err)
	}
	busy, total, err := parseProcStat(b)
	if err != nil {
		return machineSample{}, fmt.Errorf("reading machine CPU time: %w", err)
	}
	return machineSample{At: now, Busy: busy, Total: total}, nil
}

func parseProcStat(stat []byte) (busy, total time.Duration, err error) {
	for line := range strings.Lines(string(stat)) {
		rest, ok := strings.CutPrefix(line, "cpu ")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 5 {
			return 0, 0, fmt.Errorf("cpu line %q has %d fields, want at least 5", strings.TrimSpace(line), len(f))
		}
		var sum, idle int64
		// user nice system idle iowait irq softirq steal [guest guest_nice]; guest time is already
		// counted in user, so only the first eight are added up.
		for i := 0; i < len(f) && i < 8; i++ {
			v, err := strconv.ParseInt(f[i], 10, 64)
			if err != nil {
				return 0, 0, fmt.Errorf("parsing field %d of the cpu line: %w", i+1, err)
			}
			sum += v
			if i == 3 || i == 4 {
				idle += v
			}
		}
		tick := time.Second / time.Duration(clockTicks)
		return time.Duration(sum-idle) * tick, time.Duration(sum) * tick, nil
	}
	return 0, 0, fmt.Errorf("no aggregate cpu line in /proc/stat")
}

// coresBusy is how many cores the machine kept busy on average between two samples.
func coresBusy(a, b machineSample) float64 {
	wall := b.At.Sub(a.At)
	if wall <= 0 {
		return 0
	}
	return float64(b.Busy-a.Busy) / float64(wall)
}
