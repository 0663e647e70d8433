package cgroup

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Version is the cgroup hierarchy a Manager uses.
type Version string

// The hierarchies.
const (
	V1 Version = "v1"
	V2 Version = "v2"
)

// cpuPeriod is the CFS period of every group, microseconds (the kernel's
// default, 100ms).
const cpuPeriod = 100000

// Limits are what one group may use; a zero field is not limited.
type Limits struct {
	// CPU is in cores: 0.5 is half a core per period.
	CPU float64
	// MemoryMax is the hard limit in bytes: above it the kernel reclaims
	// and, failing that, OOM-kills a process of the group.
	MemoryMax int64
	// MemoryHigh is the throttling threshold in bytes (v2 memory.high,
	// v1 memory.soft_limit_in_bytes).
	MemoryHigh int64
}

// Stats are the counters of one group.
type Stats struct {
	// OOMKills counts processes of the group the OOM killer killed
	// (v2 memory.events oom_kill; v1 memory.oom_control oom_kill).
	OOMKills uint64
	// NrThrottled counts CFS periods in which the group was throttled,
	// ThrottledUsec the total time throttled (cpu.stat).
	NrThrottled   uint64
	ThrottledUsec uint64
	// MemoryBytes is the group's current memory use.
	MemoryBytes uint64
}

// Options locate the files Setup reads.
type Options struct {
	// Name is the container's group name, unique among the executors
	// sharing a cgroup (e.g. egret-<topology>-<container>-<pid>).
	Name string
	// ProcSelf is the /proc/self directory (default "/proc/self"): its
	// cgroup and mountinfo files say where the executor is.
	ProcSelf string
	// Pid is the executor's pid (default os.Getpid()); v2 moves it.
	Pid int
	// StalePrefix, if set, names older containers' groups (of executors
	// that were SIGKILLed) that Setup removes when they are empty.
	StalePrefix string
}

// Manager creates and removes the groups of one container.
type Manager struct {
	version Version
	name    string
	pid     int
	// v2: parent is C, base C/<name>; leaf is C/<name>-executor when the
	// executor moved, enabled the controllers it enabled in C.
	parent, leaf string
	enabled      []string
	// dirs are the container's base directories: one for v2, the cpu and
	// memory hierarchies' for v1 (cpu first).
	dirs []string
	path string // dirs[0], kept after Close

	mu     sync.Mutex
	groups map[string]*Group
}

// Group is one process's cgroup.
type Group struct {
	m    *Manager
	name string
	dirs []string // v2: one; v1: cpu, memory
}

// Setup prepares the container's groups, or says why it cannot.
func Setup(o Options) (*Manager, error) {
	if o.Name == "" || strings.ContainsRune(o.Name, '/') {
		return nil, fmt.Errorf("cgroup: bad group name %q", o.Name)
	}
	if o.ProcSelf == "" {
		o.ProcSelf = "/proc/self"
	}
	if o.Pid == 0 {
		o.Pid = os.Getpid()
	}
	mounts, err := readMounts(filepath.Join(o.ProcSelf, "mountinfo"))
	if err != nil {
		return nil, err
	}
	self, err := readSelf(filepath.Join(o.ProcSelf, "cgroup"))
	if err != nil {
		return nil, err
	}
	var v2err error
	if p, ok := self[""]; ok {
		if mt := mounts.find("cgroup2", ""); mt != nil {
			m, err := setupV2(o, mt.resolve(p))
			if err == nil {
				return m, nil
			}
			v2err = err
		} else {
			v2err = errors.New("cgroup v2 is not mounted")
		}
	} else {
		v2err = errors.New("the executor is in no cgroup v2")
	}
	m, v1err := setupV1(o, mounts, self)
	if v1err == nil {
		return m, nil
	}
	return nil, fmt.Errorf("cgroup: %v; %v", v2err, v1err)
}

// Version returns the hierarchy in use.
func (m *Manager) Version() Version { return m.version }

// Path returns the container's group directory (v1: the cpu hierarchy's).
func (m *Manager) Path() string { return m.path }

