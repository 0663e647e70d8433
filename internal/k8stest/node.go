package k8stest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/egret-stream/egret/internal/ociimage"
)

// Names and addresses of the real node.
const (
	NodeName     = "egret-k8stest-node"
	PauseImage   = "egret.local/pause:1"
	BusyboxImage = "docker.io/library/busybox:1.36"
	// PodGateway is the host's address on the pods' bridge: a server the
	// pods must reach (a package server, ZooKeeper) listens there.
	PodGateway = "10.244.0.1"
	bridgeName = "egretk8s0"
	nodeLock   = "/tmp/egret-k8stest-node.lock"
)

// sysctls the kubelet and the CNI bridge change; Stop restores them.
var sysctls = []string{"vm/overcommit_memory", "kernel/panic", "kernel/panic_on_oops", "net/ipv4/ip_forward"}

// node is the real node's host state.
type node struct {
	dir       string
	sock      string
	lock      *os.File
	sysctls   map[string]string
	varKubelt bool // /var/lib/kubelet existed before
	dns       *clusterDNS
}

// lockNode waits for the machine's real node (one at a time), before
// the control plane starts.
func (c *Cluster) lockNode(ctx context.Context) error {
	if os.Geteuid() != 0 {
		return errors.New("the kubelet tier runs containers and needs root")
	}
	n := &node{dir: filepath.Join(c.Dir, "node"), sysctls: map[string]string{}}
	n.sock = filepath.Join(n.dir, "containerd", "containerd.sock")
	if err := os.MkdirAll(n.dir, 0o755); err != nil {
		return err
	}
	if err := n.takeLock(ctx); err != nil {
		return err
	}
	c.node = n
	return nil
}

// startNode starts the real node (lockNode first).
func (c *Cluster) startNode(ctx context.Context) error {
	n := c.node
	for _, k := range sysctls {
		if b, err := os.ReadFile("/proc/sys/" + k); err == nil {
			n.sysctls[k] = strings.TrimSpace(string(b))
		}
	}
	if _, err := os.Stat("/var/lib/kubelet"); err == nil {
		n.varKubelt = true
	}
	images, err := n.buildImages(ctx)
	if err != nil {
		return err
	}
	if err := n.writeConfigs(c.pki); err != nil {
		return err
	}
	// The bridge exists before the first pod (the CNI plugin takes it as
	// it is), so that servers for the pods (the cluster DNS, a test's
	// package server) can listen on PodGateway from the start.
	if err := makeBridge(); err != nil {
		return err
	}
	if n.dns, err = startDNS(PodGateway+":53", c.Client); err != nil {
		return fmt.Errorf("start the cluster DNS on %s:53: %w", PodGateway, err)
	}
	if _, err := c.start("containerd", "containerd", "-c", filepath.Join(n.dir, "containerd.toml")); err != nil {
		return err
	}
	if err := c.waitFor(ctx, "containerd", time.Minute, func(ctx context.Context) (bool, error) {
		return n.ctr(ctx, "version") == nil, nil
	}); err != nil {
		return err
	}
	for _, img := range append(images, c.opts.Images...) {
		if err := n.ctr(ctx, "images", "import", img); err != nil {
			return err
		}
	}
	c.NodeName = NodeName
	_, err = c.start("kubelet", bin("kubelet"), "--config="+filepath.Join(n.dir, "kubelet.yaml"),
		"--kubeconfig="+c.Kubeconfig, "--root-dir="+filepath.Join(n.dir, "kubelet"),
		"--cert-dir="+filepath.Join(n.dir, "kubelet-pki"), "--hostname-override="+NodeName, "-v=1")
	return err
}

// ImportImage imports an OCI archive into the node's containerd (Kubelet tier).
func (c *Cluster) ImportImage(ctx context.Context, archive string) error {
	if c.node == nil {
		return errors.New("k8stest: ImportImage needs the kubelet tier")
	}
	return c.node.ctr(ctx, "images", "import", archive)
}

