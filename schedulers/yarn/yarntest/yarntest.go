package yarntest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

var (
	//go:embed minicluster/pom.xml
	pom []byte
	//go:embed minicluster/src/main/java/io/egret/minicluster/MiniCluster.java
	launcherSource []byte
)

// Resources of the cluster's one NodeManager and its largest container.
const (
	NodeMemoryMB        = 32768
	NodeVcores          = 32
	MaxAllocationMB     = 16384
	MaxAllocationVcores = 16
)

// Queues of the cluster's capacity scheduler.
var Queues = []string{"default", "streaming"}

// RequireEnv, when "1", makes a missing Java or Maven fail the tests that
// need the cluster instead of skipping them (set it in CI).
const RequireEnv = "EGRET_REQUIRE_HADOOP"

// Cluster is a running mini-cluster.
type Cluster struct {
	// RM is the ResourceManager's web address (http://127.0.0.1:port): its
	// REST API, UI and the Services API (/app/v1/services).
	RM string
	// NameNode is the NameNode's RPC address (127.0.0.1:port).
	NameNode string
	// User is the user the cluster runs as (the HDFS superuser, and the
	// user running the containers).
	User string
	// Dir holds every file of the cluster; Log is the launcher's log.
	Dir, Log string

	master, nm *process
}

// process is one JVM of the cluster.
type process struct {
	name   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	exited chan struct{}
}

// Options tune Start.
type Options struct {
	// Dir is the cluster's directory (required, created if needed).
	Dir string
	// CacheDir holds the resolved class path and compiled launcher;
	// default: os.UserCacheDir()/egret/yarn-minicluster.
	CacheDir string
	// Timeout bounds the build and the start (default 10 minutes: a cold
	// Maven download on a loaded machine).
	Timeout time.Duration
	// Logf receives progress lines (may be nil).
	Logf func(format string, args ...any)
}

// Available reports why the cluster cannot run here (no java, javac or
// mvn on PATH), or nil.
func Available() error {
	for _, tool := range []string{"java", "javac", "mvn"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s not found on PATH (the Hadoop mini-cluster needs Java 17 and Maven)", tool)
		}
	}
	return nil
}

// Start builds (when needed) and starts a mini-cluster, and returns once
// the Services API and the NameNode answer.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	if o.Dir == "" {
		return nil, errors.New("yarntest: Options.Dir is required")
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Minute
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if err := Available(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	began := time.Now()
	cp, err := build(ctx, o)
	if err != nil {
		return nil, err
	}
	o.Logf("yarntest: launcher ready after %s", time.Since(began).Round(time.Millisecond))
	var c *Cluster
	for attempt := 1; ; attempt++ {
		c, err = start(ctx, o, cp)
		if err == nil {
			break
		}
		if attempt == 3 || ctx.Err() != nil {
			return nil, err
		}
		o.Logf("yarntest: attempt %d failed, trying other ports: %v", attempt, oneLine(err.Error()))
	}
	o.Logf("yarntest: cluster up after %s (rm %s, namenode %s)", time.Since(began).Round(time.Millisecond), c.RM, c.NameNode)
	return c, nil
}

