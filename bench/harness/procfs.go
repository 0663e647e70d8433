package harness

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ (sysconf(_SC_CLK_TCK)), 100 on every Linux
// architecture Go supports.
const clockTicks = 100

// ProcStat is what the harness reads of one process.
type ProcStat struct {
	PID  int
	PPID int
	// CPUSeconds is utime+stime of the process itself (not its children).
	CPUSeconds float64
	// RSSBytes is the resident set now (VmRSS); PeakRSSBytes the high-water
	// mark over the process's life (VmHWM).
	RSSBytes, PeakRSSBytes int64
}

// parseStat parses the content of /proc/<pid>/stat: ppid, utime and stime.
func parseStat(b []byte) (ppid int, cpuSeconds float64, err error) {
	// "pid (comm) state ppid ...": comm may contain spaces and ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("unexpected /proc stat format: no ')'")
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); ppid is field 4, utime 14, stime 15.
	if len(f) < 13 {
		return 0, 0, fmt.Errorf("unexpected /proc stat format: %d fields after the command", len(f))
	}
	ppid, err = strconv.Atoi(f[1])
	if err != nil {
		return 0, 0, fmt.Errorf("/proc stat ppid %q: %w", f[1], err)
	}
	ut, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("/proc stat cpu times %q %q are not numbers", f[11], f[12])
	}
	return ppid, float64(ut+st) / clockTicks, nil
}

// parseStatus reads VmRSS and VmHWM (in kB) from /proc/<pid>/status.
func parseStatus(b []byte) (rss, hwm int64) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		var dst *int64
		switch {
		case strings.HasPrefix(line, "VmRSS:"):
			dst = &rss
		case strings.HasPrefix(line, "VmHWM:"):
			dst = &hwm
		default:
			continue
		}
		f := strings.Fields(line)
		if len(f) >= 2 {
			if v, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				*dst = v * 1024
			}
		}
	}
	return rss, hwm
}

// readProc reads one process from procRoot (normally /proc).
func readProc(procRoot string, pid int) (ProcStat, error) {
	dir := filepath.Join(procRoot, strconv.Itoa(pid))
	b, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return ProcStat{}, err
	}
	ppid, cpu, err := parseStat(b)
	if err != nil {
		return ProcStat{}, fmt.Errorf("pid %d: %w", pid, err)
	}
	ps := ProcStat{PID: pid, PPID: ppid, CPUSeconds: cpu}
	if b, err := os.ReadFile(filepath.Join(dir, "status")); err == nil {
		ps.RSSBytes, ps.PeakRSSBytes = parseStatus(b)
	}
	return ps, nil
}

// descendants returns root and every process below it, read from procRoot.
// Processes that vanish while it reads are skipped.
func descendants(procRoot string, root int) (map[int]ProcStat, error) {
	entries, err := os.ReadDir(procRoot)
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	all := map[int]ProcStat{}
	children := map[int][]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		ps, err := readProc(procRoot, pid)
		if err != nil {
			continue
		}
		all[pid] = ps
		children[ps.PPID] = append(children[ps.PPID], pid)
	}
	out := map[int]ProcStat{}
	if _, ok := all[root]; !ok {
		return out, nil
	}
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if _, seen := out[p]; seen {
			continue
		}
		out[p] = all[p]
		queue = append(queue, children[p]...)
	}
	return out, nil
}

// MachineCPU is the machine-wide CPU time from /proc/stat, in seconds.
type MachineCPU struct {
	Busy, Idle, Steal float64
}

// parseMachineCPU parses the "cpu" line of /proc/stat.
func parseMachineCPU(b []byte) (MachineCPU, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 9 || f[0] != "cpu" {
			continue
		}
		var v [8]float64
		for i := range v {
			n, err := strconv.ParseUint(f[i+1], 10, 64)
			if err != nil {
				return MachineCPU{}, fmt.Errorf("/proc/stat cpu field %d %q: %w", i+1, f[i+1], err)
			}
			v[i] = float64(n) / clockTicks
		}
		// user nice system idle iowait irq softirq steal
		return MachineCPU{
			Busy:  v[0] + v[1] + v[2] + v[5] + v[6],
			Idle:  v[3] + v[4],
			Steal: v[7],
		}, nil
	}
	return MachineCPU{}, fmt.Errorf("/proc/stat has no cpu line")
}

func readMachineCPU(procRoot string) (MachineCPU, error) {
	b, err := os.ReadFile(filepath.Join(procRoot, "stat"))
	if err != nil {
		return MachineCPU{}, err
	}
	return parseMachineCPU(b)
}

// VmRSS returns the resident set of pid in bytes.
func VmRSS(pid int) (int64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	rss, _ := parseStatus(b)
	return rss, true
}

// ProcStart returns the start time (clock ticks after boot) of a running,
// non-zombie process: with the pid, it names the process across pid
// reuse.
func ProcStart(pid int) (uint64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// After the command name in parentheses: state is the first field,
	// starttime the 20th.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return 0, false
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	return start, err == nil
}

// ReadProc reads the CPU time and memory of one process from /proc.
func ReadProc(pid int) (ProcStat, error) { return readProc("/proc", pid) }