func setupV2(o Options, c string) (*Manager, error) {
	ctrl, err := os.ReadFile(filepath.Join(c, "cgroup.controllers"))
	if err != nil {
		return nil, fmt.Errorf("cgroup v2 at %s: %w", c, err)
	}
	have := strings.Fields(string(ctrl))
	for _, want := range []string{"cpu", "memory"} {
		if !contains(have, want) {
			return nil, fmt.Errorf("cgroup v2 at %s does not offer the %s controller (cgroup.controllers: %q; not delegated)", c, want, strings.TrimSpace(string(ctrl)))
		}
	}
	m := &Manager{version: V2, name: o.Name, pid: o.Pid, parent: c, groups: map[string]*Group{}}
	removeStale(c, o.StalePrefix, V2)
	sub, err := os.ReadFile(filepath.Join(c, "cgroup.subtree_control"))
	if err != nil {
		return nil, fmt.Errorf("cgroup v2 at %s: %w", c, err)
	}
	var missing []string
	for _, want := range []string{"cpu", "memory"} {
		if !contains(strings.Fields(string(sub)), want) {
			missing = append(missing, want)
		}
	}
	if len(missing) > 0 {
		// No internal processes: C may enable controllers for its
		// children only once it holds no process itself.
		procs, err := readPids(filepath.Join(c, "cgroup.procs"))
		if err != nil {
			return nil, fmt.Errorf("cgroup v2 at %s: %w", c, err)
		}
		for _, p := range procs {
			if p != o.Pid {
				return nil, fmt.Errorf("cgroup v2 at %s holds other processes than the executor (pid %d), so the executor cannot enable %s for its children", c, p, strings.Join(missing, ", "))
			}
		}
		if len(procs) > 0 {
			leaf := filepath.Join(c, o.Name+"-executor")
			if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
				return nil, fmt.Errorf("cgroup v2 at %s is not writable: %w", c, err)
			}
			if err := writeFile(filepath.Join(leaf, "cgroup.procs"), strconv.Itoa(o.Pid)); err != nil {
				_ = syscall.Rmdir(leaf)
				return nil, fmt.Errorf("cgroup v2: move the executor into %s: %w", leaf, err)
			}
			m.leaf = leaf
		}
		if err := writeFile(filepath.Join(c, "cgroup.subtree_control"), "+"+strings.Join(missing, " +")); err != nil {
			m.restore()
			return nil, fmt.Errorf("cgroup v2 at %s: enable %s for children: %w", c, strings.Join(missing, ", "), err)
		}
		m.enabled = missing
	}
	base := filepath.Join(c, o.Name)
	if err := os.Mkdir(base, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		m.restore()
		return nil, fmt.Errorf("cgroup v2 at %s is not writable: %w", c, err)
	}
	m.dirs, m.path = []string{base}, base
	if err := writeFile(filepath.Join(base, "cgroup.subtree_control"), "+cpu +memory"); err != nil {
		_ = syscall.Rmdir(base)
		m.restore()
		return nil, fmt.Errorf("cgroup v2 at %s: enable cpu and memory: %w", base, err)
	}
	return m, nil
}

func setupV1(o Options, mounts mountTable, self map[string]string) (*Manager, error) {
	m := &Manager{version: V1, name: o.Name, pid: o.Pid, groups: map[string]*Group{}}
	for _, ctl := range []string{"cpu", "memory"} {
		mt := mounts.find("cgroup", ctl)
		p, ok := self[ctl]
		if mt == nil || !ok {
			m.removeDirs()
			return nil, fmt.Errorf("cgroup v1 has no %s hierarchy", ctl)
		}
		parent := mt.resolve(p)
		removeStale(parent, o.StalePrefix, V1)
		base := filepath.Join(parent, o.Name)
		if err := os.Mkdir(base, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			m.removeDirs()
			return nil, fmt.Errorf("cgroup v1 %s hierarchy at %s is not writable: %w", ctl, parent, err)
		}
		m.dirs = append(m.dirs, base)
	}
	m.path = m.dirs[0]
	return m, nil
}

// Create makes (or reuses) the group of one process with limits l.
func (m *Manager) Create(name string, l Limits) (*Group, error) {
	if name == "" || strings.ContainsRune(name, '/') || strings.HasPrefix(name, "cgroup.") {
		return nil, fmt.Errorf("cgroup: bad group name %q", name)
	}
	g := &Group{m: m, name: name}
	for _, d := range m.dirs {
		dir := filepath.Join(d, name)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			g.remove()
			return nil, fmt.Errorf("cgroup: create %s: %w", dir, err)
		}
		g.dirs = append(g.dirs, dir)
	}
	if err := g.SetLimits(l); err != nil {
		g.remove()
		return nil, err
	}
	m.mu.Lock()
	m.groups[name] = g
	m.mu.Unlock()
	return g, nil
}

