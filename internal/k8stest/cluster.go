package k8stest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// Version is the Kubernetes version scripts/k8s-deps.sh builds.
const Version = "v1.34.4"

// Nodes says what runs the cluster's pods.
type Nodes int

const (
	// Kwok: one fake node (kwok), 32 CPUs and 256Gi; pods become Running
	// at once and run nothing. No root needed; several such clusters can
	// run at once.
	Kwok Nodes = iota
	// Kubelet: one real node (containerd, runc, the CNI bridge, the
	// kubelet) of the machine's CPUs and memory; pods run. Root only; one
	// at a time per machine (Start waits for the previous one to stop).
	Kubelet
)

func (n Nodes) String() string {
	if n == Kubelet {
		return "kubelet"
	}
	return "kwok"
}

// Options of Start.
type Options struct {
	Nodes Nodes
	// Dir holds the cluster's state and logs; "" : a new temporary
	// directory, removed by Stop.
	Dir string
	// Images are OCI archives (ociimage.WriteArchive) imported into the
	// node's containerd (Kubelet only), in addition to the pause and
	// busybox:1.36 images Start builds.
	Images []string
}

// Cluster is a running cluster.
type Cluster struct {
	// Kubeconfig is the path of an admin kubeconfig (namespace default).
	Kubeconfig string
	// Server is the API server's URL.
	Server string
	// Dir holds the state and the daemons' logs (logs/<daemon>.log).
	Dir string
	// Client is an admin clientset.
	Client kubernetes.Interface
	// NodeName is the name of the node.
	NodeName string

	opts    Options
	tempDir bool
	pki     *pki
	mu      sync.Mutex
	procs   []*proc
	node    *node
	stopped bool
}

// CacheDir is where scripts/k8s-deps.sh puts the binaries:
// $EGRET_K8S_CACHE, else ~/.cache/egret-k8s/<Version>.
func CacheDir() string {
	if d := os.Getenv("EGRET_K8S_CACHE"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "egret-k8s", Version)
}

// ErrMissing is wrapped by Start's error when binaries or packages are missing.
var ErrMissing = errors.New("run scripts/k8s-deps.sh (make test-deps) to build and install them")

func bin(name string) string { return filepath.Join(CacheDir(), "bin", name) }

// missing lists what the tier needs and lacks.
func missing(n Nodes) []string {
	var out []string
	names := []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"}
	if n == Kubelet {
		names = append(names, "kubelet")
	}
	for _, b := range names {
		if _, err := os.Stat(bin(b)); err != nil {
			out = append(out, bin(b))
		}
	}
	if n == Kubelet {
		for _, p := range []string{"containerd", "runc", "ctr"} {
			if _, err := exec.LookPath(p); err != nil {
				out = append(out, p)
			}
		}
		for _, p := range []string{"/usr/lib/cni/bridge", "/usr/lib/cni/host-local", "/usr/lib/cni/loopback", "/bin/busybox"} {
			if _, err := os.Stat(p); err != nil {
				out = append(out, p)
			}
		}
	}
	return out
}

// Require starts a cluster for the test and stops it when the test ends.
// It runs only with EGRET_REQUIRE_K8S=1 (the test is skipped otherwise,
// saying so); then missing binaries, or the Kubelet tier without root,
// fail the test.
func Require(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if os.Getenv("EGRET_REQUIRE_K8S") != "1" {
		t.Skip("the real-cluster tests run with EGRET_REQUIRE_K8S=1 (after make k8s-deps)")
	}
	if len(missing(opts.Nodes)) > 0 {
		waitBuild(t, 50*time.Minute)
	}
	if m := missing(opts.Nodes); len(m) > 0 {
		report(t, fmt.Sprintf("no real Kubernetes (%s tier): %s missing; %v", opts.Nodes, strings.Join(m, ", "), ErrMissing))
	}
	if opts.Nodes == Kubelet && os.Geteuid() != 0 {
		report(t, "the kubelet tier runs containers and needs root")
	}
	// Every wait of Start has its own timeout; this one bounds the wait
	// for the real node's lock, which another package's test holds for
	// its whole run (go test runs packages in parallel).
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	c, err := Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	})
	return c
}

// waitBuild waits (at most timeout) while scripts/k8s-deps.sh holds its
// lock: make test starts the build in the background.
func waitBuild(t testing.TB, timeout time.Duration) {
	f, err := os.Open(filepath.Join(CacheDir(), ".lock"))
	if err != nil {
		return // no build ever started
	}
	defer f.Close()
	start := time.Now()
	logged := false
	for time.Since(start) < timeout {
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err == nil {
			_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
			if logged {
				t.Logf("the Kubernetes build ended after %s", time.Since(start).Round(time.Second))
			}
			return
		}
		if !logged {
			t.Logf("scripts/k8s-deps.sh is building Kubernetes (log: %s): waiting for it", filepath.Join(CacheDir(), "build.log"))
			logged = true
		}
		time.Sleep(2 * time.Second)
	}
}

func report(t testing.TB, msg string) {
	t.Helper()
	t.Fatal(msg + " (EGRET_REQUIRE_K8S=1)")
}