// build resolves the launcher's class path with Maven and compiles it,
// once per version of the pom and source, and returns the class path.
func build(ctx context.Context, o Options) (string, error) {
	cache := o.CacheDir
	if cache == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			base = os.TempDir()
		}
		cache = filepath.Join(base, "egret", "yarn-minicluster")
	}
	h := sha256.New()
	h.Write(pom)
	h.Write([]byte{0})
	h.Write(launcherSource)
	dir := filepath.Join(cache, hex.EncodeToString(h.Sum(nil))[:16])
	cpFile := filepath.Join(dir, "classpath.txt")
	classes := filepath.Join(dir, "classes")
	if b, err := os.ReadFile(cpFile); err == nil && isDir(classes) {
		return classes + string(os.PathListSeparator) + strings.TrimSpace(string(b)), nil
	}
	// Build in a fresh directory, then move it into place: concurrent
	// builds (several test processes) each get a complete result.
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", fmt.Errorf("yarntest: %w", err)
	}
	tmp, err := os.MkdirTemp(cache, ".build-")
	if err != nil {
		return "", fmt.Errorf("yarntest: %w", err)
	}
	defer os.RemoveAll(tmp)
	src := filepath.Join(tmp, "src", "MiniCluster.java")
	for path, data := range map[string][]byte{filepath.Join(tmp, "pom.xml"): pom, src: launcherSource} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return "", fmt.Errorf("yarntest: %w", err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return "", fmt.Errorf("yarntest: %w", err)
		}
	}
	o.Logf("yarntest: resolving the Hadoop 3.4.2 jars with Maven (the first run downloads about 105 MB into ~/.m2)")
	mvn := exec.CommandContext(ctx, "mvn", "-B", "-q", "-f", filepath.Join(tmp, "pom.xml"),
		"dependency:build-classpath", "-Dmdep.outputFile="+filepath.Join(tmp, "classpath.txt"))
	if out, err := mvn.CombinedOutput(); err != nil {
		return "", fmt.Errorf("yarntest: mvn dependency:build-classpath: %w\n%s", err, tail(out))
	}
	cpb, err := os.ReadFile(filepath.Join(tmp, "classpath.txt"))
	if err != nil {
		return "", fmt.Errorf("yarntest: %w", err)
	}
	deps := strings.TrimSpace(string(cpb))
	javac := exec.CommandContext(ctx, "javac", "-nowarn", "--release", "17", "-d", filepath.Join(tmp, "classes"), "-cp", deps, src)
	if out, err := javac.CombinedOutput(); err != nil {
		return "", fmt.Errorf("yarntest: javac: %w\n%s", err, tail(out))
	}
	if err := os.Remove(src); err != nil {
		return "", fmt.Errorf("yarntest: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil && !isDir(classes) {
		return "", fmt.Errorf("yarntest: install the launcher: %w", err)
	}
	return classes + string(os.PathListSeparator) + deps, nil
}

// ports are the cluster's listeners, all on 127.0.0.1.
type ports struct {
	nn, nnHTTP                                 int
	rm, rmScheduler, rmTracker, rmAdmin, rmWeb int
	nm, nmLocalizer, nmWeb, nmCollector        int
	zk                                         int
}

// freePorts picks free ports below Linux's ephemeral range (32768 and
// up), so that the ports the JVMs open on port 0 meanwhile (DataNode, IPC
// clients) cannot take them before the cluster binds them.
func freePorts() (ports, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var p ports
	next := 20000 + mrand.IntN(10000)
	for _, dst := range []*int{&p.nn, &p.nnHTTP, &p.rm, &p.rmScheduler, &p.rmTracker, &p.rmAdmin, &p.rmWeb,
		&p.nm, &p.nmLocalizer, &p.nmWeb, &p.nmCollector, &p.zk} {
		for {
			if next >= 32000 {
				return p, errors.New("find a free port: none left below 32000")
			}
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", next))
			next++
			if err == nil {
				ls = append(ls, l)
				*dst = l.Addr().(*net.TCPAddr).Port
				break
			}
		}
	}
	return p, nil
}

// JVM flags of the cluster and of every service application master: a
// small heap, a cheap JIT, and the --add-opens Guice 4 and cglib need on
// Java 17.
var jvmOpens = []string{
	"java.base/java.lang", "java.base/java.lang.reflect", "java.base/java.util",
	"java.base/java.util.concurrent", "java.base/java.net", "java.base/java.io",
	"java.base/java.nio", "java.base/sun.nio.ch", "java.base/java.lang.invoke",
	"java.base/sun.security.util", "java.base/sun.net.dns", "java.base/sun.net.util",
}