// SetLimits writes the group's limits (zero fields: unlimited).
func (g *Group) SetLimits(l Limits) error {
	var w []struct{ file, value string }
	add := func(dir, file, value string) {
		w = append(w, struct{ file, value string }{filepath.Join(dir, file), value})
	}
	switch g.m.version {
	case V2:
		d := g.dirs[0]
		add(d, "cpu.max", CPUMax(l.CPU))
		add(d, "memory.max", bytesOrMax(l.MemoryMax))
		add(d, "memory.high", bytesOrMax(l.MemoryHigh))
	case V1:
		quota := "-1"
		if l.CPU > 0 {
			quota = strconv.FormatInt(cpuQuota(l.CPU), 10)
		}
		add(g.dirs[0], "cpu.cfs_period_us", strconv.Itoa(cpuPeriod))
		add(g.dirs[0], "cpu.cfs_quota_us", quota)
		add(g.dirs[1], "memory.limit_in_bytes", bytesOrV1Max(l.MemoryMax))
		add(g.dirs[1], "memory.soft_limit_in_bytes", bytesOrV1Max(l.MemoryHigh))
	}
	for _, x := range w {
		if err := writeFile(x.file, x.value); err != nil {
			return fmt.Errorf("cgroup: set %s to %s: %w", x.file, x.value, err)
		}
	}
	// Best effort, where the kernel has them: cpu weights from the plan,
	// no swap beyond the limit
	// (the limit would not stop a process that swaps), and on v2 an OOM
	// kill takes the whole group (an instance and its subprocesses).
	switch g.m.version {
	case V2:
		if l.CPU > 0 {
			// Shares among the container's groups follow the plan
			// (100 is one core's weight, the default).
			_ = writeFile(filepath.Join(g.dirs[0], "cpu.weight"), strconv.Itoa(min(max(int(l.CPU*100+0.5), 1), 10000)))
		}
		swap := "max"
		if l.MemoryMax > 0 {
			swap = "0"
		}
		_ = writeFile(filepath.Join(g.dirs[0], "memory.swap.max"), swap)
		_ = writeFile(filepath.Join(g.dirs[0], "memory.oom.group"), "1")
	case V1:
		if l.CPU > 0 {
			_ = writeFile(filepath.Join(g.dirs[0], "cpu.shares"), strconv.Itoa(max(int(l.CPU*1024+0.5), 2)))
		}
		_ = writeFile(filepath.Join(g.dirs[1], "memory.memsw.limit_in_bytes"), bytesOrV1Max(l.MemoryMax))
	}
	return nil
}

// CPUMax is the v2 cpu.max value of cpu cores ("max 100000" unlimited).
func CPUMax(cpu float64) string {
	if cpu <= 0 {
		return "max " + strconv.Itoa(cpuPeriod)
	}
	return strconv.FormatInt(cpuQuota(cpu), 10) + " " + strconv.Itoa(cpuPeriod)
}

func cpuQuota(cpu float64) int64 {
	// The kernel's minimum quota is 1ms.
	return max(int64(cpu*cpuPeriod+0.5), 1000)
}

func bytesOrMax(n int64) string {
	if n <= 0 {
		return "max"
	}
	return strconv.FormatInt(n, 10)
}

func bytesOrV1Max(n int64) string {
	if n <= 0 {
		return "-1"
	}
	return strconv.FormatInt(n, 10)
}

