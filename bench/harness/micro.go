package harness

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
)

// MicroOptions configure the Go micro-benchmarks.
type MicroOptions struct {
	// Root is the module's directory; Packages the packages to benchmark
	// (e.g. "./core/tuple/").
	Root     string
	Packages []string
	// Count is go test -count (default 1); Benchtime go test -benchtime
	// (default: go test's).
	Count     int
	Benchtime string
	// Out receives go test's output as it runs (default io.Discard).
	Out io.Writer
}

// MicroResult is one benchmark's figures across its -count runs.
type MicroResult struct {
	Package string `json:"package"`
	Name    string `json:"name"`
	Procs   int    `json:"procs"`
	// Figures maps a unit (ns/op, B/op, allocs/op, MB/s, custom units
	// such as tuples/s) to its summary.
	Figures map[string]Stat `json:"figures"`
	// Units lists the units in go test's order.
	Units []string `json:"units"`

	values map[string][]float64
}

// MicroResults are the micro-benchmarks of a `make bench`.
type MicroResults struct {
	Machine   Machine       `json:"machine"`
	Count     int           `json:"count"`
	Benchtime string        `json:"benchtime,omitempty"`
	Results   []MicroResult `json:"results"`
}

// RunMicro runs go test -bench over the packages and parses the results.
func RunMicro(ctx context.Context, o MicroOptions) (*MicroResults, error) {
	if o.Count <= 0 {
		o.Count = 1
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	args := []string{"test", "-run", "^$", "-bench", ".", "-benchmem", "-count", strconv.Itoa(o.Count)}
	if o.Benchtime != "" {
		args = append(args, "-benchtime", o.Benchtime)
	}
	args = append(args, o.Packages...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = o.Root
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("go test -bench: %w", err)
	}
	parsed := make(chan []MicroResult, 1)
	go func() { parsed <- ParseBench(io.TeeReader(pr, o.Out)) }()
	err := cmd.Wait()
	pw.Close()
	res := <-parsed
	if err != nil {
		return nil, fmt.Errorf("go test -bench %s: %w", strings.Join(o.Packages, " "), err)
	}
	return &MicroResults{Machine: DescribeMachine(), Count: o.Count, Benchtime: o.Benchtime, Results: res}, nil
}

// ParseBench parses go test -bench output: the "pkg:" lines and the
// benchmark lines; repeated runs of a benchmark (-count) are summarized.
// It reads r to its end; lines it does not know are skipped.
func ParseBench(r io.Reader) []MicroResult {
	var out []*MicroResult
	byKey := map[string]*MicroResult{}
	pkg := ""
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = strings.TrimSpace(p)
			continue
		}
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") || len(f)%2 != 0 {
			continue
		}
		if _, err := strconv.ParseInt(f[1], 10, 64); err != nil {
			continue
		}
		name, procs := f[0], 1
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			if n, err := strconv.Atoi(name[i+1:]); err == nil {
				name, procs = name[:i], n
			}
		}
		key := pkg + " " + f[0]
		m := byKey[key]
		if m == nil {
			m = &MicroResult{Package: pkg, Name: name, Procs: procs, values: map[string][]float64{}}
			byKey[key] = m
			out = append(out, m)
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				break
			}
			unit := f[i+1]
			if _, seen := m.values[unit]; !seen {
				m.Units = append(m.Units, unit)
			}
			m.values[unit] = append(m.values[unit], v)
		}
	}
	// Drain what the scanner left (a line too long) so the writer never
	// blocks.
	_, _ = io.Copy(io.Discard, r)
	res := make([]MicroResult, len(out))
	for i, m := range out {
		m.Figures = map[string]Stat{}
		for u, vs := range m.values {
			m.Figures[u] = Summarize(vs)
		}
		res[i] = *m
	}
	return res
}
