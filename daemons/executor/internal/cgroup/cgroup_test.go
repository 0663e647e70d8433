package cgroup

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestParseSelfAndMounts(t *testing.T) {
	self := parseSelf([]byte("4:memory:/a/b\n1:cpu,cpuacct:/a\n0::/svc/x\n"))
	if self["memory"] != "/a/b" || self["cpu"] != "/a" || self["cpuacct"] != "/a" || self[""] != "/svc/x" {
		t.Fatalf("parseSelf = %v", self)
	}
	mt := parseMounts([]byte(`31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw
32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:9 - cgroup cgroup rw,cpu,cpuacct
41 31 0:38 /svc /sys/fs/cgroup/unified\040dir rw - cgroup2 cgroup2 rw
`))
	if len(mt) != 2 {
		t.Fatalf("parseMounts = %+v", mt)
	}
	if m := mt.find("cgroup", "cpu"); m == nil || m.resolve("/a") != "/sys/fs/cgroup/cpu,cpuacct/a" {
		t.Fatalf("v1 cpu mount: %+v", m)
	}
	if m := mt.find("cgroup", "memory"); m != nil {
		t.Fatalf("memory mount found: %+v", m)
	}
	// A namespaced mount: its root is the executor's ancestor.
	if m := mt.find("cgroup2", ""); m == nil || m.resolve("/svc/x") != "/sys/fs/cgroup/unified dir/x" {
		t.Fatalf("v2 mount: %+v", m)
	}
}

func TestFormats(t *testing.T) {
	for _, c := range []struct {
		cpu  float64
		want string
	}{{0, "max 100000"}, {1, "100000 100000"}, {0.25, "25000 100000"}, {2.5, "250000 100000"}, {0.001, "1000 100000"}} {
		if got := CPUMax(c.cpu); got != c.want {
			t.Errorf("CPUMax(%v) = %q, want %q", c.cpu, got, c.want)
		}
	}
	k := parseKeyed([]byte("usage_usec 10\nnr_throttled 3\nthrottled_usec 4500\n"))
	if k["nr_throttled"] != 3 || k["throttled_usec"] != 4500 {
		t.Fatalf("parseKeyed = %v", k)
	}
}

// fakeV2 builds a fake cgroup v2 tree holding the executor (pid 4242) in
// /svc and returns the /proc/self directory describing it.
func fakeV2(t *testing.T, controllers, procs string) (proc, root string) {
	t.Helper()
	base := t.TempDir()
	root = filepath.Join(base, "cg")
	c := filepath.Join(root, "svc")
	if err := os.MkdirAll(c, 0o755); err != nil {
		t.Fatal(err)
	}
	for f, v := range map[string]string{"cgroup.controllers": controllers, "cgroup.subtree_control": "", "cgroup.procs": procs} {
		if err := os.WriteFile(filepath.Join(c, f), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	proc = filepath.Join(base, "proc")
	if err := os.MkdirAll(proc, 0o755); err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(proc, "cgroup"), []byte("0::/svc\n"), 0o644)
	_ = os.WriteFile(filepath.Join(proc, "mountinfo"), []byte("41 31 0:38 / "+root+" rw - cgroup2 cgroup2 rw\n"), 0o644)
	return proc, root
}

// A plain directory cannot behave like cgroupfs (files appear on mkdir),
// so the fake checks what Setup decides and writes up to the first
// kernel-created file.
func TestSetupV2Decisions(t *testing.T) {
	proc, _ := fakeV2(t, "cpuset io hugetlb", "4242\n")
	_, err := Setup(Options{Name: "egret-x", ProcSelf: proc, Pid: 4242})
	if err == nil || !strings.Contains(err.Error(), "does not offer the cpu controller") {
		t.Fatalf("without cpu delegated: err = %v", err)
	}
	proc, _ = fakeV2(t, "cpu memory", "4242\n77\n")
	_, err = Setup(Options{Name: "egret-x", ProcSelf: proc, Pid: 4242})
	if err == nil || !strings.Contains(err.Error(), "holds other processes than the executor (pid 77)") {
		t.Fatalf("shared cgroup: err = %v", err)
	}
	proc, root := fakeV2(t, "cpu memory", "4242\n")
	_, err = Setup(Options{Name: "egret-x", ProcSelf: proc, Pid: 4242})
	// The executor moved into its leaf, then the fake's missing
	// kernel files stop it; it must have moved back.
	if b, _ := os.ReadFile(filepath.Join(root, "svc", "cgroup.procs")); strings.TrimSpace(string(b)) != "4242" {
		t.Fatalf("executor not moved back after a failed setup: cgroup.procs = %q (err %v)", b, err)
	}
}

// TestRealGroup creates a group on this machine's cgroups when it may,
// puts a process in it and removes it.
func TestRealGroup(t *testing.T) {
	name := "egret-test-" + strconv.Itoa(os.Getpid())
	m, err := Setup(Options{Name: name})
	if err != nil {
		t.Skipf("cgroups not usable here: %v", err)
	}
	t.Logf("cgroup %s at %s", m.Version(), m.Path())
	defer func() {
		if err := m.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if _, err := os.Stat(m.Path()); err == nil {
			t.Errorf("%s left behind", m.Path())
		}
	}()
	g, err := m.Create("task-1", Limits{CPU: 0.5, MemoryMax: 64 << 20, MemoryHigh: 60 << 20})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if err := g.Add(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/cgroup")
	if err != nil || !strings.Contains(string(b), name+"/task-1") {
		t.Fatalf("process not in its group: %s (%v)", b, err)
	}
	if _, err := g.Stats(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
}