func jvmFlags(heap string) []string {
	f := []string{"-Xmx" + heap, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto"}
	for _, o := range jvmOpens {
		f = append(f, "--add-opens="+o+"=ALL-UNNAMED")
	}
	return f
}

func start(ctx context.Context, o Options, classpath string) (*Cluster, error) {
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, fmt.Errorf("yarntest: %w", err)
	}
	confDir := filepath.Join(dir, "conf")
	if err := os.MkdirAll(confDir, 0o755); err != nil {
		return nil, fmt.Errorf("yarntest: %w", err)
	}
	p, err := freePorts()
	if err != nil {
		return nil, fmt.Errorf("yarntest: %w", err)
	}
	for name, content := range configFiles(p, dir) {
		if err := os.WriteFile(filepath.Join(confDir, name), []byte(content), 0o644); err != nil {
			return nil, fmt.Errorf("yarntest: %w", err)
		}
	}
	javaHome, err := javaHome()
	if err != nil {
		return nil, err
	}
	usr := "root"
	if u, err := user.Current(); err == nil {
		usr = u.Username
	}
	c := &Cluster{Dir: dir, Log: filepath.Join(dir, "minicluster.log"), User: usr}
	cp := confDir + string(os.PathListSeparator) + classpath
	ready := filepath.Join(dir, "ready")
	if err := os.Remove(ready); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("yarntest: %w", err)
	}
	c.master, err = c.run(javaHome, "master", append(jvmFlags("1g"),
		"-Dtest.build.data="+filepath.Join(dir, "data"),
		"-Djava.io.tmpdir="+filepath.Join(dir, "tmp"),
		"-cp", cp, "io.egret.minicluster.MiniCluster", dir, strconv.Itoa(p.nn), strconv.Itoa(p.nnHTTP), ready))
	if err != nil {
		return nil, err
	}
	if err := c.waitReady(ctx, ready); err != nil {
		c.Stop()
		return nil, err
	}
	c.nm, err = c.run(javaHome, "nodemanager", append(jvmFlags("384m"),
		"-Djava.io.tmpdir="+filepath.Join(dir, "tmp"),
		"-Dhadoop.log.dir="+filepath.Join(dir, "nm", "logs"),
		"-cp", cp, "org.apache.hadoop.yarn.server.nodemanager.NodeManager"))
	if err != nil {
		c.Stop()
		return nil, err
	}
	if err := c.waitNode(ctx); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// run starts one JVM of the cluster in its directory, logging to Log.
