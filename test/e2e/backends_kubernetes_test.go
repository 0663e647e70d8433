package e2e

// The Kubernetes column of the backend suite (backends_test.go): real pods
// of egret's image on the real node of internal/k8stest (startK8s). make
// test runs it after the other real-Kubernetes tests, once the cluster's
// binaries are built (scripts/k8s-deps.sh), not beside the other columns.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/egret-stream/egret/daemons/shellapi"
)

func init() {
	registerBackend(backend{name: "kubernetes", start: startKubernetesBackend})
}

// startKubernetesBackend: the topologies run in pods of a namespace
// without the restricted profile, which mount the cluster's EGRET_HOME at
// the same path (a hostPath volume, as a real cluster would mount a
// ReadWriteMany volume): the files the topologies write and the checkpoint
// storage are where the scenarios read them. The state is in a real
// ZooKeeper, the packages on egret serve-packages (startK8s).
func startKubernetesBackend(t *testing.T) *cluster {
	e := startK8s(t)
	kc := e.cluster(t, "egret-suite", false)
	c := kc.cluster
	sharedDir(t, c.home) // the pods run as user 65532
	patch := fmt.Sprintf(`{"spec":{"volumes":[{"name":"home","hostPath":{"path":%q,"type":"Directory"}}],`+
		`"containers":[{"name":"executor","volumeMounts":[{"name":"home","mountPath":%q}]}]}}`, c.home, c.home)
	c.props = append(c.props, "egret.kubernetes.pod.template.patch="+patch, suiteCheckpointRoot(c))
	c.leftovers = func(t *testing.T, topology string) []string {
		ctx := context.Background()
		sel := metav1.ListOptions{LabelSelector: "egret.io/topology=" + topology}
		var left []string
		add := func(kind string, n int, err error) {
			switch {
			case err != nil:
				left = append(left, fmt.Sprintf("list %s: %v", kind, err))
			case n > 0:
				left = append(left, fmt.Sprintf("%d %s", n, kind))
			}
		}
		pods, err := e.k.Client.CoreV1().Pods(kc.ns).List(ctx, sel)
		add("pods", len(pods.Items), err)
		sets, err := e.k.Client.AppsV1().StatefulSets(kc.ns).List(ctx, sel)
		add("StatefulSets", len(sets.Items), err)
		svcs, err := e.k.Client.CoreV1().Services(kc.ns).List(ctx, sel)
		add("Services", len(svcs.Items), err)
		cms, err := e.k.Client.CoreV1().ConfigMaps(kc.ns).List(ctx, sel)
		add("ConfigMaps", len(cms.Items), err)
		return append(left, dirEntries(e.pkgs, "package")...)
	}
	return c
}

// podProcs finds the processes of a cluster's pods. The pods share this
// machine's kernel: their processes are in its /proc, in the pods'
// cgroups, known inside the pods by the pids of their own PID namespaces.
type podProcs struct {
	client kubernetes.Interface
	ns     string
	mu     sync.Mutex
	ips    map[string]string // pod name → its last IP seen
}

// pids returns the processes of a topology's container, by name, as the
// executor of its pod records them in W/pids.json, with this machine's
// pids; nil until the running executor has written it.
func (p *podProcs) pids(topology string, container int) map[string]int {
	pod, err := p.client.CoreV1().Pods(p.ns).Get(context.Background(), fmt.Sprintf("%s-%d", topology, container), metav1.GetOptions{})
	if err != nil {
		return nil
	}
	host := podPids(pod.UID)
	for inner, pid := range host {
		raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		if len(args) < 2 || args[1] != "executor" {
			continue
		}
		// The file is read through the executor's root; one a killed
		// executor wrote before this one started names the pids of a PID
		// namespace that no longer exists.
		path := filepath.Join("/proc", strconv.Itoa(pid), "root", flagValue(args, "--work-dir"), shellapi.PidsFile)
		fi, err := os.Stat(path)
		if err != nil || fi.ModTime().Before(procStarted(pid)) {
			return nil
		}
		b, err := os.ReadFile(path)
		var pf shellapi.PidFile
		if err != nil || json.Unmarshal(b, &pf) != nil || pf.Executor != inner {
			return nil
		}
		out := map[string]int{"executor": pid}
		for name, in := range pf.Processes {
			if h, ok := host[in]; ok {
				out[name] = h
			}
		}
		return out
	}
	return nil
}

// addr returns the address this machine reaches a pod's DNS name
// (<pod>.<service>.<namespace>.svc) at: the pod's IP, or the last IP it
// had while it is being replaced (host itself when the pod was never seen).
func (p *podProcs) addr(host string) string {
	name, _, _ := strings.Cut(host, ".")
	p.mu.Lock()
	defer p.mu.Unlock()
	if pod, err := p.client.CoreV1().Pods(p.ns).Get(context.Background(), name, metav1.GetOptions{}); err == nil && pod.Status.PodIP != "" {
		if p.ips == nil {
			p.ips = map[string]string{}
		}
		p.ips[name] = pod.Status.PodIP
	}
	if ip, ok := p.ips[name]; ok {
		return ip
	}
	return host
}

// podPids maps the pids of a pod's processes in their PID namespace to
// this machine's.
func podPids(uid types.UID) map[int]int {
	out := map[int]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cg, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cgroup"))
		if err != nil || !bytes.Contains(cg, []byte("pod"+string(uid))) {
			continue
		}
		if inner, ok := nsPid(pid); ok {
			out[inner] = pid
		}
	}
	return out
}

// nsPid returns a process's pid in its innermost PID namespace.
func nsPid(pid int) (int, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "NSpid:"); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				return 0, false
			}
			n, err := strconv.Atoi(f[len(f)-1])
			return n, err == nil
		}
	}
	return 0, false
}

// inPod reports whether a process runs in a pod of the real node.
func inPod(pid int) bool {
	cg, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cgroup"))
	return err == nil && bytes.Contains(cg, []byte("/kubepods"))
}

// procStarted returns when a process started, at the kernel clock's
// resolution (the zero time when unknown): /proc/<pid>/stat counts it in
// ticks of the boot-time clock.
func procStarted(pid int) time.Time {
	p, ok := procOf(pid)
	var boot unix.Timespec
	if !ok || unix.ClockGettime(unix.CLOCK_BOOTTIME, &boot) != nil {
		return time.Time{}
	}
	const ticks = 100 // USER_HZ
	return time.Now().Add(time.Duration(p.start)*time.Second/ticks - time.Duration(boot.Nano()))
}
