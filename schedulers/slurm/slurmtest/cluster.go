package slurmtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"text/template"
	"time"
)

// RequireEnv, set to 1, turns a missing Slurm into a test failure instead
// of a skip (make test sets it).
const RequireEnv = "EGRET_REQUIRE_SLURM"

// Options configure a cluster.
type Options struct {
	// Dir holds everything of the cluster (config, state, spool, logs,
	// munge key and socket). Required; it must exist, and every directory
	// above it must be reachable by everyone (munged checks; os.MkdirTemp
	// under /tmp is, t.TempDir is not).
	Dir string
	// CPUs each node advertises (default 8; more than the machine has is
	// fine, the harness sets SlurmdParameters=config_overrides).
	CPUs int
	// Nodes is the number of nodes (default 1). With more than one, each
	// node is its own slurmd on this host, named n1, n2, ..., on its own
	// port and spool directory (Slurm's several-slurmd-per-host setup).
	Nodes int
	// Logf receives progress lines (may be nil).
	Logf func(format string, args ...any)
}

// Cluster is a running Slurm on this host: munged, slurmctld and one
// slurmd per node.
type Cluster struct {
	// Dir is Options.Dir; Conf the slurm.conf every client command needs
	// (SLURM_CONF).
	Dir, Conf string
	// Node is the first node's name (the short host name on a one-node
	// cluster); Nodes all of them; Partition the only partition (the
	// default one).
	Node, Partition string
	Nodes           []string
	// CPUs and MemoryMB are each node's advertised size.
	CPUs     int
	MemoryMB int64

	bins  map[string]string
	procs map[string]*exec.Cmd
	logf  func(string, ...any)
}

var daemons = []string{"munged", "slurmctld", "slurmd"}
var clients = []string{"sbatch", "squeue", "scancel", "scontrol", "srun", "sinfo"}