func (c *Cluster) run(javaHome, name string, args []string) (*process, error) {
	if err := os.MkdirAll(filepath.Join(c.Dir, "tmp"), 0o755); err != nil {
		return nil, fmt.Errorf("yarntest: %w", err)
	}
	logf, err := os.OpenFile(c.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("yarntest: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(filepath.Join(javaHome, "bin", "java"), args...)
	cmd.Dir = c.Dir
	cmd.Env = append(os.Environ(), "JAVA_HOME="+javaHome)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("yarntest: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("yarntest: start the %s JVM: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, stdin: stdin, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	return p, nil
}

// stop ends the JVM: SIGTERM (or, for the master, end of its standard
// input), then SIGKILL of its process group after a grace period.
func (p *process) stop(term bool) {
	if p == nil {
		return
	}
	_ = p.stdin.Close()
	if term {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	select {
	case <-p.exited:
	case <-time.After(90 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
	}
}

// waitNode waits until the ResourceManager lists a running NodeManager.
func (c *Cluster) waitNode(ctx context.Context) error {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		if n, _ := c.RunningNodes(ctx); n > 0 {
			return nil
		}
		select {
		case <-c.nm.exited:
			return fmt.Errorf("yarntest: the NodeManager exited during startup; log %s:\n%s", c.Log, tailFile(c.Log))
		case <-ctx.Done():
			return fmt.Errorf("yarntest: no NodeManager registered in time (%w); log %s:\n%s", ctx.Err(), c.Log, tailFile(c.Log))
		case <-tick.C:
		}
	}
}

// RunningNodes returns the number of RUNNING NodeManagers the
// ResourceManager lists.
func (c *Cluster) RunningNodes(ctx context.Context) (int, error) {
	var nodes struct {
		Nodes *struct {
			Node []struct {
				State string `json:"state"`
			} `json:"node"`
		} `json:"nodes"`
	}
	if err := c.GetJSON(ctx, "/ws/v1/cluster/nodes", &nodes); err != nil {
		return 0, err
	}
	n := 0
	if nodes.Nodes != nil {
		for _, nd := range nodes.Nodes.Node {
			if nd.State == "RUNNING" {
				n++
			}
		}
	}
	return n, nil
}

// GetJSON decodes the JSON answer of GET path on the ResourceManager, as
// the cluster's user.
func (c *Cluster) GetJSON(ctx context.Context, path string, v any) error {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, c.RM+path+sep+"user.name="+c.User, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

func (c *Cluster) waitReady(ctx context.Context, ready string) error {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		if c.RM == "" {
			if b, err := os.ReadFile(ready); err == nil {
				for _, line := range strings.Split(string(b), "\n") {
					if v, ok := strings.CutPrefix(line, "rm="); ok {
						c.RM = v
					}
					if v, ok := strings.CutPrefix(line, "namenode="); ok {
						c.NameNode = v
					}
				}
			}
		}
		if c.RM != "" && c.answers(ctx) {
			return nil
		}
		select {
		case <-c.master.exited:
			return fmt.Errorf("yarntest: the launcher exited during startup; log %s:\n%s", c.Log, tailFile(c.Log))
		case <-ctx.Done():
			return fmt.Errorf("yarntest: the cluster did not answer in time (%w); log %s:\n%s", ctx.Err(), c.Log, tailFile(c.Log))
		case <-tick.C:
		}
	}
}

// answers reports whether the Services API and the NameNode's RPC port
// answer.
func (c *Cluster) answers(ctx context.Context) bool {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, c.RM+"/app/v1/services/version?user.name="+c.User, nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false
	}
	conn, err := net.DialTimeout("tcp", c.NameNode, 2*time.Second)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

// CutOff cuts the control plane off for d, as a partition of the master
// machine would: the master JVM (ResourceManager and NameNode) is stopped
// with SIGSTOP, so that every connection to it hangs, and continued with
// SIGCONT after d. The NodeManager and the containers run on. CutOff
// returns once the ResourceManager lists a running NodeManager again.
func (c *Cluster) CutOff(ctx context.Context, d time.Duration) error {
	if c.master == nil {
		return errors.New("yarntest: the cluster is stopped")
	}
	pgid := -c.master.cmd.Process.Pid
	if err := syscall.Kill(pgid, syscall.SIGSTOP); err != nil {
		return fmt.Errorf("yarntest: stop the master JVM: %w", err)
	}
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
	if err := syscall.Kill(pgid, syscall.SIGCONT); err != nil {
		return fmt.Errorf("yarntest: continue the master JVM: %w", err)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return c.waitNode(ctx)
}

// Stop stops the NodeManager (which kills the containers), then the
// master JVM, then every process left in the cluster's directory. It is
// safe to call more than once.
func (c *Cluster) Stop() {
	c.nm.stop(true)
	c.master.stop(false)
	c.nm, c.master = nil, nil
	KillProcessesIn(c.Dir)
}

// KillProcessesIn SIGKILLs every process (other than this one) whose
// working directory is dir or below it: the application masters and
// containers a NodeManager started there. It returns their pids.
func KillProcessesIn(dir string) []int {
	var killed []int
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err != nil {
			continue
		}
		if cwd == dir || strings.HasPrefix(cwd, dir+string(filepath.Separator)) {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				killed = append(killed, pid)
			}
		}
	}
	return killed
}

func javaHome() (string, error) {
	if h := os.Getenv("JAVA_HOME"); h != "" {
		return h, nil
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return "", errors.New("yarntest: java not found on PATH")
	}
	real, err := filepath.EvalSymlinks(java)
	if err != nil {
		return "", fmt.Errorf("yarntest: %w", err)
	}
	return filepath.Dir(filepath.Dir(real)), nil
}

func oneLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

func tail(b []byte) string {
	const max = 4000
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}

func tailFile(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > 60 {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// siteXML renders a Hadoop configuration file.
func siteXML(props [][2]string) string {
	var b bytes.Buffer
	b.WriteString("<?xml version=\"1.0\"?>\n<configuration>\n")
	for _, p := range props {
		fmt.Fprintf(&b, "  <property><name>%s</name><value>%s</value></property>\n", p[0], p[1])
	}
	b.WriteString("</configuration>\n")
	return b.String()
}