// takeLock waits for the machine's node lock (one real node at a time).
func (n *node) takeLock(ctx context.Context) error {
	f, err := os.OpenFile(nodeLock, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	for {
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
			n.lock = f
			return nil
		}
		select {
		case <-ctx.Done():
			f.Close()
			return fmt.Errorf("another test's real node holds %s: %w", nodeLock, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// makeBridge creates the pods' bridge with the gateway's address, up (a
// bridge left by a node that was not stopped is replaced: the node lock
// is held, so no other node uses it).
func makeBridge() error {
	if exec.Command("ip", "link", "show", bridgeName).Run() == nil {
		if out, err := exec.Command("ip", "link", "delete", bridgeName).CombinedOutput(); err != nil {
			return fmt.Errorf("delete the bridge %s left by an earlier node: %w: %s", bridgeName, err, out)
		}
	}
	for _, args := range [][]string{
		{"link", "add", bridgeName, "type", "bridge"},
		{"addr", "add", PodGateway + "/24", "dev", bridgeName},
		{"link", "set", bridgeName, "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

func (n *node) ctr(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, "ctr", append([]string{"-a", n.sock, "-n", "k8s.io"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// buildImages writes the pause image (a Go program of this module) and
// busybox:1.36 (Debian's static busybox and a link per applet), the
// images the pods need that no registry can give here.
func (n *node) buildImages(ctx context.Context) ([]string, error) {
	pause := filepath.Join(n.dir, "pause")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", pause, "github.com/egret-stream/egret/internal/k8stest/pause")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build the pause program: %w: %s", err, out)
	}
	pb, err := os.ReadFile(pause)
	if err != nil {
		return nil, err
	}
	bb, err := os.ReadFile("/bin/busybox")
	if err != nil {
		return nil, err
	}
	if err := ociimage.CheckStatic("/bin/busybox", runtime.GOARCH); err != nil {
		return nil, fmt.Errorf("/bin/busybox must be Debian's busybox-static: %w", err)
	}
	out, err := exec.CommandContext(ctx, "/bin/busybox", "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("busybox --list: %w", err)
	}
	bbEntries := []ociimage.Entry{{Path: "bin/", Mode: 0o755}, {Path: "bin/busybox", Mode: 0o755, Data: bb}, {Path: "tmp/", Mode: 0o1777}}
	for _, applet := range strings.Fields(string(out)) {
		if applet != "busybox" && !strings.Contains(applet, "/") {
			bbEntries = append(bbEntries, ociimage.Entry{Path: "bin/" + applet, Link: "busybox"})
		}
	}
	var paths []string
	for _, im := range []struct {
		ref     string
		entries []ociimage.Entry
		cfg     v1.Config
	}{
		{PauseImage, []ociimage.Entry{{Path: "pause", Mode: 0o755, Data: pb}}, v1.Config{Entrypoint: []string{"/pause"}}},
		{BusyboxImage, bbEntries, v1.Config{Cmd: []string{"sh"}, Env: []string{"PATH=/bin"}}},
	} {
		img, err := ociimage.BuildEntries(im.entries, im.cfg, runtime.GOARCH, time.Time{})
		if err != nil {
			return nil, err
		}
		ref, err := ociimage.ParseRef(im.ref)
		if err != nil {
			return nil, err
		}
		p := filepath.Join(n.dir, strings.NewReplacer("/", "_", ":", "_").Replace(im.ref)+".tar")
		if err := ociimage.WriteArchive(img, ref, p); err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

func (n *node) writeConfigs(p *pki) error {
	d := n.dir
	containerd := fmt.Sprintf(`version = 2
root = "%[1]s/containerd/root"
state = "%[1]s/containerd/state"
[grpc]
  address = "%[1]s/containerd/containerd.sock"
[ttrpc]
  address = "%[1]s/containerd/containerd.sock.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "%[2]s"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "%[1]s/containerd/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "%[1]s/cni/net.d"
`, d, PauseImage)
	cni := fmt.Sprintf(`{"cniVersion": "0.4.0", "name": "egret-k8stest", "plugins": [
  {"type": "bridge", "bridge": %q, "isGateway": true, "ipMasq": false,
   "ipam": {"type": "host-local", "dataDir": %q, "ranges": [[{"subnet": "10.244.0.0/24", "gateway": %q}]]}},
  {"type": "loopback"}]}
`, bridgeName, filepath.Join(d, "cni", "ipam"), PodGateway)
	kubelet := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication: {anonymous: {enabled: false}, webhook: {enabled: false}, x509: {clientCAFile: %[2]s}}
authorization: {mode: AlwaysAllow}
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://%[1]s/containerd/containerd.sock
imageServiceEndpoint: unix://%[1]s/containerd/containerd.sock
failSwapOn: false
failCgroupV1: false
resolvConf: /etc/resolv.conf
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "100Mi", nodefs.available: "1%%", imagefs.available: "1%%", nodefs.inodesFree: "1%%"}
serializeImagePulls: false
maxPods: 50
makeIPTablesUtilChains: false
podLogsDir: %[1]s/pod-logs
syncFrequency: 5s
fileCheckFrequency: 5s
nodeStatusUpdateFrequency: 2s
clusterDNS: [%[3]s]
clusterDomain: %[4]s
`, d, p.path("ca.crt"), PodGateway, ClusterDomain)
	if err := os.MkdirAll(filepath.Join(d, "cni", "net.d"), 0o755); err != nil {
		return err
	}
	for name, body := range map[string]string{"containerd.toml": containerd, "cni/net.d/10-egret.conflist": cni, "kubelet.yaml": kubelet} {
		if err := os.WriteFile(filepath.Join(d, name), []byte(body), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// PodLogs returns the logs of a pod's container as the kubelet wrote them
// (the API server cannot reach the kubelet: it listens on loopback).
func (c *Cluster) PodLogs(namespace, pod, container string) string {
	if c.node == nil {
		return ""
	}
	matches, _ := filepath.Glob(filepath.Join(c.node.dir, "pod-logs", namespace+"_"+pod+"_*", container, "*.log"))
	slices.Sort(matches)
	var b strings.Builder
	for _, m := range matches {
		data, _ := os.ReadFile(m)
		b.Write(data)
	}
	return b.String()
}

// stopPods stops the kubelet first, then kills and deletes every
// containerd task (so that the shims exit), while containerd still runs.
func (n *node) stopPods(c *Cluster, procs []*proc) []error {
	for _, p := range procs {
		if p.name == "kubelet" {
			stopProc(p)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ctr", "-a", n.sock, "-n", "k8s.io", "tasks", "ls", "-q").Output()
	if err != nil {
		return nil // containerd did not start
	}
	var errs []error
	for _, id := range strings.Fields(string(out)) {
		_ = n.ctr(ctx, "tasks", "kill", "-s", "SIGKILL", id)
		var derr error
		for range 50 {
			if derr = n.ctr(ctx, "tasks", "delete", id); derr == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if derr != nil {
			errs = append(errs, derr)
		}
		_ = n.ctr(ctx, "containers", "delete", id)
	}
	// A shim of this containerd still running (none expected).
	shims, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, s := range shims {
		b, _ := os.ReadFile(s)
		if strings.Contains(string(b), "containerd-shim") && strings.Contains(string(b), n.sock) {
			var pid int
			if _, err := fmt.Sscanf(s, "/proc/%d/cmdline", &pid); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	return errs
}

// cleanup undoes what the node did to the host once its daemons are
// stopped: mounts under its directory, the bridge, the cgroups, the
// kubelet's and CNI's fixed paths, the sysctls. It releases the lock.
func (n *node) cleanup() []error {
	var errs []error
	if n.dns != nil {
		n.dns.close()
	}
	// Mounts under the node's directory, deepest first.
	if f, err := os.Open("/proc/self/mountinfo"); err == nil {
		var mounts []string
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) > 4 && strings.HasPrefix(fields[4], n.dir+"/") {
				mounts = append(mounts, fields[4])
			}
		}
		f.Close()
		slices.SortFunc(mounts, func(a, b string) int { return len(b) - len(a) })
		for _, m := range mounts {
			if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
				errs = append(errs, fmt.Errorf("unmount %s: %w", m, err))
			}
		}
	}
	if err := exec.Command("ip", "link", "show", bridgeName).Run(); err == nil {
		if out, err := exec.Command("ip", "link", "delete", bridgeName).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("delete the bridge %s: %w: %s", bridgeName, err, out))
		}
	}
	// cgroups of the pods (kubepods) and of containerd's containers (k8s.io).
	for _, root := range []string{"kubepods", "k8s.io"} {
		dirs, _ := filepath.Glob("/sys/fs/cgroup/*/" + root)
		if d, err := os.Stat("/sys/fs/cgroup/" + root); err == nil && d.IsDir() {
			dirs = append(dirs, "/sys/fs/cgroup/"+root)
		}
		for _, d := range dirs {
			removeCgroup(d)
		}
	}
	for _, p := range []string{"/var/lib/cni/results", "/var/lib/cni/networks/egret-k8stest"} {
		_ = os.RemoveAll(p)
	}
	if !n.varKubelt {
		_ = os.RemoveAll("/var/lib/kubelet")
	}
	for k, v := range n.sysctls {
		_ = os.WriteFile("/proc/sys/"+k, []byte(v), 0o644)
	}
	if n.lock != nil {
		n.lock.Close()
	}
	return errs
}

// removeCgroup removes a cgroup directory tree, deepest first (cgroup
// directories are removed with rmdir, their files cannot be).
func removeCgroup(dir string) {
	var dirs []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		_ = syscall.Rmdir(dirs[i])
	}
}