// find looks a Slurm or munge binary up on PATH and in /usr/sbin (the
// daemons live there, and PATH may lack it).
func find(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range []string{"/usr/sbin", "/sbin", "/usr/local/sbin"} {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found", name)
}

// Available reports why a one-node Slurm cannot run here: missing
// binaries (apt-get install -y slurm-wlm munge), not root (the harness
// runs slurmd as root), or a host name that does not resolve to loopback.
func Available() error {
	var missing []string
	for _, b := range append(append([]string{}, daemons...), clients...) {
		if _, err := find(b); err != nil {
			missing = append(missing, b)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s missing (apt-get install -y slurm-wlm munge)", strings.Join(missing, ", "))
	}
	if os.Geteuid() != 0 {
		return errors.New("not root: the one-node Slurm runs slurmd as root")
	}
	host, err := shortHost()
	if err != nil {
		return err
	}
	addrs, err := net.LookupHost(host)
	if err != nil || len(addrs) == 0 || !net.ParseIP(addrs[0]).IsLoopback() {
		return fmt.Errorf("host name %q resolves to %v (%v), not loopback: add '127.0.0.1 %s' to /etc/hosts", host, addrs, err, host)
	}
	return nil
}

func shortHost() (string, error) {
	h, err := os.Hostname()
	if err != nil {
		return "", err
	}
	h, _, _ = strings.Cut(h, ".")
	return h, nil
}

var confTemplate = template.Must(template.New("slurm.conf").Parse(`ClusterName=egrettest
SlurmctldHost={{.Node}}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort={{.CtldPort}}
SrunPortRange={{.SrunLow}}-{{.SrunHigh}}
CommunicationParameters=NoCtldInAddrAny,NoInAddrAny
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={{.Dir}}/munge/munge.socket,cred_expire=10
MailProg=/bin/true
StateSaveLocation={{.Dir}}/state
SlurmdSpoolDir={{.Dir}}/spool/%n
SlurmctldPidFile={{.Dir}}/run/slurmctld.pid
SlurmdPidFile={{.Dir}}/run/slurmd-%n.pid
SlurmctldLogFile={{.Dir}}/log/slurmctld.log
SlurmdLogFile={{.Dir}}/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SlurmdParameters=config_overrides
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1,bf_interval=1
ReturnToService=2
MinJobAge=300
KillWait=30
InactiveLimit=0
SlurmdTimeout=300
SlurmctldTimeout=300
{{range .NodeLines}}{{.}}
{{end}}PartitionName={{.Partition}} Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
`))

// Start starts munged, slurmctld and slurmd under opts.Dir and waits until
// the node is idle. On error nothing is left running.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	if opts.CPUs <= 0 {
		opts.CPUs = 8
	}
	if opts.Nodes <= 0 {
		opts.Nodes = 1
	}
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	host, _ := shortHost()
	c := &Cluster{Dir: opts.Dir, Conf: filepath.Join(opts.Dir, "etc", "slurm.conf"), Partition: "debug",
		CPUs: opts.CPUs, MemoryMB: 8192, bins: map[string]string{}, procs: map[string]*exec.Cmd{}, logf: logf}
	if opts.Nodes == 1 {
		c.Nodes = []string{host}
	} else {
		for i := 1; i <= opts.Nodes; i++ {
			c.Nodes = append(c.Nodes, "n"+strconv.Itoa(i))
		}
	}
	c.Node = c.Nodes[0]
	for _, b := range append(append([]string{}, daemons...), clients...) {
		c.bins[b], _ = find(b)
	}
	for _, d := range []string{"etc", "munge", "run", "state", "spool", "log"} {
		if err := os.MkdirAll(filepath.Join(opts.Dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	// munged: the socket's directory must be reachable by everyone.
	for _, d := range []string{opts.Dir, filepath.Join(opts.Dir, "munge")} {
		if err := os.Chmod(d, 0o755); err != nil {
			return nil, err
		}
	}
	key := make([]byte, 1024)
	_, _ = rand.Read(key)
	if err := os.WriteFile(filepath.Join(opts.Dir, "munge", "munge.key"), key, 0o400); err != nil {
		return nil, err
	}
	ports, err := freePorts(1 + opts.Nodes)
	if err != nil {
		return nil, err
	}
	var nodeLines []string
	for i, n := range c.Nodes {
		nodeLines = append(nodeLines, fmt.Sprintf("NodeName=%s NodeAddr=127.0.0.1 NodeHostname=%s Port=%d CPUs=%d RealMemory=%d State=UNKNOWN",
			n, host, ports[1+i], c.CPUs, c.MemoryMB))
	}
	low, err := freeRange(100)
	if err != nil {
		return nil, err
	}
	var conf bytes.Buffer
	if err := confTemplate.Execute(&conf, map[string]any{
		"Node": host, "Dir": opts.Dir, "CtldPort": ports[0], "SrunLow": low, "SrunHigh": low + 99,
		"NodeLines": nodeLines, "Partition": c.Partition,
	}); err != nil {
		return nil, err
	}
	if err := os.WriteFile(c.Conf, conf.Bytes(), 0o644); err != nil {
		return nil, err
	}
	// slurmd reads cgroup.conf next to slurm.conf even with no cgroup plugin.
	if err := os.WriteFile(filepath.Join(opts.Dir, "etc", "cgroup.conf"), nil, 0o644); err != nil {
		return nil, err
	}
	fail := func(err error) (*Cluster, error) {
		c.Stop()
		return nil, err
	}
	m := filepath.Join(opts.Dir, "munge")
	if err := c.start("munged", "-F", "-S", filepath.Join(m, "munge.socket"), "--key-file="+filepath.Join(m, "munge.key"),
		"--pid-file="+filepath.Join(opts.Dir, "run", "munged.pid"), "--seed-file="+filepath.Join(m, "munged.seed")); err != nil {
		return fail(err)
	}
	if err := c.waitFor(ctx, 10*time.Second, "munged's socket", func() bool {
		_, err := os.Stat(filepath.Join(m, "munge.socket"))
		return err == nil
	}); err != nil {
		return fail(err)
	}
	if err := c.start("slurmctld", "-D", "-i", "-f", c.Conf); err != nil {
		return fail(err)
	}
	for _, n := range c.Nodes {
		if err := os.MkdirAll(filepath.Join(opts.Dir, "spool", n), 0o755); err != nil {
			return fail(err)
		}
		if err := c.startAs("slurmd:"+n, "slurmd", "-D", "-f", c.Conf, "-N", n); err != nil {
			return fail(err)
		}
	}
	if err := c.waitFor(ctx, 30*time.Second, "the nodes to be idle", func() bool {
		out, _ := c.Command(ctx, "sinfo", "-h", "-N", "-o", "%T")
		return strings.TrimSpace(out) == strings.TrimSpace(strings.Repeat("idle\n", len(c.Nodes)))
	}); err != nil {
		return fail(err)
	}
	logf("slurm: %d-node cluster %v up in %s (slurm.conf %s)", len(c.Nodes), c.Nodes, opts.Dir, c.Conf)
	return c, nil
}

// start starts daemon name in its own session, output to log/<name>.out.
func (c *Cluster) start(name string, args ...string) error { return c.startAs(name, name, args...) }

// startAs starts binary bin as the daemon called name.
func (c *Cluster) startAs(name, bin string, args ...string) error {
	out, err := os.Create(filepath.Join(c.Dir, "log", strings.ReplaceAll(name, ":", "-")+".out"))
	if err != nil {
		return err
	}
	defer out.Close()
	cmd := exec.Command(c.bins[bin], args...)
	cmd.Env = c.Env()
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	c.procs[name] = cmd
	go func() { _ = cmd.Wait() }()
	return nil
}

// alive reports whether daemon name runs.
func (c *Cluster) alive(name string) bool {
	cmd := c.procs[name]
	return cmd != nil && cmd.Process != nil && syscall.Kill(cmd.Process.Pid, 0) == nil && !exited(cmd.Process.Pid)
}

// exited reports whether pid is a zombie (or gone).
func exited(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] == 'Z'
	}
	return false
}

func (c *Cluster) waitFor(ctx context.Context, timeout time.Duration, what string, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		for d := range c.procs {
			if !c.alive(d) {
				return fmt.Errorf("slurmtest: %s died while waiting for %s; see %s", d, what, filepath.Join(c.Dir, "log"))
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("slurmtest: timed out after %s waiting for %s; see %s", timeout, what, filepath.Join(c.Dir, "log"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

// Env is the process environment with SLURM_CONF pointing at the cluster.
func (c *Cluster) Env() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SLURM_CONF=") {
			env = append(env, kv)
		}
	}
	return append(env, "SLURM_CONF="+c.Conf)
}

// Command runs a Slurm client command (sbatch, squeue, ...) against the
// cluster, bounded by 10 seconds, and returns its standard output.
func (c *Cluster) Command(ctx context.Context, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	path := c.bins[name]
	if path == "" {
		path = name
	}
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = c.Env()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// Bin returns the path of a Slurm binary.
func (c *Cluster) Bin(name string) string { return c.bins[name] }

// StopController stops slurmctld (the jobs keep running), for fail-over
// tests; StartController starts it again with its saved state.
func (c *Cluster) StopController() {
	c.stopDaemon("slurmctld")
}

// StartController starts slurmctld again, recovering the saved state, and
// waits until it answers.
func (c *Cluster) StartController(ctx context.Context) error {
	if err := c.start("slurmctld", "-D", "-f", c.Conf); err != nil {
		return err
	}
	return c.waitFor(ctx, 30*time.Second, "slurmctld to answer", func() bool {
		out, _ := c.Command(ctx, "scontrol", "ping")
		return strings.Contains(out, "is UP")
	})
}

func (c *Cluster) stopDaemon(name string) {
	cmd := c.procs[name]
	if cmd == nil || cmd.Process == nil {
		return
	}
	pid := cmd.Process.Pid
	_ = syscall.Kill(pid, syscall.SIGTERM)
	deadline := time.Now().Add(10 * time.Second)
	for c.alive(name) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if c.alive(name) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	delete(c.procs, name)
}

// Stop cancels every job, kills whatever job processes remain (job steps
// outlive the daemons), then stops slurmd, slurmctld and munged.
func (c *Cluster) Stop() {
	ctx := context.Background()
	if c.alive("slurmctld") {
		_, _ = c.Command(ctx, "scancel", "--user=root")
		_ = c.waitFor(ctx, 30*time.Second, "every job to end", func() bool {
			out, err := c.Command(ctx, "squeue", "-h", "-o", "%i")
			return err == nil && strings.TrimSpace(out) == ""
		})
	}
	c.KillJobProcesses()
	for _, n := range c.Nodes {
		c.stopDaemon("slurmd:" + n)
	}
	c.stopDaemon("slurmctld")
	c.stopDaemon("munged")
}

// KillJobProcesses kills every process of a job on the node and the
// slurmstepd above it: `scontrol listpids` asks each slurmstepd.
func (c *Cluster) KillJobProcesses() {
	var out string
	for _, n := range c.Nodes {
		if c.alive("slurmd:" + n) {
			o, _ := c.Command(context.Background(), "scontrol", "listpids", "*", n)
			out += o
		}
	}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		pid, err := strconv.Atoi(f[0])
		if err != nil || pid <= 1 {
			continue
		}
		if pp := ppid(pid); pp > 1 && comm(pp) == "slurmstepd" {
			_ = syscall.Kill(pp, syscall.SIGKILL)
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

func ppid(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(f[1])
	return n
}

func comm(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	return strings.TrimSpace(string(b))
}

// Children returns the pids whose parent is pid.
func Children(pid int) []int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// Cmdline returns the command line of pid (nil when it is gone).
func Cmdline(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}

// IsEgretExecutor reports whether args run `egret executor`.
func IsEgretExecutor(args []string) bool {
	return len(args) >= 2 && filepath.Base(args[0]) == "egret" && args[1] == "executor"
}

// Tasks returns the tasks of step 0 of job id on the nodes: global task
// id (SLURM_PROCID) → pid, from `scontrol listpids` on each node.
func (c *Cluster) Tasks(ctx context.Context, id string) (map[int]int, error) {
	var out string
	for _, n := range c.Nodes {
		o, err := c.Command(ctx, "scontrol", "listpids", id, n)
		if err != nil {
			if strings.Contains(err.Error(), "no steps") || strings.Contains(err.Error(), "not found") ||
				strings.Contains(err.Error(), "Invalid job id") || strings.Contains(err.Error(), "does not exist on node") {
				continue
			}
			return nil, err
		}
		out += o
	}
	tasks := map[int]int{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) < 5 || f[2] != "0" || f[4] == "-" {
			continue
		}
		pid, err1 := strconv.Atoi(f[0])
		g, err2 := strconv.Atoi(f[4])
		if err1 == nil && err2 == nil {
			tasks[g] = pid
		}
	}
	return tasks, nil
}

// JobsNamed returns the ids of the unfinished jobs named name.
func (c *Cluster) JobsNamed(ctx context.Context, name string) ([]string, error) {
	out, err := c.Command(ctx, "squeue", "-h", "--name="+name, "-o", "%i")
	if err != nil {
		return nil, err
	}
	return strings.Fields(out), nil
}

// Containers observes the containers of the job named name: container
// (task id) → "<job>/<pid of the executor>", the executor being the child
// of the task's loop for which isExecutor(its command line) holds; a task
// between two executors (waiting out its backoff) is left out.
func (c *Cluster) Containers(ctx context.Context, name string, isExecutor func(args []string) bool) (map[int]string, error) {
	ids, err := c.JobsNamed(ctx, name)
	if err != nil {
		return nil, err
	}
	got := map[int]string{}
	for _, id := range ids {
		tasks, err := c.Tasks(ctx, id)
		if err != nil {
			return nil, err
		}
		for k, pid := range tasks {
			for _, kid := range Children(pid) {
				if !exited(kid) && isExecutor(Cmdline(kid)) {
					got[k] = id + "/" + strconv.Itoa(kid)
				}
			}
		}
	}
	return got, nil
}

func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// freeRange finds n consecutive ports none of which is listened on now,
// below the kernel's ephemeral range.
func freeRange(n int) (int, error) {
	for range 50 {
		b := make([]byte, 2)
		_, _ = rand.Read(b)
		low := 20000 + (int(b[0])<<8|int(b[1]))%10000
		ok := true
		for p := low; p < low+n && ok; p++ {
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
			if err != nil {
				ok = false
				continue
			}
			l.Close()
		}
		if ok {
			return low, nil
		}
	}
	return 0, errors.New("slurmtest: no free range of ports for SrunPortRange")
}