// Add moves pid (with all its threads) into the group.
func (g *Group) Add(pid int) error {
	for _, d := range g.dirs {
		if err := writeFile(filepath.Join(d, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
			return fmt.Errorf("cgroup: move pid %d into %s: %w", pid, d, err)
		}
	}
	return nil
}

// Path returns the group's directory (v1: in the cpu hierarchy).
func (g *Group) Path() string { return g.dirs[0] }

// Unified reports whether the group is a cgroup v2 one, whose directory a
// child can be started in directly (clone3 CLONE_INTO_CGROUP).
func (g *Group) Unified() bool { return g.m.version == V2 }

// Stats reads the group's counters. A counter the kernel does not offer
// stays 0.
func (g *Group) Stats() (Stats, error) {
	var s Stats
	var err error
	cpuDir, memDir := g.dirs[0], g.dirs[0]
	if g.m.version == V1 {
		memDir = g.dirs[1]
	}
	cpu, err := readKeyed(filepath.Join(cpuDir, "cpu.stat"))
	if err != nil {
		return s, err
	}
	s.NrThrottled = cpu["nr_throttled"]
	switch g.m.version {
	case V2:
		s.ThrottledUsec = cpu["throttled_usec"]
		ev, err := readKeyed(filepath.Join(memDir, "memory.events"))
		if err != nil {
			return s, err
		}
		s.OOMKills = ev["oom_kill"]
		s.MemoryBytes, _ = readUint(filepath.Join(memDir, "memory.current"))
	case V1:
		s.ThrottledUsec = cpu["throttled_time"] / 1000
		oc, err := readKeyed(filepath.Join(memDir, "memory.oom_control"))
		if err != nil {
			return s, err
		}
		s.OOMKills = oc["oom_kill"]
		s.MemoryBytes, _ = readUint(filepath.Join(memDir, "memory.usage_in_bytes"))
	}
	return s, nil
}

// Remove deletes the group; its processes must have exited (a process
// still inside is SIGKILLed first).
func (g *Group) Remove() error {
	g.m.mu.Lock()
	delete(g.m.groups, g.name)
	g.m.mu.Unlock()
	return g.remove()
}

func (g *Group) remove() error {
	var errs []error
	for _, d := range g.dirs {
		if err := rmdirCgroup(d); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Close removes every group of the container and, on v2, disables the
// controllers it enabled and moves the executor back to its cgroup.
func (m *Manager) Close() error {
	var errs []error
	m.mu.Lock()
	groups := m.groups
	m.groups = map[string]*Group{}
	m.mu.Unlock()
	for _, g := range groups {
		if err := g.remove(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := m.removeDirs(); err != nil {
		errs = append(errs, err)
	}
	m.restore()
	return errors.Join(errs...)
}

func (m *Manager) removeDirs() error {
	var errs []error
	for _, d := range m.dirs {
		if err := rmdirCgroup(d); err != nil {
			errs = append(errs, err)
		}
	}
	m.dirs = nil
	return errors.Join(errs...)
}

// restore undoes what setupV2 did to the executor's cgroup.
func (m *Manager) restore() {
	if len(m.enabled) > 0 {
		_ = writeFile(filepath.Join(m.parent, "cgroup.subtree_control"), "-"+strings.Join(m.enabled, " -"))
		m.enabled = nil
	}
	if m.leaf != "" {
		_ = writeFile(filepath.Join(m.parent, "cgroup.procs"), strconv.Itoa(m.pid))
		_ = rmdirCgroup(m.leaf)
		m.leaf = ""
	}
}

// rmdirCgroup removes a cgroup directory: processes left inside (a child
// of a child) are SIGKILLed first, and EBUSY is retried for a while, since
// the kernel frees a group a little after its last process died.
func rmdirCgroup(dir string) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := syscall.Rmdir(dir)
		if err == nil || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) && !errors.Is(err, syscall.ENOTEMPTY) {
			return fmt.Errorf("cgroup: remove %s: %w", dir, err)
		}
		// Sub-groups first (a stale tree), then its processes.
		if ents, rerr := os.ReadDir(dir); rerr == nil {
			for _, e := range ents {
				if e.IsDir() {
					_ = rmdirCgroup(filepath.Join(dir, e.Name()))
				}
			}
		}
		if pids, _ := readPids(filepath.Join(dir, "cgroup.procs")); len(pids) > 0 {
			for _, p := range pids {
				_ = syscall.Kill(p, syscall.SIGKILL)
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroup: remove %s: %w", dir, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// removeStale removes the groups under parent named prefix<pid> whose
// executor is gone (SIGKILLed before it could clean up).
func removeStale(parent, prefix string, v Version) {
	if prefix == "" {
		return
	}
	ents, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 || !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			continue
		}
		_ = rmdirCgroup(filepath.Join(parent, e.Name()))
	}
}

func writeFile(path, value string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func readPids(path string) ([]int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if p, err := strconv.Atoi(f); err == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

func readUint(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
}

// readKeyed reads a flat-keyed file ("key value" lines).
func readKeyed(path string) (map[string]uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cgroup: %w", err)
	}
	return parseKeyed(b), nil
}

func parseKeyed(b []byte) map[string]uint64 {
	out := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		if n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64); err == nil {
			out[k] = n
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