// Start starts a cluster and returns once its node is Ready and the
// default namespace has its service account. Stop it with Stop, also
// when Start fails (it stops what it started itself).
func Start(ctx context.Context, opts Options) (c *Cluster, err error) {
	if m := missing(opts.Nodes); len(m) > 0 {
		return nil, fmt.Errorf("k8stest: %s missing: %w", strings.Join(m, ", "), ErrMissing)
	}
	c = &Cluster{opts: opts, Dir: opts.Dir}
	if c.Dir == "" {
		if c.Dir, err = os.MkdirTemp("", "egret-k8s-"); err != nil {
			return nil, fmt.Errorf("k8stest: %w", err)
		}
		c.tempDir = true
	}
	defer func() {
		if err != nil {
			err = fmt.Errorf("k8stest: start the %s cluster in %s: %w", opts.Nodes, c.Dir, err)
			if serr := c.Stop(); serr != nil {
				err = fmt.Errorf("%w; stopping it: %v", err, serr)
			}
			c = nil
		}
	}()
	if err = os.MkdirAll(filepath.Join(c.Dir, "logs"), 0o755); err != nil {
		return c, err
	}
	if c.pki, err = newPKI(filepath.Join(c.Dir, "pki")); err != nil {
		return c, err
	}
	if opts.Nodes == Kubelet {
		if err = c.lockNode(ctx); err != nil {
			return c, err
		}
	}
	if err = c.startControlPlane(ctx); err != nil {
		return c, err
	}
	switch opts.Nodes {
	case Kwok:
		err = c.startKwok(ctx)
	case Kubelet:
		err = c.startNode(ctx)
	default:
		err = fmt.Errorf("unknown Nodes %d", opts.Nodes)
	}
	if err != nil {
		return c, err
	}
	return c, c.waitReady(ctx)
}

// freePorts returns n ports that were free on 127.0.0.1 a moment ago.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	out := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

func (c *Cluster) startControlPlane(ctx context.Context) error {
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	if _, err := c.start("etcd", bin("etcd"), "--name", "egret", "--data-dir", filepath.Join(c.Dir, "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "egret="+peerURL, "--unsafe-no-fsync", "--log-level", "warn"); err != nil {
		return err
	}
	p := c.pki
	c.Server = "https://127.0.0.1:" + strconv.Itoa(ports[2])
	if _, err := c.start("kube-apiserver", bin("kube-apiserver"), "--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(ports[2]), "--advertise-address=127.0.0.1",
		"--tls-cert-file="+p.path("apiserver.crt"), "--tls-private-key-file="+p.path("apiserver.key"),
		"--client-ca-file="+p.path("ca.crt"), "--token-auth-file="+p.path("tokens.csv"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+p.path("sa.pub"), "--service-account-signing-key-file="+p.path("sa.key"),
		"--service-cluster-ip-range=10.96.0.0/16", "--authorization-mode=Node,RBAC", "--allow-privileged=true",
		"--cert-dir="+filepath.Join(c.Dir, "apiserver-certs"), "--profiling=false", "--endpoint-reconciler-type=none"); err != nil {
		return err
	}
	c.Kubeconfig = filepath.Join(c.Dir, "admin.kubeconfig")
	if err := os.WriteFile(c.Kubeconfig, p.kubeconfig(c.Server), 0o600); err != nil {
		return err
	}
	rc, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return err
	}
	rc.QPS, rc.Burst = 100, 200
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	c.Client = cs
	if err := c.waitFor(ctx, "the API server's /readyz", 90*time.Second, func(ctx context.Context) (bool, error) {
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && string(body) == "ok", nil
	}); err != nil {
		return err
	}
	if _, err := c.start("kube-controller-manager", bin("kube-controller-manager"), "--kubeconfig="+c.Kubeconfig,
		"--bind-address=127.0.0.1", "--secure-port=0", "--leader-elect=false",
		"--service-account-private-key-file="+p.path("sa.key"), "--root-ca-file="+p.path("ca.crt"),
		"--cluster-signing-cert-file="+p.path("ca.crt"), "--cluster-signing-key-file="+p.path("ca.key"),
		"--cert-dir="+filepath.Join(c.Dir, "kcm-certs"),
	); err != nil {
		return err
	}
	_, err = c.start("kube-scheduler", bin("kube-scheduler"), "--kubeconfig="+c.Kubeconfig,
		"--bind-address=127.0.0.1", "--secure-port=0", "--leader-elect=false")
	return err
}

// waitReady waits for the node to be Ready and the default service account.
func (c *Cluster) waitReady(ctx context.Context) error {
	if err := c.waitFor(ctx, "node "+c.NodeName+" Ready", 2*time.Minute, func(ctx context.Context) (bool, error) {
		n, err := c.Client.CoreV1().Nodes().Get(ctx, c.NodeName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				return len(n.Spec.Taints) == 0, nil
			}
		}
		return false, nil
	}); err != nil {
		return err
	}
	return c.waitFor(ctx, "the default service account", time.Minute, func(ctx context.Context) (bool, error) {
		_, err := c.Client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
}

// startKwok starts kwok and creates its fake node.
func (c *Cluster) startKwok(ctx context.Context) error {
	c.NodeName = "kwok-node-0"
	if _, err := c.start("kwok", bin("kwok"), "-c", filepath.Join(CacheDir(), "kwok-stages.yaml"),
		"--kubeconfig="+c.Kubeconfig, "--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
		"--cidr=10.245.0.0/24", "--node-ip=10.245.255.1"); err != nil {
		return err
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods: resource.MustParse("110"), corev1.ResourceEphemeralStorage: resource.MustParse("1Ti"),
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: c.NodeName, Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
			Labels: map[string]string{"kubernetes.io/hostname": c.NodeName, "type": "kwok"}},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity.DeepCopy()},
	}
	_, err := c.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		err = nil
	}
	return err
}

