package harness

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// ProfileOptions ask for a CPU profile of the engine's data path (stream
// managers and instances) with Linux perf, taken after the first run's
// window so it does not disturb the measurement. The daemons do not serve
// pprof; perf samples the processes from outside (Go binaries keep their
// symbols).
type ProfileOptions struct {
	// Seconds is the sampling time; 0 disables profiling.
	Seconds int
	// Frequency is the sampling rate per CPU (default 499 Hz).
	Frequency int
	// ReportFile, when set, receives perf report's full text output.
	ReportFile string
	// Top is the number of symbols kept in the result (default 25).
	Top int
}

// Profile is a flat CPU profile: the symbols with the most samples.
type Profile struct {
	Tool       string         `json:"tool"`
	Seconds    int            `json:"seconds"`
	Frequency  int            `json:"frequency_hz"`
	Processes  []string       `json:"processes"`
	Top        []ProfileEntry `json:"top"`
	ReportFile string         `json:"report_file,omitempty"`
}

// ProfileEntry is one symbol's share of all samples.
type ProfileEntry struct {
	Percent float64 `json:"percent"`
	Process string  `json:"process"`
	Symbol  string  `json:"symbol"`
}

// profile samples the stream managers and instances of snap with perf
// (the container processes in process-per-container mode).
func profile(ctx context.Context, o ProfileOptions, snap *snapshot) (*Profile, error) {
	perf, err := exec.LookPath("perf")
	if err != nil {
		return nil, errors.New("perf is not installed (apt-get install linux-perf)")
	}
	if o.Frequency <= 0 {
		o.Frequency = 499
	}
	if o.Top <= 0 {
		o.Top = 25
	}
	var pids []string
	kindOf := map[int]string{}
	counts := map[string]int{}
	var ids []int
	for pid := range snap.procs {
		ids = append(ids, pid)
	}
	sort.Ints(ids)
	for _, pid := range ids {
		k := snap.kind(pid)
		if k == "stmgr" || k == "container" || strings.HasPrefix(k, "instance") {
			pids = append(pids, strconv.Itoa(pid))
			kindOf[pid] = k
			counts[k]++
		}
	}
	if len(pids) == 0 {
		return nil, errors.New("no stream manager or instance to profile")
	}
	dir, err := os.MkdirTemp("", "egret-bench-perf-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	data := filepath.Join(dir, "perf.data")
	rec := exec.CommandContext(ctx, perf, "record", "-e", "cpu-clock", "-F", strconv.Itoa(o.Frequency), "-o", data,
		"-p", strings.Join(pids, ","), "--", "sleep", strconv.Itoa(o.Seconds))
	if out, err := rec.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("perf record: %w: %s", err, bytes.TrimSpace(out))
	}
	// perf's pid column holds thread ids: map every thread to its
	// process's kind.
	for pid, k := range kindOf {
		tasks, _ := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "task"))
		for _, t := range tasks {
			if tid, err := strconv.Atoi(t.Name()); err == nil {
				kindOf[tid] = k
			}
		}
	}
	rep := exec.CommandContext(ctx, perf, "report", "-i", data, "--stdio", "--no-children", "--sort", "pid,sym", "--percent-limit", "0.05")
	out, err := rep.Output()
	if err != nil {
		return nil, fmt.Errorf("perf report: %w", err)
	}
	p := &Profile{Tool: "perf record -e cpu-clock", Seconds: o.Seconds, Frequency: o.Frequency}
	for k, n := range counts {
		p.Processes = append(p.Processes, fmt.Sprintf("%d %s", n, k))
	}
	sort.Strings(p.Processes)
	p.Top = parsePerfReport(out, kindOf, o.Top)
	if o.ReportFile != "" {
		if err := os.WriteFile(o.ReportFile, out, 0o644); err != nil {
			return nil, err
		}
		p.ReportFile = o.ReportFile
	}
	return p, nil
}

// parsePerfReport parses perf report --stdio --sort pid,sym lines:
//
//	12.34%  9306:egret  [.] runtime.memmove
//
// naming each thread by its process kind (kindOf maps thread ids) and
// adding up the shares of a symbol over the threads of a kind.
func parsePerfReport(out []byte, kindOf map[int]string, top int) []ProfileEntry {
	var res []ProfileEntry
	index := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		pct, rest, ok := strings.Cut(line, "%")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(pct), 64)
		if err != nil {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 3 {
			continue
		}
		proc := f[0]
		if p, _, ok := strings.Cut(f[0], ":"); ok {
			if pid, err := strconv.Atoi(p); err == nil {
				if k, ok := kindOf[pid]; ok {
					proc = k
				}
			}
		}
		sym := strings.Join(f[1:], " ")
		if len(f) >= 3 && strings.HasPrefix(f[1], "[") {
			sym = strings.Join(f[2:], " ")
			if f[1] == "[k]" {
				sym += " (kernel)"
			}
		}
		key := proc + "\x00" + sym
		if i, ok := index[key]; ok {
			res[i].Percent += v
			continue
		}
		index[key] = len(res)
		res = append(res, ProfileEntry{Percent: v, Process: proc, Symbol: sym})
	}
	sort.SliceStable(res, func(i, j int) bool { return res[i].Percent > res[j].Percent })
	if len(res) > top {
		res = res[:top]
	}
	return res
}