// proc is a daemon the cluster started.
type proc struct {
	name string
	path string
	args []string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error // Wait's, once done is closed
}

// start starts a daemon in its own process group, GOMAXPROCS=1, its
// output in logs/<name>.log.
func (c *Cluster) start(name, path string, args ...string) (*proc, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil, errors.New("the cluster is stopped")
	}
	logPath := filepath.Join(c.Dir, "logs", name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cmd := exec.Command(path, args...)
	cmd.Dir = c.Dir
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, path: path, args: args, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	c.procs = append(c.procs, p)
	return p, nil
}

// waitFor polls cond every 100ms until it holds, a daemon exits, the
// timeout passes or ctx ends.
func (c *Cluster) waitFor(ctx context.Context, what string, timeout time.Duration, cond func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
		ok, err := cond(rctx)
		rcancel()
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		if ok {
			return nil
		}
		if p := c.exited(); p != nil {
			return fmt.Errorf("waiting for %s: %s exited (%v): %s", what, p.name, p.err, tail(p.log))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (logs in %s)", what, ctx.Err(), filepath.Join(c.Dir, "logs"))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// exited returns a daemon that has exited, if any.
func (c *Cluster) exited() *proc {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.procs {
		select {
		case <-p.done:
			return p
		default:
		}
	}
	return nil
}

// tail returns the last lines of a log, on one line.
func tail(path string) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return strings.Join(lines, " | ")
}

// Stop stops every daemon (SIGTERM, SIGKILL after 10 s), in the reverse
// order of their start, then cleans up the node's traces on the host and
// removes the temporary directory. Stopping twice is harmless.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return nil
	}
	c.stopped = true
	procs := c.procs
	c.mu.Unlock()
	var errs []error
	if c.node != nil {
		errs = append(errs, c.node.stopPods(c, procs)...)
	}
	for i := len(procs) - 1; i >= 0; i-- {
		stopProc(procs[i])
	}
	if c.node != nil {
		errs = append(errs, c.node.cleanup()...)
	}
	if c.tempDir && len(errs) == 0 {
		if err := os.RemoveAll(c.Dir); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("k8stest: stop the cluster in %s: %w", c.Dir, errors.Join(errs...))
	}
	return nil
}

func stopProc(p *proc) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
	// Children left in the group (none expected).
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
}

// Restart stops a daemon (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, kwok, containerd, kubelet) and starts it again with the
// same arguments; for the API server it waits until it is ready again.
func (c *Cluster) Restart(ctx context.Context, daemon string) error {
	c.mu.Lock()
	var old *proc
	for _, p := range c.procs {
		if p.name == daemon {
			old = p
		}
	}
	c.mu.Unlock()
	if old == nil {
		return fmt.Errorf("k8stest: no daemon %q", daemon)
	}
	stopProc(old)
	c.mu.Lock()
	c.procs = slices.DeleteFunc(c.procs, func(p *proc) bool { return p == old })
	c.mu.Unlock()
	if _, err := c.start(daemon, old.path, old.args...); err != nil {
		return fmt.Errorf("k8stest: restart %s: %w", daemon, err)
	}
	if daemon != "kube-apiserver" {
		return nil
	}
	return c.waitFor(ctx, "the API server's /readyz", 90*time.Second, func(ctx context.Context) (bool, error) {
		body, err := c.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && string(body) == "ok", nil
	})
}

// ServiceAccountKubeconfig returns a kubeconfig whose credentials are a
// token of service account ns/name (TokenRequest, one hour).
func (c *Cluster) ServiceAccountKubeconfig(t testing.TB, ns, name string) string {
	t.Helper()
	tr, err := c.Client.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), name,
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(3600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("k8stest: token of service account %s/%s: %v", ns, name, err)
	}
	p := filepath.Join(t.TempDir(), "sa.kubeconfig")
	kc := strings.Replace(string(c.pki.kubeconfig(c.Server)), "token: "+c.pki.token, "token: "+tr.Status.Token, 1)
	kc = strings.Replace(kc, "namespace: default", "namespace: "+ns, 1)
	if err := os.WriteFile(p, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func ptr[T any](v T) *T { return &v }

// Logs returns a daemon's log (for a failing test's message).
func (c *Cluster) Logs(daemon string) string {
	b, _ := os.ReadFile(filepath.Join(c.Dir, "logs", daemon+".log"))
	return string(bytes.TrimSpace(b))
}
